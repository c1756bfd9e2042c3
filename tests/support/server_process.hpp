#pragma once

// The fencelock server binary as a child of the test: `fencelock serve --port 0 --data-dir <dir>`
// plus extra flags, with a notification socket of the test's as its $NOTIFY_SOCKET. The
// constructor returns once the server reported its port (in the readiness notification, or in
// its "listening" line, which a log level above info hides) and /readyz answers 200; the
// destructor kills and reaps it (see child_process).

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/child_process.hpp"
#include "support/notify_socket.hpp"

namespace fencelock::test {

/// Returns the path of the server binary under test: $SERVER_UNDER_TEST when set (a benchmark of
/// a server built elsewhere, or the ThreadSanitizer job's uninstrumented server), else the one
/// this build made. Not FENCELOCK_*: the server reads every such variable as a setting and
/// refuses one it does not know.
std::string server_binary();

class server_process {
public:
  /// Starts the server on a free port with its store in `data_dir`. Throws std::runtime_error
  /// (with the server's output) when it does not listen and get ready within `start_timeout`.
  explicit server_process(std::string data_dir, std::vector<std::string> extra_args = {},
                          std::chrono::milliseconds start_timeout = std::chrono::seconds{30});

  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;

  /// Returns the bound port, as the server reported it.
  uint16_t port() const noexcept {
    return port_;
  }

  /// Returns the stdout lines so far (JSON log events).
  std::vector<std::string> lines() const {
    return proc_.lines();
  }

  /// Waits for a stdout line satisfying `pred`; see child_process::wait_for_line.
  std::optional<std::string> wait_for_line(const std::function<bool(std::string_view)>& pred,
                                           std::chrono::milliseconds timeout) const {
    return proc_.wait_for_line(pred, timeout);
  }

  /// Kills the server with SIGKILL (a crash) and reaps it.
  void sigkill() {
    proc_.kill();
  }

  /// Freezes the server (SIGSTOP); returns false if it did not stop.
  bool sigstop() {
    return proc_.stop();
  }

  /// Thaws the server (SIGCONT).
  void sigcont() {
    proc_.resume();
  }

  /// Sends SIGTERM and waits up to `timeout` for the exit; on timeout kills it and returns
  /// nothing.
  std::optional<exit_status> terminate(std::chrono::milliseconds timeout = std::chrono::seconds{30});

  /// Returns whether the server process still runs.
  bool running() {
    return proc_.running();
  }

  /// Returns the server's recent output, for failure messages.
  std::string diagnostics() const {
    return proc_.diagnostics();
  }

  /// Returns the child process.
  child_process& process() noexcept {
    return proc_;
  }

  /// Returns the socket the server sends its systemd notifications to (READY=1, STOPPING=1).
  notify_socket& notifications() noexcept {
    return notify_;
  }

private:
  notify_socket notify_; // before proc_: the child gets its path
  child_process proc_;
  uint16_t port_ = 0;
};

/// Parses the port of a `"event":"listening"` line; nothing when `line` is not one.
std::optional<uint16_t> parse_listening_port(std::string_view line);

/// Parses the port of a readiness notification (READY=1 with X_FENCELOCK_PORT=<port>).
std::optional<uint16_t> parse_ready_port(std::string_view message);

} // namespace fencelock::test
