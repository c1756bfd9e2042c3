#pragma once

// A child program run by a test: fork + exec with stdin, stdout and stderr on pipes. Reader
// threads collect the output line by line. The destructor kills (SIGKILL) and reaps the child, so
// no process outlives its test even when an assertion throws; the child also gets
// PR_SET_PDEATHSIG = SIGKILL, so it dies with the test process.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace fencelock::test {

/// How a child ended.
struct exit_status {
  bool exited = false;  // true: normal exit with `code`; false: killed by `signal`
  int code = 0;
  int signal = 0;

  /// Returns whether the child exited normally with code 0.
  bool clean() const noexcept {
    return exited && code == 0;
  }

  /// Returns a text such as "exit 0" or "signal 9".
  std::string describe() const;
};

class child_process {
public:
  /// Starts `path` with arguments `args` (argv[1..]) in this process's environment plus `env`
  /// ("KEY=VALUE" entries, replacing variables of the same name). Throws std::runtime_error when
  /// fork or exec fails. Must be called from the thread that will also destroy it:
  /// PR_SET_PDEATHSIG fires when the forking *thread* exits.
  child_process(std::string path, std::vector<std::string> args,
                std::vector<std::string> env = {});

  /// Kills the child with SIGKILL unless it was reaped already, reaps it and joins the readers.
  ~child_process();

  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  /// Returns the child's pid.
  pid_t pid() const noexcept {
    return pid_;
  }

  /// Returns a copy of the stdout lines read so far (thread-safe).
  std::vector<std::string> lines() const;

  /// Returns a copy of the stderr lines read so far (thread-safe).
  std::vector<std::string> stderr_lines() const;

  /// Waits until a stdout line at index >= `from` satisfies `pred`, or stdout closed, or
  /// `timeout` passed; returns that line (and its index in `index`, if not null) or nothing.
  std::optional<std::string> wait_for_line(const std::function<bool(std::string_view)>& pred,
                                           std::chrono::milliseconds timeout, size_t from = 0,
                                           size_t* index = nullptr) const;

  /// Returns whether the child closed its stdout (usually: it exited).
  bool stdout_closed() const;

  /// Returns whether the child closed its stdout and its stderr, and both were read to the end.
  bool output_closed() const;

  /// Writes `data` to the child's stdin; returns false when the pipe is closed.
  bool write_stdin(std::string_view data);

  /// Closes the child's stdin (it reads EOF).
  void close_stdin();

  /// Sends `sig` to the child unless it was reaped already.
  void send_signal(int sig);

  /// Sends SIGSTOP and waits until the child is stopped; returns false on timeout or exit.
  bool stop(std::chrono::milliseconds timeout = std::chrono::seconds{10});

  /// Sends SIGCONT.
  void resume();

  /// Sends SIGKILL and reaps the child; returns how it ended.
  exit_status kill();

  /// Waits up to `timeout` for the child to exit and reaps it, and for the readers to take in
  /// what it printed; returns nothing on timeout.
  std::optional<exit_status> wait(std::chrono::milliseconds timeout);

  /// Returns whether the child still runs (not reaped, and waitpid does not report an exit).
  bool running();

  /// Returns the last `n` lines of stdout and stderr, for failure messages.
  std::string diagnostics(size_t n = 40) const;

private:
  void read_loop(int fd, std::vector<std::string>& out, bool is_stdout);
  // Waits (at most 2 s) until both readers reached the end of their pipes.
  void await_output_end();
  // Reaps the child if waitpid reports an exit; `flags` as for waitpid. Returns true if reaped.
  bool try_reap(int flags);

  std::string path_;
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  std::optional<exit_status> status_;

  mutable std::mutex mtx_;
  mutable std::condition_variable cv_;
  std::vector<std::string> out_lines_;
  std::vector<std::string> err_lines_;
  bool stdout_eof_ = false;
  bool stderr_eof_ = false;
  std::atomic<bool> stop_readers_{false};
  std::thread out_reader_;
  std::thread err_reader_;
};

/// Returns and forgets the diagnostics of the children that ended since the last call (at most
/// the last 8); a Catch listener prints them after a failed test.
std::vector<std::string> take_ended_children_diagnostics();

/// Forgets the diagnostics recorded so far.
void clear_ended_children_diagnostics();

} // namespace fencelock::test
