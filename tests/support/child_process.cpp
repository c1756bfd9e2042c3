#include "support/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace fencelock::test {

namespace {

// Moves `fd` to a number >= 3 (close-on-exec), so that dup2 onto 0..2 in the child can never
// clobber another of our pipe ends (the test runner may run without stdin).
int lift(int fd) {
  if (fd >= 3)
    return fd;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return moved;
}

void make_pipe(int fds[2]) {
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string{"pipe2 failed: "} + std::strerror(errno));
  fds[0] = lift(fds[0]);
  fds[1] = lift(fds[1]);
}

void close_fd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

// Closes every descriptor >= 3 except `keep`, in the child between fork and exec: only
// async-signal-safe calls here. Test sockets lack close-on-exec, and an inherited client socket
// would keep a connection open that the test believes closed.
void close_other_fds(int keep) {
  if (::close_range(3, static_cast<unsigned>(keep) - 1, 0) == 0
      && ::close_range(static_cast<unsigned>(keep) + 1, ~0U, 0) == 0)
    return;
  for (int fd = 3; fd < 4096; ++fd)
    if (fd != keep)
      ::close(fd);
}

std::mutex diag_mtx;
std::vector<std::string> diag_log;

void record_diagnostics(std::string text) {
  std::lock_guard<std::mutex> guard{diag_mtx};
  diag_log.push_back(std::move(text));
  if (diag_log.size() > 8)
    diag_log.erase(diag_log.begin());
}

exit_status decode(int st) {
  exit_status res;
  if (WIFEXITED(st)) {
    res.exited = true;
    res.code = WEXITSTATUS(st);
  } else if (WIFSIGNALED(st)) {
    res.signal = WTERMSIG(st);
  }
  return res;
}

} // namespace

std::string exit_status::describe() const {
  return exited ? "exit " + std::to_string(code) : "signal " + std::to_string(signal);
}

child_process::child_process(std::string path, std::vector<std::string> args,
                             std::vector<std::string> env)
  : path_(std::move(path)) {
  // A test that writes to a dead child or a closed socket must see EPIPE, not die of SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);

  std::vector<std::string> argv_str;
  argv_str.push_back(path_);
  argv_str.insert(argv_str.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_str)
    argv.push_back(s.data());
  argv.push_back(nullptr);
  // Built before fork: the child may only make async-signal-safe calls.
  std::vector<std::string> env_str;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry{*e};
    auto name = entry.substr(0, entry.find('=') + 1);
    if (std::none_of(env.begin(), env.end(), [&](const std::string& x) {
          return x.starts_with(name);
        }))
      env_str.emplace_back(entry);
  }
  env_str.insert(env_str.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& s : env_str)
    envp.push_back(s.data());
  envp.push_back(nullptr);

  int in[2], out[2], err[2], exec_err[2];
  make_pipe(in);
  make_pipe(out);
  make_pipe(err);
  make_pipe(exec_err);
  pid_t parent = ::getpid();

  pid_ = ::fork();
  if (pid_ < 0) {
    int e = errno;
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1], exec_err[0], exec_err[1]})
      ::close(fd);
    throw std::runtime_error(std::string{"fork failed: "} + std::strerror(e));
  }
  if (pid_ == 0) {
    // Child: async-signal-safe calls only until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(127); // the test process died between fork and prctl
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    close_other_fds(exec_err[1]);
    // Undo what the test process changed: ignored SIGPIPE and blocked signals are inherited.
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(argv[0], argv.data(), envp.data());
    int e = errno;
    [[maybe_unused]] auto n = ::write(exec_err[1], &e, sizeof(e));
    ::_exit(127);
  }

  // Parent.
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  ::close(exec_err[1]);
  stdin_fd_ = in[1];
  stdout_fd_ = out[0];
  stderr_fd_ = err[0];

  int exec_errno = 0;
  ssize_t n;
  do {
    n = ::read(exec_err[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  ::close(exec_err[0]);
  if (n == static_cast<ssize_t>(sizeof(exec_errno))) {
    int st = 0;
    ::waitpid(pid_, &st, 0);
    status_ = decode(st);
    close_fd(stdin_fd_);
    close_fd(stdout_fd_);
    close_fd(stderr_fd_);
    throw std::runtime_error("cannot exec " + path_ + ": " + std::strerror(exec_errno));
  }

  out_reader_ = std::thread{[this] { read_loop(stdout_fd_, out_lines_, true); }};
  err_reader_ = std::thread{[this] { read_loop(stderr_fd_, err_lines_, false); }};
}

child_process::~child_process() {
  if (!status_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int st = 0;
    pid_t r;
    do {
      r = ::waitpid(pid_, &st, 0);
    } while (r < 0 && errno == EINTR);
    if (r == pid_)
      status_ = decode(st);
  }
  close_fd(stdin_fd_);
  await_output_end();
  stop_readers_ = true;
  if (out_reader_.joinable())
    out_reader_.join();
  if (err_reader_.joinable())
    err_reader_.join();
  close_fd(stdout_fd_);
  close_fd(stderr_fd_);
  record_diagnostics(diagnostics());
}

std::vector<std::string> take_ended_children_diagnostics() {
  std::lock_guard<std::mutex> guard{diag_mtx};
  return std::exchange(diag_log, {});
}

void clear_ended_children_diagnostics() {
  std::lock_guard<std::mutex> guard{diag_mtx};
  diag_log.clear();
}

void child_process::read_loop(int fd, std::vector<std::string>& out, bool is_stdout) {
  std::string partial;
  char buf[4096];
  for (;;) {
    if (stop_readers_)
      break;
    pollfd pfd{fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, 100);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      break;
    if (r == 0)
      continue;
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0)
      break;
    partial.append(buf, static_cast<size_t>(n));
    std::vector<std::string> complete;
    size_t pos;
    while ((pos = partial.find('\n')) != std::string::npos) {
      std::string line = partial.substr(0, pos);
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      complete.push_back(std::move(line));
      partial.erase(0, pos + 1);
    }
    if (!complete.empty()) {
      std::lock_guard<std::mutex> guard{mtx_};
      for (auto& line : complete)
        out.push_back(std::move(line));
      cv_.notify_all();
    }
  }
  std::lock_guard<std::mutex> guard{mtx_};
  if (!partial.empty())
    out.push_back(std::move(partial));
  if (is_stdout)
    stdout_eof_ = true;
  else
    stderr_eof_ = true;
  cv_.notify_all();
}

std::vector<std::string> child_process::lines() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return out_lines_;
}

