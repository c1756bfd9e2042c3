// Takeover: a holder in a child process acquires a lock with a short TTL over HTTP and is
// killed with SIGKILL (it never releases or renews); a waiter queued on a WebSocket is granted
// the lock when the dead holder's lease expires. The overshoot is the waiter's grant, as the
// loader receives it, minus the moment the holder sent its acquire, minus the TTL: what the
// expiry and the hand-off add to the TTL. Both processes read CLOCK_MONOTONIC (steady_clock).

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/json/parse.hpp>

#include "bench/loader/scenarios.hpp"
#include "support/child_process.hpp"

namespace fencelock::bench {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

int64_t steady_ns(steady::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

/// A blocking connection for the few sequential steps of this scenario; reads time out.
class blocking_conn {
public:
  explicit blocking_conn(const endpoint& ep) : socket_(ioc_) {
    socket_.connect(ep.address);
    socket_.set_option(tcp::no_delay{true});
    timeval tv{10, 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }

  void send(std::string_view bytes) {
    asio::write(socket_, asio::buffer(bytes));
  }

  /// Reads more bytes into the buffer; throws on error or after 10 s of silence.
  void read_more() {
    char chunk[16 * 1024];
    boost::system::error_code ec;
    auto n = socket_.read_some(asio::buffer(chunk), ec);
    if (ec)
      throw std::runtime_error("read: " + ec.message());
    in_.append(chunk, n);
  }

  std::string in_;

private:
  asio::io_context ioc_;
  tcp::socket socket_;
};

/// A blocking WebSocket client on blocking_conn.
class blocking_ws {
public:
  explicit blocking_ws(const endpoint& ep) : conn_(ep) {
    conn_.send(wire::ws_upgrade_request(ep.host, "/v1/ws"));
    for (;;) {
      wire::http_response res;
      std::string chunked;
      auto took = wire::parse_http_response(conn_.in_, res, chunked);
      if (took < 0)
        throw std::runtime_error("the upgrade answer is not HTTP");
      if (took > 0) {
        if (res.status != 101)
          throw std::runtime_error("upgrade refused: HTTP " + std::to_string(res.status));
        conn_.in_.erase(0, static_cast<std::size_t>(took));
        break;
      }
      conn_.read_more();
    }
  }

  void send(std::string_view payload) {
    std::string frame;
    wire::append_ws_frame(frame, payload);
    conn_.send(frame);
  }

  /// Returns the next text message and when the read that completed it returned.
  std::pair<std::string, steady::time_point> next() {
    for (;;) {
      wire::ws_frame f;
      auto took = wire::parse_ws_frame(conn_.in_, f);
      if (took < 0)
        throw std::runtime_error("malformed frame");
      if (took > 0) {
        std::string payload{f.payload};
        auto op = f.opcode;
        conn_.in_.erase(0, static_cast<std::size_t>(took));
        if (op == 0x1)
          return {std::move(payload), read_at_};
        if (op == 0x9) {
          std::string pong;
          wire::append_ws_frame(pong, payload, 0xA);
          conn_.send(pong);
        }
        if (op == 0x8)
          throw std::runtime_error("the server closed the WebSocket");
        continue;
      }
      conn_.read_more();
      read_at_ = steady::now();
    }
  }

  /// Returns the answer to request `id` (a frame with that id) and when it arrived.
  std::pair<std::string, steady::time_point> answer(uint64_t id) {
    for (;;) {
      auto got = next();
      if (wire::find_uint(got.first, "id") == id)
        return got;
    }
  }

private:
  blocking_conn conn_;
  steady::time_point read_at_ = steady::now();
};

std::string self_exe() {
  char buf[PATH_MAX];
  auto n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    throw std::runtime_error("cannot read /proc/self/exe");
  return std::string{buf, static_cast<std::size_t>(n)};
}

double nearest_rank(std::vector<double> xs, double p) {
  std::sort(xs.begin(), xs.end());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(xs.size())));
  return xs[std::clamp<std::size_t>(rank, 1, xs.size()) - 1];
}

} // namespace

