#pragma once

// The metrics of the server process itself, under the names every Prometheus client library
// uses (process_cpu_seconds_total, process_resident_memory_bytes, ...), and
// fencelock_build_info{version,commit}. Read from /proc at scrape time and appended to the
// service's own metrics by GET /metrics. The service's metrics_text() leaves them out: a host
// that embeds the service has a process of its own to describe.

#include <optional>
#include <string>
#include <string_view>

namespace fencelock::net {

/// One reading of the process's resources.
struct process_sample {
  double cpu_seconds = 0;        // user + system CPU time
  double resident_bytes = 0;     // resident set size
  double virtual_bytes = 0;      // virtual memory size
  double open_fds = 0;           // open file descriptors
  double max_fds = 0;            // the soft limit on them
  double start_time_seconds = 0; // when the process started, seconds since the Unix epoch
};

/// Reads this process's sample from /proc/self; nothing when /proc cannot be read.
std::optional<process_sample> read_process_sample();

/*
 * Parses the text of /proc/<pid>/stat (`stat`) into CPU time, memory and start time, given the
 * kernel's clock ticks per second, the page size, and the boot time (`btime` of /proc/stat).
 * Leaves the descriptor counts alone. Returns false when `stat` is malformed.
 */
bool parse_proc_stat(std::string_view stat, long ticks_per_second, long page_size,
                     double boot_time_seconds, process_sample& out);

/// Returns the process metrics of `x` (nothing when null) and the build info gauge, in the
/// Prometheus text format 0.0.4.
std::string process_metrics_text(const std::optional<process_sample>& x, std::string_view version,
                                 std::string_view commit);

/// Returns the metrics of this process and build, ready to append to a scrape.
std::string process_metrics_text();

} // namespace fencelock::net
