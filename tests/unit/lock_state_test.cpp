// The pure decisions of one lock, without actors.

#include <catch2/catch.hpp>

#include "actors/lock_state.hpp"

using namespace fencelock;

namespace {

time_point at(int64_t ms) {
  return time_point{std::chrono::milliseconds{ms}};
}

acquire_request req(std::string owner, int64_t wait_ms = 0) {
  return {"a", std::move(owner), 1000, wait_ms, 1};
}

} // namespace

TEST_CASE("lock_state decides acquires", "[lock_state]") {
  lock_state st;
  st.name = "a";
  CHECK(st.decide(req("alice"), at(0), 10) == acquire_decision::grant);
  st.holder = holder_info{"alice", 3, 1000, at(1000), 1, 0};
  CHECK(st.decide(req("alice"), at(500), 10) == acquire_decision::refresh);
  CHECK(st.decide(req("bob"), at(500), 10) == acquire_decision::reject_held);
  CHECK(st.decide(req("bob", 100), at(500), 10) == acquire_decision::wait);
  CHECK(st.decide(req("bob", 100), at(500), 0) == acquire_decision::reject_full);
  // An ended lease is never refreshed: even its owner waits for the cleanup and a new token.
  CHECK(st.decide(req("alice"), at(1000), 10) == acquire_decision::wait);
  CHECK(st.decide(req("bob"), at(1000), 10) == acquire_decision::wait);
}

TEST_CASE("lock_state judges leases on the monotonic deadline", "[lock_state]") {
  lock_state st;
  st.holder = holder_info{"alice", 3, 1000, at(1000), 1, 0};
  CHECK(st.is_current("alice", 3, at(999)));
  CHECK_FALSE(st.is_current("alice", 3, at(1000)));
  CHECK_FALSE(st.is_current("alice", 2, at(0)));
  CHECK_FALSE(st.is_current("bob", 3, at(0)));
  clock_mapping clock{1'000'000, 0};
  auto s = st.status(at(10), clock);
  CHECK(s.held);
  CHECK(s.expires_at_ms == 1'001'000);
  CHECK_FALSE(st.status(at(1000), clock).held);
}

TEST_CASE("lock_state records round-trip", "[lock_state]") {
  lock_state st;
  st.name = "a";
  st.last_token = 2;
  holder_info h{"alice", 3, 1000, at(1000), 9};
  auto rec = st.record(h);
  CHECK(rec.held);
  CHECK(rec.last_token == 3);
  auto back = lock_state::from_record(rec);
  REQUIRE(back.holder);
  CHECK(back.holder->owner == "alice");
  CHECK(back.holder->deadline == at(1000));
  CHECK(back.holder->grant_id == 0); // a restart forgets undelivered grants: they stand
  CHECK_FALSE(st.record(std::nullopt).held);
  CHECK(st.record(std::nullopt).last_token == 2);
}
