#include "actors/metrics.hpp"

#include <algorithm>
#include <array>
#include <tuple>

#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>
#include <prometheus/text_serializer.h>

namespace fencelock {

namespace {

constexpr std::array<std::string_view, 8> operations{
  "acquire", "renew", "release", "force_release", "check", "status", "list", "subscribe"};

constexpr std::array<lease_end_cause, 6> end_causes{
  lease_end_cause::released,       lease_end_cause::expired,    lease_end_cause::undelivered,
  lease_end_cause::session_closed, lease_end_cause::store_lost, lease_end_cause::revoked};

// 100 µs to 10 s, roughly 1-2.5-5 per decade: store writes (fsync) land in the middle, waiting
// acquires at the top.
std::vector<double> duration_buckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
          0.1,    0.25,    0.5,    1.0,   2.5,    5.0,   10.0};
}

} // namespace

metrics::metrics()
  : operations_(prometheus::BuildCounter()
                  .Name("fencelock_operations_total")
                  .Help("Client operations finished, by operation and outcome (ok or error code)")
                  .Register(registry_)),
    lease_ends_(prometheus::BuildCounter()
                  .Name("fencelock_lease_ends_total")
                  .Help("Leases ended by this instance, by cause (released, expired, "
                        "undelivered, session_closed, store_lost, revoked)")
                  .Register(registry_)),
    locks_held_(prometheus::BuildGauge()
                  .Name("fencelock_locks_held")
                  .Help("Locks currently held")
                  .Register(registry_)
                  .Add({})),
    lock_actors_(prometheus::BuildGauge()
                   .Name("fencelock_lock_actors")
                   .Help("Lock actors alive: locks with requests in progress or waiters, "
                         "and idle ones kept (bounded by max-locks)")
                   .Register(registry_)
                   .Add({})),
    shed_(prometheus::BuildCounter()
            .Name("fencelock_shed_total")
            .Help("Calls refused with 503 overloaded before reaching a lock, by operation")
            .Register(registry_)),
    in_flight_(prometheus::BuildGauge()
                 .Name("fencelock_requests_in_progress")
                 .Help("Client calls received and not yet answered, waiting acquires included; "
                       "the shedding thresholds count this minus fencelock_waiters")
                 .Register(registry_)
                 .Add({})),
    waiting_(prometheus::BuildGauge()
               .Name("fencelock_waiters")
               .Help("Acquires queued behind a holder, over all locks")
               .Register(registry_)
               .Add({})),
    subscriptions_(prometheus::BuildGauge()
                     .Name("fencelock_subscriptions")
                     .Help("Lock event subscriptions")
                     .Register(registry_)
                     .Add({})),
    shedding_(prometheus::BuildGauge()
                .Name("fencelock_shedding")
                .Help("1 while new acquires are shed (the service is not ready), else 0")
                .Register(registry_)
                .Add({})),
    websocket_sessions_(prometheus::BuildGauge()
                          .Name("fencelock_websocket_sessions")
                          .Help("Open WebSocket sessions")
                          .Register(registry_)
                          .Add({})),
    io_lag_(prometheus::BuildGauge()
              .Name("fencelock_io_lag_seconds")
              .Help("How late the network I/O loop last ran a 100 ms timer, in seconds")
              .Register(registry_)
              .Add({})),
    stalls_(prometheus::BuildCounter()
              .Name("fencelock_stalls_total")
              .Help("Stalls of the process noticed by the watchdog (each opens a grace window)")
              .Register(registry_)
              .Add({})),
    deferred_expiries_(prometheus::BuildCounter()
                         .Name("fencelock_stall_deferred_expiries_total")
                         .Help("Lease expiries put off because the deadline fell into a stall")
                         .Register(registry_)
                         .Add({})) {
  // Series that exist from the start read 0 instead of being absent.
  static_assert(operations.size() == std::tuple_size_v<decltype(op_series_)>);
  static_assert(end_causes.size() == std::tuple_size_v<decltype(lease_end_series_)>);
  add_family("fencelock_operation_duration_seconds",
             "Time from receiving a client operation to answering it, in seconds");
  for (std::size_t i = 0; i < operations.size(); ++i) {
    std::string op{operations[i]};
    op_series_[i].ok.shown = &operations_.Add({{"op", op}, {"outcome", "ok"}});
    op_series_[i].duration = &add_series({{"op", op}}, duration_buckets());
    shed_.Add({{"op", op}});
  }
  add_family("fencelock_lock_wait_seconds",
             "Time a granted acquire waited in its lock's queue, in seconds");
  wait_ = &add_series({}, duration_buckets());
  add_family("fencelock_store_write_seconds",
             "Round trip of one lease write to the store (queue and group commit included), in "
             "seconds");
  store_writes_ = &add_series({}, duration_buckets());
  add_family("fencelock_store_commit_seconds",
             "One group commit of the embedded store, fsync included, in seconds");
  commits_ = &add_series({}, duration_buckets());
  add_family("fencelock_store_commit_writes",
             "Writes made durable together by one group commit of the embedded store");
  commit_writes_ = &add_series({}, {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024});
  add_family("fencelock_lock_mailbox_depth",
             "Messages waiting in a lock actor's mailbox when it took up a client request");
  mailbox_depth_ = &add_series({}, {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024});
  for (std::size_t i = 0; i < end_causes.size(); ++i)
    lease_end_series_[i].shown =
      &lease_ends_.Add({{"cause", std::string{to_string(end_causes[i])}}});
}

