// The pure decisions of one lock, without actors: the lock actor's admission (lock_state), and
// the embedded store's judgement of a lease (lock_record).

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "actors/lock_state.hpp"
#include "actors/stall.hpp"
#include "actors/store/embedded/lock_record.hpp"

using namespace fencelock;

namespace {

using time_point = caf::actor_clock::time_point;

time_point at(int64_t ms) {
  return time_point{std::chrono::milliseconds{ms}};
}

acquire_request req(std::string owner, int64_t wait_ms = 0) {
  return {"a", std::move(owner), 1000, wait_ms, 1};
}

lease_record held_by(std::string owner, uint64_t token, int64_t deadline_ms) {
  lease_record x;
  x.owner = std::move(owner);
  x.token = token;
  x.ttl_ms = 1000;
  x.deadline = at(deadline_ms);
  return x;
}

} // namespace

TEST_CASE("lock_state admits acquires in FIFO order", "[lock_state]") {
  lock_state st;
  st.name = "a";
  // Nobody waits: the store decides (grant, refresh or held).
  CHECK(st.decide(req("alice"), 10) == admission::ask_store);
  st.note_lease(held_by("alice", 3, 1000), true);
  CHECK(st.decide(req("bob", 100), 10) == admission::ask_store);
  // Somebody waits: the holder renews in place, everyone else queues behind or is refused.
  st.waiters.push_back(waiter_info{req("bob", 100), {}, {}, at(100)});
  CHECK(st.decide(req("alice"), 10) == admission::refresh);
  CHECK(st.decide(req("carol"), 10) == admission::reject_held);
  CHECK(st.decide(req("carol", 100), 10) == admission::queue);
  CHECK(st.decide(req("carol", 100), 1) == admission::reject_full);
}

TEST_CASE("lock_state lets waiters give up at their own deadlines, in FIFO order", "[lock_state]") {
  lock_state st;
  CHECK_FALSE(st.earliest_deadline());
  for (auto [owner, deadline] :
       {std::pair{"bob", 300}, {"carol", 100}, {"dave", 200}, {"erin", 100}})
    st.waiters.push_back(waiter_info{req(owner, deadline), {}, {}, at(deadline)});
  CHECK(st.earliest_deadline() == at(100));
  CHECK(st.take_overdue(at(99)).empty());
  auto overdue = st.take_overdue(at(100));
  REQUIRE(overdue.size() == 2);
  CHECK(overdue[0].req.owner == "carol");
  CHECK(overdue[1].req.owner == "erin");
  REQUIRE(st.waiters.size() == 2);
  CHECK(st.waiters[0].req.owner == "bob"); // the rest keep their order
  CHECK(st.waiters[1].req.owner == "dave");
  CHECK(st.earliest_deadline() == at(200));
}

TEST_CASE("the waiter queue stays FIFO through pops, withdrawals and timeouts", "[lock_state]") {
  // A hot lock pops its front once per hand-off: checked against a std::deque through a long
  // mix of every change the lock actor makes, so that the reclaimed front slots never show.
  struct expected_waiter {
    std::string owner;
    uint64_t request_id;
    bool short_wait; // times out at 10 ms
  };
  lock_state st;
  std::deque<expected_waiter> model;
  auto same = [&] {
    if (st.waiters.size() != model.size() || st.waiters.empty() != model.empty())
      return false;
    std::size_t i = 0;
    for (const auto& w : st.waiters)
      if (w.req.owner != model[i++].owner)
        return false;
    return true;
  };
  uint64_t next = 1;
  int mismatches = 0;
  for (int step = 0; step < 5000; ++step) {
    switch (step * 7919 % 11) { // a fixed, well-mixed sequence of operations
      case 0:
      case 1:
      case 2:
      case 3: {
        expected_waiter w{"w" + std::to_string(next), next, next % 5 == 0};
        ++next;
        auto r = req(w.owner, 100);
        r.request_id = w.request_id;
        st.waiters.push_back(waiter_info{r, {}, {}, at(w.short_wait ? 10 : 1'000'000)});
        model.push_back(w);
        break;
      }
      case 4:
      case 5:
      case 6:
        if (!model.empty()) {
          if (st.pop_front().req.owner != model.front().owner)
            ++mismatches;
          model.pop_front();
        }
        break;
      case 7: // a waiter in the middle withdraws
        if (!model.empty()) {
          auto middle = model.begin() + static_cast<std::ptrdiff_t>(model.size() / 2);
          auto taken = st.take_waiter(middle->request_id);
          if (!taken || taken->req.owner != middle->owner)
            ++mismatches;
          model.erase(middle);
        }
        break;
      case 8: { // the short waits time out, oldest first
        std::vector<std::string> expected, got;
        for (const auto& w : model)
          if (w.short_wait)
            expected.push_back(w.owner);
        std::erase_if(model, [](const expected_waiter& w) { return w.short_wait; });
        for (const auto& w : st.take_overdue(at(10)))
          got.push_back(w.req.owner);
        if (got != expected)
          ++mismatches;
        break;
      }
      default:
        break;
    }
    if (!same())
      ++mismatches;
  }
  CHECK(mismatches == 0);
  CHECK(next > 1000);
}

