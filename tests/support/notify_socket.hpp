#pragma once

// A socket in the role of systemd's notification socket ($NOTIFY_SOCKET, sd_notify(3)): a child
// started with env() in its environment sends READY=1, STATUS=..., STOPPING=1 here, one
// datagram of newline-separated KEY=VALUE lines per notification. Used by one thread at a time.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/temp_dir.hpp"

namespace fencelock::test {

class notify_socket {
public:
  /// Binds a Unix datagram socket at a fresh path. Throws std::runtime_error on failure.
  notify_socket();

  /// Closes the socket; its directory goes with it.
  ~notify_socket();

  notify_socket(const notify_socket&) = delete;
  notify_socket& operator=(const notify_socket&) = delete;

  /// Returns "NOTIFY_SOCKET=<path>", for a child's environment.
  std::string env() const;

  /// Waits up to `timeout` for a message (received now or earlier, at index >= `from`) that
  /// satisfies `pred`; returns it, or nothing.
  std::optional<std::string> wait_for(const std::function<bool(std::string_view)>& pred,
                                      std::chrono::milliseconds timeout, size_t from = 0);

  /// Returns every message received so far (reads what is waiting first).
  std::vector<std::string> messages();

  /// Returns the value of `key` in `message` ("READY" in "READY=1\nSTATUS=x" -> "1"), or nothing.
  static std::optional<std::string> field(std::string_view message, std::string_view key);

private:
  // Reads the datagrams waiting, after waiting up to `wait` for the first. Returns whether any.
  bool receive(std::chrono::milliseconds wait);

  temp_dir dir_{"fencelock-notify-"};
  std::string path_;
  int fd_ = -1;
  std::vector<std::string> messages_;
};

} // namespace fencelock::test
