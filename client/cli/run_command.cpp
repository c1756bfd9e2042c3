// `fencelock run <name> -- <command...>`: hold a lock while a command runs.
//
//   find the command (127/126 before taking any lock)
//   block INT TERM HUP CHLD USR1 (before the client's I/O thread inherits the mask)
//   acquire ──fail──▶ 75 / 69 / 64
//   fork: child = own process group, parent-death SIGKILL, clean signal mask, execve
//   sigwait loop:  CHLD ─▶ reaped? done
//                  INT/TERM/HUP ─▶ pass on to the command's process group
//                  USR1 (raised by the loss callback) ─▶ SIGTERM the group; SIGKILL after grace
//   done: lost before the exit ─▶ 76;  else release ─▶ the command's code (128+N for a signal)

#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "client/cli/args.hpp"
#include "client/cli/commands.hpp"
#include "client/cli/exit_codes.hpp"
#include "client/cli/output.hpp"
#include "fencelock/client.hpp"

namespace fencelock::cli {

namespace {

using steady = std::chrono::steady_clock;

/// Returns the signals `run` takes with sigwait.
sigset_t run_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGUSR1})
    sigaddset(&set, sig);
  return set;
}

bool executable_file(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

/*
 * Finds `cmd` as execvp would: taken as a path when it holds a '/', else searched in $PATH.
 * Returns the path, or "" with `err` = ENOENT (nowhere) or EACCES (found, not executable).
 */
std::string find_executable(const std::string& cmd, int& err) {
  err = ENOENT;
  if (cmd.empty())
    return {};
  if (cmd.find('/') != std::string::npos) {
    if (executable_file(cmd))
      return cmd;
    err = ::access(cmd.c_str(), F_OK) == 0 ? EACCES : ENOENT;
    return {};
  }
  const char* env_path = std::getenv("PATH");
  std::string path = env_path != nullptr ? env_path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  for (;;) {
    auto end = path.find(':', start);
    auto dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    auto candidate = (dir.empty() ? std::string{"."} : dir) + "/" + cmd;
    if (executable_file(candidate))
      return candidate;
    if (::access(candidate.c_str(), F_OK) == 0)
      err = EACCES;
    if (end == std::string::npos)
      return {};
    start = end + 1;
  }
}

/// Returns our environment without FENCELOCK_LOCK and FENCELOCK_TOKEN, plus both set anew.
std::vector<std::string> child_environment(const std::string& name, uint64_t token) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry{*e};
    if (!entry.starts_with("FENCELOCK_LOCK=") && !entry.starts_with("FENCELOCK_TOKEN="))
      env.emplace_back(entry);
  }
  env.push_back("FENCELOCK_LOCK=" + name);
  env.push_back("FENCELOCK_TOKEN=" + std::to_string(token));
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v)
    out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

/// A started command: its pid (-1 when fork failed) and the errno of a failed exec (0 = runs).
struct spawned {
  pid_t pid = -1;
  int exec_errno = 0;
};

/*
 * Forks and execs `path` with `argv` and `envp`. The child leads a process group of its own
 * (so a loss can stop everything it started), dies with SIGKILL if we die (nobody would renew
 * its lease), and starts with no signal blocked and SIGPIPE at its default: a signal mask and
 * ignored signals survive exec, and ours are set for the `serve` and `run` loops, not for it.
 */
spawned spawn(const std::string& path, std::vector<std::string> argv,
              std::vector<std::string> envp) {
  auto c_argv = c_strings(argv);
  auto c_envp = c_strings(envp);
  int report[2];
  spawned out;
  if (::pipe2(report, O_CLOEXEC) != 0) {
    out.exec_errno = errno;
    return out;
  }
  pid_t parent = ::getpid();
  out.pid = ::fork();
  if (out.pid < 0) {
    out.exec_errno = errno;
    ::close(report[0]);
    ::close(report[1]);
    return out;
  }
  if (out.pid == 0) {
    // Child: async-signal-safe calls only until execve (the parent has other threads).
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(exit_unavailable); // we died between fork and prctl
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(path.c_str(), c_argv.data(), c_envp.data());
    int e = errno;
    [[maybe_unused]] auto n = ::write(report[1], &e, sizeof(e));
    ::_exit(exit_cannot_execute);
  }
  ::setpgid(out.pid, out.pid); // also here: the group must exist before we signal it
  ::close(report[1]);
  int e = 0;
  ssize_t n;
  do {
    n = ::read(report[0], &e, sizeof(e)); // EOF (0) once execve succeeded and closed the pipe
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);
  if (n == static_cast<ssize_t>(sizeof(e))) {
    out.exec_errno = e;
    int status = 0;
    ::waitpid(out.pid, &status, 0);
  }
  return out;
}

