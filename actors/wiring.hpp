#pragma once

// Spawns the service's actors over a store. service::start uses it, and so do the benchmarks,
// so that what is measured is what runs.

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <caf/actor_system.hpp>

#include "actors/interfaces.hpp"
#include "fencelock/config.hpp"

namespace fencelock {

class event_hub;
class metrics;

class redis_store;

struct service_actors {
  store_actor store;           // embedded store only
  fence_issuer_actor fence;    // embedded store only
  redis_store_actor redis;     // Redis store only
  watchdog_actor watchdog;
  registry_actor registry;

  /// Returns every handle, the registry first and the store last: the order to stop them in.
  std::vector<caf::actor> stop_order() const;
};

/// Reads the fence floor and the held locks from `store` (blocking: call it before serving),
/// then spawns the actors. `detached_store` gives the store actor its own thread, for stores
/// that block on I/O. The lock actors count lease grants and ends into `stats` and publish their
/// changes to `events` and their waiting acquires into `waiting`, and queue no more waiters once
/// `draining` is set (null = none).
caf::expected<service_actors> spawn_service_actors(caf::actor_system& sys,
                                                   std::shared_ptr<lease_store> store,
                                                   const config& cfg, bool detached_store,
                                                   std::shared_ptr<metrics> stats = nullptr,
                                                   std::shared_ptr<event_hub> events = nullptr,
                                                   std::shared_ptr<std::atomic<int64_t>> waiting
                                                   = nullptr,
                                                   std::shared_ptr<std::atomic<bool>> draining
                                                   = nullptr);

/// Spawns the actors over the Redis store `store` (which the caller starts and stops): lock
/// actors that run every change as a script, and no fence issuer (Redis hands out tokens).
service_actors spawn_redis_service_actors(caf::actor_system& sys,
                                          std::shared_ptr<redis_store> store, const config& cfg,
                                          std::shared_ptr<metrics> stats,
                                          std::shared_ptr<event_hub> events,
                                          std::shared_ptr<std::atomic<int64_t>> waiting,
                                          std::shared_ptr<std::atomic<bool>> draining);

} // namespace fencelock
