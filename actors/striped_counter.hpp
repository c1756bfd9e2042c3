#pragma once

// A counter that the hot path increments without a lock or a shared cache line. A
// prometheus-cpp Counter is one atomic double that every thread adds to with a
// compare-and-swap loop; an acquire+release cycle counts three (two operations, one lease end)
// from both cores. Here each thread adds to its own stripe and a reader sums them.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "actors/thread_stripe.hpp"

namespace fencelock {

class striped_counter {
public:
  /// Adds one. Thread-safe, lock-free.
  void increment() noexcept {
    stripes_[thread_stripe()].count.fetch_add(1, std::memory_order_relaxed);
  }

  /// Returns the count: every increment that happened before this call, and perhaps some made
  /// while it runs.
  uint64_t value() const noexcept {
    uint64_t total = 0;
    for (const auto& s : stripes_)
      total += s.count.load(std::memory_order_relaxed);
    return total;
  }

private:
  struct alignas(64) stripe {
    std::atomic<uint64_t> count{0};
  };

  std::array<stripe, metric_stripes> stripes_{};
};

} // namespace fencelock