void metrics::record_operation(std::string_view op, std::string_view outcome,
                               std::chrono::steady_clock::duration elapsed) {
  auto seconds = std::chrono::duration<double>(elapsed).count();
  auto known = std::find(operations.begin(), operations.end(), op);
  if (known == operations.end()) {
    // Every operation the service runs is in `operations`; one that is not (a bug) is still
    // counted, though its duration has no series.
    operations_.Add({{"op", std::string{op}}, {"outcome", std::string{outcome}}}).Increment();
    return;
  }
  auto& series = op_series_[static_cast<std::size_t>(known - operations.begin())];
  series.duration->observe(seconds);
  if (outcome == "ok")
    series.ok.count.increment();
  else
    operations_.Add({{"op", std::string{op}}, {"outcome", std::string{outcome}}}).Increment();
}

void metrics::count_lease_end(lease_end_cause cause) {
  auto known = std::find(end_causes.begin(), end_causes.end(), cause);
  if (known != end_causes.end())
    lease_end_series_[static_cast<std::size_t>(known - end_causes.begin())].count.increment();
  else
    lease_ends_.Add({{"cause", std::string{to_string(cause)}}}).Increment();
}

void metrics::set_locks_held(int64_t n) {
  locks_held_now_.store(n, std::memory_order_relaxed);
}

void metrics::set_lock_actors(std::size_t n) {
  lock_actors_now_.store(static_cast<int64_t>(n), std::memory_order_relaxed);
}

void metrics::record_shed(std::string_view op) {
  shed_.Add({{"op", std::string{op}}}).Increment();
}

void metrics::set_load(int64_t in_flight, int64_t waiting, std::size_t subscriptions,
                       bool shedding) {
  in_flight_.Set(static_cast<double>(in_flight));
  waiting_.Set(static_cast<double>(waiting));
  subscriptions_.Set(static_cast<double>(subscriptions));
  shedding_.Set(shedding ? 1.0 : 0.0);
}

void metrics::record_wait(std::chrono::steady_clock::duration waited) {
  wait_->observe(std::chrono::duration<double>(waited).count());
}

void metrics::record_store_write(std::chrono::steady_clock::duration elapsed) {
  store_writes_->observe(std::chrono::duration<double>(elapsed).count());
  store_latency_.add(elapsed, std::chrono::steady_clock::now());
}

void metrics::record_commit(std::chrono::steady_clock::duration took, std::size_t writes) {
  commits_->observe(std::chrono::duration<double>(took).count());
  commit_writes_->observe(static_cast<double>(writes));
}

double metrics::store_write_average_ms() const {
  return store_latency_.average_ms(std::chrono::steady_clock::now(), std::chrono::seconds{5});
}

void metrics::record_mailbox_depth(std::size_t depth) {
  mailbox_depth_->observe(static_cast<double>(depth));
}

void metrics::stall_detected(std::chrono::steady_clock::time_point began,
                             std::chrono::steady_clock::time_point woke) {
  stalls_.Increment();
  store_latency_.stalled(began, woke);
}

void metrics::heartbeat(std::chrono::steady_clock::duration overdue) {
  // This process's clock, as record_store_write's: the actor clock of a test may be another.
  store_latency_.beat(std::chrono::steady_clock::now(), overdue);
}

void metrics::expiry_deferred() {
  deferred_expiries_.Increment();
}

void metrics::set_io_lag(std::chrono::microseconds lag) {
  io_lag_.Set(std::chrono::duration<double>(lag).count());
}

void metrics::set_websocket_sessions(std::size_t n) {
  websocket_sessions_.Set(static_cast<double>(n));
}

void metrics::add_family(std::string name, std::string help) {
  histograms_.push_back({std::move(name), std::move(help), {}});
}

striped_histogram& metrics::add_series(std::vector<prometheus::ClientMetric::Label> labels,
                                       std::vector<double> bounds) {
  auto& family = histograms_.back();
  family.series.push_back(std::make_unique<histogram_series>(
    histogram_series{std::move(labels), striped_histogram{std::move(bounds)}}));
  return family.series.back()->histogram;
}

std::string metrics::scrape() const {
  std::lock_guard<std::mutex> guard{scrape_mutex_};
  auto mirror = [](const mirrored_counter& c) {
    auto shown = c.shown->Value();
    auto now = static_cast<double>(c.count.value());
    if (now > shown)
      c.shown->Increment(now - shown);
  };
  for (const auto& op : op_series_)
    mirror(op.ok);
  for (const auto& end : lease_end_series_)
    mirror(end);
  locks_held_.Set(static_cast<double>(locks_held_now_.load(std::memory_order_relaxed)));
  lock_actors_.Set(static_cast<double>(lock_actors_now_.load(std::memory_order_relaxed)));
  auto families = registry_.Collect();
  for (const auto& h : histograms_) {
    prometheus::MetricFamily family{h.name, h.help, prometheus::MetricType::Histogram, {}};
    for (const auto& series : h.series) {
      family.metric.push_back(series->histogram.collect());
      family.metric.back().label = series->labels;
    }
    families.push_back(std::move(family));
  }
  return prometheus::TextSerializer{}.Serialize(families);
}

} // namespace fencelock
