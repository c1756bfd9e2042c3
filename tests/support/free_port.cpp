#include "support/free_port.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace fencelock::test {

namespace {

/// Binds a new loopback TCP socket to a port the kernel picks; returns the socket and the port.
/// Throws std::runtime_error on failure.
std::pair<int, uint16_t> bind_any_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    throw std::runtime_error(std::string{"socket failed: "} + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0
            && ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  if (!ok) {
    int err = errno;
    ::close(fd);
    throw std::runtime_error(std::string{"cannot find a free port: "} + std::strerror(err));
  }
  return {fd, ntohs(addr.sin_port)};
}

} // namespace

uint16_t pick_free_port() {
  auto [fd, port] = bind_any_port();
  ::close(fd);
  return port;
}

uint16_t hold_closed_port() {
  // Never closed: the descriptor lives as long as the test process (a dozen per run at most).
  return bind_any_port().second;
}

} // namespace fencelock::test
