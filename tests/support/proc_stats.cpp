#include "support/proc_stats.hpp"

#include "net/process_metrics.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <string>

namespace fencelock::test {

namespace {

/// Sums the values of the `keys` lines of a /proc status file; -1 when none is there.
long long status_sum(const std::filesystem::path& file,
                     std::initializer_list<std::string_view> keys) {
  std::ifstream in{file};
  long long sum = -1;
  for (std::string line; std::getline(in, line);)
    for (auto key : keys)
      if (line.rfind(key, 0) == 0)
        sum = std::max(sum, 0LL) + std::stoll(line.substr(key.size()));
  return sum;
}

} // namespace

std::filesystem::path proc_file(pid_t pid, std::string_view name) {
  return std::filesystem::path{"/proc"} / std::to_string(pid) / name;
}

double process_cpu_seconds(pid_t pid) {
  std::ifstream in{proc_file(pid, "stat")};
  std::string text;
  net::process_sample sample;
  if (!std::getline(in, text)
      || !net::parse_proc_stat(text, ::sysconf(_SC_CLK_TCK), ::sysconf(_SC_PAGESIZE), 0, sample))
    return -1;
  return sample.cpu_seconds;
}

long long process_context_switches(pid_t pid) {
  // /proc/<pid>/status counts the main thread's only: add up every thread's.
  std::error_code ec;
  std::filesystem::directory_iterator tasks{proc_file(pid, "task"), ec};
  if (ec)
    return -1;
  long long sum = 0;
  for (const auto& task : tasks) // a thread gone meanwhile reads as -1 and counts nothing
    sum += std::max(0LL, status_sum(task.path() / "status",
                                    {"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"}));
  return sum;
}

long process_rss_kib(pid_t pid) {
  return static_cast<long>(status_sum(proc_file(pid, "status"), {"VmRSS:"}));
}

double self_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto tv = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return tv(u.ru_utime) + tv(u.ru_stime);
}

} // namespace fencelock::test
