#pragma once

// One trial: connections spread over worker threads (an io_context each), a warm-up, a fixed
// measured window, then a drain in which every connection finishes the cycle it has open (so
// that no lease is left behind). The main thread keeps the time; the workers keep the counts.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "bench/loader/conn.hpp"

namespace fencelock::bench {

/// Makes connection `i` of a trial on worker `ioc`, counting into `counts`.
using conn_factory = std::function<std::shared_ptr<stream_conn>(
  int i, boost::asio::io_context& ioc, trial_shared& shared, tally& counts)>;

struct trial_settings {
  double warmup_s = 0.5;
  double duration_s = 2.0;
  /// Worker threads of the loader (each runs many connections).
  int threads = 1;
  /// Processes whose CPU time the trial reports as the server's (empty: none known).
  std::vector<pid_t> server_pids;
  /// Longest time every connection may take to connect, and to finish after the window.
  std::chrono::seconds patience{30};
};

struct trial_result {
  double seconds = 0;      // the measured window
  tally counts;            // merged over the workers
  double loader_cpu = 0;   // CPU seconds of this process per second of window (1.0 = one core)
  double server_cpu = -1;  // the same for server_pids (-1: unknown)
  /// Times the threads of server_pids were switched out over the window (-1: unknown): one
  /// for each time a thread slept and was woken (a hand-off that found it asleep), or was
  /// preempted.
  long long server_switches = -1;
  bool stuck = false;      // connections did not finish within `patience`
  int connections = 0;

  double per_second() const {
    return seconds > 0 ? static_cast<double>(counts.cycles) / seconds : 0.0;
  }
};

/*
 * Runs `connections` connections made by `make` through a warm-up and a measured window of
 * `s`, then lets them finish. Never throws for a connection's failure: it is counted in the
 * result's errors.
 */
trial_result run_trial(int connections, const conn_factory& make, const trial_settings& s);

/*
 * Runs `connections` connections made by `make` until every one finished on its own (no
 * window: the phase stays `measure`), for work of a fixed size. `progress` is called about
 * every second from the main thread; when it returns false the connections are dropped and the
 * result is marked stuck. Returns the elapsed time as the window.
 */
trial_result run_to_completion(int connections, const conn_factory& make, int threads,
                               const std::function<bool()>& progress);

} // namespace fencelock::bench
