#pragma once

// CAF 0.17's work-stealing scheduler, except for how long an idle worker sleeps between two
// looks for work to steal. fencelock runs it with a relaxed sleep of 1 ms (actor_settings.cpp):
// a sleeping worker is woken at once by work queued to it from outside the scheduler (the I/O
// thread, the clock), but steals work another worker queued for itself only when its sleep
// times out, and 1 ms keeps that work from waiting behind a busy worker. On an idle server,
// though, it meant each worker woke a thousand times a second for nothing: 6 % of a core on
// the 2-core benchmark machine, and a worker per core on a large one. Here a worker that wakes
// and finds nothing doubles its next sleep, up to `longest_idle_sleep`; the moment it finds work
// it starts again from the configured sleep. A busy server keeps its 1 ms; an idle one's
// workers wake for its timers, and otherwise ten times a second (docs/configuration.md).

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <thread>

#include <caf/policy/work_stealing.hpp>
#include <caf/resumable.hpp>
#include <caf/timespan.hpp>

namespace fencelock {

/// The sleep after `current` when a worker woke and found nothing: twice as long, at most
/// `longest`.
inline caf::timespan next_idle_sleep(caf::timespan current, caf::timespan longest) {
  return std::min(current * 2, longest);
}

class backoff_stealing : public caf::policy::work_stealing {
public:
  /// The longest an idle worker sleeps before it looks for work to steal again.
  static constexpr caf::timespan longest_idle_sleep = std::chrono::milliseconds{100};

  /// As work_stealing::dequeue, but the relaxed phase backs off (above).
  template <class Worker>
  caf::resumable* dequeue(Worker* self) {
    auto& data = d(self);
    // The aggressive and moderate phases, as CAF does them.
    for (std::size_t k = 0; k < 2; ++k) {
      const auto& phase = data.strategies[k];
      for (std::size_t i = 0; i < phase.attempts; i += phase.step_size) {
        if (auto job = data.queue.take_head())
          return job;
        if (i % phase.steal_interval == 0)
          if (auto job = try_steal(self))
            return job;
        if (phase.sleep_duration.count() > 0)
          std::this_thread::sleep_for(phase.sleep_duration);
      }
    }
    const auto& relaxed = data.strategies[2];
    auto& wait = data.waitdata;
    const auto longest = std::max(longest_idle_sleep, relaxed.sleep_duration);
    auto sleep = relaxed.sleep_duration;
    for (std::size_t i = 1;; ++i) {
      bool queued = false;
      {
        std::unique_lock<std::mutex> guard{wait.lock};
        wait.sleeping = true;
        queued = wait.cv.wait_for(guard, sleep, [&] { return !data.queue.empty(); });
        wait.sleeping = false;
      }
      if (queued) {
        if (auto job = data.queue.take_head())
          return job;
        continue; // stolen meanwhile
      }
      if (i % relaxed.steal_interval == 0)
        if (auto job = try_steal(self))
          return job;
      sleep = next_idle_sleep(sleep, longest);
    }
  }
};

} // namespace fencelock
