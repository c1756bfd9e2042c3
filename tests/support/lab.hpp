#pragma once

// The lock service's actors (registry, lock actors, watchdog, and the store's own actors) on
// CAF's test coordinator: one thread, and time moves only when a test says so (advance). The
// same lab runs over either store, so that one test body checks the semantics of both:
//
//   embedded_lab   the embedded store over a memory_store (or a store the test passes in)
//   redis_lab      the Redis store over a real redis-server of the test's own; its replies and
//                  channel events are queued by the I/O thread and delivered on the test thread
//                  by run(), so that the actors still see one thread
//   model_lab      the Redis store's backend over a model of its scripts (unit tests:
//                  tests/unit/redis_model.hpp builds it)
//
// Time: the lab's clock drives every actor timer (expiry, wait timeouts). Redis judges lease
// deadlines on its own clock, so with redis_lab a test may advance time for the actors' timers,
// never to make Redis end a lease.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include "actors/event_hub.hpp"
#include "actors/lock_actor.hpp"
#include "actors/metrics.hpp"
#include "actors/store/embedded/embedded_store.hpp"
#include "actors/store/redis/redis_runtime.hpp"
#include "actors/wiring.hpp"
#include "fencelock/config.hpp"
#include "fencelock/errc.hpp"
#include "fencelock/messages.hpp"
#include "actors/store/embedded/memory_store.hpp"
#include "support/redis_server.hpp"

namespace fencelock::test {

/// The outcome of a request, filled in once the reply arrives (on the test thread).
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

/// Sets `cfg` up for the test coordinator; returns it.
caf::actor_system_config& testing_config(caf::actor_system_config& cfg);

/// Processes every pending message, including timers that are due now.
void run_until_idle(caf::scheduler::test_coordinator& sched);

/// Moves the test clock forward by `ms` and processes what became due.
void advance_clock(caf::scheduler::test_coordinator& sched, int64_t ms);

/// Sends a request to `dest` from a fresh client actor of `sys`; the reply lands in the result
/// once the coordinator ran.
template <class T, caf::message_priority P = caf::message_priority::normal, class Handle,
          class... Ts>
reply<T> ask_from(caf::actor_system& sys, const Handle& dest, Ts... xs) {
  auto out = std::make_shared<std::optional<caf::expected<T>>>();
  sys.spawn([=](caf::event_based_actor* self) {
    self->template request<P>(dest, caf::infinite, xs...)
      .then([=](T& x) { *out = std::move(x); }, [=](caf::error& err) { *out = std::move(err); });
  });
  return out;
}

/// The limits a lab runs with; everything else is the service's default configuration.
struct lab_options {
  uint32_t max_waiters = 100;
  uint32_t max_locks = 100'000;
  /// Idle lock actors kept (config::idle_lock_actors); 0 here, so that an idle lock's actor is
  /// retired at once and tests see exactly which actors live.
  uint32_t idle_kept = 0;
  uint64_t fence_block = 10;
  /// The lowest token to hand out (config::fence_floor; 0: none).
  uint64_t fence_floor = 0;
  /// Watch for stalls of the process (heartbeat 250 ms, threshold 2 s, grace 5 s).
  bool watch_stalls = false;
};

/// Returns the service configuration of `opts`.
config lab_config(const lab_options& opts);

/// Queues what a real Redis store's I/O thread delivers (script replies, channel events) and
/// hands it over on the test thread, in pump().
class pumped_runner : public script_runner {
public:
  /// Connects to `where` with keys under `prefix`; channel events go to `fanout` (on pump()).
  /// Tokens start at `fence_floor` or above (redis_settings::fence_floor).
  pumped_runner(redis::endpoint where, std::string prefix, std::shared_ptr<redis_fanout> fanout,
                uint64_t fence_floor = 0);
  ~pumped_runner() override;

  void run(redis::script_id id, std::vector<std::string> keys, std::vector<std::string> args,
           redis::reply_handler done) override;
  void post(std::function<void()> f) override;
  const redis_settings& settings() const noexcept override;

  /// Returns whether the store is connected and subscribed.
  bool ready() const noexcept;

  /// Returns whether a script's reply is still on its way.
  bool busy() const;

  /// Runs what arrived, on the calling thread; waits up to `wait` for something to arrive
  /// first. Returns whether anything ran.
  bool pump(std::chrono::milliseconds wait);

private:
  void enqueue(std::function<void()> f);

  std::unique_ptr<redis_store> store_;
  mutable std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  uint64_t in_flight_ = 0;
};

/// The actors over one store on the test coordinator; see the top of this file.
class lab {
public:
  virtual ~lab();

