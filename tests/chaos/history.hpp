#pragma once

// The history of a fault-suite run: one JSON line per operation, appended by every process of
// the run to a file of its own in one directory (client-<i>.jsonl, driver.jsonl). Times are
// CLOCK_MONOTONIC nanoseconds, which Linux keeps system-wide, so the files of different processes
// line up on one time axis. The checker (checker.hpp) merges them.

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

namespace fencelock::chaos {

/// Returns CLOCK_MONOTONIC in nanoseconds (the time axis of every history file).
inline int64_t mono_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// Reads a whole decimal number (a command-line value), or nothing.
inline std::optional<uint64_t> parse_u64(std::string_view s) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size())
    return std::nullopt;
  return v;
}

/// Returns `ms` milliseconds in nanoseconds.
constexpr int64_t ms_to_ns(int64_t ms) noexcept {
  return ms * 1'000'000;
}

/// Appends JSON lines to one history file. Each line goes out in one write(2) on an O_APPEND
/// descriptor, so a process that is killed leaves at most its last line cut short (the checker
/// skips such a line). Not thread-safe: one writer per thread.
class history_writer {
public:
  /// Opens (creates) `path` for appending; throws std::runtime_error on failure.
  explicit history_writer(const std::string& path)
    : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
    if (fd_ < 0)
      throw std::runtime_error("cannot open history file " + path);
  }

  ~history_writer() {
    if (fd_ >= 0)
      ::close(fd_);
  }

  history_writer(const history_writer&) = delete;
  history_writer& operator=(const history_writer&) = delete;

  /// Appends `line` as one JSON line.
  void append(const boost::json::object& line) {
    auto text = boost::json::serialize(line);
    text.push_back('\n');
    std::string_view rest{text};
    while (!rest.empty()) {
      auto n = ::write(fd_, rest.data(), rest.size());
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return; // a full disk under the history: the checker reports what it can read
      rest.remove_prefix(static_cast<size_t>(n));
    }
  }

private:
  int fd_ = -1;
};

} // namespace fencelock::chaos
