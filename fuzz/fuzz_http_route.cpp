// The HTTP routes and their request checks (net/routes.cpp): method, path, query and body in,
// a service call or a reply out. Input: "METHOD TARGET\nBODY" (the body may be empty).

#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>

#include "fencelock/validate.hpp"
#include "fuzz/fuzz.hpp"
#include "net/routes.hpp"

namespace fencelock::fuzz {

namespace {

namespace http = boost::beast::http;

constexpr std::string_view target_name = "fuzz_http_route";

void check(bool ok, std::string_view what) {
  if (!ok)
    violated(target_name, what);
}

/// A config with every bound pulled in, so that the routes' own defaults (the list page size)
/// meet limits tighter than theirs.
config narrow_config() {
  config cfg;
  cfg.ttl_min_ms = 1'000;
  cfg.ttl_max_ms = 1'000;
  cfg.wait_max_ms = 0;
  cfg.list_limit_max = 1;
  return cfg;
}

void check_reply(const net::reply& r) {
  auto code = static_cast<unsigned>(r.status);
  check(code >= 200 && code <= 599 && http::int_to_status(code) != http::status::unknown,
        "a reply has a real HTTP status");
  if (r.status == http::status::method_not_allowed)
    check(!r.allow.empty(), "a 405 names the allowed method");
  if (!r.text_type.empty())
    return;
  check(r.body.is_object(), "a JSON reply is an object");
  const auto& body = r.body.as_object();
  // GET /readyz answers 503 {"ready": false} while the service takes no acquires.
  if (code < 400 || body.contains("ready"))
    return;
  const auto* error = body.if_contains("error");
  const auto* message = body.if_contains("message");
  check(error != nullptr && error->is_string() && !error->as_string().empty(),
        "an error reply has its code");
  check(message != nullptr && message->is_string() && !message->as_string().empty(),
        "an error reply has a message");
  std::string_view text{message->as_string()};
  // Client text reaches a message only through printable_excerpt().
  check(printable_ascii(text), "an error message is printable ASCII");
  if (r.status == http::status::bad_request)
    check(error->as_string() == "invalid_request" && text.find(": ") != std::string_view::npos,
          "a 400 is invalid_request naming the field");
}

void check_call(const net::service_call& call, http::verb method, std::string_view path,
                const config& cfg) {
  std::visit(
    [&](const auto& req) {
      using T = std::decay_t<decltype(req)>;
      if constexpr (std::is_same_v<T, net::status_query>) {
        check(method == http::verb::get, "status is a GET");
        check(valid_lock_name(req.name), "status names a valid lock");
      } else if constexpr (std::is_same_v<T, net::metrics_query>) {
        check(method == http::verb::get && path == "/metrics", "metrics is GET /metrics");
      } else if constexpr (std::is_same_v<T, list_request>) {
        check(method == http::verb::get, "list is a GET");
        check(!validate(req, cfg), "a list request passes validate");
      } else {
        check(method == http::verb::post, "a lock operation is a POST");
        check(!validate(req, cfg), "a lock operation passes validate");
      }
    },
    call);
}

} // namespace

int fuzz_http_route(const uint8_t* data, size_t size) {
  std::string_view input{reinterpret_cast<const char*>(data), size};
  auto [line, body] = split_once(input, '\n');
  auto [verb, target] = split_once(line, ' ');
  auto method = http::string_to_verb(verb);
  auto path = target.substr(0, target.find('?'));
  static const config default_cfg;
  static const config tight_cfg = narrow_config();
  for (const auto* cfg : {&default_cfg, &tight_cfg}) {
    auto result = net::route(method, target, body, *cfg, (size & 1) != 0);
    if (auto* r = std::get_if<net::reply>(&result))
      check_reply(*r);
    else
      check_call(std::get<net::service_call>(result), method, path, *cfg);
  }
  // The request id a client may send is echoed into a header: printable, no spaces.
  if (net::valid_request_id(line))
    check(printable_ascii(line) && line.find(' ') == std::string_view::npos,
          "an echoed request id is printable and has no space");
  return 0;
}

} // namespace fencelock::fuzz
