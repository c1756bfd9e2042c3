#pragma once

// The one lock actor: one per lock name, the serialization point of that lock on this instance,
// whatever store runs behind it (actors/store/backend.hpp).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <caf/actor_addr.hpp>
#include <caf/actor_clock.hpp>

#include "actors/clock.hpp"
#include "actors/expiry_schedule.hpp"
#include "actors/interfaces.hpp"
#include "actors/lock_state.hpp"
#include "actors/store/backend.hpp"

namespace fencelock {

class lock_directory;
class metrics;

/// What every lock actor knows about the rest of the service. One per service, shared.
struct lock_context {
  /// The store: each lock actor gets its backend from it.
  std::shared_ptr<store_runtime> store;
  /// Where changes are announced: the store's event source (null = nowhere, in unit tests).
  std::shared_ptr<change_announcer> announcer;
  watchdog_actor watchdog;
  /// The watchdog's timers, armed and disarmed there directly (actors/expiry_schedule.hpp).
  std::shared_ptr<expiry_schedule> expiries;
  registry_actor registry;
  /// Maps the actor clock to wall-clock time for event timestamps.
  clock_mapping clock;
  /// Waiters one lock may queue.
  uint32_t max_waiters = 1000;
  /// Waiting acquires over all locks (counted in `waiting`).
  uint32_t max_waiters_total = 100'000;
  /// Lock actors the registry keeps at once before it refuses to spawn another.
  uint32_t max_locks = 1'048'576;
  /// Idle lock actors the registry keeps for their next request (config::idle_lock_actors).
  uint32_t idle_kept = 1'024;
  /// Counts lease ends, waits and mailbox depths (null = not counted, as in some unit tests).
  std::shared_ptr<fencelock::metrics> metrics;
  /// Waiting acquires over all locks, shared by every lock actor (null = not bounded).
  std::shared_ptr<std::atomic<int64_t>> waiting;
  /// Set when the service drains for shutdown: acquires no longer queue (null = never).
  std::shared_ptr<std::atomic<bool>> draining;
  /// The running lock actors, told which are waiting (null in unit tests without a registry).
  std::shared_ptr<lock_directory> locks;
};

using lock_context_ptr = std::shared_ptr<const lock_context>;

struct lock_actor_state {
  // Not an aggregate: CAF would otherwise try to build the state from the actor pointer.
  lock_actor_state() = default;
  lock_actor_state(const lock_actor_state&) = delete;
  lock_actor_state& operator=(const lock_actor_state&) = delete;
  ~lock_actor_state();

  lock_state lock;
  lock_context_ptr ctx;
  std::unique_ptr<lock_backend> backend;
  /// The expiry armed in the watchdog's schedule (token 0 = none), so that it is armed and disarmed
  /// exactly when the lease the actor keeps asks for it.
  uint64_t armed_token = 0;
  caf::actor_clock::time_point armed_deadline;
  /// The wait timer armed (the earliest of those armed, if several): waiters give up by then.
  std::optional<caf::actor_clock::time_point> wait_armed;
  uint64_t seen = 0;                   // messages routed here (lock directory), handled so far
  uint64_t idle_reported = UINT64_MAX; // `seen` when idle was last reported
  uint32_t in_flight = 0;              // backend calls awaiting their answer
  /// This actor, while the lock directory lists it as waiting (null otherwise): it unlists
  /// itself as it ends, however it ends.
  caf::actor_addr listed_waiting;
  static inline const char* name = "fencelock.lock";
};

/// Runs lock `name`: loads it from the store, then serves one request at a time, each through
/// the store's backend (awaited: nothing else runs meanwhile). Keeps the FIFO of waiters, arms
/// the lease's expiry at the watchdog, announces changes, and reports itself idle to the
/// registry, which then retires it: with nothing to keep, or keeping only a lease nobody waits
/// for (a kept lease, lock_directory.hpp). `grant_id` is the request a kept lease was granted
/// to here (0 = none), so that a cancel can still undo a grant nobody received.
lock_actor::behavior_type lock_actor_impl(lock_actor::stateful_pointer<lock_actor_state> self,
                                          std::string name, lock_context_ptr ctx,
                                          uint64_t grant_id);

} // namespace fencelock
