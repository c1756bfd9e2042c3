#include "support/lock_api.hpp"

#include <limits>
#include <stdexcept>

#include <boost/json/serialize.hpp>

namespace fencelock::test {

namespace json = boost::json;

namespace {

const json::value* field(const json::value& v, std::string_view key) {
  if (!v.is_object())
    return nullptr;
  return v.as_object().if_contains(key);
}

std::string path_of(std::string_view name, std::string_view op = {}) {
  std::string out = "/v1/locks/";
  out.append(name);
  if (!op.empty())
    out.append("/").append(op);
  return out;
}

std::chrono::milliseconds deadline_for(std::optional<int64_t> wait_ms) {
  return std::chrono::milliseconds{30'000 + (wait_ms && *wait_ms > 0 ? *wait_ms : 0)};
}

json::object acquire_body(std::string_view owner, int64_t ttl_ms,
                          std::optional<int64_t> wait_ms) {
  json::object body;
  body["owner"] = owner;
  body["ttlMs"] = ttl_ms;
  if (wait_ms)
    body["waitMs"] = *wait_ms;
  return body;
}

json::object release_body(std::string_view owner, uint64_t token) {
  json::object body;
  body["owner"] = owner;
  body["token"] = token;
  return body;
}

} // namespace

std::optional<uint64_t> json_u64(const json::value& v, std::string_view key) {
  auto* p = field(v, key);
  if (p == nullptr)
    return std::nullopt;
  if (p->is_uint64())
    return p->as_uint64();
  if (p->is_int64() && p->as_int64() >= 0)
    return static_cast<uint64_t>(p->as_int64());
  return std::nullopt;
}

std::optional<int64_t> json_i64(const json::value& v, std::string_view key) {
  auto* p = field(v, key);
  if (p == nullptr)
    return std::nullopt;
  if (p->is_int64())
    return p->as_int64();
  if (p->is_uint64() && p->as_uint64() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return static_cast<int64_t>(p->as_uint64());
  return std::nullopt;
}

std::optional<std::string> json_str(const json::value& v, std::string_view key) {
  auto* p = field(v, key);
  if (p == nullptr || !p->is_string())
    return std::nullopt;
  return std::string{p->as_string()};
}

std::optional<bool> json_bool(const json::value& v, std::string_view key) {
  auto* p = field(v, key);
  if (p == nullptr || !p->is_bool())
    return std::nullopt;
  return p->as_bool();
}

bool json_absent_or_null(const json::value& v, std::string_view key) {
  auto* p = field(v, key);
  return p == nullptr || p->is_null();
}

std::optional<lease_view> lease_view::from(const http_response& res) {
  if (res.status != 200 || !res.json)
    return std::nullopt;
  const auto& v = *res.json;
  auto name = json_str(v, "name");
  auto owner = json_str(v, "owner");
  auto token = json_u64(v, "token");
  auto ttl = json_i64(v, "ttlMs");
  auto expires = json_i64(v, "expiresAt");
  if (!name || !owner || !token || !ttl || !expires)
    return std::nullopt;
  return lease_view{*name, *owner, *token, *ttl, *expires};
}

std::optional<status_view> status_view::from(const json::value& v) {
  auto name = json_str(v, "name");
  auto held = json_bool(v, "held");
  if (!name || !held)
    return std::nullopt;
  status_view s;
  s.name = *name;
  s.held = *held;
  s.owner = json_str(v, "owner");
  s.token = json_u64(v, "token");
  s.expires_at = json_i64(v, "expiresAt");
  s.waiters = json_u64(v, "waiters");
  s.last_token = json_u64(v, "lastToken");
  return s;
}

lock_client::lock_client(uint16_t port, http_options opts) : http_(port, opts) {
  // nop
}

http_response lock_client::acquire(std::string_view name, std::string_view owner, int64_t ttl_ms,
                                   std::optional<int64_t> wait_ms, const header_list& headers) {
  return http_.post(path_of(name, "acquire"), acquire_body(owner, ttl_ms, wait_ms), headers,
                    deadline_for(wait_ms));
}

http_result lock_client::try_acquire(std::string_view name, std::string_view owner,
                                     int64_t ttl_ms, std::optional<int64_t> wait_ms) {
  return http_.try_request("POST", path_of(name, "acquire"),
                           json::serialize(acquire_body(owner, ttl_ms, wait_ms)), {},
                           deadline_for(wait_ms));
}

http_response lock_client::renew(std::string_view name, std::string_view owner, uint64_t token,
                                 std::optional<int64_t> ttl_ms) {
  auto body = release_body(owner, token);
  if (ttl_ms)
    body["ttlMs"] = *ttl_ms;
  return http_.post(path_of(name, "renew"), body);
}

http_response lock_client::release(std::string_view name, std::string_view owner,
                                   uint64_t token) {
  return http_.post(path_of(name, "release"), release_body(owner, token));
}

http_result lock_client::try_release(std::string_view name, std::string_view owner,
                                     uint64_t token) {
  return http_.try_request("POST", path_of(name, "release"),
                           json::serialize(release_body(owner, token)));
}

http_response lock_client::status(std::string_view name) {
  return http_.get(path_of(name));
}

status_view lock_client::status_of(std::string_view name) {
  auto res = status(name);
  std::optional<status_view> s;
  if (res.status == 200 && res.json)
    s = status_view::from(*res.json);
  if (!s)
    throw std::runtime_error("GET " + path_of(name) + " did not answer a status: "
                             + res.describe());
  return *s;
}

http_response lock_client::list(std::optional<std::string> prefix, std::optional<uint32_t> limit,
                                 std::optional<std::string> cursor) {
  std::string target = "/v1/locks";
  char sep = '?';
  auto add = [&](const char* key, const std::string& value) {
    target.push_back(sep);
    target.append(key).append("=").append(url_encode(value));
    sep = '&';
  };
  if (prefix)
    add("prefix", *prefix);
  if (limit)
    add("limit", std::to_string(*limit));
  if (cursor)
    add("cursor", *cursor);
  return http_.get(target);
}

} // namespace fencelock::test
