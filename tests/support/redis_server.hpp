#pragma once

// A real redis-server as a child of the test, on a free loopback port with its files in a temp
// dir, and a small blocking hiredis connection to look inside it. The child is killed (SIGKILL)
// and reaped by its destructor, also when an assertion throws.

#include <hiredis/hiredis.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/free_port.hpp"
#include "support/temp_dir.hpp"

namespace fencelock::test {

/// Returns the redis-server to run: $FENCELOCK_REDIS_SERVER when set (a path; nothing when it is
/// not executable), else the first redis-server on $PATH or in the usual sbin directories.
std::optional<std::string> find_redis_server();

/// Returns the redis-server to run, or prints the line that makes CTest report the test as
/// skipped (SKIP_REGULAR_EXPRESSION "SKIPPED:") and returns nothing.
std::optional<std::string> redis_server_or_skip();

/// Returns the redis-server to run; throws std::runtime_error when there is none (for tests of
/// the Redis store, whose dependency scripts/install-deps.sh always installs).
std::string require_redis_server();

struct reply_deleter {
  void operator()(redisReply* r) const noexcept {
    freeReplyObject(r);
  }
};
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

struct context_deleter {
  void operator()(redisContext* c) const noexcept {
    redisFree(c);
  }
};

/// One hiredis connection (blocking, with timeouts). Not thread-safe: one per thread.
class redis_connection {
public:
  /// Connects to 127.0.0.1:`port`; throws std::runtime_error on failure.
  explicit redis_connection(uint16_t port);

  /// Sends the command `args` (binary safe) and returns its reply, which may be an error reply;
  /// throws std::runtime_error when the connection fails.
  reply_ptr call(const std::vector<std::string>& args);

  /// Returns the string value of `key`, or nothing when it does not exist.
  std::optional<std::string> get(const std::string& key);

private:
  std::unique_ptr<redisContext, context_deleter> ctx_;
};

class redis_server {
public:
  struct options {
    /// Append-only file with appendfsync always (what docs/redis.md asks for), in the temp dir;
    /// off means no persistence at all: a restart comes back empty.
    bool aof = false;
    /// requirepass (empty: none).
    std::string password;
  };

  /// Starts `binary` on a free loopback port and waits until it answers PING; throws
  /// std::runtime_error (with the server's output) when it does not.
  explicit redis_server(std::string binary, options opts);
  explicit redis_server(std::string binary) : redis_server(std::move(binary), options{}) {
  }

  /// Returns the port the server listens on (127.0.0.1).
  uint16_t port() const noexcept {
    return port_;
  }

  /// Returns the store URL of this server for fencelock's --store.
  std::string url() const {
    auto creds = opts_.password.empty() ? std::string{} : ":" + opts_.password + "@";
    return "redis://" + creds + "127.0.0.1:" + std::to_string(port_) + "/0";
  }

  /// Kills the server with SIGKILL (no shutdown, no final fsync) and reaps it.
  void sigkill();

  /// Starts the server again on the same port and files; throws when it does not come up.
  void restart();

  /// Deletes the server's files (its AOF) and starts it again on the same port: a Redis that
  /// comes back empty. Call after sigkill(); throws when it does not come up.
  void restart_empty();

  /// Returns the child process (for SIGSTOP and SIGCONT).
  child_process& process() {
    return *proc_;
  }

private:
  bool launch(std::string& why);

  std::string binary_;
  options opts_;
  temp_dir dir_{"fencelock-redis-"}; // destroyed after proc_: the server is gone by then
  uint16_t port_ = 0;
  std::unique_ptr<child_process> proc_;
};

} // namespace fencelock::test
