// Direct calls (actors/direct_call.hpp) on CAF's test coordinator: the front end's call for a
// lock whose actor runs reaches that actor without the registry, counts toward the registry's
// retirement check like a routed request, and is answered even when the actor ends first.

#include <caf/all.hpp>
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>

#include "actor_fixture.hpp"
#include "fencelock/errc.hpp"

using namespace fencelock;
using fencelock::test::actor_fixture;

namespace {

auto running = std::make_shared<std::atomic<bool>>(true);

/// Sends `req` to `actor` as the service's front end does; the answer lands in the result.
template <class T, class Req>
test::reply<T> call_direct(const lock_actor& actor, Req req,
                           std::shared_ptr<std::atomic<bool>> up = running) {
  auto out = std::make_shared<std::optional<caf::expected<T>>>();
  direct_reply<T> reply{[out](caf::expected<T> x) { *out = std::move(x); }, std::move(up)};
  caf::anon_send(actor, lock_call{direct_call<Req, T>{std::move(req), std::move(reply)}});
  return out;
}

/// Returns how often `who` ran while the coordinator ran everything pending.
int runs_of(actor_fixture& f, const registry_actor& who) {
  auto* job = dynamic_cast<caf::resumable*>(caf::actor_cast<caf::abstract_actor*>(who));
  REQUIRE(job != nullptr);
  int runs = 0;
  while (f.sched.has_job()) {
    if (f.sched.jobs.front() == job)
      ++runs;
    f.sched.run_once();
  }
  return runs;
}

} // namespace

TEST_CASE("a direct call reaches the lock's actor without the registry", "[actors]") {
  actor_fixture f; // idle actors, and actors that keep only a lease, are retired at once
  auto l = f.acquire("a", "alice", 1000)->value().value(); // spawned by the registry
  auto bob = f.acquire("a", "bob", 1000, 10'000);           // a waiter keeps the actor running
  auto actor = f.actors.locks->route("a");
  REQUIRE(actor);
  auto renewed = call_direct<lease>(actor, renew_request{"a", "alice", l.token, 5000});
  CHECK(runs_of(f, f.registry) == 0);
  REQUIRE(renewed->has_value());
  REQUIRE(renewed->value());
  CHECK(renewed->value()->token == l.token);
  CHECK(renewed->value()->ttl_ms == 5000);
  // Both direct calls count as routed: once the release leaves bob's lease alone there, the
  // registry retires the actor (the lease keeps its place).
  auto released = call_direct<bool>(f.actors.locks->route("a"),
                                    release_request{"a", "alice", l.token, false, false});
  f.run();
  REQUIRE(released->has_value());
  CHECK(released->value() == true);
  REQUIRE(bob->has_value());
  CHECK(f.lock_actors() == 0);
  CHECK(f.actors.locks->size() == 1);
}

TEST_CASE("an idle lock actor is not retired while a direct call is on its way", "[actors]") {
  actor_fixture f; // idle actors, and actors that keep only a lease, are retired at once
  auto l = f.acquire("a", "alice", 1000)->value().value();
  auto bob = f.acquire("a", "bob", 1000, 10'000); // a waiter keeps the actor running
  auto actor = f.actors.locks->route("a");         // the front end looks the actor up...
  REQUIRE(actor);
  f.release("a", "alice", l.token); // ...bob is handed the lock and nobody waits: it reports...
  REQUIRE(bob->has_value());
  CHECK(f.lock_actors() == 1); // ...but the registry knows a call is on its way
  auto status = call_direct<lock_status>(actor, std::string{"a"});
  f.run();
  REQUIRE(status->has_value());
  REQUIRE(status->value());
  CHECK(status->value()->owner == "bob");
  CHECK(f.lock_actors() == 0); // retired once the call was handled; bob's lease stays
  CHECK(f.status("a").owner == "bob");
}

TEST_CASE("a direct call whose lock actor ended is answered, not lost", "[actors]") {
  actor_fixture f{nullptr, 100, 10, false, 1}; // the held lock's actor is kept
  auto l = f.acquire("a", "alice", 1000)->value().value();
  auto actor = f.actors.locks->route("a");
  REQUIRE(actor);
  caf::anon_send_exit(actor, caf::exit_reason::kill);
  f.run();
  auto lost = call_direct<lease>(actor, renew_request{"a", "alice", l.token, 0});
  auto stopped = std::make_shared<std::atomic<bool>>(false);
  auto late = call_direct<lease>(actor, renew_request{"a", "alice", l.token, 0}, stopped);
  f.run();
  REQUIRE(lost->has_value());
  CHECK(test::code_of(lost) == errc::unavailable);
  REQUIRE(late->has_value());
  CHECK(test::code_of(late) == errc::shutting_down); // the service was stopping
}
