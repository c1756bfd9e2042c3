// The closed port that tests connect to when they mean "no server there" (closed_port(),
// tests/support/free_port.hpp) stays closed while the tests run: a server started beside them
// cannot take it, and a connection to it is refused.

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <set>

#include "integration/client_support.hpp"
#include "support/free_port.hpp"

using namespace fencelock::test;

namespace {

sockaddr_in loopback(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  return addr;
}

/// Returns errno of binding a listening socket to `port` with SO_REUSEADDR, as the server's
/// acceptor does (0: it could listen there).
int listen_error(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  int on = 1;
  REQUIRE(::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) == 0);
  auto addr = loopback(port);
  int err = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 8) != 0)
    err = errno;
  ::close(fd);
  return err;
}

/// Returns errno of connecting to `port` (0: connected).
int connect_error(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  auto addr = loopback(port);
  int err = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

} // namespace

TEST_CASE("a_closed_port_stays_closed_while_the_tests_run", "[integration][harness]") {
  std::set<uint16_t> ports;
  for (int i = 0; i < 4; ++i) {
    auto port = closed_port();
    CHECK(ports.insert(port).second); // each call a port of its own
    CHECK(listen_error(port) == EADDRINUSE);
    CHECK(connect_error(port) == ECONNREFUSED);
  }
}
