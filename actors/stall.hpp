#pragma once

// After the process itself stalls (SIGSTOP, a frozen VM, a swap storm), every lease whose
// deadline passed during the stall would end at once on wake-up, although its holder may have
// tried to renew all along: the stall was ours, not the holder's. So the watchdog notices stalls
// and opens a grace window: until it closes, a lease whose deadline fell into the stall still
// counts as held, and its holder gets one chance to renew before it expires. The grace is for
// those leases only: a lease whose deadline came after the wake-up ends at its deadline as
// always, and an ended lease is never revived. Nobody else can be granted a protected lease
// meanwhile, and fencing tokens protect resources either way (docs/overload.md).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>

#include <caf/actor_clock.hpp>

#include "actors/clock.hpp"

namespace fencelock {

/// How the watchdog watches for stalls.
struct stall_settings {
  /// Interval of the watchdog's heartbeat.
  caf::timespan heartbeat = std::chrono::milliseconds{250};
  /// A heartbeat later than this beyond its interval counts as a stall (zero = never).
  caf::timespan threshold = std::chrono::seconds{2};
  /// How long after the wake-up the leases that ended in the stall still count as held.
  caf::timespan grace = std::chrono::seconds{5};

  /// How long after a heartbeat the next one is late by a stall.
  caf::timespan overdue() const noexcept {
    return heartbeat + threshold;
  }
};

/// The last stall: written by the watchdog, read by every lock's backend.
///
/// On waking from a stall, the watchdog's heartbeat and the requests that waited in the kernel
/// (renewals sent all along, a rival's acquire) become ready together, and a lock's actor may
/// judge a lease before the watchdog has run. So a reader does not wait for the watchdog to
/// open the window: a heartbeat overdue by more than the threshold is a stall under way, from
/// the last heartbeat to now, and protects the same leases the window will once the watchdog
/// opens it.
class stall_window {
public:
  /// Starts watching at `now` with `settings` (the watchdog, once): from here on, a reader that
  /// finds the heartbeat overdue (beat) judges a stall under way.
  void watch(const stall_settings& settings, caf::actor_clock::time_point now) {
    overdue_ns_.store(settings.overdue().count());
    grace_ns_.store(settings.grace.count());
    last_beat_ns_.store(to_ns(now)); // last: a reader that sees a beat sees the settings
  }

  /// Notes the watchdog's heartbeat at `now`, after it opened the window of any stall it ended.
  void beat(caf::actor_clock::time_point now) {
    last_beat_ns_.store(to_ns(now));
  }

  /// Records a stall from `began` to `woke`, whose grace lasts until `grace_until`.
  void open(caf::actor_clock::time_point began, caf::actor_clock::time_point woke,
            caf::actor_clock::time_point grace_until) {
    // Readers may see a mix of an old and a new window for an instant; both are stalls that
    // happened, so either judgement is one the service could have made.
    began_ns_.store(to_ns(began));
    woke_ns_.store(to_ns(woke));
    grace_until_ns_.store(to_ns(grace_until));
  }

  /// Returns whether a lease with `deadline` still counts as held at `now` only because its
  /// deadline fell into the last stall and that stall's grace lasts, or into a stall under way
  /// that the watchdog has not seen yet.
  bool protects(caf::actor_clock::time_point deadline,
                caf::actor_clock::time_point now) const noexcept {
    auto d = to_ns(deadline);
    if (to_ns(now) < grace_until_ns_.load() && d > began_ns_.load() && d <= woke_ns_.load())
      return true;
    auto since = unnoticed_stall_since(now);
    return since && d > *since && d <= to_ns(now);
  }

  /// Returns whether a lease with `deadline` counts as held at `now`.
  bool alive(caf::actor_clock::time_point deadline,
             caf::actor_clock::time_point now) const noexcept {
    return deadline > now || protects(deadline, now);
  }

  /// Returns when the grace ends, judged at `now` (in the past when there is none): for a stall
  /// under way, the watchdog's window will give at least `grace` from now.
  caf::actor_clock::time_point grace_until(caf::actor_clock::time_point now) const noexcept {
    auto until = grace_until_ns_.load();
    if (unnoticed_stall_since(now))
      until = std::max(until, to_ns(now) + grace_ns_.load());
    return from_ns(until);
  }

private:
  static constexpr int64_t not_watched = std::numeric_limits<int64_t>::min();

  /// When the last heartbeat was, if the next one is overdue at `now` by a stall.
  std::optional<int64_t> unnoticed_stall_since(caf::actor_clock::time_point now) const noexcept {
    auto beat = last_beat_ns_.load();
    if (beat == not_watched || to_ns(now) - beat <= overdue_ns_.load())
      return std::nullopt;
    return beat;
  }

  std::atomic<int64_t> began_ns_{0};
  std::atomic<int64_t> woke_ns_{0};
  std::atomic<int64_t> grace_until_ns_{0};
  std::atomic<int64_t> last_beat_ns_{not_watched};
  std::atomic<int64_t> overdue_ns_{0};
  std::atomic<int64_t> grace_ns_{0};
};

} // namespace fencelock
