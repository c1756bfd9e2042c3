// The client's renewal schedule, driven with time points we make up: when it renews, where its
// local deadline lies (counted from when a request was SENT), how it retries, and that a loss
// is reported exactly once. No clock, no sleeps.

#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "client/renewal_schedule.hpp"

using fencelock::detail::renewal_schedule;
using action = renewal_schedule::action;
using namespace std::chrono_literals;

namespace {

// An arbitrary origin: the schedule must not care where steady_clock's epoch is.
const renewal_schedule::time_point t0 = renewal_schedule::time_point{} + 1h;

} // namespace

TEST_CASE("renews at the fraction of the TTL", "[client][renewal]") {
  renewal_schedule s{300ms, 1.0 / 3.0, t0};
  CHECK(s.deadline() == t0 + 300ms);
  CHECK(s.period() == 100ms);
  CHECK(s.next_wakeup() == t0 + 100ms);
  CHECK(s.poll(t0) == action::wait);
  CHECK(s.poll(t0 + 99ms) == action::wait);
  CHECK(s.poll(t0 + 100ms) == action::renew);
  s.renew_sent(t0 + 100ms);
  // Sent: nothing more is due for a period, confirmed or not.
  CHECK(s.poll(t0 + 150ms) == action::wait);
  CHECK(s.next_wakeup() == t0 + 200ms);
  CHECK(s.renew_confirmed(t0 + 100ms, 300ms));
  CHECK(s.next_wakeup() == t0 + 200ms);
  CHECK(s.poll(t0 + 200ms) == action::renew);
}

TEST_CASE("the local deadline counts from the send time, not the answer", "[client][renewal]") {
  renewal_schedule s{300ms, 1.0 / 3.0, t0};
  REQUIRE(s.poll(t0 + 100ms) == action::renew);
  s.renew_sent(t0 + 100ms);
  // The answer arrives late, at t0 + 250 ms: the server's TTL started somewhere between the send
  // and the answer, so only the send time is safe.
  REQUIRE(s.poll(t0 + 200ms) == action::renew); // a slow answer does not hold the next one up
  s.renew_sent(t0 + 200ms);
  CHECK(s.renew_confirmed(t0 + 100ms, 300ms));
  CHECK(s.deadline() == t0 + 400ms);
  CHECK(s.poll(t0 + 250ms) == action::wait);
  CHECK(s.next_wakeup() == t0 + 300ms);
}

TEST_CASE("a lease with no confirmed renewal is lost at its deadline, once",
          "[client][renewal]") {
  renewal_schedule s{300ms, 1.0 / 3.0, t0};
  s.renew_sent(t0 + 100ms); // never answered (a frozen server)
  REQUIRE(s.poll(t0 + 200ms) == action::renew);
  s.renew_sent(t0 + 200ms); // neither is this one
  CHECK(s.next_wakeup() == t0 + 300ms);
  CHECK(s.poll(t0 + 299ms) == action::wait);
  CHECK(s.poll(t0 + 300ms) == action::lost);
  CHECK(s.lost());
  // Reported once: later polls, the timer and a second marking stay quiet.
  CHECK(s.poll(t0 + 301ms) == action::wait);
  CHECK(s.poll(t0 + 10s) == action::wait);
  CHECK_FALSE(s.mark_lost());
  CHECK(s.next_wakeup() == renewal_schedule::time_point::max());
  // A confirmation that straggles in does not revive it.
  CHECK_FALSE(s.renew_confirmed(t0 + 200ms, 300ms));
  CHECK(s.deadline() == t0 + 300ms);
  CHECK(s.lost());
}

TEST_CASE("a loss from outside (lease_lost) is reported once too", "[client][renewal]") {
  renewal_schedule s{1000ms, 0.5, t0};
  CHECK(s.mark_lost());
  CHECK_FALSE(s.mark_lost());
  CHECK(s.poll(t0 + 2s) == action::wait); // the deadline does not report it a second time
}

TEST_CASE("a failed renewal is retried until the deadline", "[client][renewal]") {
  renewal_schedule s{300ms, 1.0 / 3.0, t0};
  CHECK(s.retry_interval() == 30ms);
  REQUIRE(s.poll(t0 + 100ms) == action::renew);
  s.renew_sent(t0 + 100ms);
  s.renew_failed(t0 + 100ms, t0 + 110ms); // store_unavailable, or no connection
  CHECK(s.deadline() == t0 + 300ms);       // an unconfirmed renewal moves nothing
  CHECK(s.next_wakeup() == t0 + 140ms);
  CHECK(s.poll(t0 + 139ms) == action::wait);
  REQUIRE(s.poll(t0 + 140ms) == action::renew);
  s.renew_sent(t0 + 140ms);
  s.renew_failed(t0 + 140ms, t0 + 230ms); // a timeout: the next attempt is due anyway
  CHECK(s.next_wakeup() == t0 + 240ms);
  REQUIRE(s.poll(t0 + 240ms) == action::renew);
  s.renew_sent(t0 + 240ms);
  s.renew_failed(t0 + 240ms, t0 + 290ms);
  // The retry would come after the deadline: the deadline comes first.
  CHECK(s.next_wakeup() == t0 + 300ms);
  CHECK(s.poll(t0 + 300ms) == action::lost);
}

