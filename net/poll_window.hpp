#pragma once

// How long the I/O thread keeps polling for work before it sleeps in epoll_wait.
//
// A thread that sleeps is woken by the kernel when a socket becomes readable or a CAF worker
// posts an answer. On a virtual machine that wake-up is the expensive part of a short request:
// the idle vCPU halted, and the host has to run it again (~25-30 µs each on the 2-core machines
// of docs/benchmarks.md, twice per hand-off of a hot lock). Polling a little longer than the
// gap until the next event avoids it, at the price of the CPU spent polling.
//
// The window adapts as KVM's halt polling does (virt/kvm/kvm_main.c, grow_halt_poll_ns and
// shrink_halt_poll_ns): it starts at zero; a sleep shorter than the limit means polling would
// have caught the event, so the window grows; a sleep longer than the limit means polling would
// only have burnt CPU, so it shrinks. A server with gaps longer than the limit between its events
// (an idle one, or a lightly used one) therefore never polls, and one busy enough to keep a gap
// below the limit polls through it.

#include <algorithm>
#include <chrono>

namespace fencelock::net {

/// The adaptive polling window of one I/O thread. Not thread-safe: one per thread.
class poll_window {
public:
  using duration = std::chrono::nanoseconds;

  /// The first window after a sleep that polling would have caught.
  static constexpr duration initial = std::chrono::microseconds{10};

  /// `limit` is the longest window (zero: never poll).
  explicit poll_window(duration limit) : limit_(limit) {
  }

  /// Returns how long to poll before sleeping now.
  duration current() const noexcept {
    return current_;
  }

  /// Takes in that polling for the current window found no work, so the thread slept, and that
  /// work came `gap` after polling began. Grows the window if a longer one would have caught
  /// it, shrinks it if no window up to the limit would have.
  void slept(duration gap) noexcept {
    if (limit_ <= duration::zero())
      return;
    if (gap <= limit_) {
      current_ = std::clamp(current_ * 2, initial, limit_);
    } else {
      current_ /= 2;
      if (current_ < initial)
        current_ = duration::zero();
    }
  }

private:
  duration limit_;
  duration current_ = duration::zero();
};

} // namespace fencelock::net
