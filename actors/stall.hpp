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
};

/// The last stall: written by the watchdog, read by every lock's backend.
class stall_window {
public:
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
  /// deadline fell into the last stall and that stall's grace lasts.
  bool protects(caf::actor_clock::time_point deadline,
                caf::actor_clock::time_point now) const noexcept {
    auto d = to_ns(deadline);
    return to_ns(now) < grace_until_ns_.load() && d > began_ns_.load() && d <= woke_ns_.load();
  }

  /// Returns whether a lease with `deadline` counts as held at `now`.
  bool alive(caf::actor_clock::time_point deadline,
             caf::actor_clock::time_point now) const noexcept {
    return deadline > now || protects(deadline, now);
  }

  /// Returns when the current grace ends (in the past when there is none).
  caf::actor_clock::time_point grace_until() const noexcept {
    return from_ns(grace_until_ns_.load());
  }

private:
  std::atomic<int64_t> began_ns_{0};
  std::atomic<int64_t> woke_ns_{0};
  std::atomic<int64_t> grace_until_ns_{0};
};

} // namespace fencelock
