#pragma once

// The data shapes of the service: what clients send (requests) and what they get back (lease,
// lock_status, lock_list). Requests are validated at the boundary (net/, service) before any
// actor sees them; see fencelock/validate.hpp.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

namespace fencelock {

/// Largest token a client can hold without losing precision in JSON (2^53 - 1).
inline constexpr uint64_t max_token = (uint64_t{1} << 53) - 1;

/// A granted lease: who holds which lock with which fencing token, until when.
struct lease {
  std::string name;
  std::string owner;
  uint64_t token = 0;
  int64_t ttl_ms = 0;
  /// Wall-clock estimate of the deadline (ms since the Unix epoch), for display only: the server
  /// judges expiry on its monotonic clock.
  int64_t expires_at_ms = 0;
};

/// Asks for `name` on behalf of `owner`, waiting up to `wait_ms` (0 = try once).
struct acquire_request {
  std::string name;
  std::string owner;
  int64_t ttl_ms = 0;
  int64_t wait_ms = 0;
  /// Identifies this request so that its waiter can be cancelled when the client goes away.
  uint64_t request_id = 0;
  /// When the service took the request, on the actor system's clock (ns; 0 = not stamped).
  /// Set by the service, never taken from the caller: a lease granted without waiting runs its
  /// TTL from here, so the server's own latency does not lengthen it.
  int64_t received_ns = 0;
};

/// Extends the lease `token` of `owner` to `ttl_ms` (0 = the lease's own TTL) from when the service
/// took the request.
struct renew_request {
  std::string name;
  std::string owner;
  uint64_t token = 0;
  int64_t ttl_ms = 0;
  /// When the service took the request (as acquire_request::received_ns): the new deadline is
  /// `ttl_ms` from here.
  int64_t received_ns = 0;
};

/// Ends the lease `token` of `owner`.
struct release_request {
  std::string name;
  std::string owner;
  uint64_t token = 0;
  /// Set by a front end releasing a session-bound lease because its session closed (never
  /// taken from the wire): the end is then reported with cause session_closed.
  bool session_closed = false;
  /// An admin's force-release (docs/security.md): ends the current lease whoever holds it
  /// (only the one with `token` when it is not 0); `owner` is not needed. The holder is told
  /// lease_lost with cause revoked.
  bool force = false;
};

/// Asks whether `token` is the current, unexpired lease of lock `name` (Chubby's CheckSequencer).
struct check_request {
  std::string name;
  uint64_t token = 0;
};

/// Answers a check_request. `current` holds only at the instant of the answer: a resource that
/// acts on it later still needs its own guard (docs/fencing.md).
struct check_result {
  bool current = false;
  uint64_t token = 0;         // the lock's current token, 0 when it is free
  int64_t expires_at_ms = 0;  // 0 when free
};

/// Describes one lock as the service sees it now.
struct lock_status {
  std::string name;
  bool held = false;
  std::string owner;          // empty unless held
  uint64_t token = 0;         // 0 unless held
  int64_t expires_at_ms = 0;  // 0 unless held
  uint64_t waiters = 0;
  /// The highest token ever granted for this lock (0 = never granted).
  uint64_t last_token = 0;
  /// The lease's revision (see lock_event); 0 unless held, and 0 in list entries.
  uint64_t revision = 0;
};

/// Asks for held locks whose names start with `prefix`, after `cursor`, at most `limit`.
struct list_request {
  std::string prefix;
  std::string cursor;
  uint32_t limit = 100;
};

/// Asks for the events of the lock named `prefix` (when `exact`) or of every lock whose name
/// starts with `prefix` ("" = all).
struct subscribe_request {
  std::string prefix;
  bool exact = false;
};

/// One page of held locks; `next_cursor` is empty on the last page.
struct lock_list {
  std::vector<lock_status> locks;
  std::string next_cursor;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lease& x) {
  return f(caf::meta::type_name("fencelock::lease"), x.name, x.owner, x.token, x.ttl_ms,
           x.expires_at_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, acquire_request& x) {
  return f(caf::meta::type_name("fencelock::acquire_request"), x.name, x.owner, x.ttl_ms,
           x.wait_ms, x.request_id, x.received_ns);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, renew_request& x) {
  return f(caf::meta::type_name("fencelock::renew_request"), x.name, x.owner, x.token, x.ttl_ms,
           x.received_ns);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, release_request& x) {
  return f(caf::meta::type_name("fencelock::release_request"), x.name, x.owner, x.token,
           x.session_closed, x.force);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, check_request& x) {
  return f(caf::meta::type_name("fencelock::check_request"), x.name, x.token);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, check_result& x) {
  return f(caf::meta::type_name("fencelock::check_result"), x.current, x.token, x.expires_at_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lock_status& x) {
  return f(caf::meta::type_name("fencelock::lock_status"), x.name, x.held, x.owner, x.token,
           x.expires_at_ms, x.waiters, x.last_token, x.revision);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, list_request& x) {
  return f(caf::meta::type_name("fencelock::list_request"), x.prefix, x.cursor, x.limit);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lock_list& x) {
  return f(caf::meta::type_name("fencelock::lock_list"), x.locks, x.next_cursor);
}

} // namespace fencelock
