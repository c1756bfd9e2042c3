#include "support/haproxy_process.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <stdexcept>

#include "support/free_port.hpp"
#include "support/poll.hpp"

namespace fencelock::test {

namespace {

/// Returns `count` distinct ports from `pick`.
std::vector<uint16_t> distinct_ports(size_t count, const haproxy_process::port_picker& pick) {
  std::vector<uint16_t> ports;
  while (ports.size() < count) {
    uint16_t port = pick();
    if (std::find(ports.begin(), ports.end(), port) == ports.end())
      ports.push_back(port);
  }
  return ports;
}

} // namespace

std::string find_haproxy() {
  for (const char* path : {"/usr/sbin/haproxy", "/usr/bin/haproxy", "/usr/local/sbin/haproxy"})
    if (::access(path, X_OK) == 0)
      return path;
  return {};
}

haproxy_process::haproxy_process(std::string config_path, size_t port_count,
                                 const config_writer& write, const readiness& ready,
                                 port_picker pick) {
  auto program = find_haproxy();
  if (program.empty())
    throw std::runtime_error("haproxy not found: run scripts/install-deps.sh");
  if (!pick)
    pick = pick_free_port;
  std::string failures;
  for (int attempt = 1; attempt <= 5; ++attempt) {
    ports_ = distinct_ports(port_count, pick);
    {
      std::ofstream out{config_path};
      out << write(ports_);
      if (!out.flush())
        throw std::runtime_error("cannot write " + config_path);
    }
    proc_ = std::make_unique<child_process>(
      program, std::vector<std::string>{"-dR", "-db", "-f", config_path});
    bool settled = eventually([&] { return !proc_->running() || ready(ports_); },
                              std::chrono::seconds{20}, std::chrono::milliseconds{50});
    if (settled && proc_->running())
      return;
    failures += "attempt " + std::to_string(attempt) + ":\n" + proc_->diagnostics() + "\n";
    proc_.reset();
  }
  throw std::runtime_error("haproxy did not become ready:\n" + failures);
}

} // namespace fencelock::test
