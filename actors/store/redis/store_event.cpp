// The Redis store's channel events: each lease script publishes its change as one JSON message
// (the publish() of actors/store/redis/scripts.cpp), read here into a lock_event. Apart from
// redis_store.cpp so that it can be tested and fuzzed without the store's actors.

#include <charconv>
#include <optional>
#include <string_view>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "actors/store/redis/redis_store.hpp"

namespace fencelock {

namespace json = boost::json;

namespace {

std::optional<lock_event_kind> kind_from(std::string_view s) {
  for (auto k : {lock_event_kind::acquired, lock_event_kind::renewed, lock_event_kind::released,
                 lock_event_kind::expired})
    if (to_string(k) == s)
      return k;
  return std::nullopt;
}

std::optional<lease_end_cause> cause_from(std::string_view s) {
  for (auto c :
       {lease_end_cause::released, lease_end_cause::expired, lease_end_cause::undelivered,
        lease_end_cause::session_closed, lease_end_cause::store_lost, lease_end_cause::revoked})
    if (to_string(c) == s)
      return c;
  return std::nullopt;
}

// The scripts send numbers as decimal strings (a Lua double prints 14 digits only).
template <class T>
bool number_field(const json::object& o, std::string_view key, T& out) {
  auto* v = o.if_contains(key);
  if (v == nullptr || !v->is_string())
    return false;
  auto s = v->get_string();
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && ptr == s.data() + s.size();
}

} // namespace

std::optional<lock_event> parse_store_event(std::string_view text) {
  json::error_code ec;
  auto v = json::parse(text, ec);
  if (ec || !v.is_object())
    return std::nullopt;
  auto& o = v.get_object();
  auto* kind = o.if_contains("kind");
  auto* name = o.if_contains("name");
  auto* owner = o.if_contains("owner");
  if (kind == nullptr || !kind->is_string() || name == nullptr || !name->is_string()
      || owner == nullptr || !owner->is_string())
    return std::nullopt;
  auto k = kind_from(kind->get_string());
  if (!k)
    return std::nullopt;
  lock_event ev{.kind = *k,
                .name = std::string{name->get_string()},
                .owner = std::string{owner->get_string()}};
  if (!number_field(o, "token", ev.token) || !number_field(o, "revision", ev.revision)
      || !number_field(o, "expires_at_ms", ev.expires_at_ms)
      || !number_field(o, "at_ms", ev.at_ms))
    return std::nullopt;
  if (ev.ends_lease()) {
    ev.expires_at_ms = 0;
    auto* cause = o.if_contains("cause");
    auto c = cause != nullptr && cause->is_string() ? cause_from(cause->get_string())
                                                      : std::nullopt;
    // The pairs lock_event promises (end_kind, events.hpp). A subscriber's lease_lost depends
    // on the cause.
    if (!c || end_kind(*c) != ev.kind)
      return std::nullopt;
    ev.cause = *c;
  }
  return ev;
}

} // namespace fencelock
