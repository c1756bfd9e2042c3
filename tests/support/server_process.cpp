#include "support/server_process.hpp"

#include <charconv>
#include <csignal>
#include <cstdlib>
#include <stdexcept>

#include <boost/json/parse.hpp>

#include "support/http_client.hpp"
#include "support/poll.hpp"

namespace fencelock::test {

namespace {

std::vector<std::string> serve_args(std::string data_dir, std::vector<std::string> extra) {
  std::vector<std::string> args{"serve", "--port", "0", "--data-dir", std::move(data_dir)};
  args.insert(args.end(), std::make_move_iterator(extra.begin()),
              std::make_move_iterator(extra.end()));
  return args;
}

} // namespace

std::string server_binary() {
  // A benchmark may measure a server built elsewhere.
  if (const char* other = std::getenv("SERVER_UNDER_TEST"); other != nullptr && *other)
    return other;
  return FENCELOCK_BINARY;
}

std::optional<uint16_t> parse_listening_port(std::string_view line) {
  if (line.find("\"listening\"") == std::string_view::npos)
    return std::nullopt;
  auto brace = line.find('{');
  if (brace == std::string_view::npos)
    return std::nullopt;
  boost::system::error_code ec;
  auto v = boost::json::parse(line.substr(brace), ec);
  if (ec || !v.is_object())
    return std::nullopt;
  const auto& obj = v.as_object();
  auto* event = obj.if_contains("event");
  auto* port = obj.if_contains("port");
  if (event == nullptr || !event->is_string() || event->as_string() != "listening"
      || port == nullptr)
    return std::nullopt;
  int64_t p = 0;
  if (port->is_int64())
    p = port->as_int64();
  else if (port->is_uint64() && port->as_uint64() <= 65535)
    p = static_cast<int64_t>(port->as_uint64());
  if (p <= 0 || p > 65535)
    return std::nullopt;
  return static_cast<uint16_t>(p);
}

std::optional<uint16_t> parse_ready_port(std::string_view message) {
  if (notify_socket::field(message, "READY") != "1")
    return std::nullopt;
  auto text = notify_socket::field(message, "X_FENCELOCK_PORT").value_or("");
  unsigned p = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), p);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || p == 0 || p > 65535)
    return std::nullopt;
  return static_cast<uint16_t>(p);
}

server_process::server_process(std::string data_dir, std::vector<std::string> extra_args,
                               std::chrono::milliseconds start_timeout)
  : proc_(server_binary(), serve_args(std::move(data_dir), std::move(extra_args)),
          {notify_.env()}) {
  auto deadline = std::chrono::steady_clock::now() + start_timeout;
  // Whichever comes first: the readiness notification (sent whatever the log level), or the
  // "listening" line (a server built before notifications, as a benchmark may run).
  bool notified_ready = false;
  while (port_ == 0) {
    if (auto msg =
          notify_.wait_for([](std::string_view m) { return parse_ready_port(m).has_value(); },
                           std::chrono::milliseconds{20})) {
      port_ = *parse_ready_port(*msg);
      notified_ready = true;
    } else if (auto line = proc_.wait_for_line(
                 [](std::string_view l) { return parse_listening_port(l).has_value(); },
                 std::chrono::milliseconds{0}))
      port_ = *parse_listening_port(*line);
    else if (std::chrono::steady_clock::now() >= deadline || proc_.stdout_closed())
      throw std::runtime_error("the server reported no port (neither READY=1 nor a "
                               "\"listening\" line) within "
                               + std::to_string(start_timeout.count()) + " ms\n"
                               + proc_.diagnostics());
  }

  // READY=1 goes out once the store answers (app/serve.cpp), and a TLS listener would not answer
  // a plain /readyz anyway.
  if (notified_ready)
    return;
  // Listening is not ready: the store may still be recovering. Poll /readyz until 200.
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
    deadline - std::chrono::steady_clock::now());
  if (left.count() < 1000)
    left = std::chrono::milliseconds{1000};
  http_client client{port_, http_options{std::chrono::seconds{5}, false}};
  std::string last;
  bool ready = eventually(
    [&] {
      // The "listening" line may come before READY=1, which a TLS listener is known by.
      if (notify_.wait_for([](std::string_view m) { return parse_ready_port(m).has_value(); },
                           std::chrono::milliseconds{0}))
        return true;
      auto res = client.try_request("GET", "/readyz");
      last = res ? res.response.describe() : res.what;
      return res && res.response.status == 200;
    },
    left, std::chrono::milliseconds{20});
  if (!ready)
    throw std::runtime_error("the server on port " + std::to_string(port_)
                             + " did not become ready; last /readyz: " + last + "\n"
                             + proc_.diagnostics());
}

std::optional<exit_status> server_process::terminate(std::chrono::milliseconds timeout) {
  proc_.send_signal(SIGTERM);
  auto st = proc_.wait(timeout);
  if (!st)
    proc_.kill();
  return st;
}

} // namespace fencelock::test
