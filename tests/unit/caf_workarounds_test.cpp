// The workarounds for CAF 0.17.6's defects (actors/caf_workarounds.hpp), on CAF's test
// coordinator. What they mean for the lock actor: lock_actor_test.cpp, "requests that arrive
// during a store write are all answered after it".

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <vector>

#include "actors/caf_workarounds.hpp"
#include "support/lab.hpp"

using namespace fencelock;

namespace {

struct coordinator {
  caf::actor_system_config cfg;
  caf::actor_system sys{test::testing_config(cfg)};
  caf::scheduler::test_coordinator& sched =
    dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
};

/// Records the priority each message arrived with, and answers it.
caf::behavior priority_probe(caf::event_based_actor* self,
                             std::shared_ptr<std::vector<bool>> urgent) {
  return {
    [=](int x) {
      urgent->push_back(self->current_mailbox_element()->mid.is_urgent_message());
      return x;
    },
  };
}

} // namespace

TEST_CASE("a request sent with high priority and a timeout arrives urgent", "[caf]") {
  coordinator c;
  auto urgent = std::make_shared<std::vector<bool>>();
  auto probe = c.sys.spawn(priority_probe, urgent);
  c.sys.spawn([=](caf::event_based_actor* self) {
    self->request<caf::message_priority::high>(probe, priority_timeout(std::chrono::seconds{5}), 1)
      .then([](int) {});
    // The defect worked around: CAF 0.17.6's overload for std::chrono drops the priority.
    self->request<caf::message_priority::high>(probe, std::chrono::seconds{5}, 2).then([](int) {});
  });
  test::run_until_idle(c.sched);
  REQUIRE(urgent->size() == 2);
  CHECK((*urgent)[0]);
  CHECK_FALSE((*urgent)[1]);
}

TEST_CASE("messages skipped during an await are taken up after it, whatever their priority",
          "[caf]") {
  coordinator c;
  auto answered = std::make_shared<std::vector<int>>();
  auto echo = c.sys.spawn([]() -> caf::behavior { return {[](int x) { return x; }}; });
  auto spawn_waiter = [&](bool workaround) {
    return c.sys.spawn([=](caf::event_based_actor* self) -> caf::behavior {
      return {
        [=](caf::get_atom) {
          self->request(echo, caf::infinite, 0).await([=](int) {
            if (workaround)
              resume_skipped(self);
          });
        },
        [=](int x) { answered->push_back(x); },
      };
    });
  };
  auto run_scenario = [&](const caf::actor& waiter) {
    test::run_until_idle(c.sched); // spawned and idle
    caf::anon_send(waiter, caf::get_atom_v);
    c.sched.run_once(); // the waiter awaits echo's answer, of normal priority
    caf::anon_send<caf::message_priority::high>(waiter, 1);
    test::run_until_idle(c.sched); // echo answers; the waiter sees 1 and the answer
  };

  SECTION("as CAF 0.17.6 does it: the urgent message stays in its cache") {
    run_scenario(spawn_waiter(false));
    CHECK(answered->empty());
  }
  SECTION("with resume_skipped") {
    run_scenario(spawn_waiter(true));
    CHECK(*answered == std::vector<int>{1});
  }
}
