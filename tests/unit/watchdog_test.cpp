// The watchdog on CAF's test coordinator, with stand-ins for lock actors that count the expiries
// they get: timers fire at their deadline, a disarmed one never does, a mass expiry is paced,
// and a timer never keeps a lock actor alive.

#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <vector>

#include "actors/watchdog.hpp"
#include "support/lab.hpp"

using namespace fencelock;
using namespace fencelock::test;

namespace {

struct bench {
  caf::actor_system_config cfg;
  caf::actor_system sys{testing_config(cfg)};
  caf::scheduler::test_coordinator& sched =
    dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  std::shared_ptr<std::atomic<int>> expired = std::make_shared<std::atomic<int>>(0);
  watchdog_actor watchdog;

  explicit bench(expiry_pacing pacing = {}) {
    watchdog = sys.spawn(watchdog_impl, nullptr, stall_settings{}, nullptr, pacing);
    run_until_idle(sched);
  }

  ~bench() {
    caf::anon_send_exit(watchdog, caf::exit_reason::user_shutdown);
    run_until_idle(sched);
  }

  /// A stand-in for a lock actor: counts expiries, quits on retire.
  lock_actor lock() {
    auto counter = expired;
    return sys.spawn([counter](lock_actor::pointer self) -> lock_actor::behavior_type {
      return {
        [](acquire_atom, acquire_request&) -> caf::result<lease> { return lease{}; },
        [](renew_atom, renew_request&) -> caf::result<lease> { return lease{}; },
        [](release_atom, release_request&) -> caf::result<bool> { return true; },
        [](status_atom, std::string&) -> caf::result<lock_status> { return lock_status{}; },
        [](check_atom, check_request&) -> caf::result<check_result> { return check_result{}; },
        [](cancel_atom, std::string&, uint64_t) {},
        [](lock_call&) {},
        [counter](expire_atom, uint64_t) { ++*counter; },
        [](wait_timeout_atom, int64_t) {},
        [self](retire_atom) { self->quit(); },
        [](heard_atom, uint64_t, bool) {},
        [](resync_atom) {},
        [](drain_atom) {},
        [](watch_atom, std::string&, uint64_t, int64_t, int64_t) {},
      };
    });
  }

  void arm(const lock_actor& lock, uint64_t token, int64_t at_ms) {
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

TEST_CASE("a timer fires at its deadline, and a disarmed one never", "[watchdog]") {
  bench b;
  auto a = b.lock();
  auto c = b.lock();
  b.arm(a, 1, 1000);
  b.arm(c, 2, 1000);
  caf::anon_send(b.watchdog, disarm_atom_v, c, uint64_t{2});
  caf::anon_send(b.watchdog, disarm_atom_v, a, uint64_t{9}); // another token: nothing happens
  b.advance_to(999);
  CHECK(b.expired->load() == 0);
  b.advance_to(1000);
  CHECK(b.expired->load() == 1); // a's; c was disarmed
}

TEST_CASE("a mass expiry goes out in paced slices", "[watchdog]") {
  bench b{expiry_pacing::per_second(10'000)}; // 100 per 10 ms slice
  std::vector<lock_actor> locks;
  for (int i = 0; i < 250; ++i) {
    locks.push_back(b.lock());
    b.arm(locks.back(), 1, 1000);
  }
  b.advance_to(1000);
  CHECK(b.expired->load() == 100);
  b.advance_to(1009);
  CHECK(b.expired->load() == 100);
  b.advance_to(1010);
  CHECK(b.expired->load() == 200);
  // A timer armed meanwhile waits for its slice too.
  locks.push_back(b.lock());
  b.arm(locks.back(), 1, 1000);
  CHECK(b.expired->load() == 200);
  b.advance_to(1020);
  CHECK(b.expired->load() == 251);
}

TEST_CASE("an armed timer does not keep its lock actor alive", "[watchdog]") {
  bench b;
  caf::weak_actor_ptr weak;
  {
    auto lock = b.lock();
    weak = caf::actor_cast<caf::weak_actor_ptr>(lock);
    b.arm(lock, 1, 3'600'000); // an hour from now
    caf::anon_send(lock, retire_atom_v);
    run_until_idle(b.sched);
  }
  // Only the watchdog could still hold it, and it holds a weak handle.
  CHECK(weak.lock() == nullptr);
  b.advance_to(3'600'000); // the timer fires into nothing
  CHECK(b.expired->load() == 0);
}
