#pragma once

// The lock actor of the Redis store. The truth of the lease lives in Redis and every change is
// one script (actors/store/redis/scripts.cpp); this actor is the instance's serialization point
// for the lock, the queue of this instance's waiters, and the watcher of the leases it granted
// or renewed, whose expiry it reports (the expired event, and so lease_lost to their holders).

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "actors/lock_actor.hpp"

namespace fencelock {

struct redis_lock_actor_state {
  // Not an aggregate: CAF would otherwise try to build the state from the actor pointer.
  redis_lock_actor_state() = default;

  /// A lease this instance granted or renewed, watched until it ends.
  struct watched_lease {
    std::string owner;
    uint64_t token = 0;
    /// The request_id of the acquire that was granted here (0 = none): an undelivered grant is
    /// undone with it.
    uint64_t grant_id = 0;
    /// The lease's revision in the last answer: the next event of this lease is one more.
    uint64_t revision = 0;
    /// Its deadline as the last answer put it, on this instance's clock.
    caf::actor_clock::time_point deadline;
  };

  /// The wake-up generation that means "the event channel was down": besides the waiters,
  /// look at the watched lease at once, in case Redis lost it meanwhile.
  static constexpr uint64_t resync = UINT64_MAX;

  std::string lock_name;
  lock_context ctx;
  std::optional<watched_lease> watched;
  std::deque<waiter_info> waiters;
  /// The holder as last seen, for the answer to a waiter that gives up.
  std::string last_owner;
  int64_t last_expires_at_ms = 0;
  /// Generation of the waiters' retry timer: only the latest one counts.
  uint64_t retry_generation = 0;
  uint64_t seen = 0;                    // messages the registry routed here, handled so far
  uint64_t idle_reported = UINT64_MAX;  // `seen` when idle was last reported
  uint32_t in_flight = 0;               // script calls awaiting their answer
  static inline const char* name = "fencelock.redis_lock";
};

/// Runs lock `name` over the Redis store ctx.redis. Script calls are awaited: one operation at
/// a time per lock and instance, as with the embedded store; Redis orders them across
/// instances.
lock_actor::behavior_type
redis_lock_actor_impl(lock_actor::stateful_pointer<redis_lock_actor_state> self, std::string name,
                      lock_context ctx);

} // namespace fencelock
