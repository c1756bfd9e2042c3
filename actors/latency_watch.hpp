#pragma once

// A running average of the store's write latency, for shedding new acquires while the store is
// slow (docs/overload.md): an exponentially weighted moving average over samples that also fades
// with time, halving every `half_life` without a new sample. So a shed decision ends by itself
// while it is in force (shedding acquires starves the average of the fast writes that would
// bring it down), and an idle store counts as not slow. A round trip that overlapped a stall of
// this process measures the stall, not the store: it is left out.

#include <chrono>
#include <cmath>
#include <mutex>

namespace fencelock {

class latency_watch {
public:
  using clock = std::chrono::steady_clock;

  /// Weight of the newest sample (the first sample sets the average).
  static constexpr double weight = 0.2;

  /// How fast the average fades without new samples.
  static constexpr clock::duration half_life = std::chrono::seconds{1};

  /// Adds one write's round trip, finished at `now`. Thread-safe.
  void add(clock::duration elapsed, clock::time_point now) {
    std::lock_guard<std::mutex> guard{mutex_};
    if (now - elapsed < stall_end_ && now > stall_begin_)
      return; // it waited on our own stall
    if (overdue_ > clock::duration::zero() && now - last_beat_ > overdue_)
      return; // it finished in a stall under way, which the watchdog has not seen yet
    auto x = std::chrono::duration<double, std::milli>(elapsed).count();
    average_ms_ = has_sample_ ? (1 - weight) * faded(now) + weight * x : x;
    has_sample_ = true;
    last_ = now;
  }

  /// Records a stall of this process from `began` to `woke`. Thread-safe.
  void stalled(clock::time_point began, clock::time_point woke) {
    std::lock_guard<std::mutex> guard{mutex_};
    stall_begin_ = began;
    stall_end_ = woke;
  }

  /// Notes the watchdog's heartbeat at `now`: until the next, a round trip that finishes more
  /// than `overdue` after it finished in a stall under way (the write and the heartbeat were
  /// ready together on waking, and the write came first) and is left out too. Thread-safe.
  void beat(clock::time_point now, clock::duration overdue) {
    std::lock_guard<std::mutex> guard{mutex_};
    last_beat_ = now;
    overdue_ = overdue;
  }

  /// Returns the average in ms at `now` (faded since the last sample), or 0 when the last
  /// sample is older than `max_age`. Thread-safe.
  double average_ms(clock::time_point now, clock::duration max_age) const {
    std::lock_guard<std::mutex> guard{mutex_};
    if (!has_sample_ || now - last_ > max_age)
      return 0;
    return faded(now);
  }

private:
  double faded(clock::time_point now) const {
    if (now <= last_)
      return average_ms_;
    auto halves = std::chrono::duration<double>(now - last_) / half_life;
    return average_ms_ * std::exp2(-halves);
  }

  mutable std::mutex mutex_;
  bool has_sample_ = false;
  double average_ms_ = 0;
  clock::time_point last_;
  clock::time_point stall_begin_;
  clock::time_point stall_end_;
  clock::time_point last_beat_;
  clock::duration overdue_{}; // zero: no heartbeat yet
};

} // namespace fencelock
