#include "net/ws_protocol.hpp"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "common/json_writer.hpp"
#include "fencelock/errc.hpp"
#include "fencelock/validate.hpp"
#include "net/error_mapping.hpp"
#include "net/json.hpp"
#include "net/json_reader.hpp"

namespace fencelock::net {

namespace json = boost::json;

namespace {

/// The lock is `lock` on the WebSocket and `name` in the shared validation messages.
caf::error as_ws_error(caf::error err) {
  auto message = error_message(err);
  if (message.starts_with("name: "))
    return caf::make_error(errc::invalid_request, "lock: " + message.substr(6));
  return err;
}

caf::error parse_op(const std::string& op, const json::object& fields, const config& cfg,
                    ws_op& out) {
  if (op == "acquire") {
    ws_acquire x;
    object_reader in{fields,
                     {"id", "op", "lock", "owner", "ttlMs", "waitMs", "session"}};
    in.read("lock", x.req.name, presence::required);
    in.read("owner", x.req.owner, presence::required);
    in.read("ttlMs", x.req.ttl_ms, presence::required);
    in.read("waitMs", x.req.wait_ms, presence::optional);
    in.read("session", x.session, presence::optional);
    if (in.error())
      return in.error();
    out = std::move(x);
    return validate(std::get<ws_acquire>(out).req, cfg);
  }
  if (op == "renew") {
    renew_request x;
    object_reader in{fields, {"id", "op", "lock", "owner", "token", "ttlMs"}};
    in.read("lock", x.name, presence::required);
    in.read("owner", x.owner, presence::required);
    in.read_token("token", x.token, presence::required);
    in.read("ttlMs", x.ttl_ms, presence::optional);
    if (in.error())
      return in.error();
    out = std::move(x);
    return validate(std::get<renew_request>(out), cfg);
  }
  if (op == "release") {
    release_request x;
    object_reader in{fields, {"id", "op", "lock", "owner", "token", "force"}};
    in.read("lock", x.name, presence::required);
    in.read("force", x.force, presence::optional);
    auto needed = x.force ? presence::optional : presence::required; // as over HTTP
    in.read("owner", x.owner, needed);
    in.read_token("token", x.token, needed);
    if (in.error())
      return in.error();
    out = std::move(x);
    return validate(std::get<release_request>(out), cfg);
  }
  if (op == "status") {
    ws_status x;
    object_reader in{fields, {"id", "op", "lock"}};
    in.read("lock", x.name, presence::required);
    if (in.error())
      return in.error();
    if (!valid_lock_name(x.name))
      return invalid_field("lock", "must be 1..200 characters of [A-Za-z0-9._:-]");
    out = std::move(x);
    return caf::none;
  }
  if (op == "check") {
    check_request x;
    object_reader in{fields, {"id", "op", "lock", "token"}};
    in.read("lock", x.name, presence::required);
    in.read_token("token", x.token, presence::required);
    if (in.error())
      return in.error();
    out = std::move(x);
    return validate(std::get<check_request>(out), cfg);
  }
  if (op == "subscribe") {
    bool by_name = fields.contains("lock");
    if (by_name == fields.contains("prefix"))
      return invalid_field("lock", "give either lock (one lock) or prefix (every lock whose "
                                   "name starts with it)");
    ws_subscribe x;
    x.req.exact = by_name;
    object_reader in{fields, {"id", "op", "lock", "prefix"}};
    in.read(by_name ? "lock" : "prefix", x.req.prefix, presence::required);
    if (in.error())
      return in.error();
    out = std::move(x);
    return validate(std::get<ws_subscribe>(out).req, cfg);
  }
  if (op == "unsubscribe") {
    ws_unsubscribe x;
    object_reader in{fields, {"id", "op", "subscription"}};
    in.read_token("subscription", x.subscription, presence::required);
    if (in.error())
      return in.error();
    out = x;
    return caf::none;
  }
  if (op == "auth") {
    ws_auth x;
    object_reader in{fields, {"id", "op", "token"}};
    in.read("token", x.token, presence::required);
    if (in.error())
      return in.error();
    if (x.token.empty() || x.token.size() > 4096)
      return invalid_field("token", "must be 1..4096 characters");
    out = std::move(x);
    return caf::none;
  }
  return invalid_field("op", "must be one of acquire, renew, release, status, check, subscribe, "
                             "unsubscribe, auth");
}

json::object error_object(const json::value& id, const caf::error& err) {
  auto r = error_reply(err);
  json::object frame;
  frame["type"] = "error";
  if (!id.is_null())
    frame["id"] = id;
  for (const auto& [key, value] : r.body.as_object())
    frame[key] = value;
  if (r.retry_after_s != 0)
    frame["retryAfterMs"] = int64_t{r.retry_after_s} * 1000;
  return frame;
}

} // namespace

caf::error authorize(const principal& who, ws_op& op) {
  return std::visit(
    [&](auto& x) -> caf::error {
      using T = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<T, ws_acquire>)
        return net::authorize(who, x.req);
      else if constexpr (std::is_same_v<T, ws_subscribe>)
        return net::authorize(who, x.req);
      else if constexpr (std::is_same_v<T, ws_status>)
        return authorize_read(who, x.name);
      else if constexpr (std::is_same_v<T, ws_unsubscribe> || std::is_same_v<T, ws_auth>)
        return caf::none;
      else
        return net::authorize(who, x);
    },
    op);
}

