#include "actors/wiring.hpp"

#include <chrono>

#include "actors/registry.hpp"
#include "actors/watchdog.hpp"

namespace fencelock {

std::vector<caf::actor> service_actors::stop_order() const {
  std::vector<caf::actor> all{caf::actor_cast<caf::actor>(registry),
                              caf::actor_cast<caf::actor>(watchdog)};
  if (store)
    for (auto& a : store->actors())
      all.push_back(a);
  std::erase_if(all, [](const caf::actor& a) { return !a; });
  return all;
}

service_actors spawn_service_actors(caf::actor_system& sys, std::shared_ptr<store_runtime> store,
                                    const config& cfg, clock_mapping clock, service_links links) {
  stall_settings stalls;
  stalls.threshold = std::chrono::milliseconds{cfg.stall_threshold_ms};
  stalls.grace = std::chrono::milliseconds{cfg.stall_grace_ms};
  service_actors result;
  result.store = store;
  result.expiries = std::make_shared<expiry_schedule>();
  result.watchdog = sys.spawn(watchdog_impl, result.expiries, store->stalls(), stalls, links.stats,
                              expiry_pacing::per_second(cfg.max_expiries_per_second));
  lock_context ctx;
  ctx.store = store;
  ctx.announcer = store->announcer();
  ctx.watchdog = result.watchdog;
  ctx.expiries = result.expiries;
  ctx.clock = clock;
  ctx.max_waiters = cfg.max_waiters_per_lock;
  ctx.max_waiters_total = cfg.max_waiters_total;
  ctx.max_locks = cfg.max_locks;
  ctx.idle_kept = cfg.idle_lock_actors;
  ctx.metrics = std::move(links.stats);
  ctx.waiting = std::move(links.waiting);
  ctx.draining = std::move(links.draining);
  result.locks = std::make_shared<lock_directory>();
  ctx.locks = result.locks;
  result.registry =
    sys.spawn(registry_impl, std::move(ctx), store->lister(), store->held_at_start());
  store->start(result.registry);
  return result;
}

} // namespace fencelock
