#pragma once

// The loader's modes, one function each; every one returns the process exit status (0, or 1
// when a trial failed outright) and writes its results with emit().

#include <string>
#include <vector>

#include "bench/loader/options.hpp"
#include "bench/loader/targets.hpp"

namespace fencelock::bench {

int run_uncontended(const options& o);
int run_hot(const options& o);
int run_takeover(const options& o);
int run_scale(const options& o);
int run_inproc(const options& o);
int run_redis(const options& o);

/// The child of run_takeover: acquires one lock over HTTP, prints when it sent the acquire,
/// then waits to be killed.
int run_holder(const options& o);

/// One shape of load: the transport, the connections, the cycles open on each.
struct workload {
  std::string transport; // http or ws
  int connections = 1;
  int pipeline = 1;      // ws only; http always has one request in flight per connection

  std::string describe() const;
};

/// Parses `http:64x1`, `ws:1x64`, `http:16` (= 16x1).
workload parse_workload(const std::string& text);

/// Returns the servers a scenario drives: --url (external; --api etcd for an etcd there), else
/// each of --targets (default `fencelock`) started now, with --server-arg added to `fencelock
/// serve`. A target that cannot start for want of its program (etcd) is reported as skipped
/// and left out.
std::vector<target> targets_of(const options& o, const std::string& scenario,
                               const std::vector<std::string>& extra_server_args = {});

/// Runs one uncontended trial of `w` against `t`; `tag` makes the lock names unique.
trial_result uncontended_trial(const target& t, const workload& w, const trial_settings& s,
                               const std::string& tag, int64_t ttl_ms = 10'000);

} // namespace fencelock::bench
