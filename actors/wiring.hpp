#pragma once

// Spawns the service's own actors over a store: the watchdog and the registry (which spawns the
// lock actors). service::start uses it, and so do the benchmarks and the unit fixtures, so that
// what is measured and tested is what runs.

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <caf/actor_system.hpp>

#include "actors/clock.hpp"
#include "actors/expiry_schedule.hpp"
#include "actors/interfaces.hpp"
#include "actors/lock_directory.hpp"
#include "actors/store/backend.hpp"
#include "fencelock/config.hpp"

namespace fencelock {

class metrics;

/// The service's actors and the store they run over.
struct service_actors {
  std::shared_ptr<store_runtime> store;
  watchdog_actor watchdog;
  /// The watchdog's timers, which the lock actors arm directly.
  std::shared_ptr<expiry_schedule> expiries;
  registry_actor registry;
  /// The lock actors that run (the registry keeps it): direct calls go through it.
  std::shared_ptr<lock_directory> locks;

  /// Returns every actor, the registry first and the store's last: the order to stop them in.
  std::vector<caf::actor> stop_order() const;
};

/// What the lock actors share with the service around them (each may be null: not counted).
struct service_links {
  std::shared_ptr<metrics> stats;
  /// Waiting acquires over all locks.
  std::shared_ptr<std::atomic<int64_t>> waiting;
  /// Set when the service drains: acquires no longer queue.
  std::shared_ptr<std::atomic<bool>> draining;
};

/// Spawns the watchdog and the registry over `store` with the limits of `cfg`, starts the
/// store's event source, and returns the handles. Event timestamps go through `clock`.
service_actors spawn_service_actors(caf::actor_system& sys, std::shared_ptr<store_runtime> store,
                                    const config& cfg, clock_mapping clock,
                                    service_links links = {});

} // namespace fencelock
