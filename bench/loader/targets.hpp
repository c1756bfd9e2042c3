#pragma once

// What the loader drives: a server it started itself through the test harness (fencelock serve,
// the trivial Beast server, etcd, fencelock instances on a redis-server), or one at a URL it did
// not start. Processes it started are killed with it.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "bench/loader/conn.hpp"

namespace fencelock::bench {

struct target {
  /// fencelock, baseline-http, etcd, or the URL of an external server.
  std::string name;
  /// How the loader talks to it.
  api speaks = api::fencelock;
  /// Where; a workload spreads its connections over these round-robin.
  std::vector<endpoint> endpoints;
  /// The server processes, for CPU and memory (empty for an external server).
  std::vector<pid_t> pids;
  /// What the server keeps its leases in (for the report): embedded, redis, ... or "".
  std::string store;
  /// The processes and directories this target owns, released with it.
  std::vector<std::shared_ptr<void>> owned;
};

/// Returns the endpoint of `http://host:port` (the host resolved now); throws on a bad URL.
endpoint parse_url(const std::string& url);

/// Starts `fencelock serve` (SQLite store in a temp dir, --log-level warn) with `args` added.
target start_fencelock(const std::vector<std::string>& args);

/// Starts the trivial Beast JSON server (bench/baseline_http.cpp).
target start_baseline_http();

/// Starts etcd (Debian's etcd-server: $FENCELOCK_ETCD, else etcd on PATH) as one member on
/// loopback with its data in a temp dir; throws when there is none or it does not get healthy.
target start_etcd();

/// Returns the etcd binary, or "" when there is none.
std::string find_etcd();

/// Returns a target for servers at `urls` that the loader did not start.
target external(const std::vector<std::string>& urls);

} // namespace fencelock::bench
