#include "common/batched_sink.hpp"

#include <unistd.h>

#include <cerrno>

#include <spdlog/pattern_formatter.h>

namespace fencelock {

namespace {

// A batch this large is written without waiting for the delay: memory stays bounded when
// lines come faster than one batch per delay.
constexpr std::size_t max_pending_bytes = 256 * 1024;

// Writes all of `data` unless `fd` fails; a log line is not worth stopping the server for.
void write_all(int fd, const std::string& data) {
  const char* p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    auto n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

} // namespace

batched_fd_sink::batched_fd_sink(int fd, std::chrono::milliseconds delay)
  : fd_(fd), delay_(delay), formatter_(std::make_unique<spdlog::pattern_formatter>()) {
  writer_ = std::thread{[this] { run_writer(); }};
}

batched_fd_sink::~batched_fd_sink() {
  {
    std::lock_guard<std::mutex> guard{buffer_mutex_};
    stopping_ = true;
  }
  wake_.notify_one();
  writer_.join();
  write_pending();
}

void batched_fd_sink::log(const spdlog::details::log_msg& msg) {
  bool now = msg.level >= spdlog::level::warn;
  bool first = false;
  {
    std::lock_guard<std::mutex> guard{buffer_mutex_};
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    first = pending_.empty();
    pending_.append(line.data(), line.size());
    now = now || pending_.size() >= max_pending_bytes;
  }
  if (now)
    write_pending();
  else if (first)
    wake_.notify_one(); // the writer sleeps until a batch begins
}

void batched_fd_sink::flush() {
  write_pending();
}

void batched_fd_sink::set_pattern(const std::string& pattern) {
  set_formatter(std::make_unique<spdlog::pattern_formatter>(pattern));
}

void batched_fd_sink::set_formatter(std::unique_ptr<spdlog::formatter> formatter) {
  std::lock_guard<std::mutex> guard{buffer_mutex_};
  formatter_ = std::move(formatter);
}

void batched_fd_sink::run_writer() {
  std::unique_lock<std::mutex> lock{buffer_mutex_};
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
    if (stopping_)
      return;
    // Let the batch gather; only a stop cuts the wait short.
    if (wake_.wait_for(lock, delay_, [this] { return stopping_; }))
      return;
    lock.unlock();
    write_pending();
    lock.lock();
  }
}

void batched_fd_sink::write_pending() {
  std::lock_guard<std::mutex> order{write_mutex_};
  {
    std::lock_guard<std::mutex> guard{buffer_mutex_};
    if (pending_.empty())
      return;
    writing_.swap(pending_); // both keep their capacity: no allocation per batch
  }
  write_all(fd_, writing_);
  writing_.clear();
}

} // namespace fencelock
