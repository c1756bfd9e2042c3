#pragma once

// The one list of fencelock error codes. Each enumerator is spelled exactly like its wire code;
// net/error_mapping.cpp alone turns a code into an HTTP status, a body and Retry-After.

#include <cstdint>
#include <string>

#include <caf/error.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>

namespace fencelock {

enum class errc : uint8_t {
  /// A request failed validation; the context names the field.
  invalid_request = 1,
  /// The lock is held by someone else; context: (owner, expires_at_ms).
  lock_held,
  /// The token is not the current, unexpired lease of this owner.
  lease_lost,
  /// The lock's wait queue (or the service's) is full.
  too_many_waiters,
  /// The service sheds new work to protect existing holders.
  overloaded,
  /// The lease store could not confirm the operation; nothing was granted.
  store_unavailable,
  /// The service is stopping and accepts no new waits.
  shutting_down,
  /// The service could not complete the request (an internal timeout or failure); nothing was
  /// granted or changed that the caller was told about. Retry later.
  unavailable,
  /// The client went away before its answer (a closed connection or socket): its waiting
  /// acquire was withdrawn, or its grant undone. Logged and counted; no client reads it.
  cancelled,
  /// The request carries no valid credentials (docs/security.md); nothing was done.
  unauthenticated,
  /// The principal may not do this on this lock, or the lease belongs to another principal.
  forbidden,
};

/// Returns the wire code of `x`, e.g. "lease_lost".
const char* to_string(errc x) noexcept;

/// Lists every enumerator once, for exhaustive tests.
inline constexpr errc all_errc[] = {
  errc::invalid_request, errc::lock_held,         errc::lease_lost,    errc::too_many_waiters,
  errc::overloaded,      errc::store_unavailable, errc::shutting_down, errc::unavailable,
  errc::cancelled,       errc::unauthenticated,   errc::forbidden,
};

/// Returns the errc carried by `err`, or nothing when `err` is not a fencelock error.
bool as_errc(const caf::error& err, errc& out) noexcept;

/// Returns the human-readable message attached to `err` (its first string context), or "".
std::string error_message(const caf::error& err);

} // namespace fencelock

CAF_ERROR_CODE_ENUM(fencelock::errc, "fencelock")
