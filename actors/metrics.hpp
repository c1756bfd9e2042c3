#pragma once

// The service's Prometheus metrics: one object per service, shared by the service (operation
// counts and latencies) and its lock actors (lease grants and ends). Every update is
// thread-safe, so any actor or caller thread may make it. Counters and gauges are
// prometheus-cpp's, except what every operation updates: its histograms are striped_histograms,
// kept beside the registry and added to its families at scrape; its counts are striped_counters
// and its gauges plain atomics, copied into their prometheus-cpp series at scrape.

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "actors/latency_watch.hpp"
#include "actors/striped_counter.hpp"
#include "actors/striped_histogram.hpp"
#include "fencelock/events.hpp" // lease_end_cause: the `cause` label of lease ends

namespace fencelock {

/// Holds the registry and every fencelock metric (see docs/metrics.md).
class metrics {
public:
  /// Registers every metric family, with all label sets known in advance at zero.
  metrics();

  metrics(const metrics&) = delete;
  metrics& operator=(const metrics&) = delete;

  /// Counts one finished client operation `op` with `outcome` ("ok" or the error code) and
  /// records how long it took. Thread-safe.
  void record_operation(std::string_view op, std::string_view outcome,
                        std::chrono::steady_clock::duration elapsed);

  /// Counts a lease that this instance ended, for `cause`.
  void count_lease_end(lease_end_cause cause);

  /// Sets the gauge of held locks, as the store's event source counts them.
  void set_locks_held(int64_t n);

  /// Sets the gauge of live lock actors.
  void set_lock_actors(std::size_t n);

  /// Counts a call of `op` shed with 503 overloaded before it reached a lock. Thread-safe.
  void record_shed(std::string_view op);

  /// Sets the load gauges: requests in progress, waiting acquires, event subscriptions, and
  /// whether new acquires are being shed.
  void set_load(int64_t in_flight, int64_t waiting, std::size_t subscriptions, bool shedding);

  /// Records how long an acquire waited in a lock's queue before it was granted.
  void record_wait(std::chrono::steady_clock::duration waited);

  /// Records how many messages waited in a lock actor's mailbox when it took up a request.
  void record_mailbox_depth(std::size_t depth);

  /// Records one lease write's round trip to the store (queueing and group commit included).
  void record_store_write(std::chrono::steady_clock::duration elapsed);

  /// Records one group commit of the embedded store: its duration and how many writes it held.
  void record_commit(std::chrono::steady_clock::duration took, std::size_t writes);

  /// Returns the running average of the store's write round trips in ms, fading by half every
  /// second without a write (0 when none finished for 5 s): the signal that sheds new acquires
  /// while the store is slow.
  double store_write_average_ms() const;

  /// Counts a stall of the process noticed by the watchdog (actors/stall.hpp); store writes
  /// that overlapped it do not count as slow ones.
  void stall_detected(std::chrono::steady_clock::time_point began,
                      std::chrono::steady_clock::time_point woke);

  /// Notes the watchdog's heartbeat, which comes every `overdue` at the latest unless the
  /// process stalls: store writes that finish later than that after it are not slow ones either.
  void heartbeat(std::chrono::steady_clock::duration overdue);

  /// Counts an expiry put off because its deadline fell into a stall's grace.
  void expiry_deferred();

  /// Sets the gauge of the I/O loop's lag.
  void set_io_lag(std::chrono::microseconds lag);

  /// Sets the gauge of open WebSocket sessions.
  void set_websocket_sessions(std::size_t n);

  /// Returns every metric in the Prometheus text exposition format (version 0.0.4).
  std::string scrape() const;

private:
  latency_watch store_latency_;
  prometheus::Registry registry_;
  prometheus::Family<prometheus::Counter>& operations_;
  prometheus::Family<prometheus::Counter>& lease_ends_;
  prometheus::Gauge& locks_held_;
  prometheus::Gauge& lock_actors_;
  prometheus::Family<prometheus::Counter>& shed_;
  prometheus::Gauge& in_flight_;
  prometheus::Gauge& waiting_;
  prometheus::Gauge& subscriptions_;
  prometheus::Gauge& shedding_;
  prometheus::Gauge& websocket_sessions_;
  prometheus::Gauge& io_lag_;
  prometheus::Counter& stalls_;
  prometheus::Counter& deferred_expiries_;
  /// A histogram family outside the registry: its series, each with its labels, are added to
  /// the scrape as one family of type histogram.
  struct histogram_series {
    std::vector<prometheus::ClientMetric::Label> labels;
    striped_histogram histogram;
  };
  struct histogram_family {
    std::string name;
    std::string help;
    std::vector<std::unique_ptr<histogram_series>> series;
  };
  std::vector<histogram_family> histograms_;

  /// Starts a histogram family outside the registry.
  void add_family(std::string name, std::string help);
  /// Adds a series to the family started last; returns it.
  striped_histogram& add_series(std::vector<prometheus::ClientMetric::Label> labels,
                                std::vector<double> bounds);

  striped_histogram* wait_ = nullptr;
  striped_histogram* store_writes_ = nullptr;
  striped_histogram* commits_ = nullptr;
  striped_histogram* commit_writes_ = nullptr;
  striped_histogram* mailbox_depth_ = nullptr;
  /// A count that the hot path keeps striped, and the registry's series that shows it, brought
  /// up to date at scrape.
  struct mirrored_counter {
    striped_counter count;
    prometheus::Counter* shown = nullptr;
  };
  /// Each operation's series that every call of it updates (its ok count and its duration), and
  /// each lease end cause's count, looked up once: Family::Add builds a label map, allocates and
  /// takes the family's mutex every time.
  struct op_series {
    mirrored_counter ok;
    striped_histogram* duration = nullptr;
  };
  std::array<op_series, 8> op_series_;
  std::array<mirrored_counter, 6> lease_end_series_;
  /// The gauges that the store and the registry set on every change, copied at scrape.
  std::atomic<int64_t> locks_held_now_{0};
  std::atomic<int64_t> lock_actors_now_{0};
  /// Scrapes bring the mirrors up to date one at a time.
  mutable std::mutex scrape_mutex_;
};

} // namespace fencelock
