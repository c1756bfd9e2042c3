#pragma once

// The Redis store's address as configured: redis://[[user]:password@]host[:port][/db]. Used by
// the configuration loader (to check it), the program entry (to log it, redacted) and the Redis
// store (to connect).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fencelock::redis {

/// Where Redis is and how to log in.
struct endpoint {
  std::string host = "127.0.0.1";
  uint16_t port = 6379;
  std::string user;      // empty: AUTH with the password alone (Redis before ACLs)
  std::string password;  // empty: no AUTH
  uint32_t db = 0;
};

/// Returns whether `store` names the Redis store (starts with "redis://").
bool is_redis_url(std::string_view store) noexcept;

/// Parses `url`; on failure returns nothing and sets `why`. User and password may be
/// percent-encoded (a password holding '@' or ':').
std::optional<endpoint> parse_url(std::string_view url, std::string& why);

/// Returns `text` with whatever stands between "://" and the last '@' replaced by "***": a
/// configured value made safe to print even when it does not parse.
std::string redacted_text(std::string_view text);

/// Returns `where` as a URL with the password replaced by "***": safe to log.
std::string redacted(const endpoint& where);

} // namespace fencelock::redis
