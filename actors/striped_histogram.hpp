#pragma once

// A Prometheus histogram that the hot path updates without a lock or a shared cache line.
// prometheus-cpp's Histogram takes a mutex and two compare-and-swap loops on shared atomics per
// observation; an acquire+release cycle observes ten, from both cores. Here each thread writes
// to its own stripe (threads are dealt stripes in turn), and a scrape adds the stripes up.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <prometheus/client_metric.h>

#include "actors/thread_stripe.hpp"

namespace fencelock {

class striped_histogram {
public:
  /// The most bucket boundaries a histogram may have (the +Inf bucket comes on top).
  static constexpr std::size_t max_bounds = 24;

  /// `bounds` ascending, at most max_bounds of them; a value v falls in the first bucket whose
  /// bound is >= v, as in prometheus-cpp.
  explicit striped_histogram(std::vector<double> bounds);

  /// Counts `value`. Thread-safe, lock-free.
  void observe(double value) noexcept;

  /// The histogram as prometheus-cpp's Histogram::Collect gives it: cumulative buckets ending
  /// with +Inf, the count (equal to the +Inf bucket) and the sum.
  prometheus::ClientMetric collect() const;

private:
  struct alignas(64) stripe {
    std::array<std::atomic<uint64_t>, max_bounds + 1> counts{};
    std::atomic<double> sum{0.0};
  };

  std::vector<double> bounds_;
  std::unique_ptr<stripe[]> stripes_;
};

} // namespace fencelock
