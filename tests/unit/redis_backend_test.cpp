// The Redis store's backend under the one lock actor, on CAF's test coordinator: two instances
// of the service share one model of the Redis store (tests/unit/redis_model.hpp), so time is
// deterministic.

#include <catch2/catch.hpp>

#include "tests/unit/redis_model.hpp"

using namespace fencelock;
using namespace fencelock::test;

namespace {

uint64_t token_of(const reply<lease>& r) {
  REQUIRE(r->has_value());
  REQUIRE(r->value());
  return r->value()->token;
}

} // namespace

TEST_CASE("a waiter is handed a lock freed on another instance as the channel says so",
          "[unit][redis]") {
  model_lab t;
  auto a = token_of(t.acquire_at(0, "L", "alice", 30'000));
  auto waiting = t.acquire_at(1, "L", "bob", 10'000, 10'000);
  REQUIRE_FALSE(waiting->has_value());
  auto released = t.ask_instance<bool>(0, release_atom_v, release_request{"L", "alice", a, false});
  REQUIRE(released->has_value());
  // No time passed: the end on instance 0 woke the waiter on instance 1.
  auto b = token_of(waiting);
  CHECK(b > a);
  CHECK(t.model->locks["L"].owner == "bob");
}

TEST_CASE("without the channel a waiter still gets the lock at the holder's deadline, not before",
          "[unit][redis]") {
  model_lab t;
  t.model->channel = false;
  auto a = token_of(t.acquire_at(0, "L", "alice", 1'000));
  auto waiting = t.acquire_at(1, "L", "bob", 10'000, 5'000);
  t.advance(999);
  CHECK_FALSE(waiting->has_value());
  // The retry timer fires just past the deadline Redis reported: no polling before it.
  CHECK(t.calls_of("acquire").size() == 2u);
  t.advance(2);
  CHECK(token_of(waiting) > a);
  CHECK(t.calls_of("acquire").size() == 3u);
}

TEST_CASE("a watched lease renewed through another instance is not reported expired early",
          "[unit][redis]") {
  model_lab t;
  t.model->channel = false;
  auto a = token_of(t.acquire_at(0, "L", "alice", 1'000));
  t.advance(500);
  auto renewed = t.ask_instance<lease>(1, renew_atom_v, renew_request{"L", "alice", a, 1'000});
  REQUIRE(renewed->has_value());
  REQUIRE(renewed->value());
  // Instance 0 looks at its own deadline (1001 ms), finds the lease alive until 1500, looks
  // again then; instance 1 watches from its renewal. Exactly one of them ends it.
  t.advance(501);
  CHECK(t.model->ends.empty());
  auto expires = t.calls_of("expire");
  REQUIRE_FALSE(expires.empty());
  CHECK(expires.front() == "expire L @1001");
  t.advance(500);
  CHECK(t.model->ends == std::vector<std::string>{"L:" + std::to_string(a) + ":expired"});
}

TEST_CASE("a store that fails or stops answering fails closed", "[unit][redis]") {
  model_lab t;
  t.model->failing = "redis store: redis is not connected";
  auto refused = t.acquire_at(0, "L", "alice", 1'000);
  CHECK(code_of(refused) == errc::store_unavailable);
  CHECK(t.model->locks.empty());

  // A waiter queued while the store worked is answered once a retry fails.
  t.model->failing.clear();
  t.model->channel = false;
  auto a = token_of(t.acquire_at(0, "L", "alice", 1'000));
  auto waiting = t.acquire_at(1, "L", "bob", 1'000, 5'000);
  t.model->failing = "redis store: no reply within 2000 ms";
  t.advance(1'001);
  CHECK(code_of(waiting) == errc::store_unavailable);

  // Frozen: the request times out (store_timeout) instead of hanging, and nothing is granted.
  t.model->failing.clear();
  t.model->frozen = true;
  auto renew = t.ask_instance<lease>(0, renew_atom_v, renew_request{"L", "alice", a, 1'000});
  CHECK_FALSE(renew->has_value());
  t.advance(4'001);
  REQUIRE(renew->has_value());
  CHECK_FALSE(renew->value());
}

TEST_CASE("draining answers waiters shutting_down and queues no new ones", "[unit][redis]") {
  model_lab t;
  auto a = token_of(t.acquire_at(0, "L", "alice", 30'000));
  auto waiting = t.acquire_at(0, "L", "bob", 30'000, 20'000);
  REQUIRE_FALSE(waiting->has_value());
  t.draining->store(true);
  caf::anon_send(t.model->instances[0], drain_atom_v);
  t.run();
  CHECK(code_of(waiting) == errc::shutting_down);
  CHECK(code_of(t.acquire_at(0, "L", "carol", 30'000, 20'000)) == errc::shutting_down);
  // Everything else is still served while draining.
  auto renewed = t.ask_instance<lease>(0, renew_atom_v, renew_request{"L", "alice", a, 30'000});
  REQUIRE(renewed->has_value());
  CHECK(renewed->value());
}

TEST_CASE("a grant whose answer never reached its client is undone with cause undelivered",
          "[unit][redis]") {
  model_lab t;
  auto a = token_of(t.acquire_at(0, "L", "alice", 30'000, 0, 77));
  caf::anon_send(t.model->instances[0], cancel_atom_v, std::string{"L"}, uint64_t{77});
  t.run();
  CHECK(t.model->ends == std::vector<std::string>{"L:" + std::to_string(a) + ":undelivered"});
  CHECK_FALSE(t.model->locks["L"].held);
}

namespace {

/// Watches lease `token` of lock `name` on the lab's event hub, as a holder's socket does;
/// returns where the end lands.
std::shared_ptr<std::vector<lock_event>> watch_end(model_lab& t, const std::string& name,
                                                    uint64_t token) {
  auto ends = std::make_shared<std::vector<lock_event>>();
  auto id = t.events->watch_lease(name, [ends](const lock_event& ev) { ends->push_back(ev); });
  t.events->bind_lease_watch(id, token);
  return ends;
}

} // namespace

TEST_CASE("a lease the store lost and another instance granted again is reported store_lost",
          "[unit][redis]") {
  model_lab t;
  auto a = token_of(t.acquire_at(0, "L", "alice", 30'000));
  auto ends = watch_end(t, "L", a);
  t.model->locks.clear(); // FLUSHALL, or a restart without data that nobody noticed
  auto b = token_of(t.acquire_at(1, "L", "bob", 30'000));
  CHECK(b > a);
  // Instance 0 heard the new lease start without having heard its own end: at once, not at
  // alice's deadline.
  REQUIRE(ends->size() == 1);
  CHECK(ends->front().cause == lease_end_cause::store_lost);
  CHECK(ends->front().token == a);
}

TEST_CASE("a lease the store lost and this instance granted again is reported store_lost",
          "[unit][redis]") {
  model_lab t;
  t.model->channel = false; // only the grant's answer can tell
  auto a = token_of(t.acquire_at(0, "L", "alice", 30'000));
  auto ends = watch_end(t, "L", a);
  t.model->locks.clear();
  auto b = token_of(t.acquire_at(0, "L", "bob", 30'000));
  CHECK(b > a);
  REQUIRE(ends->size() == 1);
  CHECK(ends->front().cause == lease_end_cause::store_lost);
}

TEST_CASE("a lease that ended by a script is never reported store_lost", "[unit][redis]") {
  model_lab t;
  auto a = token_of(t.acquire_at(0, "L", "alice", 1'000));
  auto ends = watch_end(t, "L", a);
  t.advance(1'002); // instance 0 ends it at its deadline
  token_of(t.acquire_at(1, "L", "bob", 30'000));
  auto a2 = token_of(t.acquire_at(0, "M", "alice", 30'000));
  t.ask_instance<bool>(0, release_atom_v, release_request{"M", "alice", a2, false});
  token_of(t.acquire_at(1, "M", "bob", 30'000));
  for (auto& ev : *ends)
    CHECK(ev.cause != lease_end_cause::store_lost);
}
