// The watchdog on CAF's test coordinator, with a stand-in for the registry that records the
// expiries it gets: timers fire at their deadline, by lock name, a disarmed one never does, arming
// a lock again replaces its timer, and a mass expiry is paced. The timers are armed in its
// expiry_schedule, as the lock actors do, which asks for a tick only when none is in flight.

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/watchdog.hpp"
#include "support/lab.hpp"

using namespace fencelock;
using namespace fencelock::test;

namespace {

using expiry = std::pair<std::string, uint64_t>; // (lock, token)

struct bench {
  caf::actor_system_config cfg;
  caf::actor_system sys{testing_config(cfg)};
  caf::scheduler::test_coordinator& sched =
    dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  std::shared_ptr<std::vector<expiry>> expired = std::make_shared<std::vector<expiry>>();
  std::shared_ptr<expiry_schedule> schedule = std::make_shared<expiry_schedule>();
  watchdog_actor watchdog;
  registry_actor registry;

  explicit bench(expiry_pacing pacing = {}) {
    watchdog = sys.spawn(watchdog_impl, schedule, nullptr, stall_settings{}, nullptr, pacing);
    registry = stand_in_registry();
    caf::anon_send(watchdog, route_atom_v, registry);
    run_until_idle(sched);
  }

  ~bench() {
    caf::anon_send_exit(watchdog, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
    run_until_idle(sched);
  }

  /// A stand-in for the registry: records the expiries it gets.
  registry_actor stand_in_registry() {
    auto out = expired;
    return sys.spawn([out](registry_actor::pointer) -> registry_actor::behavior_type {
      return {
        [](acquire_atom, acquire_request&) -> caf::result<lease> { return lease{}; },
        [](renew_atom, renew_request&) -> caf::result<lease> { return lease{}; },
        [](release_atom, release_request&) -> caf::result<bool> { return true; },
        [](status_atom, std::string&) -> caf::result<lock_status> { return lock_status{}; },
        [](list_atom, list_request&) -> caf::result<lock_list> { return lock_list{}; },
        [](check_atom, check_request&) -> caf::result<check_result> { return check_result{}; },
        [](cancel_atom, std::string&, uint64_t) {},
        [](idle_atom) {},
        [](retire_atom, std::string&) {},
        [out](expire_atom, std::string& name, uint64_t token) {
          out->emplace_back(std::move(name), token);
        },
        [](heard_atom, std::string&, uint64_t, bool) {},
        [](resync_atom) {},
        [](drain_atom) {},
        [](watch_atom, std::string&, std::string&, uint64_t, int64_t, int64_t) {},
      };
    });
  }

  /// Arms as a lock actor does (sync_timer in lock_actor.cpp).
  void arm(const std::string& lock, uint64_t token, int64_t at_ms) {
    if (auto tick = schedule->arm(lock, token, at(at_ms)))
      caf::anon_send(watchdog, arm_atom_v, to_ns(*tick));
    run_until_idle(sched);
  }

  static caf::actor_clock::time_point at(int64_t ms) {
    return caf::actor_clock::time_point{std::chrono::milliseconds{ms}};
  }

  void advance_to(int64_t ms) {
    auto now = sched.clock().now();
    auto target = caf::actor_clock::time_point{std::chrono::milliseconds{ms}};
    if (target > now)
      sched.clock().advance_time(target - now);
    run_until_idle(sched);
  }
};

} // namespace

TEST_CASE("a timer fires at its deadline, by lock name, and a disarmed one never",
          "[watchdog]") {
  bench b;
  b.arm("a", 1, 1000);
  b.arm("c", 2, 1000);
  b.schedule->disarm("c", 2);
  b.schedule->disarm("a", 9); // another token
  b.advance_to(999);
  CHECK(b.expired->empty());
  b.advance_to(1000);
  CHECK(*b.expired == std::vector<expiry>{{"a", 1}}); // c was disarmed
}

TEST_CASE("arming a lock again replaces its timer, whoever arms it", "[watchdog]") {
  bench b;
  // A renewal moves the deadline; a lock's next actor arms the same lease again.
  b.arm("a", 1, 1000);
  b.arm("a", 1, 2000);
  b.arm("b", 1, 1000);
  b.arm("b", 2, 1500); // a newer lease of the lock
  b.advance_to(1999);
  CHECK(*b.expired == std::vector<expiry>{{"b", 2}});
  b.advance_to(2000);
  CHECK(*b.expired == std::vector<expiry>{{"b", 2}, {"a", 1}});
  b.advance_to(10'000);
  CHECK(b.expired->size() == 2); // nothing else was left armed
}

TEST_CASE("a mass expiry goes out in paced slices", "[watchdog]") {
  bench b{expiry_pacing::per_second(10'000)}; // 100 per 10 ms slice
  for (int i = 0; i < 250; ++i)
    b.arm("l" + std::to_string(i), 1, 1000);
  b.advance_to(1000);
  CHECK(b.expired->size() == 100);
  b.advance_to(1009);
  CHECK(b.expired->size() == 100);
  b.advance_to(1010);
  CHECK(b.expired->size() == 200);
  // A timer armed meanwhile waits for its slice too.
  b.arm("late", 1, 1000);
  CHECK(b.expired->size() == 200);
  b.advance_to(1020);
  CHECK(b.expired->size() == 251);
}

TEST_CASE("only a timer earlier than the tick in flight asks the watchdog for a tick",
          "[watchdog]") {
  expiry_schedule s;
  auto at = [](int64_t ms) { return caf::actor_clock::time_point{std::chrono::milliseconds{ms}}; };
  CHECK(s.arm("a", 1, at(1000)) == at(1000)); // nothing in flight: tick then
  CHECK(!s.arm("b", 1, at(2000)));            // the tick at 1000 comes first
  CHECK(!s.arm("a", 1, at(3000)));            // moved later: the tick at 1000 finds nothing
  CHECK(s.arm("c", 1, at(500)) == at(500));   // earlier: tick sooner
  s.disarm("c", 1);
  // The watchdog's tick at 500 finds nothing due and asks for the next one, for b at 2000.
  s.ticked(at(500));
  bool more = true;
  CHECK(s.take_due(at(500), 100, more).empty());
  CHECK(!more);
  CHECK(s.next_tick() == at(2000));
  CHECK(!s.next_tick()); // in flight already
  CHECK(s.size() == 2);
  // A backlog holds ticks back to its next slice.
  s.pace_until(at(5000));
  CHECK(s.arm("d", 1, at(2500)) == std::nullopt); // the tick at 2000 is in flight
  s.ticked(at(2000));
  auto due = s.take_due(at(2000), 100, more);
  REQUIRE(due.size() == 1);
  CHECK(due.front().name == "b");
  CHECK(s.next_tick() == at(5000)); // not 2500: paced
}