std::vector<std::string> child_process::stderr_lines() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return err_lines_;
}

std::optional<std::string>
child_process::wait_for_line(const std::function<bool(std::string_view)>& pred,
                             std::chrono::milliseconds timeout, size_t from,
                             size_t* index) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> guard{mtx_};
  size_t next = from;
  for (;;) {
    for (; next < out_lines_.size(); ++next) {
      if (pred(out_lines_[next])) {
        if (index != nullptr)
          *index = next;
        return out_lines_[next];
      }
    }
    if (stdout_eof_)
      return std::nullopt;
    if (cv_.wait_until(guard, deadline) == std::cv_status::timeout && next >= out_lines_.size())
      return std::nullopt;
  }
}

bool child_process::stdout_closed() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return stdout_eof_;
}

bool child_process::output_closed() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return stdout_eof_ && stderr_eof_;
}

bool child_process::write_stdin(std::string_view data) {
  while (!data.empty() && stdin_fd_ >= 0) {
    ssize_t n = ::write(stdin_fd_, data.data(), data.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return data.empty();
}

void child_process::close_stdin() {
  close_fd(stdin_fd_);
}

void child_process::send_signal(int sig) {
  if (!status_ && pid_ > 0)
    ::kill(pid_, sig);
}

bool child_process::try_reap(int flags) {
  if (status_)
    return true;
  int st = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &st, flags);
  } while (r < 0 && errno == EINTR);
  if (r == pid_ && (WIFEXITED(st) || WIFSIGNALED(st))) {
    status_ = decode(st);
    return true;
  }
  return false;
}

bool child_process::stop(std::chrono::milliseconds timeout) {
  if (status_)
    return false;
  ::kill(pid_, SIGSTOP);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, WNOHANG | WUNTRACED);
    if (r == pid_) {
      if (WIFSTOPPED(st))
        return true;
      if (WIFEXITED(st) || WIFSIGNALED(st)) {
        status_ = decode(st);
        return false;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{2});
  }
}

void child_process::resume() {
  send_signal(SIGCONT);
}

exit_status child_process::kill() {
  if (!status_) {
    ::kill(pid_, SIGKILL);
    try_reap(0);
  }
  return status_.value_or(exit_status{});
}

void child_process::await_output_end() {
  // A grandchild holding the pipes must not hang us: the wait is bounded.
  std::unique_lock<std::mutex> guard{mtx_};
  cv_.wait_for(guard, std::chrono::seconds{2}, [this] { return stdout_eof_ && stderr_eof_; });
}

std::optional<exit_status> child_process::wait(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (try_reap(WNOHANG)) {
      // The child is gone, but its last lines may still be in the pipe: read them first, so
      // that lines() has everything it printed.
      await_output_end();
      return status_;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
}

bool child_process::running() {
  return !try_reap(WNOHANG);
}

std::string child_process::diagnostics(size_t n) const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::ostringstream os;
  os << path_ << " (pid " << pid_ << ")";
  if (status_)
    os << " ended: " << status_->describe();
  auto tail = [&](const char* what, const std::vector<std::string>& v) {
    os << "\n--- last " << what << " lines (" << v.size() << " total) ---";
    for (size_t i = v.size() > n ? v.size() - n : 0; i < v.size(); ++i)
      os << "\n" << v[i];
  };
  tail("stdout", out_lines_);
  tail("stderr", err_lines_);
  return os.str();
}

} // namespace fencelock::test
