#pragma once

// A running average of the store's write latency, for shedding new acquires while the store is
// slow (docs/overload.md). An exponentially weighted moving average over samples, which counts
// only while samples keep coming: with none for `max_age` the store is idle, not slow.

#include <chrono>
#include <mutex>

namespace fencelock {

class latency_watch {
public:
  using clock = std::chrono::steady_clock;

  /// Weight of the newest sample (the first sample sets the average).
  static constexpr double weight = 0.2;

  /// Adds one write's round trip, finished at `now`. Thread-safe.
  void add(clock::duration elapsed, clock::time_point now) {
    std::lock_guard<std::mutex> guard{mutex_};
    auto x = std::chrono::duration<double, std::milli>(elapsed).count();
    average_ms_ = has_sample_ ? (1 - weight) * average_ms_ + weight * x : x;
    has_sample_ = true;
    last_ = now;
  }

  /// Returns the average in ms, or 0 when the last sample is older than `max_age`. Thread-safe.
  double average_ms(clock::time_point now, clock::duration max_age) const {
    std::lock_guard<std::mutex> guard{mutex_};
    if (!has_sample_ || now - last_ > max_age)
      return 0;
    return average_ms_;
  }

private:
  mutable std::mutex mutex_;
  bool has_sample_ = false;
  double average_ms_ = 0;
  clock::time_point last_;
};

} // namespace fencelock
