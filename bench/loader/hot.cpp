// One hot lock: every client queues for the same lock with waitMs over its own WebSocket,
// releases the moment it is granted, and queues again once the release is answered. What the
// server does between a release and the next grant is the hand-off: timed from the holder's
// release leaving the loader to the next holder's `granted` arriving (one loader thread sees
// both, on one clock).

#include <unistd.h>

#include <algorithm>

#include "bench/loader/scenarios.hpp"

namespace fencelock::bench {

namespace {

/// Jain's fairness index of `xs`: 1 when all are equal, 1/n when one has everything.
double jain(const std::vector<uint64_t>& xs) {
  double sum = 0, squares = 0;
  for (auto x : xs) {
    sum += static_cast<double>(x);
    squares += static_cast<double>(x) * static_cast<double>(x);
  }
  return squares == 0 ? 0.0 : sum * sum / (static_cast<double>(xs.size()) * squares);
}

} // namespace

int run_hot(const options& o) {
  auto settings = trial_options(o);
  settings.threads = 1; // the hand-off is timed across sockets on one clock and one thread
  auto rounds = o.integer("rounds", 1);
  auto clients = static_cast<int>(o.integer("clients", 16));
  auto ttl_ms = o.integer("ttl-ms", 10'000);
  auto wait_ms = o.integer("wait-ms", 60'000);
  auto targets = targets_of(o, "hot");
  bool failed = false;
  for (int64_t r = 0; r < rounds; ++r) {
    for (const auto& t : targets) {
      hot_shared hot;
      hot.grants.assign(static_cast<std::size_t>(clients), 0);
      auto lock = "hot-" + std::to_string(r) + "-" + std::to_string(::getpid());
      settings.server_pids = t.pids;
      conn_factory make = [&](int i, boost::asio::io_context& ioc, trial_shared& shared,
                              tally& counts) {
        const auto& ep = t.endpoints[static_cast<std::size_t>(i) % t.endpoints.size()];
        return make_hot_client(ioc, ep, shared, counts, hot, i, lock, ttl_ms, wait_ms);
      };
      auto res = run_trial(clients, make, settings);
      auto line = trial_fields(res);
      auto starved = std::count(hot.grants.begin(), hot.grants.end(), uint64_t{0});
      auto [least, most] = std::minmax_element(hot.grants.begin(), hot.grants.end());
      line["scenario"] = "hot";
      line["target"] = t.name;
      line["store"] = t.store;
      line["transport"] = "ws";
      line["clients"] = clients;
      line["round"] = r;
      line["grants"] = hot.total_grants;
      line["grants_per_s"] = static_cast<double>(hot.total_grants) / res.seconds;
      line["jain"] = jain(hot.grants);
      line["starved"] = starved;
      line["min_grants"] = *least;
      line["max_grants"] = *most;
      line["longest_wait_ms"] = static_cast<double>(hot.wait.max()) / 1e6;
      line["grants_without_release"] = hot.grants_without_release;
      line["handoff"] = hot.handoff.summary(true);
      line["wait"] = hot.wait.summary();
      emit(std::move(line));
      note("hot " + t.name + " round " + std::to_string(r) + ": "
           + std::to_string(static_cast<long long>(static_cast<double>(hot.total_grants)
                                                   / res.seconds))
           + " grants/s, hand-off p50 "
           + std::to_string(static_cast<double>(hot.handoff.percentile(50)) / 1e6) + " ms");
      failed = failed || res.stuck;
    }
  }
  return failed ? 1 : 0;
}

} // namespace fencelock::bench
