#pragma once

// The Redis store as the service runs it (docs/redis.md): one backend per lock that runs each
// operation as one Lua script through the Redis store actor, and the store's event source, the
// channel on which every script publishes its change: it feeds this instance's event hub, wakes
// the waiters of a lock freed on any instance, watches the leases its subscribers care about,
// and keeps the held-locks gauge, reconciled with the store after every (re)subscription.

#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/actor_system.hpp>

#include "actors/clock.hpp"
#include "actors/interfaces.hpp"
#include "actors/store/backend.hpp"
#include "actors/store/redis/redis_store.hpp"
#include "actors/store/reporter.hpp"

namespace fencelock {

class event_hub;

/// The Redis store's event source. Runs on the store's event thread (script_runner), except
/// lost(), which hands over to it.
class redis_fanout : public std::enable_shared_from_this<redis_fanout> {
public:
  redis_fanout(std::shared_ptr<event_hub> events, std::shared_ptr<store_reporter> reporter);

  /// Connects the fan-out to the store whose channel it serves (null: a store model in unit
  /// tests, without channel) and to the registry it wakes.
  void attach(script_runner* store, registry_actor registry);

  /// Takes in one event heard on the channel.
  void on_event(const lock_event& ev);

  /// Takes in a (re)subscription: events may have been missed, so every lock looks again and
  /// the held gauge is counted afresh from the store.
  void on_resync();

  /// Publishes the end of a lease that the store lost (no script published it). Any thread.
  void lost(const lock_event& ev);

private:
  void publish(const lock_event& ev);
  void reconcile(std::string cursor,
                 std::shared_ptr<std::unordered_map<std::string, uint64_t>> fresh, uint64_t round);

  std::shared_ptr<event_hub> events_;
  std::shared_ptr<store_reporter> reporter_;
  script_runner* store_ = nullptr;
  registry_actor registry_;
  /// Leases held in the store as heard on the channel (name -> token).
  std::unordered_map<std::string, uint64_t> held_;
  /// While a reconciliation reads the store: the map it builds, also fed by the events that
  /// arrive meanwhile.
  std::shared_ptr<std::unordered_map<std::string, uint64_t>> fresh_;
  uint64_t round_ = 0;
};

class redis_runtime : public store_runtime {
public:
  /// Runs the Redis store described by `settings`: its I/O thread, connections and actor.
  /// Connecting happens in the background once start() runs; until Redis answers, requests
  /// fail closed.
  static std::shared_ptr<redis_runtime> make(caf::actor_system& sys, redis_settings settings,
                                             clock_mapping clock, std::shared_ptr<event_hub> events,
                                             std::shared_ptr<store_reporter> reporter);

  /// Runs over parts made elsewhere (tests): `actor` speaks the store actor's protocol (the
  /// real one over `runner`, or a model of the scripts), `fanout` is the event source (null
  /// runner: no channel). `timeout` bounds every call.
  static std::shared_ptr<redis_runtime> assemble(std::shared_ptr<script_runner> runner,
                                                 std::shared_ptr<redis_fanout> fanout,
                                                 redis_store_actor actor, caf::timespan timeout,
                                                 clock_mapping clock);

  std::unique_ptr<lock_backend> make_backend(const std::string& name) override;
  bool shared() const noexcept override;
  std::shared_ptr<change_announcer> announcer() const override;
  std::shared_ptr<stall_window> stalls() const override;
  std::vector<std::string> held_at_start() override;
  lister_actor lister() const override;
  void start(registry_actor registry) override;
  bool ready() const noexcept override;
  std::vector<caf::actor> actors() const override;
  void close() override;

  /// What every lock's backend shares.
  struct environment {
    redis_store_actor store;
    caf::timespan timeout;
    clock_mapping clock;
  };

private:
  redis_runtime() = default;

  std::shared_ptr<redis_store> io_;       // the real store, when this runtime owns its I/O
  std::shared_ptr<script_runner> runner_; // what runs scripts (null over a model)
  std::shared_ptr<redis_fanout> fanout_;
  std::shared_ptr<const environment> env_;
  std::shared_ptr<change_announcer> announcer_;
};

} // namespace fencelock
