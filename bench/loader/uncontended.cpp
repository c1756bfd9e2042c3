// Uncontended: acquire+release cycles, each connection (or pipelined slot) on a lock of its
// own, against every target in turn, round after round, so that the machine's noise hits
// fencelock and its baselines alike.

#include <stdexcept>

#include "bench/loader/scenarios.hpp"

namespace fencelock::bench {

std::string workload::describe() const {
  return transport + ":" + std::to_string(connections) + "x" + std::to_string(pipeline);
}

workload parse_workload(const std::string& text) {
  auto colon = text.find(':');
  if (colon == std::string::npos)
    throw std::runtime_error("a workload is transport:connections[xpipeline]: " + text);
  workload w;
  w.transport = text.substr(0, colon);
  if (w.transport != "http" && w.transport != "ws")
    throw std::runtime_error("transport must be http or ws: " + text);
  auto shape = text.substr(colon + 1);
  auto x = shape.find('x');
  w.connections = std::stoi(shape.substr(0, x));
  if (x != std::string::npos)
    w.pipeline = std::stoi(shape.substr(x + 1));
  if (w.connections < 1 || w.pipeline < 1 || (w.transport == "http" && w.pipeline != 1))
    throw std::runtime_error("bad workload shape (http has one request in flight): " + text);
  return w;
}

std::vector<target> targets_of(const options& o, const std::string& scenario,
                               const std::vector<std::string>& extra_server_args) {
  std::vector<target> out;
  if (o.has("url")) {
    auto t = external(o.list("url"));
    if (o.text("api") == "etcd")
      t.speaks = api::etcd;
    // A server on this machine whose pid is given is measured as one the loader started.
    if (auto pid = o.integer("server-pid", 0); pid > 0)
      t.pids = {static_cast<pid_t>(pid)};
    out.push_back(std::move(t));
    return out;
  }
  auto server_args = o.all("server-arg");
  server_args.insert(server_args.end(), extra_server_args.begin(), extra_server_args.end());
  for (const auto& name : o.list("targets", {"fencelock"})) {
    if (name == "fencelock") {
      out.push_back(start_fencelock(server_args));
    } else if (name == "baseline-http") {
      out.push_back(start_baseline_http());
    } else if (name == "etcd") {
      if (find_etcd().empty()) {
        note("SKIPPED: etcd not found (install etcd-server)");
        emit({{"scenario", scenario}, {"target", "etcd"}, {"skipped", "etcd not found"}});
        continue;
      }
      out.push_back(start_etcd());
    } else {
      throw std::runtime_error("unknown target " + name);
    }
  }
  return out;
}

trial_result uncontended_trial(const target& t, const workload& w, const trial_settings& s,
                               const std::string& tag, int64_t ttl_ms) {
  auto settings = s;
  settings.server_pids = t.pids;
  conn_factory make = [&](int i, boost::asio::io_context& ioc, trial_shared& shared,
                          tally& counts) {
    const auto& ep = t.endpoints[static_cast<std::size_t>(i) % t.endpoints.size()];
    auto name = tag + "-" + std::to_string(i);
    if (w.transport == "http")
      return make_http_cycle(ioc, ep, shared, counts, t.speaks, name, ttl_ms);
    return make_ws_cycle(ioc, ep, shared, counts, name, w.pipeline, ttl_ms);
  };
  return run_trial(w.connections, make, settings);
}

int run_uncontended(const options& o) {
  auto settings = trial_options(o);
  auto rounds = o.integer("rounds", 1);
  std::vector<workload> workloads;
  for (const auto& text : o.list("workloads", {"http:64x1"}))
    workloads.push_back(parse_workload(text));
  auto targets = targets_of(o, "uncontended");
  int trial_no = 0;
  bool failed = false;
  for (const auto& w : workloads) {
    for (int64_t r = 0; r < rounds; ++r) {
      for (const auto& t : targets) {
        // Only fencelock speaks WebSocket (the baseline server and etcd's gateway do not).
        if (w.transport == "ws" && t.name != "fencelock" && !o.has("url"))
          continue;
        auto res = uncontended_trial(t, w, settings, "u" + std::to_string(trial_no++));
        auto line = trial_fields(res);
        line["scenario"] = "uncontended";
        line["target"] = t.name;
        line["store"] = t.store;
        line["transport"] = w.transport;
        line["connections"] = w.connections;
        line["pipeline"] = w.pipeline;
        line["in_flight"] = w.connections * w.pipeline;
        line["round"] = r;
        line["threads"] = settings.threads;
        emit(std::move(line));
        note(t.name + " " + w.describe() + " round " + std::to_string(r) + ": "
             + std::to_string(static_cast<long long>(res.per_second())) + " cycles/s, "
             + std::to_string(res.counts.errors) + " errors");
        failed = failed || res.stuck;
      }
    }
  }
  return failed ? 1 : 0;
}

} // namespace fencelock::bench
