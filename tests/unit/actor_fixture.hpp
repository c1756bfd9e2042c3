#pragma once

// Runs the lock service's actors on CAF's test coordinator: one thread, time moves only when a
// test says so (advance), and every message is processed by run(). No sleeps, no sockets.

#include <memory>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include "actors/fence_issuer.hpp"
#include "actors/registry.hpp"
#include "actors/store/memory_store.hpp"
#include "actors/store/store_actor.hpp"
#include "actors/watchdog.hpp"
#include "fencelock/errc.hpp"
#include "fencelock/messages.hpp"

namespace fencelock::test {

/// The outcome of a request, filled in once the reply arrives.
template <class T>
using reply = std::shared_ptr<std::optional<caf::expected<T>>>;

/// Returns the error code of `r`, or nothing when it is no fencelock error.
template <class T>
std::optional<errc> code_of(const reply<T>& r) {
  errc code;
  if (!r->has_value() || r->value() || !as_errc(r->value().error(), code))
    return std::nullopt;
  return code;
}

inline caf::actor_system_config& testing_config(caf::actor_system_config& cfg) {
  add_message_types(cfg);
  cfg.set("scheduler.policy", caf::atom("testing"));
  cfg.set("logger.verbosity", caf::atom("quiet"));
  return cfg;
}

/// Processes every pending message, including timers that are due now.
inline void run_until_idle(caf::scheduler::test_coordinator& sched) {
  do {
    sched.run();
  } while (sched.clock().advance_time(caf::timespan{0}) > 0);
}

/// Moves the test clock forward by `ms` and processes what became due.
inline void advance_clock(caf::scheduler::test_coordinator& sched, int64_t ms) {
  sched.clock().advance_time(std::chrono::milliseconds{ms});
  run_until_idle(sched);
}

/// Sends a request to `dest` from a fresh client actor of `sys`; the reply lands in the result
/// once the coordinator ran.
template <class T, class Handle, class... Ts>
reply<T> ask_from(caf::actor_system& sys, const Handle& dest, Ts... xs) {
  auto out = std::make_shared<std::optional<caf::expected<T>>>();
  sys.spawn([=](caf::event_based_actor* self) {
    self->request(dest, caf::infinite, xs...)
      .then([=](T& x) { *out = std::move(x); }, [=](caf::error& err) { *out = std::move(err); });
  });
  return out;
}

struct actor_fixture {
  caf::actor_system_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
  std::shared_ptr<lease_store> store;
  store_actor store_handle;
  fence_issuer_actor fence;
  watchdog_actor watchdog;
  registry_actor registry;
  lock_context ctx;

  /// Starts the service's actors over `shared` (a fresh memory store when null), as a restart.
  /// With `stalls`, the watchdog watches for stalls of the process (advance time in one big
  /// step to simulate one).
  explicit actor_fixture(std::shared_ptr<lease_store> shared = nullptr, uint32_t max_waiters = 100,
                         uint64_t fence_block = 10,
                         std::optional<stall_settings> stalls = std::nullopt)
    : sys(testing_config(cfg)),
      sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())),
      store(shared ? std::move(shared) : std::make_shared<memory_store>()) {
    store_handle = sys.spawn(store_actor_impl, store);
    fence = sys.spawn(fence_issuer_impl, store_handle, *store->fence_floor(), fence_block);
    std::shared_ptr<stall_window> window;
    if (stalls)
      window = std::make_shared<stall_window>();
    watchdog = sys.spawn(watchdog_impl, window, stalls.value_or(stall_settings{}),
                         std::shared_ptr<metrics>{});
    ctx.store = store_handle;
    ctx.fence = fence;
    ctx.watchdog = watchdog;
    ctx.clock = clock_mapping{1'000'000, 0};
    ctx.max_waiters = max_waiters;
    ctx.stall = window;
    registry = sys.spawn(registry_impl, ctx, *store->held_names());
    run();
  }

  ~actor_fixture() {
    for (auto h : {caf::actor_cast<caf::actor>(registry), caf::actor_cast<caf::actor>(fence),
                   caf::actor_cast<caf::actor>(watchdog),
                   caf::actor_cast<caf::actor>(store_handle)})
      caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
    run();
  }

  /// Processes every pending message, including timers that are due now.
  void run() {
    run_until_idle(sched);
  }

  /// Moves the clock forward by `ms` and processes what became due.
  void advance(int64_t ms) {
    advance_clock(sched, ms);
  }

  /// Sends a request from a fresh client actor; the reply lands in the result once run() ran.
  template <class T, class Handle, class... Ts>
  reply<T> ask(const Handle& dest, Ts... xs) {
    return ask_from<T>(sys, dest, xs...);
  }

  reply<lease> acquire(const std::string& name, const std::string& owner, int64_t ttl_ms,
                       int64_t wait_ms = 0, uint64_t request_id = 0) {
    static uint64_t next_id = 1000;
    auto r = ask<lease>(registry, acquire_atom_v,
                        acquire_request{name, owner, ttl_ms, wait_ms,
                                        request_id ? request_id : next_id++});
    run();
    return r;
  }

  reply<lease> renew(const std::string& name, const std::string& owner, uint64_t token,
                     int64_t ttl_ms = 0) {
    auto r = ask<lease>(registry, renew_atom_v, renew_request{name, owner, token, ttl_ms});
    run();
    return r;
  }

  reply<bool> release(const std::string& name, const std::string& owner, uint64_t token) {
    auto r = ask<bool>(registry, release_atom_v, release_request{name, owner, token});
    run();
    return r;
  }

  lock_status status(const std::string& name) {
    auto r = ask<lock_status>(registry, status_atom_v, name);
    run();
    return r->value().value();
  }

  size_t running_actors() {
    return sys.registry().running();
  }
};

} // namespace fencelock::test
