#pragma once

// The Redis store's address as configured: redis://[[user]:password@]host[:port][/db].

#include <optional>
#include <string>
#include <string_view>

#include "actors/store/redis/connection.hpp"

namespace fencelock::redis {

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
