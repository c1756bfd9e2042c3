#pragma once

// Records how the wall clock moves against CLOCK_MONOTONIC during a fault-suite run, as "clock"
// lines in clock.jsonl: {"op":"clock","t0":<monotonic ns>,"offset":<CLOCK_REALTIME minus
// CLOCK_MONOTONIC, ns>,"since":<monotonic ns of the sample before, which still read the offset
// before>}: the new offset took hold somewhere in [since, t0]. Redis judges every deadline on its host's wall clock (docs/redis.md,
// "Clocks"), the clients on CLOCK_MONOTONIC. The two are one machine's clocks, but a virtual
// machine that was paused or snapshotted gets its wall clock stepped forward on resume while its
// monotonic clock did not count the pause, and the wall clock may then be slewed for a while.
// Such a step ended Redis leases up to a second before their holders' deadlines in a CI run. The
// checker (checker.cpp) uses these lines to judge Redis leases by Redis's clock.

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>

#include "chaos/history.hpp"

namespace fencelock::chaos {

class clock_watch {
public:
  /// Starts sampling every 5 ms into `path`. A line is written at the start and whenever the
  /// offset moved by 1 ms or more since the last line.
  explicit clock_watch(const std::string& path) : log_(path), thread_([this] { loop(); }) {}

  ~clock_watch() {
    stop_ = true;
    thread_.join();
  }

  clock_watch(const clock_watch&) = delete;
  clock_watch& operator=(const clock_watch&) = delete;

private:
  static constexpr int64_t threshold_ns = 1'000'000;
  // A sample whose two monotonic readings are further apart than this was preempted in between
  // and is skipped: its offset would be off by the preemption.
  static constexpr int64_t max_read_ns = 100'000;

  void loop() {
    int64_t last = 0, last_sample = 0;
    bool first = true;
    while (!stop_) {
      auto before = mono_ns();
      timespec real{};
      ::clock_gettime(CLOCK_REALTIME, &real);
      auto after = mono_ns();
      if (after - before <= max_read_ns) {
        auto mono = before + (after - before) / 2;
        auto offset = static_cast<int64_t>(real.tv_sec) * 1'000'000'000 + real.tv_nsec - mono;
        if (first || std::llabs(offset - last) >= threshold_ns) {
          log_.append({{"op", "clock"},
                       {"t0", mono},
                       {"offset", offset},
                       {"since", first ? mono : last_sample}});
          last = offset;
          first = false;
        }
        last_sample = mono;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
  }

  history_writer log_;
  std::atomic<bool> stop_{false};
  std::thread thread_; // last: starts once the members it uses exist
};

} // namespace fencelock::chaos