int run_holder(const options& o) {
  auto ep = parse_url(o.text("url"));
  auto lock = o.text("lock");
  auto ttl_ms = o.integer("ttl-ms", 200);
  blocking_conn c{ep};
  std::string req;
  wire::append_post(req, ep.host, "/v1/locks/" + lock + "/acquire",
                    R"({"owner":"doomed-holder","ttlMs":)" + std::to_string(ttl_ms) + "}");
  auto sent = steady::now();
  c.send(req);
  wire::http_response res;
  std::string chunked;
  for (;;) {
    auto took = wire::parse_http_response(c.in_, res, chunked);
    if (took < 0)
      throw std::runtime_error("not HTTP");
    if (took > 0)
      break;
    c.read_more();
  }
  boost::json::object line{{"sent_ns", steady_ns(sent)}, {"status", res.status}};
  if (auto token = wire::find_uint(res.body, "token"))
    line["token"] = *token;
  emit(std::move(line));
  for (;;)
    ::pause(); // holding the lock until killed
}

int run_takeover(const options& o) {
  auto samples = static_cast<int>(o.integer("samples", 20));
  auto ttl_ms = o.integer("ttl-ms", 200);
  auto targets = targets_of(o, "takeover");
  const auto& t = targets.at(0);
  const auto& ep = t.endpoints.at(0);
  auto exe = self_exe();
  histogram overshoot;
  std::vector<double> overs_ms;
  int errors = 0, late = 0;
  std::string first_error;
  auto ttl_ns = ttl_ms * 1'000'000;
  for (int i = 0; i < samples; ++i) {
    auto lock = "takeover-" + std::to_string(::getpid()) + "-" + std::to_string(i);
    try {
      blocking_ws waiter{ep};
      test::child_process holder{exe, {"holder", "--url", "http://" + ep.host, "--lock", lock,
                                       "--ttl-ms", std::to_string(ttl_ms)}};
      auto line = holder.wait_for_line(
        [](std::string_view l) { return l.find("sent_ns") != std::string_view::npos; },
        std::chrono::seconds{10});
      if (!line)
        throw std::runtime_error("the holder did not acquire:\n" + holder.diagnostics());
      auto got = boost::json::parse(*line).as_object();
      if (got.at("status").to_number<int>() != 200)
        throw std::runtime_error("the holder was refused: " + *line);
      auto sent_ns = got.at("sent_ns").to_number<int64_t>();
      // Queue the waiter while the holder lives, then kill the holder: it never releases.
      auto waiter_sent = steady::now();
      waiter.send(R"({"id":1,"op":"acquire","lock":")" + lock
                  + R"(","owner":"next-holder","ttlMs":10000,"waitMs":)"
                  + std::to_string(ttl_ms + 10'000) + "}");
      holder.kill();
      auto [frame, at] = waiter.answer(1);
      if (wire::find_string(frame, "type") != "granted")
        throw std::runtime_error("the waiter was not granted: " + frame);
      if (steady_ns(waiter_sent) - sent_ns > ttl_ns / 2) {
        ++late; // the waiter may have come after the expiry: not a takeover sample
      } else {
        auto over = steady_ns(at) - sent_ns - ttl_ns;
        overshoot.record(over);
        overs_ms.push_back(static_cast<double>(over) / 1e6);
      }
      auto token = wire::find_uint(frame, "token").value_or(0);
      waiter.send(R"({"id":2,"op":"release","lock":")" + lock
                  + R"(","owner":"next-holder","token":)" + std::to_string(token) + "}");
      waiter.answer(2);
    } catch (const std::exception& e) {
      ++errors;
      if (first_error.empty())
        first_error = e.what();
    }
  }
  boost::json::object line{{"scenario", "takeover"}, {"target", t.name}, {"store", t.store},
                            {"ttl_ms", ttl_ms},      {"samples", overs_ms.size()},
                            {"late", late},          {"errors", errors},
                            {"overshoot", overshoot.summary(true)}};
  boost::json::array raw;
  for (auto x : overs_ms)
    raw.push_back(x);
  line["overshoot_ms"] = std::move(raw);
  if (!overs_ms.empty()) {
    line["p50_ms"] = nearest_rank(overs_ms, 50);
    line["p99_ms"] = nearest_rank(overs_ms, 99);
    line["max_ms"] = nearest_rank(overs_ms, 100);
  }
  if (!first_error.empty())
    line["first_error"] = first_error;
  emit(std::move(line));
  note("takeover: " + std::to_string(overs_ms.size()) + " samples, " + std::to_string(errors)
       + " errors");
  return overs_ms.empty() ? 1 : 0;
}

} // namespace fencelock::bench
