// The bridge (actors/bridge.hpp) on CAF's test coordinator: a call the registry never answers is
// answered by the bridge's once-a-second sweep after its deadline, and each call is answered
// exactly once, however late the registry's own answer comes. The same holds for direct calls
// (actors/direct_call.hpp), whose deadlines the sweep watches too.

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "actors/bridge.hpp"
#include "fencelock/errc.hpp"
#include "support/lab.hpp"

using namespace fencelock;

namespace {

/// A registry that holds every renewal without answering, until the test answers it.
struct held_calls {
  std::vector<caf::typed_response_promise<lease>> renewals;
};

caf::behavior holding_registry(caf::event_based_actor* self, std::shared_ptr<held_calls> held) {
  return {
    [=](renew_atom, renew_request&) -> caf::result<lease> {
      auto rp = self->make_response_promise<lease>();
      held->renewals.push_back(rp);
      return rp;
    },
    // The test's "answer renewal i now" (promises are delivered from the actor that made them).
    [=](std::size_t i) {
      held->renewals.at(i).deliver(lease{"a", "alice", 1, 1000, 0});
    },
  };
}

struct bridge_lab {
  caf::actor_system_config cfg;
  caf::actor_system sys{test::testing_config(cfg)};
  caf::scheduler::test_coordinator& sched =
    dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  std::shared_ptr<held_calls> held = std::make_shared<held_calls>();
  caf::actor registry = sys.spawn(holding_registry, held);
  caf::actor bridge;
  std::shared_ptr<std::atomic<bool>> running = std::make_shared<std::atomic<bool>>(true);
  std::shared_ptr<direct_deadlines> direct = std::make_shared<direct_deadlines>();
  std::vector<caf::expected<lease>> answers;

  bridge_lab() {
    bridge = sys.spawn(bridge_impl, caf::actor_cast<registry_actor>(registry), running, direct);
  }

  ~bridge_lab() {
    // Unanswered promises hold their actors alive (and the actor system's end waits for them).
    held->renewals.clear();
  }

  void answer(std::size_t i) {
    caf::anon_send(registry, i);
    test::run_until_idle(sched);
  }

  void renew() {
    caf::anon_send(bridge, renew_atom_v, renew_request{"a", "alice", 1, 0},
                   reply_to<lease>{[this](caf::expected<lease> x) { answers.push_back(x); }});
    test::run_until_idle(sched);
  }

  /// A direct call to a lock actor that never answers it, watched as the service watches it.
  direct_reply<lease> call_direct() {
    direct_reply<lease> reply{[this](caf::expected<lease> x) { answers.push_back(x); }, running};
    if (reply.watch(*direct, sys.clock().now() + call_timeout))
      caf::anon_send(bridge, arm_atom_v);
    test::run_until_idle(sched);
    return reply;
  }

  void advance_ms(int64_t ms) {
    test::advance_clock(sched, ms);
  }
};

std::optional<errc> code(const caf::expected<lease>& x) {
  errc c;
  if (x || !as_errc(x.error(), c))
    return std::nullopt;
  return c;
}

} // namespace

TEST_CASE("a call the registry never answers is answered unavailable after its deadline",
          "[bridge]") {
  bridge_lab lab;
  lab.renew();
  REQUIRE(lab.held->renewals.size() == 1);
  lab.advance_ms(29'000);
  CHECK(lab.answers.empty());
  lab.advance_ms(2'000); // 30 s, and the sweep's second
  REQUIRE(lab.answers.size() == 1);
  CHECK(code(lab.answers[0]) == errc::unavailable);
  // The registry's answer after that is dropped: one answer per call.
  lab.answer(0);
  CHECK(lab.answers.size() == 1);
}

TEST_CASE("a call answered in time is answered once, and the sweep stops when none is open",
          "[bridge]") {
  bridge_lab lab;
  lab.renew();
  lab.renew();
  REQUIRE(lab.held->renewals.size() == 2);
  lab.answer(0);
  REQUIRE(lab.answers.size() == 1);
  CHECK(lab.answers[0]);
  lab.advance_ms(31'000);
  REQUIRE(lab.answers.size() == 2); // the second, never answered
  CHECK(code(lab.answers[1]) == errc::unavailable);
  // Nothing is open: no sweep is pending any more.
  CHECK(lab.sched.clock().schedule().empty());
}

TEST_CASE("a direct call never answered is answered unavailable after its deadline", "[bridge]") {
  bridge_lab lab;
  auto held = lab.call_direct(); // the lock actor keeps it, awaiting a write that never returns
  lab.advance_ms(29'000);
  CHECK(lab.answers.empty());
  lab.advance_ms(2'000);
  REQUIRE(lab.answers.size() == 1);
  CHECK(code(lab.answers[0]) == errc::unavailable);
  held.deliver(lease{"a", "alice", 1, 1000, 0}); // too late: one answer per call
  CHECK(lab.answers.size() == 1);
  // Nothing is watched any more: the sweep stops.
  CHECK(lab.sched.clock().schedule().empty());
}

TEST_CASE("a direct call answered in time is answered once, not at its deadline", "[bridge]") {
  bridge_lab lab;
  lab.call_direct().deliver(lease{"a", "alice", 1, 1000, 0});
  REQUIRE(lab.answers.size() == 1);
  CHECK(lab.answers[0]);
  lab.advance_ms(31'000);
  CHECK(lab.answers.size() == 1);
  CHECK(lab.sched.clock().schedule().empty());
}
