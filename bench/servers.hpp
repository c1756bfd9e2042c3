#pragma once

// The servers a benchmark starts, through the test harness (tests/support): `fencelock serve`
// as a child in a temp dir of its own, killed with the benchmark, and redis-server likewise.
// A benchmark measures a server built elsewhere when SERVER_UNDER_TEST names it.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "support/server_process.hpp"
#include "support/temp_dir.hpp"

namespace fencelock::bench {

/// `fencelock serve --log-level warn` plus `args`, ready when constructed.
class bench_server {
public:
  bench_server(const std::string& name, std::vector<std::string> args = {})
    : dir_("fencelock-" + name + "-"), proc_(dir_.str(), with_quiet_log(std::move(args))) {
  }

  /// Returns the port the server listens on (127.0.0.1).
  uint16_t port() const noexcept {
    return proc_.port();
  }

  /// Returns the server's process id.
  pid_t pid() noexcept {
    return proc_.process().pid();
  }

  /// Returns whether the server still runs.
  bool running() {
    return proc_.running();
  }

  /// Returns the server's recent output, for error messages.
  std::string output() const {
    return proc_.diagnostics();
  }

private:
  static std::vector<std::string> with_quiet_log(std::vector<std::string> args) {
    args.insert(args.begin(), {"--log-level", "warn"});
    return args;
  }

  test::temp_dir dir_; // outlives the process: destroyed after it
  test::server_process proc_;
};

} // namespace fencelock::bench