TEST_CASE("only the latest attempt's failure hurries the next one", "[client][renewal]") {
  renewal_schedule s{300ms, 1.0 / 3.0, t0};
  s.renew_sent(t0 + 100ms);
  s.renew_sent(t0 + 200ms);
  s.renew_failed(t0 + 100ms, t0 + 210ms); // the older one timed out; the newer is still out
  CHECK(s.next_wakeup() == t0 + 300ms);
  s.renew_failed(t0 + 200ms, t0 + 220ms);
  CHECK(s.next_wakeup() == t0 + 250ms);
}

TEST_CASE("a retry that succeeds restores the rhythm", "[client][renewal]") {
  renewal_schedule s{300ms, 1.0 / 3.0, t0};
  s.renew_sent(t0 + 100ms);
  s.renew_failed(t0 + 100ms, t0 + 110ms);
  REQUIRE(s.poll(t0 + 140ms) == action::renew);
  s.renew_sent(t0 + 140ms);
  CHECK(s.renew_confirmed(t0 + 140ms, 300ms));
  CHECK(s.deadline() == t0 + 440ms);
  CHECK(s.next_wakeup() == t0 + 240ms);
}

TEST_CASE("the deadline never moves backwards", "[client][renewal]") {
  renewal_schedule s{300ms, 1.0 / 3.0, t0};
  CHECK(s.renew_confirmed(t0 + 200ms, 300ms));
  CHECK(s.deadline() == t0 + 500ms);
  // An older renewal answered after a newer one (answers come in any order).
  CHECK(s.renew_confirmed(t0 + 100ms, 300ms));
  CHECK(s.deadline() == t0 + 500ms);
}

TEST_CASE("the retry interval is a tenth of the TTL within 10 ms..1 s", "[client][renewal]") {
  CHECK(renewal_schedule{50ms, 0.5, t0}.retry_interval() == 10ms);
  CHECK(renewal_schedule{2000ms, 0.5, t0}.retry_interval() == 200ms);
  CHECK(renewal_schedule{60s, 0.5, t0}.retry_interval() == 1s);
}

TEST_CASE("a grant answered after its renewal point must be confirmed", "[client][renewal]") {
  // An acquire that waited in the queue: sent at t0, granted whenever the lock freed.
  CHECK_FALSE(renewal_schedule::stale_on_arrival(300ms, 1.0 / 3.0, t0, t0 + 99ms));
  CHECK(renewal_schedule::stale_on_arrival(300ms, 1.0 / 3.0, t0, t0 + 100ms));
  CHECK(renewal_schedule::stale_on_arrival(300ms, 1.0 / 3.0, t0, t0 + 5s));
}

TEST_CASE("a lease renewed by a slow server is held across many TTLs", "[client][renewal]") {
  // Drive the schedule the way the client does, with a server whose answers take 150 ms: longer
  // than the renewal period, shorter than what is left of the lease.
  renewal_schedule s{300ms, 1.0 / 3.0, t0};
  std::vector<renewal_schedule::time_point> out; // sent, answer not yet in
  auto now = t0;
  int confirmed = 0;
  while (now < t0 + 30s) {
    auto answer_at = out.empty() ? renewal_schedule::time_point::max() : out.front() + 150ms;
    now = std::min(s.next_wakeup(), answer_at);
    if (now == answer_at) {
      REQUIRE(s.renew_confirmed(out.front(), 300ms));
      CHECK(s.deadline() == out.front() + 300ms);
      out.erase(out.begin());
      ++confirmed;
      continue;
    }
    auto a = s.poll(now);
    REQUIRE(a != action::lost);
    if (a == action::renew) {
      s.renew_sent(now);
      out.push_back(now);
    }
  }
  CHECK(confirmed >= 298); // one per 100 ms
  // The server goes silent: lost exactly one TTL after the last confirmed send.
  auto last_confirmed = s.deadline() - 300ms;
  for (;;) {
    now = s.next_wakeup();
    auto a = s.poll(now);
    if (a == action::renew)
      s.renew_sent(now);
    if (a == action::lost)
      break;
  }
  CHECK(now == last_confirmed + 300ms);
}
