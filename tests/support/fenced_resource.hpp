#pragma once

// A tiny fencing-aware resource for the stale-holder test: an HTTP server on a free loopback port,
// run by its own thread. `POST /write {"lock","token","data"}` is accepted (200) unless `token` is
// lower than the highest token this resource has seen for `lock` (equal is allowed), in which case
// it answers 409 {"error":"stale_token","highestToken":N}. It records the accepted content.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace fencelock::test {

class fenced_resource {
public:
  /// What the resource holds for one lock.
  struct entry {
    uint64_t highest_token = 0;
    std::string content;
    /// Every accepted write, in order, as "token:data".
    std::vector<std::string> accepted;
    /// Every rejected write, in order, as "token:data".
    std::vector<std::string> rejected;
  };

  /// Binds 127.0.0.1 on a free port and starts serving; throws on failure.
  fenced_resource();

  /// Stops the server thread.
  ~fenced_resource();

  fenced_resource(const fenced_resource&) = delete;
  fenced_resource& operator=(const fenced_resource&) = delete;

  /// Returns the port it listens on.
  uint16_t port() const noexcept {
    return port_;
  }

  /// Returns what it holds for `lock` (thread-safe).
  std::optional<entry> get(const std::string& lock) const;

  /// Applies a write directly (as the HTTP handler does); returns whether it was accepted and the
  /// highest token after the call. Runs on the caller's thread.
  bool write(const std::string& lock, uint64_t token, const std::string& data,
             uint64_t* highest = nullptr);

private:
  struct server;

  mutable std::mutex mtx_;
  std::map<std::string, entry> entries_;
  std::unique_ptr<server> server_;
  uint16_t port_ = 0;
  std::thread thread_;
};

} // namespace fencelock::test
