#pragma once

// The JSON shapes of the HTTP API: request bodies in, leases and lock states out. Wire names are
// camelCase (ttlMs, waitMs, expiresAt, lastToken, nextCursor). The parsers check shape and types
// only; range checks are fencelock::validate's job.

#include <cstddef>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <caf/error.hpp>

#include "fencelock/types.hpp"

namespace fencelock::net {

// Each parser reads one POST body into `out`, leaving the lock name (taken from the path) alone.
// It returns an invalid_request error naming the first offending field: malformed JSON, a body
// that is not an object, an unknown or missing field, a wrong type, or a number that is not an
// integer (1.5 and 1e3 are refused). Integers too large for the field saturate, so that
// validate() reports them with the field's range.

/// Reads {owner, ttlMs, waitMs?} into `out`.
caf::error parse_acquire_body(std::string_view body, acquire_request& out);

/// Reads {owner, token, ttlMs?} into `out`.
caf::error parse_renew_body(std::string_view body, renew_request& out);

/// Reads {owner, token} into `out`.
caf::error parse_release_body(std::string_view body, release_request& out);

/// Reads {token} into `out`.
caf::error parse_check_body(std::string_view body, check_request& out);

/// Returns {current, token (null when the lock is free), expiresAt?}.
boost::json::object to_json(const check_result& x);

/// Returns {name, owner, principal?, token, ttlMs, expiresAt} as JSON text: the body of every
/// grant and renewal, written without building a boost::json::object (common/json_writer.hpp).
std::string lease_json(const lease& x);

/// Returns {name, held, owner?, token?, expiresAt?, revision?, waiters, lastToken}; owner,
/// token, expiresAt and revision appear only while the lock is held.
boost::json::object to_json(const lock_status& x);

/// Returns {"locks": [...], "nextCursor": "<name>" or null}.
boost::json::object to_json(const lock_list& x);

/// Sets "owner" in `out` to the label of `owner`, and "principal" to its principal when it has
/// one (fencelock/owner.hpp).
void put_owner(boost::json::object& out, std::string_view owner);

/// Returns `x` cut to `max` bytes with every byte outside printable ASCII replaced by '?', so that
/// client-supplied text can be quoted in an error message.
std::string printable_excerpt(std::string_view x, std::size_t max = 64);

} // namespace fencelock::net
