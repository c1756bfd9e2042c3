// The haproxy that the TLS and load-balancer tests start (tests/support/haproxy_process.hpp)
// listens on ports of its own: never on a port another listener shares through SO_REUSEPORT, and
// never with two frontends on one port. Either would split the connections between listeners,
// and a test that means to reach one frontend would sometimes reach another.

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <string>
#include <vector>

#include "support/free_port.hpp"
#include "support/haproxy_process.hpp"
#include "support/http_client.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

namespace {

/// A listening socket on a loopback port with SO_REUSEPORT, as another haproxy holds its ports;
/// it never accepts, so a connection the kernel hands it is never answered.
struct shared_port_listener {
  int fd = -1;
  uint16_t port = 0;

  shared_port_listener() {
    for (int attempt = 0; attempt < 20 && fd < 0; ++attempt) {
      port = pick_free_port();
      fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      REQUIRE(fd >= 0);
      int on = 1;
      REQUIRE(::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) == 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(port);
      if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0
          || ::listen(fd, 64) != 0) {
        ::close(fd);
        fd = -1;
      }
    }
    REQUIRE(fd >= 0);
  }
  ~shared_port_listener() {
    ::close(fd);
  }
  shared_port_listener(const shared_port_listener&) = delete;
  shared_port_listener& operator=(const shared_port_listener&) = delete;
};

/// Frontend i answers every request with its own name, "f<i>".
std::string named_frontends(const std::vector<uint16_t>& ports) {
  std::string cfg = "defaults\n  mode http\n  timeout connect 2s\n  timeout client 10s\n"
                    "  timeout server 10s\n";
  for (size_t i = 0; i < ports.size(); ++i)
    cfg += "frontend f" + std::to_string(i) + "\n  bind 127.0.0.1:" + std::to_string(ports[i])
           + "\n  http-request return status 200 content-type text/plain string f"
           + std::to_string(i) + "\n";
  return cfg;
}

/// Returns the body that port answers with, or the transport error.
std::string answer_on(uint16_t port) {
  http_client c{port, http_options{2s, false}};
  auto r = c.try_request("GET", "/");
  return r ? r.response.body : "error: " + r.what;
}

bool all_answer(const std::vector<uint16_t>& ports) {
  for (uint16_t port : ports)
    if (answer_on(port).rfind("error", 0) == 0)
      return false;
  return true;
}

} // namespace

TEST_CASE("haproxy_for_tests_never_shares_a_port", "[integration][harness]") {
  temp_dir dir{"fencelock-haproxy-"};
  if (find_haproxy().empty()) {
    WARN("SKIPPED: haproxy is not installed");
    return;
  }
  shared_port_listener taken;
  // The ports offered: the one held elsewhere, then the same port twice, then free ones.
  std::deque<uint16_t> offered;
  uint16_t twice = pick_free_port();
  offered = {taken.port, twice, twice};
  auto pick = [&]() -> uint16_t {
    if (offered.empty())
      return pick_free_port();
    uint16_t port = offered.front();
    offered.pop_front();
    return port;
  };
  haproxy_process haproxy{dir.str() + "/haproxy.cfg", 2, named_frontends, all_answer, pick};
  auto ports = haproxy.ports();
  REQUIRE(ports.size() == 2);
  CHECK(ports[0] != ports[1]);
  CHECK(ports[0] != taken.port);
  CHECK(ports[1] != taken.port);
  // Every connection reaches the frontend of its port: none lands on the other listener (it
  // would time out) or on the other frontend (it would answer with the other name).
  for (int i = 0; i < 20; ++i) {
    CHECK(answer_on(ports[0]) == "f0");
    CHECK(answer_on(ports[1]) == "f1");
  }
}
