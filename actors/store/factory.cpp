#include "actors/store/factory.hpp"

#include <chrono>

#include <caf/scheduler/abstract_coordinator.hpp>

#include "actors/store/embedded/embedded_store.hpp"
#include "actors/store/embedded/memory_store.hpp"
#include "actors/store/embedded/sqlite_store.hpp"
#include "actors/store/redis/redis_runtime.hpp"
#include "common/redis_url.hpp"
#include "fencelock/errc.hpp"

namespace fencelock {

namespace {

/// The embedded backend over `leases`. `blocking`: its commits wait on the disk.
///
/// A blocking store's actor still runs on the scheduler when it has two workers or more: its
/// commit (one fsync, ~0.1-0.3 ms here) then holds one worker while the others go on, and the
/// lock actors it answers run on that same worker, with no thread to wake. On a thread of its
/// own every write cost two hand-offs (to that thread, and back to a worker), and an idle
/// thread's wake-up on this 2-core machine costs about what a commit does (one durable client
/// in process: ~450 -> ~300 µs per acquire+release, against two bare commits of ~260 µs; the
/// hot lock +5 to +30 %; uncontended HTTP and WebSocket the same or better). With a single
/// worker a commit would stop every actor, so it gets its own thread then.
caf::expected<std::shared_ptr<store_runtime>> make_embedded_over(
  caf::actor_system& sys, const config& cfg, clock_mapping clock, std::shared_ptr<event_hub> events,
  std::shared_ptr<store_reporter> reporter, std::shared_ptr<lease_store> leases, bool blocking) {
  embedded_settings settings;
  settings.clock = clock;
  settings.fence_block = cfg.fence_block;
  settings.fence_floor = static_cast<uint64_t>(cfg.fence_floor);
  settings.watch_stalls = cfg.stall_threshold_ms > 0;
  settings.released_kept = cfg.max_released_records;
  settings.detached = blocking && sys.scheduler().num_workers() < 2;
  auto store = embedded_store::make(sys, std::move(leases), settings, std::move(events),
                                    std::move(reporter));
  if (!store)
    return std::move(store.error());
  return std::shared_ptr<store_runtime>{std::move(*store)};
}

caf::expected<std::shared_ptr<store_runtime>> make_embedded(
  caf::actor_system& sys, const config& cfg, clock_mapping clock, std::shared_ptr<event_hub> events,
  std::shared_ptr<store_reporter> reporter) {
  auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::steady_clock::now().time_since_epoch())
                  .count();
  auto opened = sqlite_store::open(cfg.data_dir, current_boot_id(), now_ns);
  if (!opened)
    return std::move(opened.error());
  return make_embedded_over(sys, cfg, clock, std::move(events), std::move(reporter),
                            std::shared_ptr<lease_store>{std::move(*opened)}, true);
}

caf::expected<std::shared_ptr<store_runtime>> make_memory(caf::actor_system& sys, const config& cfg,
                                                          clock_mapping clock,
                                                          std::shared_ptr<event_hub> events,
                                                          std::shared_ptr<store_reporter> reporter) {
  // Nothing survives a restart, so tokens cannot continue from a stored ceiling. They start
  // from the wall clock in microseconds instead: a restarted instance still hands out larger
  // ones, unless the clock went back or it granted more than a million a second.
  auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  auto leases = std::make_shared<memory_store>(static_cast<uint64_t>(now_us));
  return make_embedded_over(sys, cfg, clock, std::move(events), std::move(reporter),
                            std::move(leases), false);
}

caf::expected<std::shared_ptr<store_runtime>> make_redis(caf::actor_system& sys, const config& cfg,
                                                         clock_mapping clock,
                                                         std::shared_ptr<event_hub> events,
                                                         std::shared_ptr<store_reporter> reporter) {
  std::string why;
  auto where = redis::parse_url(cfg.store, why);
  if (!where)
    return caf::make_error(errc::store_unavailable, "store: " + why);
  redis_settings settings;
  settings.where = std::move(*where);
  settings.key_prefix = cfg.redis_key_prefix;
  settings.timeout = std::chrono::milliseconds{cfg.redis_timeout_ms};
  settings.fence_floor = static_cast<uint64_t>(cfg.fence_floor);
  return std::shared_ptr<store_runtime>{
    redis_runtime::make(sys, std::move(settings), clock, std::move(events), std::move(reporter))};
}

} // namespace

caf::expected<std::shared_ptr<store_runtime>> make_store(caf::actor_system& sys, const config& cfg,
                                                         clock_mapping clock,
                                                         std::shared_ptr<event_hub> events,
                                                         std::shared_ptr<store_reporter> reporter) {
  if (cfg.store == "embedded")
    return make_embedded(sys, cfg, clock, std::move(events), std::move(reporter));
  if (cfg.store == "memory")
    return make_memory(sys, cfg, clock, std::move(events), std::move(reporter));
  if (redis::is_redis_url(cfg.store))
    return make_redis(sys, cfg, clock, std::move(events), std::move(reporter));
  return caf::make_error(errc::store_unavailable,
                         "store: unknown store " + redis::redacted_text(cfg.store));
}

} // namespace fencelock
