#include "client/wire.hpp"

#include <boost/json/string.hpp>

namespace fencelock::detail {

namespace json = boost::json;

namespace {

const json::value* field(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  return v != nullptr && !v->is_null() ? v : nullptr;
}

std::optional<std::string> str(const json::object& o, std::string_view key) {
  auto* v = field(o, key);
  if (v == nullptr || !v->is_string())
    return std::nullopt;
  return std::string{v->get_string()};
}

std::optional<int64_t> i64(const json::object& o, std::string_view key) {
  auto* v = field(o, key);
  if (v == nullptr)
    return std::nullopt;
  if (v->is_int64())
    return v->get_int64();
  if (v->is_uint64() && v->get_uint64() <= static_cast<uint64_t>(INT64_MAX))
    return static_cast<int64_t>(v->get_uint64());
  return std::nullopt;
}

std::optional<uint64_t> u64(const json::object& o, std::string_view key) {
  auto* v = field(o, key);
  if (v == nullptr)
    return std::nullopt;
  if (v->is_uint64())
    return v->get_uint64();
  if (v->is_int64() && v->get_int64() >= 0)
    return static_cast<uint64_t>(v->get_int64());
  return std::nullopt;
}

std::optional<bool> boolean(const json::object& o, std::string_view key) {
  auto* v = field(o, key);
  if (v == nullptr || !v->is_bool())
    return std::nullopt;
  return v->get_bool();
}

} // namespace

answer answer::failure(std::string code, const std::string& message) {
  answer a;
  a.error.emplace(std::move(code), message);
  return a;
}

std::string_view frame_type(const json::object& frame) {
  auto* v = frame.if_contains("type");
  return v != nullptr && v->is_string() ? std::string_view{v->get_string()} : std::string_view{};
}

std::optional<uint64_t> frame_id(const json::object& frame) {
  return u64(frame, "id");
}

std::optional<std::chrono::milliseconds> hello_idle_timeout(const json::object& frame) {
  const auto* limits = field(frame, "limits");
  if (limits == nullptr || !limits->is_object())
    return std::nullopt;
  auto ms = u64(limits->get_object(), "idleTimeoutMs");
  if (!ms || *ms == 0 || *ms > 86'400'000)
    return std::nullopt;
  return std::chrono::milliseconds{static_cast<int64_t>(*ms)};
}

answer decode_answer(const json::object& frame) {
  auto type = frame_type(frame);
  if (type == "reply" || type == "granted") {
    auto* result = field(frame, "result");
    if (result == nullptr || !result->is_object())
      return answer::failure("protocol_error", "a " + std::string{type} + " without a result");
    answer a;
    a.result = result->get_object();
    return a;
  }
  if (type != "error")
    return answer::failure("protocol_error", "unexpected frame type " + std::string{type});
  auto code = str(frame, "error").value_or("protocol_error");
  auto message = str(frame, "message").value_or(code);
  std::optional<lock_holder> holder;
  if (auto* h = field(frame, "holder"); h != nullptr && h->is_object()) {
    const auto& ho = h->get_object();
    holder = lock_holder{str(ho, "owner").value_or(""), i64(ho, "expiresAt").value_or(0)};
  }
  auto retry = std::chrono::milliseconds{i64(frame, "retryAfterMs").value_or(0)};
  answer a;
  a.error.emplace(std::move(code), message, std::move(holder), retry);
  return a;
}

std::optional<lease_fields> decode_lease(const json::object& v) {
  auto name = str(v, "name");
  auto owner = str(v, "owner");
  auto token = u64(v, "token");
  auto ttl = i64(v, "ttlMs");
  auto expires = i64(v, "expiresAt");
  if (!name || !owner || !token || *token == 0 || !ttl || *ttl <= 0 || !expires)
    return std::nullopt;
  return lease_fields{std::move(*name), std::move(*owner), *token, *ttl, *expires};
}

std::optional<lock_info> decode_status(const json::value& v) {
  if (!v.is_object())
    return std::nullopt;
  const auto& o = v.get_object();
  auto name = str(o, "name");
  auto held = boolean(o, "held");
  if (!name || !held)
    return std::nullopt;
  lock_info info;
  info.name = std::move(*name);
  info.held = *held;
  info.owner = str(o, "owner").value_or("");
  info.token = u64(o, "token").value_or(0);
  info.expires_at_ms = i64(o, "expiresAt").value_or(0);
  info.waiters = u64(o, "waiters").value_or(0);
  info.last_token = u64(o, "lastToken").value_or(0);
  return info;
}

std::optional<watch_event> decode_event(const json::object& frame) {
  auto event = str(frame, "event");
  auto lock = str(frame, "lock");
  auto token = u64(frame, "token");
  if (!event || !lock || !token)
    return std::nullopt;
  watch_event e;
  e.event = std::move(*event);
  e.lock = std::move(*lock);
  e.token = *token;
  e.owner = str(frame, "owner").value_or("");
  e.expires_at_ms = i64(frame, "expiresAt");
  e.revision = u64(frame, "revision").value_or(0);
  e.at_ms = i64(frame, "at").value_or(0);
  e.cause = str(frame, "cause").value_or("");
  return e;
}

std::optional<lease_lost_push> decode_lease_lost(const json::object& frame) {
  auto lock = str(frame, "lock");
  auto token = u64(frame, "token");
  if (!lock || !token)
    return std::nullopt;
  return lease_lost_push{std::move(*lock), str(frame, "owner").value_or(""), *token,
                         str(frame, "cause").value_or("expired")};
}

loss_cause loss_cause_of_push(std::string_view cause) noexcept {
  if (cause == "undelivered")
    return loss_cause::undelivered;
  if (cause == "session_closed")
    return loss_cause::session_closed;
  if (cause == "store_lost")
    return loss_cause::store_lost;
  if (cause == "revoked")
    return loss_cause::revoked;
  return loss_cause::expired;
}

} // namespace fencelock::detail
