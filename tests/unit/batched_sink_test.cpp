// common/batched_sink: the server's log lines leave in batches, in order, and none is lost.
// The batch delay is an hour here, so that nothing depends on the sink's own thread: every
// write below happens in the calling thread (a warn line, flush, destruction).

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <memory>
#include <string>

#include <spdlog/logger.h>

#include "common/batched_sink.hpp"

using namespace fencelock;

namespace {

// A pipe the sink writes to; the test reads its end without blocking.
struct pipe_pair {
  int read_end = -1;
  int write_end = -1;
  pipe_pair() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    read_end = fds[0];
    write_end = fds[1];
    ::fcntl(read_end, F_SETFL, O_NONBLOCK);
    ::fcntl(write_end, F_SETPIPE_SZ, 1 << 20); // room for every line of a test
  }
  ~pipe_pair() {
    ::close(read_end);
    ::close(write_end);
  }
  // Returns everything written so far.
  std::string drain() const {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(read_end, buf, sizeof buf)) > 0)
      out.append(buf, static_cast<size_t>(n));
    return out;
  }
};

std::shared_ptr<spdlog::logger> logger_on(int fd) {
  auto log = std::make_shared<spdlog::logger>(
    "batched_sink_test", std::make_shared<batched_fd_sink>(fd, std::chrono::hours{1}));
  log->set_pattern("%v");
  log->set_level(spdlog::level::debug);
  return log;
}

std::string numbered_lines(int from, int to) {
  std::string out;
  for (int i = from; i < to; ++i)
    out += "line " + std::to_string(i) + "\n";
  return out;
}

} // namespace

TEST_CASE("info and debug lines wait for the batch") {
  pipe_pair pipe;
  auto log = logger_on(pipe.write_end);
  for (int i = 0; i < 100; ++i)
    log->info("line {}", i);
  log->debug("line 100");
  CHECK(pipe.drain().empty());
  log->flush();
  CHECK(pipe.drain() == numbered_lines(0, 101));
}

TEST_CASE("a warn line goes out at once, behind every line logged before it") {
  pipe_pair pipe;
  auto log = logger_on(pipe.write_end);
  log->info("line 0");
  log->info("line 1");
  log->warn("line 2");
  CHECK(pipe.drain() == numbered_lines(0, 3));
  log->info("line 3");
  log->error("line 4");
  CHECK(pipe.drain() == numbered_lines(3, 5));
}

TEST_CASE("a large batch is written without waiting for the delay") {
  pipe_pair pipe;
  auto log = logger_on(pipe.write_end);
  std::string padding(1000, 'x');
  std::string written;
  int lines = 0;
  // 256 KiB is the sink's bound on what it keeps pending.
  while (written.size() < 300 * 1024 && written.empty()) {
    log->info("{} {}", lines++, padding);
    written += pipe.drain();
  }
  REQUIRE_FALSE(written.empty());
  CHECK(written.size() >= 256 * 1024);
  CHECK(written.rfind("0 " + padding + "\n", 0) == 0);
}

TEST_CASE("lines still pending are written when the sink goes") {
  pipe_pair pipe;
  {
    auto log = logger_on(pipe.write_end);
    log->info("line 0");
    log->info("line 1");
    CHECK(pipe.drain().empty());
  }
  CHECK(pipe.drain() == numbered_lines(0, 2));
}
