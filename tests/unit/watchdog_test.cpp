// The watchdog on CAF's test coordinator, with a stand-in for the registry that records the
// expiries it gets: timers fire at their deadline, by lock name, a disarmed one never does, arming
// a lock again replaces its timer, and a mass expiry is paced.

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
  watchdog_actor watchdog;
  registry_actor registry;

  explicit bench(expiry_pacing pacing = {}) {
    watchdog = sys.spawn(watchdog_impl, nullptr, stall_settings{}, nullptr, pacing);
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
        [](idle_atom, std::string&, uint64_t, bool, uint64_t) {},
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

  void arm(const std::string& lock, uint64_t token, int64_t at_ms) {
    caf::anon_send(watchdog, arm_atom_v, lock, token,
                   to_ns(caf::actor_clock::time_point{std::chrono::milliseconds{at_ms}}));
    run_until_idle(sched);
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
  caf::anon_send(b.watchdog, disarm_atom_v, std::string{"c"}, uint64_t{2});
  caf::anon_send(b.watchdog, disarm_atom_v, std::string{"a"}, uint64_t{9}); // another token
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
