// The WebSocket request frame decoder (net/ws_protocol.cpp): one text frame in, a validated
// request or the error frame that answers it out. Input: the frame's text.

#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include <boost/json/parse.hpp>

#include "fencelock/errc.hpp"
#include "fencelock/validate.hpp"
#include "fuzz/fuzz.hpp"
#include "net/ws_protocol.hpp"

namespace fencelock::fuzz {

namespace {

constexpr std::string_view target_name = "fuzz_ws_frame";

void check(bool ok, std::string_view what) {
  if (!ok)
    violated(target_name, what);
}

/// Checks that `frame` is one JSON object whose "type" is `type`.
void check_frame(const std::string& frame, std::string_view type) {
  boost::system::error_code ec;
  auto v = boost::json::parse(frame, ec);
  check(!ec && v.is_object(), "an outgoing frame is a JSON object");
  const auto* t = v.as_object().if_contains("type");
  check(t != nullptr && t->is_string() && t->as_string() == type, "an outgoing frame has its type");
}

void check_accepted(const net::ws_request& req, const config& cfg) {
  check(net::valid_ws_id(req.id), "an accepted frame has a valid id");
  std::visit(
    [&](const auto& call) {
      using T = std::decay_t<decltype(call)>;
      if constexpr (std::is_same_v<T, net::ws_acquire>) {
        check(req.op == "acquire", "acquire decodes op acquire");
        check(!validate(call.req, cfg), "an acquire passes validate");
      } else if constexpr (std::is_same_v<T, renew_request>) {
        check(req.op == "renew", "renew decodes op renew");
        check(!validate(call, cfg), "a renew passes validate");
      } else if constexpr (std::is_same_v<T, release_request>) {
        check(req.op == "release", "release decodes op release");
        check(!call.session_closed, "session_closed never comes from the wire");
        check(!validate(call, cfg), "a release passes validate");
      } else if constexpr (std::is_same_v<T, net::ws_status>) {
        check(req.op == "status", "status decodes op status");
        check(valid_lock_name(call.name), "status names a valid lock");
      } else if constexpr (std::is_same_v<T, check_request>) {
        check(req.op == "check", "check decodes op check");
        check(!validate(call, cfg), "a check passes validate");
      } else if constexpr (std::is_same_v<T, net::ws_subscribe>) {
        check(req.op == "subscribe", "subscribe decodes op subscribe");
        check(!validate(call.req, cfg), "a subscribe passes validate");
      } else if constexpr (std::is_same_v<T, net::ws_auth>) {
        check(req.op == "auth", "auth decodes op auth");
        check(!call.token.empty() && call.token.size() <= 4096, "an auth token is 1..4096 bytes");
      } else {
        static_assert(std::is_same_v<T, net::ws_unsubscribe>);
        check(req.op == "unsubscribe", "unsubscribe decodes op unsubscribe");
        check(call.subscription >= 1 && call.subscription <= max_token,
              "an unsubscribe names a subscription id in 1..2^53-1");
      }
    },
    req.call);
  check_frame(net::reply_frame(req.id, req.op, nullptr), "reply");
}

void check_rejection(const net::ws_rejection& r) {
  check(r.id.is_null() || net::valid_ws_id(r.id), "a rejection echoes only a valid id");
  errc code{};
  check(as_errc(r.error, code) && code == errc::invalid_request,
        "a rejection is invalid_request");
  auto message = error_message(r.error);
  // A key named twice is quoted as the client wrote it, which may itself start with "name: ".
  bool quotes_a_key = message.ends_with(": given more than once");
  check(message.find(": ") != std::string::npos
          && (quotes_a_key || !message.starts_with("name: ")),
        "a rejection names the field, as the WebSocket API spells it");
  check(printable_ascii(message), "a rejection's message is printable ASCII");
  check_frame(net::error_frame(r.id, r.error), "error");
}

} // namespace

int fuzz_ws_frame(const uint8_t* data, size_t size) {
  std::string_view text{reinterpret_cast<const char*>(data), size};
  static const config cfg;
  auto result = net::parse_ws_request(text, cfg);
  if (auto* req = std::get_if<net::ws_request>(&result))
    check_accepted(*req, cfg);
  else
    check_rejection(std::get<net::ws_rejection>(result));
  return 0;
}

} // namespace fencelock::fuzz