  caf::actor_system_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
  std::shared_ptr<metrics> stats = std::make_shared<metrics>();
  std::shared_ptr<event_hub> events = std::make_shared<event_hub>();
  std::shared_ptr<std::atomic<int64_t>> waiting = std::make_shared<std::atomic<int64_t>>(0);
  std::shared_ptr<std::atomic<bool>> draining = std::make_shared<std::atomic<bool>>(false);
  /// The first (often only) instance's store, actors and registry.
  std::shared_ptr<store_runtime> runtime;
  service_actors actors;
  registry_actor registry;
  /// Every instance of the service in this lab (several share one store model in unit tests).
  std::vector<service_actors> instances;
  /// Event timestamps: the test clock's zero is wall time 1,000,000 ms.
  clock_mapping clock{1'000'000, 0};

  /// Processes everything pending: messages, timers due now, and the store's I/O.
  virtual void run();

  /// Moves the clock forward by `ms` and processes what became due.
  void advance(int64_t ms);

  /// Runs until `done` holds, taking in the store's channel events as they come (a shared
  /// store publishes lease ends asynchronously); returns `done()` after at most `wait`.
  bool run_until(const std::function<bool()>& done,
                 std::chrono::milliseconds wait = std::chrono::seconds{10});

  /// Sends a request from a fresh client actor; the reply lands in the result once run() ran.
  /// Renewals and releases go with high priority, as the bridge sends them.
  template <class T, caf::message_priority P = caf::message_priority::normal, class Handle,
            class... Ts>
  reply<T> ask(const Handle& dest, Ts... xs) {
    return ask_from<T, P>(sys, dest, xs...);
  }

  reply<lease> acquire(const std::string& name, const std::string& owner, int64_t ttl_ms,
                       int64_t wait_ms = 0, uint64_t request_id = 0);
  reply<lease> renew(const std::string& name, const std::string& owner, uint64_t token,
                     int64_t ttl_ms = 0);
  reply<bool> release(const std::string& name, const std::string& owner, uint64_t token);
  /// An admin's force-release of whatever lease `name` has (only lease `token` when not 0).
  reply<bool> force_release(const std::string& name, uint64_t token = 0);
  reply<lock_status> status_of(const std::string& name);
  reply<check_result> check(const std::string& name, uint64_t token);
  void cancel(const std::string& name, uint64_t request_id);

  /// Returns the lock's status; fails the test when there is none.
  lock_status status(const std::string& name);

  /// Returns the number of live lock actors (the registry's count).
  std::size_t lock_actors();

  /// Returns the number of locks in use: live lock actors and kept leases (what max-locks
  /// bounds; actors/lock_directory.hpp).
  std::size_t locks_in_use() const {
    return actors.locks->size();
  }

  /// Returns the number of running actors of the system.
  std::size_t running_actors() {
    return sys.registry().running();
  }

  /// Returns a lock context like the registry's, for tests that spawn a lock actor directly.
  lock_context_ptr lock_ctx() const;

protected:
  explicit lab(const lab_options& opts);

  /// Waits up to `wait` for what a store delivers by itself (channel events), and hands it over;
  /// returns whether anything came. Nothing does with a store that answers only when asked.
  virtual bool take_store_events(std::chrono::milliseconds) {
    return false;
  }

  /// Spawns one instance of the service's actors over `store` (the first becomes `actors` and
  /// `registry`); called by the constructors of derived labs. Returns its registry.
  registry_actor start(std::shared_ptr<store_runtime> store,
                       std::shared_ptr<std::atomic<bool>> draining_flag = nullptr);

  /// Stops every actor, after moving the clock `grace_ms` on (so that requests to a store that
  /// never answers time out); called by the destructors of derived labs before their store goes.
  void stop(int64_t grace_ms = 0);

  config service_cfg;

private:
  bool stopped_ = false;
};

/// The embedded store over a memory store (or `shared`: a store kept across labs, as a
/// restart), on the test coordinator.
class embedded_lab : public lab {
public:
  explicit embedded_lab(std::shared_ptr<lease_store> shared = nullptr, lab_options opts = {});
  ~embedded_lab() override;

  std::shared_ptr<lease_store> store;

  /// Returns the embedded store's actor.
  store_actor store_handle() const;
};

/// The Redis store over a real redis-server started for the lab.
class redis_lab : public lab {
public:
  explicit redis_lab(lab_options opts = {});
  ~redis_lab() override;

  void run() override;

  std::unique_ptr<redis_server> server;
  std::shared_ptr<pumped_runner> runner;

protected:
  bool take_store_events(std::chrono::milliseconds wait) override;
};

} // namespace fencelock::test
