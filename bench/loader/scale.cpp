// Scale: one server filled step by step with held leases (1k, 100k, 1M by default, created over
// pipelined WebSockets with a one-hour TTL and never released), its resident memory read after
// each step, and the uncontended throughput probed at each step on names of its own. The
// memory per lease is the growth over the server's memory after a warm-up probe with no lease
// held, divided by the leases held.

#include <algorithm>
#include <thread>

#include "bench/loader/scenarios.hpp"
#include "fencelock/config.hpp"
#include "support/proc_stats.hpp"

namespace fencelock::bench {

int run_scale(const options& o) {
  auto settings = trial_options(o);
  auto rounds = o.integer("rounds", 1);
  auto steps = o.integers("leases", {1'000, 100'000, 1'000'000});
  std::sort(steps.begin(), steps.end());
  auto probe = parse_workload(o.text("probe", "http:64x1"));
  auto fill_connections = static_cast<int>(o.integer("fill-connections", 4));
  auto fill_pipeline = static_cast<int>(o.integer("fill-pipeline", 96));
  constexpr int64_t held_ttl_ms = 3'600'000; // the longest TTL the server takes by default
  // The default max-locks holds a million leases and the probe's: the server runs with it,
  // as issue 13 asks. Only a larger step raises it.
  std::vector<std::string> server_args;
  if (auto wanted = static_cast<uint64_t>(steps.back()) + 1'000; wanted > config{}.max_locks)
    server_args = {"--max-locks", std::to_string(wanted + wanted / 10)};
  auto targets = targets_of(o, "scale", server_args);
  const auto& t = targets.at(0);
  pid_t pid = t.pids.empty() ? 0 : t.pids[0];
  auto rss = [&] { return pid > 0 ? test::process_rss_kib(pid) : -1L; };
  // After a fill the server still has work (closing the fill's connections drops a lease watch
  // per lease, seconds of it at 1M): the next probe waits until the server is at rest (under
  // 10 % of a core for 100 ms, at most 30 s more), so that it measures the server with the
  // leases held rather than that clean-up. Without the server's pid, half a second.
  auto settle = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds{500});
    for (int i = 0; pid > 0 && i < 300; ++i) {
      auto before = test::process_cpu_seconds(pid);
      std::this_thread::sleep_for(std::chrono::milliseconds{100});
      if (test::process_cpu_seconds(pid) - before < 0.01)
        return;
    }
  };

  // Warm the server's allocator and caches with the probe itself before the baseline memory.
  uncontended_trial(t, probe, settings, "scale-warm");
  settle();
  auto rss0 = rss();
  emit({{"scenario", "scale_base"}, {"target", t.name}, {"store", t.store}, {"rss_kib", rss0}});

  bool failed = false;
  int64_t held = 0;
  for (auto n : steps) {
    fill_shared fill;
    fill.next = static_cast<uint64_t>(held);
    fill.end = static_cast<uint64_t>(n);
    fill.prefix = "held-";
    note("scale: filling to " + std::to_string(n) + " held leases");
    conn_factory make = [&](int i, boost::asio::io_context& ioc, trial_shared& shared,
                            tally& counts) {
      const auto& ep = t.endpoints[static_cast<std::size_t>(i) % t.endpoints.size()];
      return make_filler(ioc, ep, shared, counts, fill, fill_pipeline, held_ttl_ms);
    };
    uint64_t last = fill.granted.load();
    int still = 0;
    auto res = run_to_completion(fill_connections, make, settings.threads, [&] {
      auto now = fill.granted.load();
      still = now == last ? still + 1 : 0;
      last = now;
      note("scale: " + std::to_string(now + static_cast<uint64_t>(held)) + " held");
      return still < 15; // nothing granted for 15 s: the server refuses, stop
    });
    auto added = n - held;
    held = static_cast<int64_t>(fill.granted.load()) + held;
    settle();
    auto rss_n = rss();
    boost::json::object line{{"scenario", "scale_fill"},
                             {"target", t.name},
                             {"store", t.store},
                             {"held", held},
                             {"wanted", n},
                             {"fill_seconds", res.seconds},
                             {"fill_per_s", static_cast<double>(added) / res.seconds},
                             {"fill_errors", res.counts.errors},
                             {"rss_kib", rss_n},
                             {"rss0_kib", rss0}};
    if (rss_n > 0 && rss0 > 0 && held > 0)
      line["bytes_per_lease"] = static_cast<double>(rss_n - rss0) * 1024.0
                                / static_cast<double>(held);
    if (!res.counts.first_error.empty())
      line["first_error"] = res.counts.first_error;
    emit(std::move(line));
    if (held < n) {
      note("scale: the server stopped granting at " + std::to_string(held) + " leases");
      failed = true;
      break;
    }
    for (int64_t r = 0; r < rounds; ++r) {
      auto probe_res = uncontended_trial(t, probe, settings,
                                         "scale-" + std::to_string(n) + "-" + std::to_string(r));
      auto pl = trial_fields(probe_res);
      pl["scenario"] = "scale";
      pl["target"] = t.name;
      pl["store"] = t.store;
      pl["held"] = held;
      pl["transport"] = probe.transport;
      pl["connections"] = probe.connections;
      pl["pipeline"] = probe.pipeline;
      pl["round"] = r;
      emit(std::move(pl));
      note("scale " + std::to_string(n) + " round " + std::to_string(r) + ": "
           + std::to_string(static_cast<long long>(probe_res.per_second())) + " cycles/s");
    }
  }
  return failed ? 1 : 0;
}

} // namespace fencelock::bench