/// The outcome of supervising the command.
struct supervised {
  int status = 0;             // waitpid status
  bool stopped_for_loss = false;
  steady::time_point exited_at;
};

/*
 * Waits for the command `pid` to exit. Passes SIGINT, SIGTERM and SIGHUP on to its process
 * group; on SIGUSR1 (raised by the loss callback) with `lease` lost, sends the group SIGTERM
 * and, if the command has not exited `grace` later, SIGKILL.
 */
supervised supervise(pid_t pid, const held_lease& lease, std::chrono::milliseconds grace) {
  auto set = run_signals();
  supervised out;
  std::optional<steady::time_point> kill_at;
  for (;;) {
    siginfo_t info{};
    int sig;
    if (kill_at) {
      auto left = *kill_at - steady::now();
      if (left <= steady::duration::zero()) {
        ::kill(-pid, SIGKILL);
        kill_at.reset();
        continue;
      }
      auto secs = std::chrono::duration_cast<std::chrono::seconds>(left);
      timespec ts{};
      ts.tv_sec = static_cast<time_t>(secs.count());
      ts.tv_nsec = static_cast<long>(std::chrono::nanoseconds{left - secs}.count());
      sig = ::sigtimedwait(&set, &info, &ts);
    } else {
      sig = ::sigwaitinfo(&set, &info);
    }
    if (sig < 0)
      continue; // EAGAIN: the grace ran out (handled above); EINTR: retry
    if (sig == SIGCHLD) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        out.status = status;
        out.exited_at = steady::now();
        return out;
      }
    } else if (sig == SIGUSR1) {
      auto loss = lease.loss();
      if (!loss || out.stopped_for_loss)
        continue;
      out.stopped_for_loss = true;
      complain("run", std::string{"lease lost ("} + to_string(loss->cause) + ": " + loss->message
                        + "); stopping the command");
      ::kill(-pid, SIGTERM);
      kill_at = steady::now() + grace;
    } else {
      ::kill(-pid, sig); // SIGINT, SIGTERM, SIGHUP: the command decides what they mean
    }
  }
}

/// Returns a shell's exit code for waitpid status `status`.
int shell_code(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return exit_unavailable;
}

/// Returns the exit code for a failed acquire: not acquired (75) includes a waited grant that
/// ended before it could be confirmed (lease_lost).
int acquire_exit_code(const client_error& e) {
  return e.code() == "lease_lost" ? exit_not_acquired : exit_code_of(e);
}

} // namespace

int run_command(const run_args& a) {
  int find_err = 0;
  auto path = find_executable(a.command.front(), find_err);
  if (path.empty()) {
    complain("run", a.command.front() + ": " + std::strerror(find_err));
    return find_err == EACCES ? exit_cannot_execute : exit_not_found;
  }

  // Blocked before the client's I/O thread exists: it inherits the mask, so these signals are
  // left pending for supervise()'s sigwait and interrupt no other thread.
  auto set = run_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  auto opts = client_options_of(a);
  opts.owner = a.owner;
  std::optional<client> c;
  held_lease lease;
  try {
    c.emplace(opts);
    lease = c->acquire(a.name, a.ttl, a.wait, a.session ? lease_scope::session : lease_scope::ttl);
  } catch (const client_error& e) {
    complain("run", e);
    return acquire_exit_code(e);
  }
  // Runs on the client's I/O thread: only wake the main thread, which acts on it.
  lease.on_lost([](const lease_loss&) { ::kill(::getpid(), SIGUSR1); });

  auto kid = spawn(path, a.command, child_environment(a.name, lease.token()));
  if (kid.pid < 0 || kid.exec_errno != 0) {
    complain("run", a.command.front() + ": " + std::strerror(kid.exec_errno));
    return kid.pid < 0 ? exit_unavailable : exit_cannot_execute; // ~held_lease releases
  }

  auto result = supervise(kid.pid, lease, a.grace);
  if (result.stopped_for_loss)
    return exit_lease_lost;
  if (auto loss = lease.loss(); loss && loss->at <= result.exited_at) {
    complain("run", std::string{"lease lost while the command ran ("} + to_string(loss->cause)
                      + ": " + loss->message + ")");
    return exit_lease_lost;
  }
  if (!lease.lost()) {
    try {
      lease.release();
    } catch (const client_error& e) {
      if (e.code() == "lease_lost") {
        complain("run", "the server says the lease had already ended: " + std::string{e.what()});
        return exit_lease_lost;
      }
      complain("run", "release failed (" + e.code() + ": " + e.what()
                        + "); the lease ends at its TTL");
    }
  }
  return shell_code(result.status);
}

} // namespace fencelock::cli
