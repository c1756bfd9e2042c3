#pragma once

// Which stripe of a striped metric (actors/striped_histogram.hpp, actors/striped_counter.hpp)
// this thread writes to: threads are dealt stripes in turn as they first ask, so the few
// threads of the server (CAF's workers, the I/O threads) each get their own cache line.

#include <atomic>
#include <cstddef>

namespace fencelock {

/// How many stripes a striped metric has. Threads that share a stripe stay correct (the adds
/// are atomic), only slower.
inline constexpr std::size_t metric_stripes = 8;

/// Returns this thread's stripe, below metric_stripes.
inline std::size_t thread_stripe() noexcept {
  static std::atomic<std::size_t> next{0};
  thread_local const std::size_t mine = next.fetch_add(1, std::memory_order_relaxed);
  return mine % metric_stripes;
}

} // namespace fencelock
