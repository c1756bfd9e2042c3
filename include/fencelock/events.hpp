#pragma once

// What a lock's subscribers and holders hear about it: one lock_event per change of its lease,
// published by the lock's actor once the change is on record in the store.

#include <cstdint>
#include <string>
#include <string_view>

namespace fencelock {

/// Why a lease ended.
enum class lease_end_cause : uint8_t {
  /// Its holder released it.
  released,
  /// Its deadline passed.
  expired,
  /// The grant never reached its client, which went away, so it was undone.
  undelivered,
  /// It was bound to a WebSocket session (docs/websocket-api.md) that closed.
  session_closed,
  /// The store lost it before its deadline: a Redis that restarted without its data, or a
  /// replica without it promoted (docs/redis.md). Never with the embedded store.
  store_lost,
  /// An admin force-released it (docs/security.md).
  revoked,
};

/// Returns the wire text of `x`: "released", "expired", "undelivered", "session_closed",
/// "store_lost", "revoked".
std::string_view to_string(lease_end_cause x) noexcept;

/// Whether a lease's end was its holder's own doing (no lease_lost is due).
constexpr bool ended_by_holder(lease_end_cause x) noexcept {
  return x == lease_end_cause::released;
}

/// What happened to a lock's lease.
enum class lock_event_kind : uint8_t {
  acquired, // a lease started, with a new token
  renewed,  // the lease got a new deadline
  released, // the lease ended by a release (cause released, session_closed or revoked)
  expired,  // the lease ended without one (cause expired, undelivered or store_lost)
};

/// Returns the kind of event that ends a lease for `cause`: released for a release (by its
/// holder, its session's end or an admin), expired otherwise.
constexpr lock_event_kind end_kind(lease_end_cause cause) noexcept {
  return cause == lease_end_cause::released || cause == lease_end_cause::session_closed
             || cause == lease_end_cause::revoked
           ? lock_event_kind::released
           : lock_event_kind::expired;
}

/// Returns the wire text of `x`: "acquired", "renewed", "released", "expired".
std::string_view to_string(lock_event_kind x) noexcept;

/// One change of one lock's lease. (token, revision) orders the events of one lock.
struct lock_event {
  lock_event_kind kind = lock_event_kind::acquired;
  std::string name;
  std::string owner;
  uint64_t token = 0;
  /// Counts the events of one lease: 0 at `acquired`, one more for each event after.
  uint64_t revision = 0;
  /// Wall-clock estimate of the lease's deadline (ms since the Unix epoch); 0 once it ended.
  int64_t expires_at_ms = 0;
  /// Wall-clock time of the change (ms since the Unix epoch).
  int64_t at_ms = 0;
  /// Why the lease ended; meaningful for released and expired only.
  lease_end_cause cause = lease_end_cause::released;

  /// Returns whether this event ends the lease.
  bool ends_lease() const noexcept {
    return kind == lock_event_kind::released || kind == lock_event_kind::expired;
  }
};

} // namespace fencelock
