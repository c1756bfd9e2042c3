#include "net/error_mapping.hpp"

#include <algorithm>
#include <string>

#include <boost/json/object.hpp>

#include "net/json.hpp"

namespace fencelock::net {

namespace http = boost::beast::http;

errc_wire wire_of(errc x) noexcept {
  // No default: a new enumerator must fail to compile (-Wswitch -Werror) until it is mapped here.
  switch (x) {
    case errc::invalid_request:
      return {http::status::bad_request, 0, "the request is invalid"};
    case errc::lock_held:
      return {http::status::conflict, 0, "the lock is held by another owner"};
    case errc::lease_lost:
      return {http::status::conflict, 0, "the lease is no longer held"};
    case errc::too_many_waiters:
      return {http::status::too_many_requests, 1, "too many waiters; retry later"};
    case errc::overloaded:
      return {http::status::service_unavailable, 1, "the service is overloaded; retry later"};
    case errc::store_unavailable:
      return {http::status::service_unavailable, 1, "the lease store is unavailable"};
    case errc::shutting_down:
      return {http::status::service_unavailable, 1, "the service is shutting down"};
    case errc::unavailable:
      return {http::status::service_unavailable, 1, "the service could not complete the request"};
    case errc::cancelled:
      // Never read: the client is gone. nginx would log 499 (no HTTP status says it).
      return {http::status::service_unavailable, 1, "the request was withdrawn"};
    case errc::unauthenticated:
      return {http::status::unauthorized, 0, "a valid bearer token is required"};
    case errc::forbidden:
      return {http::status::forbidden, 0, "not permitted for this principal"};
  }
  // Only a value outside the enumeration (a bad cast) gets here.
  return wire_of(errc::unavailable);
}

namespace {

bool is_known(errc x) noexcept {
  return std::find(std::begin(all_errc), std::end(all_errc), x) != std::end(all_errc);
}

/// Reads the (owner, expires_at_ms) context of a lock_held error; null when it is missing.
boost::json::value holder_of(const caf::error& err) {
  const auto& ctx = err.context();
  if (ctx.size() < 2 || !ctx.match_element<std::string>(0) || !ctx.match_element<int64_t>(1))
    return nullptr;
  boost::json::object holder;
  put_owner(holder, ctx.get_as<std::string>(0));
  holder["expiresAt"] = ctx.get_as<int64_t>(1);
  return holder;
}

} // namespace

reply error_reply(const caf::error& err) {
  errc code = errc::unavailable;
  bool ours = err && as_errc(err, code) && is_known(code);
  if (!ours)
    code = errc::unavailable;
  auto wire = wire_of(code);
  // Foreign errors keep their internals to themselves. The context of lock_held is (owner,
  // expiry), not a message: never show the owner as one.
  std::string message = ours && code != errc::lock_held ? error_message(err) : std::string{};
  if (message.empty())
    message = wire.summary;
  auto result = error_reply(wire.status, to_string(code), message);
  result.retry_after_s = wire.retry_after_s;
  if (code == errc::lock_held) {
    if (auto holder = holder_of(err); !holder.is_null())
      result.body.as_object()["holder"] = std::move(holder);
  }
  return result;
}

reply error_reply(http::status status, std::string_view code, std::string_view message) {
  reply result;
  result.status = status;
  result.body = boost::json::object{{"error", code}, {"message", message}};
  return result;
}

} // namespace fencelock::net
