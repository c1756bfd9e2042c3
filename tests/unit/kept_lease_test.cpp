// Kept leases (actors/lock_directory.hpp): with the embedded store a held lease that nobody
// waits for keeps its lock's place, not an actor. Its next call, its expiry and a cancel of its
// undelivered grant each spawn the lock's next actor, which loads the lease from the store and
// serves it as the one before would have. On CAF's test coordinator: time moves by hand.

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "actor_fixture.hpp"
#include "fencelock/errc.hpp"

using namespace fencelock;
using fencelock::test::actor_fixture;
using fencelock::test::code_of;

namespace {

template <class T>
const T& value_of(const test::reply<T>& r) {
  REQUIRE(r->has_value());
  if (!r->value())
    FAIL("error: " << to_string(r->value().error()));
  return *r->value();
}

/// Records the ends of lease `token` of `name`, as a WebSocket holder's lease watch does.
std::shared_ptr<std::vector<lock_event>> watch_end(actor_fixture& f, const std::string& name,
                                                   uint64_t token) {
  auto ends = std::make_shared<std::vector<lock_event>>();
  auto id = f.events->watch_lease(name, [ends](const lock_event& ev) { ends->push_back(ev); });
  f.events->bind_lease_watch(id, token);
  return ends;
}

} // namespace

TEST_CASE("a held lease nobody waits for keeps its place, not an actor", "[actors][kept]") {
  actor_fixture f; // no idle actor kept: each retires as soon as it may
  auto l = value_of(f.acquire("a", "alice", 10'000));
  CHECK(f.lock_actors() == 0);
  CHECK(f.actors.locks->size() == 1);
  // Every call finds the lease where its actor left it.
  auto renewed = value_of(f.renew("a", "alice", l.token, 20'000));
  CHECK(renewed.token == l.token);
  CHECK(renewed.ttl_ms == 20'000);
  CHECK(f.status("a").owner == "alice");
  CHECK(value_of(f.check("a", l.token)).current);
  CHECK(code_of(f.acquire("a", "bob", 10'000)) == errc::lock_held);
  CHECK(code_of(f.renew("a", "alice", l.token + 1)) == errc::lease_lost);
  CHECK(f.lock_actors() == 0);
  CHECK(f.actors.locks->size() == 1);
  CHECK(value_of(f.release("a", "alice", l.token)));
  CHECK(f.actors.locks->size() == 0);
  CHECK_FALSE(f.status("a").held);
}

TEST_CASE("a kept lease expires at its deadline, and its holder hears so", "[actors][kept]") {
  actor_fixture f;
  auto l = value_of(f.acquire("a", "alice", 1000));
  auto ends = watch_end(f, "a", l.token);
  REQUIRE(f.lock_actors() == 0);
  f.advance(999);
  CHECK(ends->empty());
  CHECK(f.status("a").held);
  f.advance(1);
  REQUIRE(ends->size() == 1);
  CHECK(ends->front().cause == lease_end_cause::expired);
  CHECK(ends->front().token == l.token);
  CHECK_FALSE(f.status("a").held);
  // Nothing is left of it: no actor, no place.
  CHECK(f.lock_actors() == 0);
  CHECK(f.actors.locks->size() == 0);
  // A renewal moved the deadline of a kept lease along with it.
  auto m = value_of(f.acquire("b", "bob", 1000));
  f.advance(500);
  value_of(f.renew("b", "bob", m.token, 1000));
  f.advance(999);
  CHECK(f.status("b").held);
  f.advance(1);
  CHECK_FALSE(f.status("b").held);
}

TEST_CASE("a kept lease goes to its waiter at its deadline", "[actors][kept]") {
  actor_fixture f;
  auto l = value_of(f.acquire("a", "alice", 1000));
  REQUIRE(f.lock_actors() == 0);
  auto bob = f.acquire("a", "bob", 1000, 5000); // spawns the lock's actor again, and waits
  CHECK_FALSE(bob->has_value());
  CHECK(f.lock_actors() == 1);
  f.advance(1000);
  CHECK(value_of(bob).token > l.token);
  CHECK(f.lock_actors() == 0); // bob's lease is kept in its turn
}

TEST_CASE("a cancel undoes a kept grant whose answer never arrived", "[actors][kept]") {
  actor_fixture f;
  auto l = value_of(f.acquire("a", "alice", 60'000, 0, 77));
  REQUIRE(f.lock_actors() == 0);
  f.cancel("a", 76); // another request: nothing to undo
  f.run();
  CHECK(f.status("a").held);
  f.cancel("a", 77); // the client never read the grant
  f.run();
  CHECK_FALSE(f.status("a").held);
  CHECK(f.status("a").last_token == l.token);
  CHECK(f.actors.locks->size() == 0);
}

TEST_CASE("max-locks counts the places of kept leases", "[actors][kept]") {
  test::embedded_lab f{nullptr, test::lab_options{.max_locks = 2}};
  auto a = value_of(f.acquire("a", "o", 60'000));
  value_of(f.acquire("b", "o", 60'000));
  CHECK(f.lock_actors() == 0);
  CHECK(code_of(f.acquire("c", "o", 60'000)) == errc::overloaded);
  CHECK(code_of(f.status_of("c")) == errc::overloaded);
  // The kept ones are served, and a place freed is taken again.
  CHECK(value_of(f.renew("a", "o", a.token)).token == a.token);
  CHECK(value_of(f.release("a", "o", a.token)));
  value_of(f.acquire("c", "o", 60'000));
}

TEST_CASE("a restart's held leases are kept, and expire at their deadlines", "[actors][kept]") {
  auto store = std::make_shared<memory_store>();
  uint64_t token = 0;
  {
    actor_fixture before{store};
    token = value_of(before.acquire("a", "alice", 60'000)).token;
  }
  actor_fixture after{store};
  CHECK(after.lock_actors() == 0); // the actor of the restart's lease armed it and retired
  CHECK(after.status("a").token == token);
  after.advance(60'000);
  CHECK_FALSE(after.status("a").held);
}
