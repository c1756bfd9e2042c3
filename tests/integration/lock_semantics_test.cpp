// One suite of lock semantics, run over every store: the embedded store (over a memory store)
// and the Redis store (over a real redis-server of the test's own). Both run the same lock actor
// on CAF's test coordinator (tests/support/lab.hpp), so a test body sees the same actors and
// only the backend differs. Deadlines that only Redis's own clock can end are not tested here:
// tests/unit/lock_actor_test.cpp and tests/unit/redis_backend_test.cpp do that, on the test
// clock.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "fencelock/owner.hpp"
#include "support/lab.hpp"

using namespace fencelock;
using namespace fencelock::test;

namespace {

/// A lab over each store with small bounds: 3 waiters per lock, 4 lock actors.
struct embedded_store_lab : embedded_lab {
  embedded_store_lab() : embedded_lab(nullptr, lab_options{.max_waiters = 3, .max_locks = 4}) {
  }
};

struct redis_store_lab : redis_lab {
  redis_store_lab() : redis_lab(lab_options{.max_waiters = 3, .max_locks = 4}) {
  }
};

/// The same, keeping up to 2 idle lock actors for their next request, as the server does.
struct embedded_keeping_lab : embedded_lab {
  embedded_keeping_lab()
    : embedded_lab(nullptr, lab_options{.max_waiters = 3, .max_locks = 4, .idle_kept = 2}) {
  }
};

struct redis_keeping_lab : redis_lab {
  redis_keeping_lab() : redis_lab(lab_options{.max_waiters = 3, .max_locks = 4, .idle_kept = 2}) {
  }
};

/// The same, told to hand out no token below 2^52 (fence-floor), as after a restore: above the
/// embedded store's counter and above the Redis store's clock floor (~1.8e15) alike.
constexpr uint64_t restored_floor = uint64_t{1} << 52;

struct embedded_floor_lab : embedded_lab {
  embedded_floor_lab() : embedded_lab(nullptr, lab_options{.fence_floor = restored_floor}) {
  }
};

struct redis_floor_lab : redis_lab {
  redis_floor_lab() : redis_lab(lab_options{.fence_floor = restored_floor}) {
  }
};

template <class T>
const T& value_of(const reply<T>& r) {
  REQUIRE(r->has_value());
  if (!r->value())
    FAIL("error: " << to_string(r->value().error()));
  return *r->value();
}

} // namespace

