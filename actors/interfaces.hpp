#pragma once

// Typed interfaces of the actors behind the registry. Only the registry's interface is public
// (fencelock/interfaces.hpp); these are the service's own wiring. Store actors declare theirs
// next to their store (actors/store/).

#include <cstdint>
#include <string>

#include <caf/replies_to.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/direct_call.hpp"
#include "fencelock/interfaces.hpp"

namespace fencelock {

/// One per lock name: the serialization point of that lock's lease and waiters on this instance.
using lock_actor = caf::typed_actor<
  caf::replies_to<acquire_atom, acquire_request>::with<lease>,
  caf::replies_to<renew_atom, renew_request>::with<lease>,
  caf::replies_to<release_atom, release_request>::with<bool>,
  caf::replies_to<status_atom, std::string>::with<lock_status>,
  caf::replies_to<check_atom, check_request>::with<check_result>,
  caf::reacts_to<cancel_atom, std::string, uint64_t>,
  /// From the service's front end (actors/direct_call.hpp): one of the first five calls, whose
  /// answer goes to the caller's callback.
  caf::reacts_to<lock_call>,
  /// From the registry, for the watchdog: the lease with this token may have reached its
  /// deadline.
  caf::reacts_to<expire_atom, uint64_t>,
  /// From itself: the wait timer armed for this time (ns on the actor clock) fired; the
  /// waiters whose deadline passed give up.
  caf::reacts_to<wait_timeout_atom, int64_t>,
  /// From the registry: quit, nobody routes to this actor any more. `kept` says that the
  /// registry keeps the lock's place for the lease held (the idle report said so): its expiry
  /// stays armed, by the lock's name.
  caf::reacts_to<retire_atom, bool>,
  /// From the registry (a shared store's event source): lease `token` started (`ended` false)
  /// or ended, on any instance. An end frees the lock for the waiters here; a start of a newer
  /// lease means the lease watched here is over, and if no end of it was heard, the store lost it.
  caf::reacts_to<heard_atom, uint64_t, bool>,
  /// From the registry (a shared store's event source, back after an outage): changes may have
  /// been missed, so the watched lease is looked at again and the first waiter tries.
  caf::reacts_to<resync_atom>,
  /// From the registry: the service drains; answer every waiter shutting_down.
  caf::reacts_to<drain_atom>,
  /// From the registry (a shared store's event source): watch lease (owner, token), granted or
  /// renewed elsewhere, until it ends: it ends at `expires_at_ms` (wall clock), `remaining_ms`
  /// from now.
  caf::reacts_to<watch_atom, std::string, uint64_t, int64_t, int64_t>>;

/// Hands out fencing tokens, strictly increasing, never reused across restarts.
using fence_issuer_actor = caf::typed_actor<caf::replies_to<next_token_atom>::with<uint64_t>>;

/// Owns the timers that end leases: one per lock name, whether its actor runs or retired.
using watchdog_actor = caf::typed_actor<
  /// A timer was armed in the watchdog's expiry_schedule earlier than any tick in flight: tick
  /// at monotonic time `tick_ns`.
  caf::reacts_to<arm_atom, int64_t>,
  /// Sends expiries to this registry from now on.
  caf::reacts_to<route_atom, registry_actor>,
  caf::reacts_to<tick_atom>,
  /// From itself: time to look for a stall of the process.
  caf::reacts_to<heartbeat_atom>>;

} // namespace fencelock