bool valid_ws_id(const json::value& id) noexcept {
  if (id.is_string()) {
    const auto& s = id.get_string();
    if (s.empty() || s.size() > 128)
      return false;
    for (char c : s)
      if (c < 0x20 || c > 0x7e)
        return false;
    return true;
  }
  if (id.is_int64())
    return id.get_int64() >= 0 && static_cast<uint64_t>(id.get_int64()) <= max_token;
  if (id.is_uint64())
    return id.get_uint64() <= max_token;
  return false;
}

std::variant<ws_request, ws_rejection> parse_ws_request(std::string_view text, const config& cfg) {
  // A frame is small and read once: parsed without a heap allocation unless it outgrows this.
  unsigned char buffer[1024];
  json::monotonic_resource resource{buffer, sizeof buffer};
  // The usual frame in one pass; otherwise parsed again to say what is wrong (parse_distinct).
  auto distinct = parse_distinct(text, &resource);
  boost::system::error_code ec;
  auto parsed = distinct ? std::move(*distinct) : json::parse(text, ec, &resource);
  if (ec)
    return ws_rejection{nullptr,
                        invalid_field("frame", "must be a JSON object (" + ec.message() + ")")};
  if (!parsed.is_object())
    return ws_rejection{nullptr, invalid_field("frame", "must be a JSON object")};
  auto& object = parsed.as_object();
  const auto* id = object.if_contains("id");
  if (id == nullptr)
    return ws_rejection{nullptr, invalid_field("id", "is required")};
  if (!valid_ws_id(*id))
    return ws_rejection{nullptr, invalid_field("id", "must be a string of 1..128 printable "
                                                     "ASCII characters or an integer in "
                                                     "0..2^53-1")};
  ws_request req;
  req.id = json::value(*id, json::storage_ptr{}); // outlives `resource`
  // After the id, so that the error can carry it, unless the id itself is what repeats.
  if (auto key = distinct ? std::nullopt : duplicate_key(text)) {
    auto err = invalid_field(printable_excerpt(*key), "given more than once");
    return ws_rejection{*key == "id" ? json::value(nullptr) : std::move(req.id), std::move(err)};
  }
  const auto* op = object.if_contains("op");
  if (op == nullptr)
    return ws_rejection{req.id, invalid_field("op", "is required")};
  if (!op->is_string())
    return ws_rejection{req.id, invalid_field("op", "must be a string")};
  req.op = std::string{op->get_string()};
  if (auto err = parse_op(req.op, object, cfg, req.call))
    return ws_rejection{std::move(req.id), as_ws_error(std::move(err))};
  return req;
}

std::string hello_frame(std::string_view session, std::string_view version, const config& cfg) {
  return json::serialize(
    json::object{{"type", "hello"},
                 {"session", session},
                 {"server", "fencelock"},
                 {"version", version},
                 {"limits",
                  {{"maxFrame", cfg.ws_max_frame},
                   {"maxSubscriptions", cfg.ws_max_subscriptions},
                   {"maxPending", cfg.ws_max_pending},
                   // A client bounds a session-bound lease by it (docs/websocket-api.md).
                   {"idleTimeoutMs", cfg.ws_idle_timeout_ms}}}});
}

std::string reply_frame(const json::value& id, std::string_view op, const json::value& result) {
  return reply_frame_text(id, op, json::serialize(result));
}

std::string reply_frame_text(const json::value& id, std::string_view op,
                             std::string_view result) {
  std::string out;
  out.reserve(48 + op.size() + result.size());
  json_object_writer w{out};
  w.field("type", "reply").value("id", id).field("op", op).raw("result", result);
  w.close();
  return out;
}

std::string granted_frame(const json::value& id, const lease& x) {
  auto result = lease_json(x);
  std::string out;
  out.reserve(48 + result.size());
  json_object_writer w{out};
  w.field("type", "granted").value("id", id).raw("result", result);
  w.close();
  return out;
}

std::string error_frame(const json::value& id, const caf::error& err) {
  return json::serialize(error_object(id, err));
}

std::string error_frame(const json::value& id, std::string_view code, std::string_view message,
                        uint32_t retry_after_ms) {
  json::object frame{{"type", "error"}};
  if (!id.is_null())
    frame["id"] = id;
  frame["error"] = code;
  frame["message"] = message;
  if (retry_after_ms != 0)
    frame["retryAfterMs"] = retry_after_ms;
  return json::serialize(frame);
}

std::string lease_lost_frame(const lock_event& ev) {
  json::object frame{{"type", "lease_lost"}, {"lock", ev.name}};
  put_owner(frame, ev.owner);
  frame["token"] = ev.token;
  frame["cause"] = to_string(ev.cause);
  return json::serialize(frame);
}

std::string lock_event_frame(uint64_t subscription, const lock_event& ev) {
  json::object frame{{"type", "lock_event"},
                     {"subscription", subscription},
                     {"event", to_string(ev.kind)},
                     {"lock", ev.name}};
  put_owner(frame, ev.owner);
  frame["token"] = ev.token;
  frame["revision"] = ev.revision;
  frame["at"] = ev.at_ms;
  if (ev.ends_lease())
    frame["cause"] = to_string(ev.cause);
  else
    frame["expiresAt"] = ev.expires_at_ms;
  return json::serialize(frame);
}

} // namespace fencelock::net
