#include "actors/wiring.hpp"

#include <chrono>

#include "actors/fence_issuer.hpp"
#include "actors/registry.hpp"
#include "actors/store/redis/redis_store.hpp"
#include "actors/store/store_actor.hpp"
#include "actors/watchdog.hpp"

namespace fencelock {

std::vector<caf::actor> service_actors::stop_order() const {
  std::vector<caf::actor> all{caf::actor_cast<caf::actor>(registry),
                              caf::actor_cast<caf::actor>(fence),
                              caf::actor_cast<caf::actor>(watchdog),
                              caf::actor_cast<caf::actor>(store),
                              caf::actor_cast<caf::actor>(redis)};
  std::erase_if(all, [](const caf::actor& a) { return !a; });
  return all;
}

namespace {

std::shared_ptr<stall_window> stall_window_for(const config& cfg) {
  if (cfg.stall_threshold_ms > 0)
    return std::make_shared<stall_window>();
  return nullptr;
}

stall_settings stall_settings_for(const config& cfg) {
  stall_settings stalls;
  stalls.threshold = std::chrono::milliseconds{cfg.stall_threshold_ms};
  stalls.grace = std::chrono::milliseconds{cfg.stall_grace_ms};
  return stalls;
}

} // namespace

caf::expected<service_actors> spawn_service_actors(caf::actor_system& sys,
                                                   std::shared_ptr<lease_store> store,
                                                   const config& cfg, bool detached_store,
                                                   std::shared_ptr<metrics> stats,
                                                   std::shared_ptr<event_hub> events,
                                                   std::shared_ptr<std::atomic<int64_t>> waiting,
                                                   std::shared_ptr<std::atomic<bool>> draining) {
  auto floor = store->fence_floor();
  if (!floor)
    return std::move(floor.error());
  auto held = store->held_names();
  if (!held)
    return std::move(held.error());
  service_actors result;
  result.store = detached_store ? sys.spawn<caf::detached>(store_actor_impl, store)
                                : sys.spawn(store_actor_impl, store);
  result.fence = sys.spawn(fence_issuer_impl, result.store, *floor, uint64_t{cfg.fence_block});
  // A watchdog that watches for stalls of this process, unless configured off.
  auto stall = stall_window_for(cfg);
  result.watchdog = sys.spawn(watchdog_impl, stall, stall_settings_for(cfg), stats);
  lock_context ctx;
  ctx.store = result.store;
  ctx.fence = result.fence;
  ctx.watchdog = result.watchdog;
  ctx.clock = clock_mapping::now();
  ctx.max_waiters = cfg.max_waiters_per_lock;
  ctx.metrics = std::move(stats);
  ctx.events = std::move(events);
  ctx.waiting = std::move(waiting);
  ctx.stall = std::move(stall);
  ctx.draining = std::move(draining);
  ctx.max_waiters_total = cfg.max_waiters_total;
  ctx.max_locks = cfg.max_locks;
  result.registry = sys.spawn(registry_impl, std::move(ctx), std::move(*held));
  return result;
}

service_actors spawn_redis_service_actors(caf::actor_system& sys,
                                          std::shared_ptr<redis_store> store, const config& cfg,
                                          std::shared_ptr<metrics> stats,
                                          std::shared_ptr<event_hub> events,
                                          std::shared_ptr<std::atomic<int64_t>> waiting,
                                          std::shared_ptr<std::atomic<bool>> draining) {
  service_actors result;
  result.redis = sys.spawn(redis_store_actor_impl, std::move(store), stats);
  // Redis judges every deadline on its own clock, so a stall of this process cannot end a lease
  // early here: the watchdog only times this instance's checks.
  result.watchdog = sys.spawn(watchdog_impl, std::shared_ptr<stall_window>{},
                              stall_settings_for(cfg), stats);
  lock_context ctx;
  ctx.redis = result.redis;
  ctx.watchdog = result.watchdog;
  ctx.clock = clock_mapping::now();
  ctx.max_waiters = cfg.max_waiters_per_lock;
  // The store fails a request itself after redis-timeout-ms; this is the outer bound.
  ctx.store_timeout = std::chrono::milliseconds{cfg.redis_timeout_ms} * 2;
  ctx.metrics = std::move(stats);
  ctx.events = std::move(events);
  ctx.waiting = std::move(waiting);
  ctx.max_waiters_total = cfg.max_waiters_total;
  ctx.max_locks = cfg.max_locks;
  ctx.draining = std::move(draining);
  result.registry = sys.spawn(registry_impl, std::move(ctx), std::vector<std::string>{});
  return result;
}

} // namespace fencelock
