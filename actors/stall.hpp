#pragma once

// After the process itself stalls (SIGSTOP, a frozen VM, a swap storm), every lease whose
// deadline passed during the stall would end at once on wake-up, although its holder may have
// tried to renew all along: the stall was ours, not the holder's. So the watchdog notices stalls
// and opens a grace window: until it closes, leases are judged at the instant the stall began,
// and holders get one chance to renew before anything expires. Nobody else can be granted such
// a lease meanwhile, and fencing tokens protect resources either way (docs/overload.md).

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
  /// How long after the wake-up leases are still judged at the stall's start.
  caf::timespan grace = std::chrono::seconds{5};
};

/// The last stall: written by the watchdog, read by every lock actor.
class stall_window {
public:
  /// Records a stall that began at `began` and whose grace lasts until `grace_until`.
  void open(caf::actor_clock::time_point began, caf::actor_clock::time_point grace_until) {
    began_ns_.store(to_ns(began));
    grace_until_ns_.store(to_ns(grace_until));
  }

  /// Returns the time at which leases are judged at `now`: `now`, or the start of the last
  /// stall while its grace lasts.
  caf::actor_clock::time_point judged(caf::actor_clock::time_point now) const noexcept {
    auto now_ns = to_ns(now);
    if (now_ns >= grace_until_ns_.load())
      return now;
    return from_ns(std::min(now_ns, began_ns_.load()));
  }

  /// Returns when the current grace ends (in the past when there is none).
  caf::actor_clock::time_point grace_until() const noexcept {
    return from_ns(grace_until_ns_.load());
  }

private:
  std::atomic<int64_t> began_ns_{0};
  std::atomic<int64_t> grace_until_ns_{0};
};

} // namespace fencelock