TEMPLATE_TEST_CASE("a free lock is granted with a fresh token", "[semantics]", embedded_store_lab,
                   redis_store_lab) {
  TestType lab;
  auto l = value_of(lab.acquire("jobs:a", "alice", 60'000));
  CHECK(l.name == "jobs:a");
  CHECK(l.owner == "alice");
  CHECK(l.token >= 1);
  CHECK(l.ttl_ms == 60'000);
  auto st = lab.status("jobs:a");
  CHECK(st.held);
  CHECK(st.owner == "alice");
  CHECK(st.token == l.token);
  CHECK(st.last_token == l.token);
  CHECK(st.expires_at_ms == l.expires_at_ms);
}

TEMPLATE_TEST_CASE("with a fence floor, every token is at or above it and still rises",
                   "[semantics]", embedded_floor_lab, redis_floor_lab) {
  TestType lab;
  auto first = value_of(lab.acquire("a", "alice", 60'000));
  CHECK(first.token >= restored_floor);
  auto second = value_of(lab.acquire("b", "bob", 60'000));
  CHECK(second.token > first.token);
  REQUIRE(value_of(lab.release("a", "alice", first.token)));
  auto third = value_of(lab.acquire("a", "carol", 60'000));
  CHECK(third.token > second.token);
  CHECK(lab.status("a").last_token == third.token);
}

TEMPLATE_TEST_CASE("the holder acquiring again keeps its token", "[semantics]", embedded_store_lab,
                   redis_store_lab) {
  TestType lab;
  auto first = value_of(lab.acquire("a", "alice", 60'000));
  auto again = value_of(lab.acquire("a", "alice", 30'000));
  CHECK(again.token == first.token);
  CHECK(again.ttl_ms == 30'000);
}

TEMPLATE_TEST_CASE("another owner gets lock_held naming the holder", "[semantics]",
                   embedded_store_lab, redis_store_lab) {
  TestType lab;
  auto held = value_of(lab.acquire("a", "alice", 60'000));
  auto r = lab.acquire("a", "bob", 1000);
  REQUIRE(code_of(r) == errc::lock_held);
  auto ctx = r->value().error().context();
  REQUIRE(ctx.template match_elements<std::string, int64_t>());
  CHECK(ctx.template get_as<std::string>(0) == "alice");
  CHECK(ctx.template get_as<int64_t>(1) == held.expires_at_ms);
}

TEMPLATE_TEST_CASE("renew extends only the current lease of its owner", "[semantics]",
                   embedded_store_lab, redis_store_lab) {
  TestType lab;
  auto l = value_of(lab.acquire("a", "alice", 60'000));
  auto renewed = value_of(lab.renew("a", "alice", l.token, 90'000));
  CHECK(renewed.token == l.token);
  CHECK(renewed.ttl_ms == 90'000);
  CHECK(code_of(lab.renew("a", "alice", l.token + 1)) == errc::lease_lost);
  CHECK(code_of(lab.renew("a", "mallory", l.token)) == errc::lease_lost);
  CHECK(code_of(lab.renew("nosuchlock", "alice", l.token)) == errc::lease_lost);
  // ttl 0 keeps the lease's own TTL.
  CHECK(value_of(lab.renew("a", "alice", l.token)).ttl_ms == 90'000);
}

TEMPLATE_TEST_CASE("release frees the lock once", "[semantics]", embedded_store_lab,
                   redis_store_lab) {
  TestType lab;
  auto l = value_of(lab.acquire("a", "alice", 60'000));
  CHECK(code_of(lab.release("a", "bob", l.token)) == errc::lease_lost);
  CHECK(value_of(lab.release("a", "alice", l.token)));
  CHECK(code_of(lab.release("a", "alice", l.token)) == errc::lease_lost);
  auto st = lab.status("a");
  CHECK_FALSE(st.held);
  CHECK(st.last_token == l.token);
  auto next = value_of(lab.acquire("a", "bob", 60'000));
  CHECK(next.token > l.token);
}

TEMPLATE_TEST_CASE("waiters are handed the lock in FIFO order with new tokens", "[semantics]",
                   embedded_store_lab, redis_store_lab) {
  TestType lab;
  auto a = value_of(lab.acquire("a", "alice", 60'000));
  auto b = lab.acquire("a", "bob", 60'000, 50'000);
  auto c = lab.acquire("a", "carol", 60'000, 50'000);
  CHECK_FALSE(b->has_value());
  CHECK_FALSE(c->has_value());
  CHECK(lab.status("a").waiters == 2);
  // A newcomer that does not wait is refused while others wait, even for a free instant.
  CHECK(code_of(lab.acquire("a", "dave", 60'000)) == errc::lock_held);
  REQUIRE(value_of(lab.release("a", "alice", a.token)));
  auto lb = value_of(b);
  CHECK(lb.owner == "bob");
  CHECK(lb.token > a.token);
  CHECK_FALSE(c->has_value());
  REQUIRE(value_of(lab.release("a", "bob", lb.token)));
  auto lc = value_of(c);
  CHECK(lc.owner == "carol");
  CHECK(lc.token > lb.token);
}

TEMPLATE_TEST_CASE("the holder asking again while others wait keeps its lease", "[semantics]",
                   embedded_store_lab, redis_store_lab) {
  TestType lab;
  auto a = value_of(lab.acquire("a", "alice", 60'000));
  auto b = lab.acquire("a", "bob", 60'000, 50'000);
  auto again = value_of(lab.acquire("a", "alice", 60'000));
  CHECK(again.token == a.token);
  CHECK_FALSE(b->has_value()); // neither jumped the queue nor was queued behind itself
  REQUIRE(value_of(lab.release("a", "alice", a.token)));
  CHECK(value_of(b).owner == "bob");
}

TEMPLATE_TEST_CASE("a waiter gives up at its own deadline with lock_held", "[semantics]",
                   embedded_store_lab, redis_store_lab) {
  TestType lab;
  value_of(lab.acquire("a", "alice", 600'000));
  auto b = lab.acquire("a", "bob", 1000, 500);
  lab.advance(499);
  CHECK_FALSE(b->has_value());
  lab.advance(1);
  CHECK(code_of(b) == errc::lock_held);
  CHECK(lab.status("a").waiters == 0);
}

TEMPLATE_TEST_CASE("the wait queue is bounded", "[semantics]", embedded_store_lab,
                   redis_store_lab) {
  TestType lab; // 3 waiters per lock
  value_of(lab.acquire("a", "alice", 60'000));
  for (int i = 0; i < 3; ++i)
    CHECK_FALSE(lab.acquire("a", "w" + std::to_string(i), 1000, 5000)->has_value());
  CHECK(code_of(lab.acquire("a", "w3", 1000, 5000)) == errc::too_many_waiters);
}

TEMPLATE_TEST_CASE("a cancelled waiter is never granted", "[semantics]", embedded_store_lab,
                   redis_store_lab) {
  TestType lab;
  auto a = value_of(lab.acquire("a", "alice", 60'000));
  auto b = lab.acquire("a", "bob", 60'000, 50'000, 77);
  lab.cancel("a", 77);
  CHECK(code_of(b) == errc::cancelled);
  lab.release("a", "alice", a.token);
  CHECK_FALSE(lab.status("a").held);
}

TEMPLATE_TEST_CASE("a grant whose answer was not delivered is undone by cancel", "[semantics]",
                   embedded_store_lab, redis_store_lab) {
  TestType lab;
  auto a = value_of(lab.acquire("a", "alice", 60'000, 0, 55));
  lab.cancel("a", 56); // another request: the lease stays
  CHECK(lab.status("a").held);
  lab.cancel("a", 55);
  CHECK_FALSE(lab.status("a").held);
  CHECK(lab.status("a").last_token == a.token);
}

TEMPLATE_TEST_CASE("tokens strictly increase across locks and grants", "[semantics]",
                   embedded_store_lab, redis_store_lab) {
  TestType lab;
  uint64_t last = 0;
  for (int i = 0; i < 20; ++i) {
    auto name = "n" + std::to_string(i % 3);
    auto l = value_of(lab.acquire(name, "o", 60'000));
    CHECK(l.token > last);
    last = l.token;
    lab.release(name, "o", l.token);
  }
}

TEMPLATE_TEST_CASE("check tells whether a token is the current lease", "[semantics]",
                   embedded_store_lab, redis_store_lab) {
  TestType lab;
  CHECK_FALSE(value_of(lab.check("a", 1)).current);
  auto l = value_of(lab.acquire("a", "alice", 60'000));
  auto now = value_of(lab.check("a", l.token));
  CHECK(now.current);
  CHECK(now.token == l.token);
  CHECK(now.expires_at_ms == l.expires_at_ms);
  auto older = value_of(lab.check("a", l.token - 1));
  CHECK_FALSE(older.current);
  CHECK(older.token == l.token);
  lab.release("a", "alice", l.token);
  auto freed = value_of(lab.check("a", l.token));
  CHECK_FALSE(freed.current);
  CHECK(freed.token == 0);
}

TEMPLATE_TEST_CASE("draining answers waiters shutting_down and queues no new ones", "[semantics]",
                   embedded_store_lab, redis_store_lab) {
  TestType lab;
  auto a = value_of(lab.acquire("a", "alice", 60'000));
  auto waiting = lab.acquire("a", "bob", 60'000, 50'000);
  lab.draining->store(true);
  caf::anon_send(lab.registry, drain_atom_v);
  lab.run();
  CHECK(code_of(waiting) == errc::shutting_down);
  CHECK(code_of(lab.acquire("a", "carol", 60'000, 50'000)) == errc::shutting_down);
  // Everything else is still served while draining.
  CHECK(value_of(lab.renew("a", "alice", a.token, 60'000)).token == a.token);
  CHECK(value_of(lab.release("a", "alice", a.token)));
}

// Every kind of request on locks that end up free: none leaves an actor behind, whatever its
// answer, and max-locks is never exceeded on the way.
TEMPLATE_TEST_CASE("a request on a free lock leaves no actor behind", "[semantics][lifetime]",
                   embedded_store_lab, redis_store_lab) {
  TestType lab; // max-locks 4
  auto base = lab.lock_actors();
  REQUIRE(base == 0);
  auto held = value_of(lab.acquire("held", "zed", 600'000));
  std::size_t most = 0;
  auto note = [&] { most = std::max(most, lab.locks_in_use()); };
  for (int round = 0; round < 3; ++round) {
    auto n = [&](const char* what) { return std::string{what} + std::to_string(round); };
    lab.status_of(n("status"));
    note();
    lab.check(n("check"), 7);
    note();
    lab.renew(n("renew"), "a", 7);
    note();
    lab.release(n("release"), "a", 7);
    note();
    CHECK(code_of(lab.renew("held", "zed", held.token + 1)) == errc::lease_lost);
    CHECK(code_of(lab.release("held", "mallory", held.token)) == errc::lease_lost);
    CHECK(code_of(lab.acquire("held", "bob", 1000)) == errc::lock_held); // refused
    auto waiter = lab.acquire("held", "bob", 1000, 100);                 // times out
    note();
    lab.advance(101);
    CHECK(code_of(waiter) == errc::lock_held);
    auto cancelled = lab.acquire("held", "carol", 1000, 50'000, 9000 + round);
    lab.cancel("held", 9000 + static_cast<uint64_t>(round));
    CHECK(code_of(cancelled) == errc::cancelled);
    auto taken = value_of(lab.acquire(n("taken"), "a", 60'000)); // acquired, then released
    note();
    lab.release(n("taken"), "a", taken.token);
  }
  CHECK(most <= 4);
  // Only the held lock keeps its place (its actor, or with the embedded store its kept lease).
  CHECK(lab.locks_in_use() == 1);
  CHECK(lab.lock_actors() <= 1);
  lab.release("held", "zed", held.token);
  CHECK(lab.locks_in_use() == 0);
  CHECK(lab.lock_actors() == 0);
}

TEMPLATE_TEST_CASE("max-locks bounds every path that creates an actor", "[semantics][lifetime]",
                   embedded_store_lab, redis_store_lab) {
  TestType lab; // max-locks 4
  std::vector<lease> held;
  for (int i = 0; i < 4; ++i)
    held.push_back(value_of(lab.acquire("h" + std::to_string(i), "o", 600'000)));
  CHECK(code_of(lab.acquire("new", "o", 1000)) == errc::overloaded);
  CHECK(code_of(lab.status_of("new")) == errc::overloaded);
  // Renew, release and check of a name without an actor: a shared store must ask it (and so
  // needs an actor: overloaded); the embedded store knows there is no lease.
  auto renewed = lab.renew("new", "o", 1);
  CHECK((code_of(renewed) == errc::overloaded || code_of(renewed) == errc::lease_lost));
  auto checked = lab.check("new", 1);
  CHECK((code_of(checked) == errc::overloaded || (checked->value() && !checked->value()->current)));
  CHECK(lab.locks_in_use() == 4);
  // Held locks keep working, and a freed slot is used again.
  CHECK(value_of(lab.renew("h0", "o", held[0].token)).token == held[0].token);
  lab.release("h0", "o", held[0].token);
  CHECK(value_of(lab.acquire("new", "o", 1000)).owner == "o");
}

TEMPLATE_TEST_CASE("idle lock actors are kept up to a bound and give way to max-locks",
                   "[semantics][lifetime]", embedded_keeping_lab, redis_keeping_lab) {
  TestType lab; // max-locks 4, 2 idle actors kept
  std::vector<lease> used;
  for (int i = 0; i < 3; ++i) {
    auto name = "used" + std::to_string(i);
    used.push_back(value_of(lab.acquire(name, "o", 60'000)));
    CHECK(value_of(lab.release(name, "o", used.back().token)));
  }
  CHECK(lab.lock_actors() == 2); // the two most recently idle; used0's was retired
  // A kept actor serves its lock's next request as a fresh one would, history included.
  auto st = value_of(lab.status_of("used2"));
  CHECK_FALSE(st.held);
  CHECK(st.last_token == used[2].token);
  CHECK(code_of(lab.renew("used2", "o", used[2].token)) == errc::lease_lost);
  auto again = value_of(lab.acquire("used2", "o", 60'000));
  CHECK(again.token > used[2].token);
  CHECK(value_of(lab.release("used2", "o", again.token)));
  // Held locks take the places of idle actors: max-locks holds, and nothing is refused.
  std::vector<lease> held;
  for (int i = 0; i < 4; ++i)
    held.push_back(value_of(lab.acquire("h" + std::to_string(i), "o", 600'000)));
  CHECK(lab.locks_in_use() == 4);
  CHECK(code_of(lab.acquire("new", "o", 1000)) == errc::overloaded); // all four are held
  CHECK(lab.locks_in_use() == 4);
  for (auto& l : held)
    CHECK(value_of(lab.renew(l.name, "o", l.token)).token == l.token);
}

TEMPLATE_TEST_CASE("another principal cannot renew or release a lease, whatever its owner label",
                   "[semantics][auth]", embedded_store_lab, redis_store_lab) {
  TestType lab;
  // With authentication the front end qualifies each owner by its principal (net/auth.cpp).
  auto billing = qualified_owner("billing", "worker-1");
  auto ops = qualified_owner("ops", "worker-1");
  auto l = value_of(lab.acquire("a", billing, 60'000));
  CHECK(code_of(lab.renew("a", ops, l.token)) == errc::forbidden);
  CHECK(code_of(lab.release("a", ops, l.token)) == errc::forbidden);
  // Its acquire is anyone's: it does not refresh the holder's lease, it finds the lock held.
  CHECK(code_of(lab.acquire("a", ops, 60'000)) == errc::lock_held);
  // The same principal with another label is another owner: not forbidden, just not its lease.
  CHECK(code_of(lab.renew("a", qualified_owner("billing", "worker-2"), l.token))
        == errc::lease_lost);
  auto st = lab.status("a");
  CHECK(st.held);
  CHECK(st.token == l.token);
  CHECK(st.owner == billing);
  CHECK(value_of(lab.release("a", billing, l.token)));
  CHECK_FALSE(lab.status("a").held);
}

TEMPLATE_TEST_CASE("an admin's force-release ends any lease, tells its holder and hands on",
                   "[semantics][auth]", embedded_store_lab, redis_store_lab) {
  TestType lab;
  auto billing = qualified_owner("billing", "worker-1");
  auto l = value_of(lab.acquire("a", billing, 60'000));
  auto ends = std::make_shared<std::vector<lock_event>>();
  auto watch = lab.events->watch_lease("a", [ends](const lock_event& ev) { ends->push_back(ev); });
  lab.events->bind_lease_watch(watch, l.token);
  auto waiter = lab.acquire("a", qualified_owner("ops", "w"), 60'000, 30'000);
  CHECK_FALSE(waiter->has_value()); // queued behind billing's lease

  // Only the lease named, when a token is given.
  CHECK(code_of(lab.force_release("a", l.token + 1)) == errc::lease_lost);
  CHECK(lab.status("a").token == l.token);
  CHECK(value_of(lab.force_release("a", l.token)));
  lab.run_until([&] { return !ends->empty(); });
  // The holder hears it, with its own cause; the waiter is granted a new token at once.
  REQUIRE(ends->size() == 1);
  CHECK(ends->front().cause == lease_end_cause::revoked);
  CHECK(ends->front().token == l.token);
  REQUIRE(waiter->has_value());
  auto next = value_of(waiter);
  CHECK(next.token > l.token);
  CHECK(lab.status("a").owner == qualified_owner("ops", "w"));
  // The revoked holder cannot act on its old lease any more.
  CHECK(code_of(lab.release("a", billing, l.token)) == errc::lease_lost);
  CHECK(code_of(lab.renew("a", billing, l.token)) == errc::lease_lost);
  // Without a token: whatever lease is current; a free lock has none to end.
  CHECK(value_of(lab.force_release("a")));
  CHECK_FALSE(lab.status("a").held);
  CHECK(code_of(lab.force_release("a")) == errc::lease_lost);
}
