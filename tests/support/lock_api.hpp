#pragma once

// The fencelock HTTP API as seen by tests: one call per endpoint, and read-only views of the
// JSON answers. Nothing here asserts; tests decide what a response should be.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "support/http_client.hpp"

namespace fencelock::test {

/// Returns `v[key]` as an unsigned integer when it is a non-negative JSON integer.
std::optional<uint64_t> json_u64(const boost::json::value& v, std::string_view key);

/// Returns `v[key]` as a signed integer when it is a JSON integer within int64.
std::optional<int64_t> json_i64(const boost::json::value& v, std::string_view key);

/// Returns `v[key]` when it is a JSON string.
std::optional<std::string> json_str(const boost::json::value& v, std::string_view key);

/// Returns `v[key]` when it is a JSON bool.
std::optional<bool> json_bool(const boost::json::value& v, std::string_view key);

/// Returns whether `v[key]` is absent or null.
bool json_absent_or_null(const boost::json::value& v, std::string_view key);

/// A 200 answer of acquire or renew.
struct lease_view {
  std::string name;
  std::string owner;
  uint64_t token = 0;
  int64_t ttl_ms = 0;
  int64_t expires_at = 0;

  /// Reads a lease from `res`; nothing unless `res` is a 200 with every field well-typed.
  static std::optional<lease_view> from(const http_response& res);
};

/// A 200 answer of GET /v1/locks/{name}, or one entry of a listing.
struct status_view {
  std::string name;
  bool held = false;
  std::optional<std::string> owner;
  std::optional<uint64_t> token;
  std::optional<int64_t> expires_at;
  std::optional<uint64_t> waiters;
  std::optional<uint64_t> last_token;

  /// Reads one status object; nothing unless name and held are present and well-typed.
  static std::optional<status_view> from(const boost::json::value& v);
};

class lock_client {
public:
  /// Talks to a fencelock server on 127.0.0.1:`port`.
  explicit lock_client(uint16_t port, http_options opts = {});

  /// POST /v1/locks/{name}/acquire; `wait_ms` omitted from the body when not given. The call's
  /// deadline grows by `wait_ms`.
  http_response acquire(std::string_view name, std::string_view owner, int64_t ttl_ms,
                        std::optional<int64_t> wait_ms = std::nullopt,
                        const header_list& headers = {});

  /// Like acquire, but returns a transport error instead of throwing (for load threads).
  http_result try_acquire(std::string_view name, std::string_view owner, int64_t ttl_ms,
                          std::optional<int64_t> wait_ms = std::nullopt);

  /// POST /v1/locks/{name}/renew; `ttl_ms` omitted from the body when not given.
  http_response renew(std::string_view name, std::string_view owner, uint64_t token,
                      std::optional<int64_t> ttl_ms = std::nullopt);

  /// POST /v1/locks/{name}/release.
  http_response release(std::string_view name, std::string_view owner, uint64_t token);

  /// Like release, but returns a transport error instead of throwing.
  http_result try_release(std::string_view name, std::string_view owner, uint64_t token);

  /// GET /v1/locks/{name}.
  http_response status(std::string_view name);

  /// GET /v1/locks/{name}, parsed; throws std::runtime_error unless it is a valid 200.
  status_view status_of(std::string_view name);

  /// GET /v1/locks with the given query parts (each omitted when not given).
  http_response list(std::optional<std::string> prefix, std::optional<uint32_t> limit = {},
                     std::optional<std::string> cursor = {});

  /// Returns the underlying client, for arbitrary requests.
  http_client& http() noexcept {
    return http_;
  }

private:
  http_client http_;
};

} // namespace fencelock::test
