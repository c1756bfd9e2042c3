#pragma once

// What /proc says about a process on this machine: its CPU time, context switches and resident
// memory, read by the benchmarks beside their load and by the tests that watch a server.

#include <sys/types.h>

#include <filesystem>
#include <string_view>

namespace fencelock::test {

/// Returns the path of `/proc/<pid>/<name>`.
std::filesystem::path proc_file(pid_t pid, std::string_view name);

/// Returns the CPU seconds (user + system) `pid` has used, or -1 when unreadable.
double process_cpu_seconds(pid_t pid);

/// Returns the context switches, voluntary and involuntary, of all threads of `pid` so far, or
/// -1 when unreadable.
long long process_context_switches(pid_t pid);

/// Returns the resident set size of `pid` in KiB, or -1 when unreadable.
long process_rss_kib(pid_t pid);

/// Returns the CPU seconds this process has used.
double self_cpu_seconds();

} // namespace fencelock::test
