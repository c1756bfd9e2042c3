#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "actors/clock.hpp"
#include "actors/interfaces.hpp"
#include "actors/lock_state.hpp"
#include "actors/stall.hpp"

namespace fencelock {

class event_hub;
class metrics;

/// What every lock actor needs to know about the rest of the service.
struct lock_context {
  /// The embedded store (with `fence`); unset when the Redis store is used.
  store_actor store;
  /// The Redis store; when set, lock actors are redis_lock_actors (actors/redis_lock_actor.hpp).
  redis_store_actor redis;
  fence_issuer_actor fence;
  watchdog_actor watchdog;
  registry_actor registry;
  clock_mapping clock;
  uint32_t max_waiters = 1000;
  /// How long a store or fence request may take before it counts as failed (fail closed).
  caf::timespan store_timeout = std::chrono::seconds{10};
  /// Counts lease grants and ends (null = not counted, as in unit tests and benchmarks).
  std::shared_ptr<fencelock::metrics> metrics;
  /// Receives every change of the lease once it is on record (null = nobody listens).
  std::shared_ptr<event_hub> events;
  /// Waiting acquires over all locks, shared by every lock actor (null = not bounded).
  std::shared_ptr<std::atomic<int64_t>> waiting;
  uint32_t max_waiters_total = 100'000;
  /// Lock actors the registry keeps at once before it refuses to spawn another.
  uint32_t max_locks = 100'000;
  /// The watchdog's record of process stalls, whose grace puts off judging leases (null = none).
  std::shared_ptr<stall_window> stall;
  /// Set when the service drains for shutdown: acquires no longer queue (null = never).
  std::shared_ptr<std::atomic<bool>> draining;
};

struct lock_actor_state {
  // Not an aggregate: CAF would otherwise try to build the state from the actor pointer.
  lock_actor_state() = default;

  lock_state lock;
  lock_context ctx;
  uint64_t seen = 0;                    // messages the registry routed here, handled so far
  uint64_t idle_reported = UINT64_MAX;  // `seen` when idle was last reported
  uint32_t in_flight = 0;               // operations awaiting the fence issuer or the store
  static inline const char* name = "fencelock.lock";
};

/// Runs the lock `name`: loads its record, then serves acquire, renew, release, status and cancel
/// one at a time. Every state change is persisted before it is applied and answered; while a
/// write is in flight the actor handles nothing else. Reports itself idle to the registry, which
/// then retires it.
lock_actor::behavior_type lock_actor_impl(lock_actor::stateful_pointer<lock_actor_state> self,
                                          std::string name, lock_context ctx);

} // namespace fencelock
