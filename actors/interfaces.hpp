#pragma once

// Typed interfaces of the actors behind the registry. Only the registry's interface is public
// (fencelock/interfaces.hpp); these are the service's own wiring.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/replies_to.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <caf/allowed_unsafe_message_type.hpp>

#include "actors/store/lease_store.hpp"
#include "actors/store/redis/scripts.hpp"
#include "actors/store/redis/value.hpp"
#include "fencelock/interfaces.hpp"

namespace fencelock {

/// One per lock name: the serialization point of that lock's lease, token and waiters.
using lock_actor = caf::typed_actor<
  caf::replies_to<acquire_atom, acquire_request>::with<lease>,
  caf::replies_to<renew_atom, renew_request>::with<lease>,
  caf::replies_to<release_atom, release_request>::with<bool>,
  caf::replies_to<status_atom, std::string>::with<lock_status>,
  caf::replies_to<check_atom, check_request>::with<check_result>,
  caf::reacts_to<cancel_atom, std::string, uint64_t>,
  /// From the watchdog: the lease with this token may have reached its deadline.
  caf::reacts_to<expire_atom, uint64_t>,
  /// From itself: the waiter with this request id gives up.
  caf::reacts_to<wait_timeout_atom, uint64_t>,
  /// From the registry: quit, nobody routes to this actor any more.
  caf::reacts_to<retire_atom>,
  /// The lock may be free now (Redis store: a release or expiry on any instance, or a retry
  /// timer of this generation; 0 = always): waiters try again.
  caf::reacts_to<wake_atom, uint64_t>,
  /// From the registry: the service drains; answer every waiter shutting_down.
  caf::reacts_to<drain_atom>,
  /// From the registry (Redis store): watch lease (owner, token) until `expires_at_ms`.
  caf::reacts_to<watch_atom, std::string, uint64_t, int64_t>>;

/// Hands out fencing tokens, strictly increasing, never reused across restarts.
using fence_issuer_actor = caf::typed_actor<caf::replies_to<next_token_atom>::with<uint64_t>>;

/// Owns the timers that end leases.
using watchdog_actor = caf::typed_actor<
  /// Arms (or re-arms) the expiry of `lock`'s lease `token` at monotonic time `deadline_ns`.
  caf::reacts_to<arm_atom, lock_actor, uint64_t, int64_t>,
  caf::reacts_to<tick_atom>,
  /// From itself: time to look for a stall of the process.
  caf::reacts_to<heartbeat_atom>>;

/// Wraps a lease_store; batches concurrent writes into one durable commit.
using store_actor = caf::typed_actor<
  caf::replies_to<load_atom, std::string>::with<stored_lock>,
  caf::replies_to<put_atom, stored_lock>::with<bool>,
  caf::replies_to<reserve_atom, uint64_t>::with<bool>,
  caf::replies_to<list_atom, list_request>::with<std::vector<stored_lock>>,
  caf::reacts_to<flush_atom>>;

/// A Redis script's answer on its way from the store's I/O thread back into its actor.
struct redis_reply {
  redis::outcome result;
};

} // namespace fencelock

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::redis_reply)

namespace fencelock {

/// Serves the Redis store to lock actors (actors/store/redis/redis_store.hpp): each request is
/// one Lua script, atomic across every instance that shares the Redis.
using redis_store_actor = caf::typed_actor<
  caf::replies_to<acquire_atom, acquire_request>::with<redis::script_lease>,
  caf::replies_to<renew_atom, renew_request>::with<redis::script_lease>,
  /// Ends lease `token` of `owner` with the given cause (released, session_closed,
  /// undelivered).
  caf::replies_to<release_atom, release_request, std::string>::with<redis::script_lease>,
  /// Ends lease `token` of lock `name` if its deadline passed.
  caf::replies_to<expire_atom, std::string, uint64_t>::with<redis::script_lease>,
  caf::replies_to<status_atom, std::string>::with<redis::script_lease>,
  caf::replies_to<list_atom, list_request>::with<std::vector<redis::script_lease>>,
  caf::reacts_to<redis_reply_atom, uint64_t, redis_reply>>;

} // namespace fencelock
