#include "net/process_metrics.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "fencelock_build_commit.hpp" // generated: FENCELOCK_COMMIT

#ifndef FENCELOCK_VERSION
#  error "FENCELOCK_VERSION must be defined by the build"
#endif

namespace fencelock::net {

namespace {

std::string read_all(const char* path) {
  std::ifstream in{path};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Returns the space-separated words of `x`.
std::vector<std::string_view> words(std::string_view x) {
  std::vector<std::string_view> out;
  while (!x.empty()) {
    auto start = x.find_first_not_of(" \n");
    if (start == std::string_view::npos)
      break;
    x.remove_prefix(start);
    auto end = x.find_first_of(" \n");
    out.push_back(x.substr(0, end));
    x.remove_prefix(end == std::string_view::npos ? x.size() : end);
  }
  return out;
}

bool to_number(std::string_view x, double& out) {
  unsigned long long n = 0;
  auto [end, ec] = std::from_chars(x.data(), x.data() + x.size(), n);
  if (x.empty() || ec != std::errc{} || end != x.data() + x.size())
    return false;
  out = static_cast<double>(n);
  return true;
}

/// Returns `x` as a Prometheus sample value: integers without a fraction.
std::string number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", x);
  return buf;
}

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help,
            std::string_view labels, double value) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
  out += name;
  out += labels;
  out += ' ';
  out += number(value);
  out += '\n';
}

/// Returns `x` escaped for a label value (backslash, quote and newline).
std::string label_value(std::string_view x) {
  std::string out;
  for (char c : x) {
    if (c == '\\' || c == '"')
      out += '\\';
    out += c == '\n' ? 'n' : c;
  }
  return out;
}

} // namespace

bool parse_proc_stat(std::string_view stat, long ticks_per_second, long page_size,
                     double boot_time_seconds, process_sample& out) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so count the fields from
  // the last ')'. Field 3 (state) is the first after it; proc(5) numbers them from 1.
  auto paren = stat.rfind(')');
  if (paren == std::string_view::npos || ticks_per_second <= 0 || page_size <= 0)
    return false;
  auto f = words(stat.substr(paren + 1));
  auto field = [&](size_t n, double& x) { return f.size() > n - 3 && to_number(f[n - 3], x); };
  double utime = 0, stime = 0, start_ticks = 0, vsize = 0, rss_pages = 0;
  if (!field(14, utime) || !field(15, stime) || !field(22, start_ticks) || !field(23, vsize)
      || !field(24, rss_pages))
    return false;
  auto hz = static_cast<double>(ticks_per_second);
  out.cpu_seconds = (utime + stime) / hz;
  out.start_time_seconds = boot_time_seconds + start_ticks / hz;
  out.virtual_bytes = vsize;
  out.resident_bytes = rss_pages * static_cast<double>(page_size);
  return true;
}

std::optional<process_sample> read_process_sample() {
  double boot_time = 0;
  std::istringstream stat_all{read_all("/proc/stat")};
  for (std::string line; std::getline(stat_all, line);)
    if (line.starts_with("btime ") && to_number(line.substr(6), boot_time))
      break;
  process_sample x;
  if (boot_time == 0
      || !parse_proc_stat(read_all("/proc/self/stat"), ::sysconf(_SC_CLK_TCK),
                          ::sysconf(_SC_PAGESIZE), boot_time, x))
    return std::nullopt;
  std::error_code ec;
  for (std::filesystem::directory_iterator it{"/proc/self/fd", ec}, end; !ec && it != end;
       it.increment(ec))
    x.open_fds += 1;
  if (x.open_fds > 0)
    x.open_fds -= 1; // the iterator's own descriptor
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0)
    x.max_fds = lim.rlim_cur == RLIM_INFINITY ? 0 : static_cast<double>(lim.rlim_cur);
  return x;
}

std::string process_metrics_text(const std::optional<process_sample>& x, std::string_view version,
                                 std::string_view commit) {
  std::string out;
  if (x) {
    family(out, "process_cpu_seconds_total", "counter",
           "Total user and system CPU time spent in seconds.", "", x->cpu_seconds);
    family(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", "",
           x->resident_bytes);
    family(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", "",
           x->virtual_bytes);
    family(out, "process_open_fds", "gauge", "Number of open file descriptors.", "", x->open_fds);
    family(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.", "",
           x->max_fds);
    family(out, "process_start_time_seconds", "gauge",
           "Start time of the process since unix epoch in seconds.", "", x->start_time_seconds);
  }
  family(out, "fencelock_build_info", "gauge",
         "Always 1: the version and git commit of this fencelock build",
         "{version=\"" + label_value(version) + "\",commit=\"" + label_value(commit) + "\"}", 1);
  return out;
}

std::string process_metrics_text() {
  return process_metrics_text(read_process_sample(), FENCELOCK_VERSION, FENCELOCK_COMMIT);
}

} // namespace fencelock::net
