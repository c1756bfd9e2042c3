#pragma once

// When to renew a lease and when to give it up, as plain arithmetic on time points handed in by
// the caller (no clock, no timer, no I/O), so a unit test can drive it step by step.
//
//   sent ──── +P: renew ──── +P: renew ──── ... ──── deadline = last confirmed send + TTL: lost
//               │ confirmed(sent') → deadline := max(deadline, sent' + TTL)
//               │ failed(sent', now), sent' the latest → next attempt at now + retry_interval
//               └ no answer yet → the next attempt goes out P after this one anyway
//
// (P = fraction · TTL.) The deadline only moves on a *confirmed* renewal and counts from when
// that renewal was SENT: the server started its new TTL after receiving it, so the server's
// deadline is never earlier than ours. A renewal stays useful until the deadline, however late
// its answer comes, so one that is slow is not abandoned: the next goes out beside it. Anything
// unconfirmed (a timeout, store_unavailable, a dropped connection) leaves the deadline where it
// was; reaching it is a loss, reported exactly once.

#include <chrono>
#include <cstdint>

namespace fencelock::detail {

class renewal_schedule {
public:
  using clock = std::chrono::steady_clock;
  using time_point = clock::time_point;
  using duration = clock::duration;

  /// What the caller should do now.
  enum class action : uint8_t {
    wait = 1,  // nothing until next_wakeup()
    renew,     // send a renewal now and call renew_sent(); earlier ones may still be answered
    lost,      // the local deadline passed: report the loss (returned once)
  };

  /// Starts the schedule of a lease of `ttl` whose acquire (or confirming renew) was sent at
  /// `sent`, renewing at `fraction` (0 < fraction < 1) of the TTL.
  renewal_schedule(std::chrono::milliseconds ttl, double fraction, time_point sent) noexcept;

  /// Returns what to do at `now`. Returns `lost` the first time `now` reaches the deadline (and
  /// marks the schedule lost), `renew` when the next attempt is due.
  action poll(time_point now) noexcept;

  /// Records that a renewal went out at `now`; the next is due a period later unless this one
  /// fails sooner.
  void renew_sent(time_point now) noexcept;

  /*
   * Records a confirmed renewal that was sent at `sent` and granted `ttl`: moves the deadline
   * to sent + ttl, never backwards (answers come in any order). Returns false, changing
   * nothing, once the lease is lost: a late confirmation does not revive it.
   */
  bool renew_confirmed(time_point sent, std::chrono::milliseconds ttl) noexcept;

  /// Records that the renewal sent at `sent` failed at `now` (transient: timeout,
  /// store_unavailable, no connection). When it is the latest attempt, the next one is due by
  /// now + retry_interval(); an older one's failure changes nothing.
  void renew_failed(time_point sent, time_point now) noexcept;

  /// Marks the lease lost for a reason outside the schedule (a lease_lost answer or push).
  /// Returns true the first time only, so that the loss is reported once.
  bool mark_lost() noexcept;

  /// Returns the local deadline.
  time_point deadline() const noexcept {
    return deadline_;
  }

  /// Returns when poll() should be called next: the next attempt or the deadline.
  time_point next_wakeup() const noexcept;

  /// Returns whether the lease was declared lost.
  bool lost() const noexcept {
    return lost_;
  }

  /// Returns the period between attempts (fraction · TTL).
  duration period() const noexcept {
    return period_;
  }

  /// Returns the pause before retrying a failed renewal: a tenth of the TTL, within 10 ms..1 s.
  duration retry_interval() const noexcept;

  /// Returns whether a grant answered at `now` for a request sent at `sent` is already due for
  /// renewal (a waited acquire granted late), so the client should confirm it before use.
  static bool stale_on_arrival(std::chrono::milliseconds ttl, double fraction, time_point sent,
                               time_point now) noexcept;

private:
  duration ttl_;
  duration period_;  // fraction · ttl
  time_point deadline_;
  time_point renew_at_;   // when the next attempt is due
  time_point last_sent_;  // the latest attempt (or the acquire)
  bool lost_ = false;
};

} // namespace fencelock::detail