TEST_CASE("lock_state keeps what it must and nothing more", "[lock_state]") {
  lock_state st;
  CHECK(st.idle());
  st.note_lease(held_by("alice", 3, 1000), false);
  CHECK(st.idle()); // only what waiters would wait for: nothing to keep
  st.note_lease(held_by("alice", 3, 2000), true);
  CHECK_FALSE(st.idle());
  st.grant_id = 7;
  // Another lease starts afresh: not watched, not granted here.
  st.note_lease(held_by("bob", 4, 3000), false);
  CHECK_FALSE(st.watching);
  CHECK(st.grant_id == 0);
  st.forget_lease();
  CHECK(st.idle());
}

TEST_CASE("lock_state keeps the highest revision of one lease", "[lock_state]") {
  lock_state st;
  auto x = held_by("alice", 3, 1000);
  x.revision = 4;
  st.note_lease(x, true);
  x.revision = 2; // an older answer
  st.note_lease(x, true);
  CHECK(st.lease->revision == 4);
}

TEST_CASE("lock_record judges leases on the monotonic deadline", "[lock_record]") {
  lock_record rec;
  rec.holder = held_by("alice", 3, 1000);
  CHECK(rec.is_current("alice", 3, at(999), nullptr));
  CHECK_FALSE(rec.is_current("alice", 3, at(1000), nullptr));
  CHECK_FALSE(rec.is_current("alice", 2, at(0), nullptr));
  CHECK_FALSE(rec.is_current("bob", 3, at(0), nullptr));
}

TEST_CASE("a stall protects only the leases whose deadlines fell into it", "[lock_record]") {
  stall_window stalls;
  // The process stood still from 500 to 3000 ms; grace until 8000 ms.
  stalls.open(at(500), at(3000), at(8000));
  lock_record in_stall;
  in_stall.holder = held_by("alice", 3, 1000);
  CHECK(in_stall.alive(at(4000), &stalls));
  CHECK_FALSE(in_stall.alive(at(8000), &stalls)); // the grace is over
  // Granted after the wake-up: ends at its deadline as always, grace or not.
  lock_record after;
  after.holder = held_by("bob", 4, 3100);
  CHECK(after.alive(at(3099), &stalls));
  CHECK_FALSE(after.alive(at(3100), &stalls));
  // Ended before the stall began: never revived.
  lock_record before;
  before.holder = held_by("carol", 5, 400);
  CHECK_FALSE(before.alive(at(4000), &stalls));
}

TEST_CASE("a heartbeat overdue by a stall protects as the window will once opened",
          "[lock_record]") {
  stall_window stalls;
  lock_record in_stall;
  in_stall.holder = held_by("alice", 3, 1000);
  CHECK_FALSE(in_stall.alive(at(5000), &stalls)); // not watched: no stall is ever assumed
  // Heartbeat 250 ms, a heartbeat 2 s late is a stall, 5 s of grace; the last beat at 500 ms.
  stalls.watch(stall_settings{}, at(0));
  stalls.beat(at(500));
  CHECK_FALSE(in_stall.alive(at(2750), &stalls)); // late, but not by a stall
  // At 3000 ms the next beat is overdue by a stall the watchdog has not seen yet.
  CHECK(in_stall.alive(at(3000), &stalls));
  CHECK(stalls.grace_until(at(3000)) == at(8000));
  lock_record before;
  before.holder = held_by("carol", 5, 400); // ended before the last beat: never revived
  CHECK_FALSE(before.alive(at(3000), &stalls));
  // The watchdog wakes at 3100: it opens the window, then beats.
  stalls.open(at(500), at(3100), at(8100));
  stalls.beat(at(3100));
  CHECK(in_stall.alive(at(8000), &stalls));
  CHECK_FALSE(in_stall.alive(at(8100), &stalls)); // the grace is over
  CHECK(stalls.grace_until(at(4000)) == at(8100));
  lock_record after;
  after.holder = held_by("bob", 4, 3200); // due after the wake-up: ends at its deadline
  CHECK_FALSE(after.alive(at(3200), &stalls));
}

TEST_CASE("lock_record round-trips through the store", "[lock_record]") {
  clock_mapping clock{1'000'000, 0};
  lock_record rec;
  rec.last_token = 2;
  auto stored = rec.to_stored("a", held_by("alice", 3, 1000));
  CHECK(stored.held);
  CHECK(stored.last_token == 3);
  auto back = lock_record::from_stored(stored, clock);
  REQUIRE(back.holder);
  CHECK(back.holder->owner == "alice");
  CHECK(back.holder->deadline == at(1000));
  CHECK(back.holder->expires_at_ms == 1'001'000);
  auto freed = rec.to_stored("a", std::nullopt);
  CHECK_FALSE(freed.held);
  CHECK(freed.last_token == 2);
}
