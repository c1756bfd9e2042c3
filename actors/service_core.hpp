#pragma once

// What a service shares with the callbacks it hands out: they hold it, so one that runs after
// the service was destroyed (a stop() that gave up after its grace) still finds it intact.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>

#include "actors/direct_call.hpp"
#include "actors/event_hub.hpp"
#include "actors/metrics.hpp"
#include "fencelock/config.hpp"

namespace fencelock {

struct service_core {
  explicit service_core(config c) : cfg(std::move(c)) {
  }

  const config cfg;
  /// Outlives stop(): the counts of a stopped service can still be scraped.
  std::shared_ptr<metrics> stats = std::make_shared<metrics>();
  std::shared_ptr<event_hub> events = std::make_shared<event_hub>();
  /// The deadlines of direct calls, swept by the bridge. Here because every call's callback
  /// holds the core: the table outlives the calls it links (actors/direct_call.hpp).
  std::shared_ptr<direct_deadlines> deadlines = std::make_shared<direct_deadlines>();
  std::shared_ptr<std::atomic<bool>> running = std::make_shared<std::atomic<bool>>(false);
  /// Calls in progress (from validation to answer), and how many of them are waiting acquires.
  std::atomic<int64_t> in_flight{0};
  /// Reads in progress (status, check, list, subscribe snapshots), within in_flight.
  std::atomic<int64_t> reads_in_flight{0};
  std::shared_ptr<std::atomic<int64_t>> waiting = std::make_shared<std::atomic<int64_t>>(0);
  /// Set by drain(): waiters were answered and no new ones queue.
  std::shared_ptr<std::atomic<bool>> draining = std::make_shared<std::atomic<bool>>(false);
  /// The network I/O loop's latest lag, as its front end reports it.
  std::atomic<int64_t> io_lag_us{0};
  /// When an acquire was last shed (steady_clock ticks; 0 = never): /readyz holds 503 for a
  /// while after it, so that a health check polling now and then sees a shed that comes and goes.
  std::atomic<int64_t> last_acquire_shed{0};
  std::atomic<uint64_t> next_id{1};

  /// How long /readyz stays 503 after the last shed acquire.
  static constexpr std::chrono::seconds readiness_hold{1};

  /// Returns the requests in progress that are not waiting acquires: the work the service holds.
  int64_t busy() const noexcept {
    return in_flight.load() - waiting->load();
  }

  /// Runs `f`, which calls a caller's callback, unless the service was destroyed: no callback
  /// runs once ~service returned. Any thread.
  template <class F>
  void deliver(F&& f) {
    ++delivering_;
    if (alive_.load())
      std::forward<F>(f)();
    --delivering_;
  }

  /// Called by ~service: from when it returns no callback, event handler or lease watch runs.
  /// Waits for those running now (so it must not be called from one of them).
  void retire() {
    alive_.store(false);
    // Either a delivery sees alive_ false, or this sees it counted (both are sequentially
    // consistent): none slips through.
    while (delivering_.load() > 0)
      std::this_thread::yield();
    events->clear();
  }

private:
  std::atomic<bool> alive_{true};
  std::atomic<int64_t> delivering_{0};
};

} // namespace fencelock
