#pragma once

// Debian's haproxy in the foreground for a test, on free ports of its own.
//
// It runs with SO_REUSEPORT off (-dR). With it on, haproxy binds a port that another listener
// holds with SO_REUSEPORT (another test's haproxy), or two of its own frontends to one port, and
// the kernel then splits the connections between them: a test meaning to reach one frontend
// reaches another. Off, such a port makes haproxy exit at start, and it is started again on fresh
// ports.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "support/child_process.hpp"

namespace fencelock::test {

class haproxy_process {
public:
  /// Writes the configuration for the given ports (as many as asked for, all distinct).
  using config_writer = std::function<std::string(const std::vector<uint16_t>& ports)>;
  /// Returns whether the running haproxy serves what the test needs on the given ports.
  using readiness = std::function<bool(const std::vector<uint16_t>& ports)>;
  /// Returns a port that was free a moment ago (pick_free_port; a test may pass its own).
  using port_picker = std::function<uint16_t()>;

  /// Starts haproxy with `write(ports)` as its configuration, stored at `config_path`, on
  /// `port_count` distinct ports from `pick`, and waits up to 20 s for `ready(ports)`. When
  /// haproxy exits before that (a port was taken meanwhile), it starts again on new ports, up to
  /// 5 times. Throws std::runtime_error, with haproxy's output, when it never became ready.
  haproxy_process(std::string config_path, size_t port_count, const config_writer& write,
                  const readiness& ready, port_picker pick = {});

  /// Returns the ports of the running haproxy, in the order given to the config writer.
  const std::vector<uint16_t>& ports() const noexcept {
    return ports_;
  }

  /// Returns the running haproxy.
  child_process& process() noexcept {
    return *proc_;
  }

private:
  std::vector<uint16_t> ports_;
  std::unique_ptr<child_process> proc_;
};

/// Returns the path of haproxy, or "" when it is not installed.
std::string find_haproxy();

} // namespace fencelock::test
