// Draining and stopping the lock actors, on CAF's test coordinator: only the actors with
// waiters get a message; the quiet ones (most of a server holding many leases) end without one.
// A message to each of a million quiet actors kept a stopping server busy for minutes.

#include <caf/all.hpp>
#include <catch2/catch.hpp>

#include <string>
#include <unordered_set>
#include <vector>

#include "actors/lock_directory.hpp"
#include "tests/unit/actor_fixture.hpp"

using namespace fencelock;
using fencelock::test::actor_fixture;
using fencelock::test::code_of;

namespace {

constexpr int quiet_locks = 200;

/// A lab with `quiet_locks` held leases nobody waits for, whose actors are kept (as the default
/// keeps up to 1,024), and lock "w" held with a waiter.
struct held_locks_lab : actor_fixture {
  held_locks_lab() : actor_fixture(nullptr, 100, 10, false, 1024) {
    for (int i = 0; i < quiet_locks; ++i) {
      auto name = "q" + std::to_string(i);
      REQUIRE(acquire(name, "alice", 60'000)->value());
      auto actor = actors.locks->find(name);
      REQUIRE(actor);
      quiet.push_back(actor.address());
      quiet_jobs.insert(caf::actor_cast<caf::abstract_actor*>(actor));
    }
    REQUIRE(acquire("w", "alice", 60'000)->value());
    waiting = acquire("w", "bob", 60'000, 30'000);
    REQUIRE_FALSE(waiting->has_value());
  }

  /// Runs everything pending; returns how often one of the quiet lock actors ran.
  int run_counting_quiet() {
    int runs = 0;
    while (sched.has_job()) {
      if (quiet_jobs.count(dynamic_cast<caf::abstract_actor*>(sched.jobs.front())) > 0)
        ++runs;
      sched.run_once();
    }
    return runs;
  }

  std::vector<caf::actor_addr> quiet;
  std::unordered_set<caf::abstract_actor*> quiet_jobs; // compared only, never used
  test::reply<lease> waiting;
};

bool ended(const caf::actor_addr& actor) {
  return caf::actor_cast<caf::strong_actor_ptr>(actor) == nullptr;
}

} // namespace

TEST_CASE("stopping the registry ends quiet lock actors without a message each", "[actors]") {
  held_locks_lab f;
  caf::anon_send_exit(f.registry, caf::exit_reason::user_shutdown);
  CHECK(f.run_counting_quiet() == 0);
  CHECK(code_of(f.waiting) == errc::shutting_down); // the waiter is answered...
  for (auto& actor : f.quiet)                       // ...and every quiet actor is gone
    CHECK(ended(actor));
  CHECK(f.lock_actors() == 0);
}

TEST_CASE("a drain reaches only the lock actors with waiters", "[actors]") {
  held_locks_lab f;
  f.draining->store(true); // as service::drain does before it tells the registry
  caf::anon_send<caf::message_priority::high>(f.registry, drain_atom_v);
  CHECK(f.run_counting_quiet() == 0);
  CHECK(code_of(f.waiting) == errc::shutting_down);
  // Nothing else changed: the leases stay, and new waiters are refused.
  CHECK(f.status("q0").held);
  CHECK(f.status("w").held);
  CHECK(code_of(f.acquire("q1", "carol", 60'000, 30'000)) == errc::shutting_down);
  CHECK(f.status("q1").waiters == 0);
}

TEST_CASE("stopping the registry stops a quiet lock actor that something else holds", "[actors]") {
  held_locks_lab f;
  // A handle held elsewhere (a call on its way, a store request's timer) keeps the actor alive
  // past the registry's drop: it must be told to stop.
  auto held = f.actors.locks->find("q0");
  REQUIRE(held);
  auto down = std::make_shared<bool>(false);
  auto watcher = f.sys.spawn([held, down](caf::event_based_actor* self) -> caf::behavior {
    self->monitor(held);
    self->set_down_handler([self, down](caf::down_msg&) {
      *down = true;
      self->quit();
    });
    return {[](int) {}};
  });
  f.run();
  caf::anon_send_exit(f.registry, caf::exit_reason::user_shutdown);
  f.run();
  CHECK(*down);
  CHECK(ended(f.quiet[1])); // the others end as their last handle goes
}
