// The client and CLI over TLS (docs/security.md, docs/cli.md): https:// and wss:// through a TLS
// proxy (Debian's haproxy) in front of the server, as docs/deployment.md describes. The test makes
// its own CA, server and client certificates with the openssl CLI. The client verifies the
// server's certificate against --ca-file and its name against the URL's host, and presents a
// client certificate when the proxy asks for one.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "integration/certificates.hpp"
#include "integration/checks.hpp"
#include "support/child_process.hpp"
#include "support/haproxy_process.hpp"
#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

namespace {

/// haproxy terminating TLS in front of `backend`: `tls` asks for no client certificate, `mtls`
/// requires one signed by the test CA.
struct tls_proxy {
  haproxy_process haproxy;
  uint16_t tls = haproxy.ports()[0];
  uint16_t mtls = haproxy.ports()[1];

  tls_proxy(const certificates& certs, uint16_t backend)
      : haproxy{certs.path("haproxy.cfg"), 2,
                [&](const std::vector<uint16_t>& ports) {
                  std::ostringstream cfg;
                  cfg << "global\n  maxconn 256\n"
                      << "defaults\n  mode http\n  timeout connect 2s\n  timeout client 30s\n"
                      << "  timeout server 30s\n  timeout tunnel 1h\n"
                      << "frontend tls\n  bind 127.0.0.1:" << ports[0] << " ssl crt "
                      << certs.path("server-bundle.pem") << "\n  default_backend fencelock\n"
                      << "frontend mtls\n  bind 127.0.0.1:" << ports[1] << " ssl crt "
                      << certs.path("server-bundle.pem") << " verify required ca-file "
                      << certs.path("ca.pem") << "\n  default_backend fencelock\n"
                      << "backend fencelock\n  server a 127.0.0.1:" << backend << "\n";
                  return cfg.str();
                },
                // Up once it accepts on both ports (a TLS handshake is not needed to know that).
                [](const std::vector<uint16_t>& ports) {
                  for (uint16_t port : ports) {
                    http_client c{port, http_options{1s, false}};
                    if (c.try_request("GET", "/healthz").what.find("refused") != std::string::npos)
                      return false;
                  }
                  return true;
                }} {}
};

} // namespace

TEST_CASE("tls_the_cli_verifies_the_server_and_can_present_a_certificate",
          "[integration][tls][cli]") {
  certificates certs;
  temp_dir data;
  server_process server{data.str()};
  tls_proxy proxy{certs, server.port()};
  auto tls_url = "https://localhost:" + std::to_string(proxy.tls);
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"status", "jobs:tls", "-o", "json"});
    return run_fencelock(args);
  };

  SECTION("the server's certificate, from the CA given, naming the host: answered") {
    auto [code, out] = run({"--url", tls_url, "--ca-file", certs.path("ca.pem")});
    INFO(out);
    CHECK(code == 0);
    CHECK(out.find("\"name\":\"jobs:tls\"") != std::string::npos);
    // wss:// is the same.
    auto [wss, again] = run(
      {"--url", "wss://localhost:" + std::to_string(proxy.tls), "--ca-file", certs.path("ca.pem")});
    INFO(again);
    CHECK(wss == 0);
  }
  SECTION("a certificate from a CA not trusted: refused") {
    for (auto args :
         {std::vector<std::string>{"--url", tls_url},
          std::vector<std::string>{"--url", tls_url, "--ca-file", certs.path("other-ca.pem")}}) {
      auto [code, out] = run(args);
      INFO(out);
      CHECK(code == 69);
      CHECK(out.find("TLS handshake") != std::string::npos);
      CHECK(out.find("certificate verify failed") != std::string::npos);
    }
  }
  SECTION("a certificate that does not name the host: refused") {
    // The certificate names localhost; the URL says 127.0.0.1.
    auto [code, out] = run({"--url", "https://127.0.0.1:" + std::to_string(proxy.tls), "--ca-file",
                            certs.path("ca.pem")});
    INFO(out);
    CHECK(code == 69);
    CHECK(out.find("TLS handshake") != std::string::npos);
  }
  SECTION("mutual TLS: refused without a client certificate, answered with one") {
    auto mtls_url = "https://localhost:" + std::to_string(proxy.mtls);
    auto [without, refused] = run({"--url", mtls_url, "--ca-file", certs.path("ca.pem")});
    INFO(refused);
    CHECK(without == 69);
    auto [with, answered] =
      run({"--url", mtls_url, "--ca-file", certs.path("ca.pem"), "--cert-file",
           certs.path("client.pem"), "--key-file", certs.path("client.key")});
    INFO(answered);
    CHECK(with == 0);
  }
  SECTION("plain HTTP to the TLS port is refused, TLS to a plain port too") {
    // Each is a refused handshake, answered at once; run() bounds each at 60 s all the same.
    auto [plain, out] = run({"--url", "http://localhost:" + std::to_string(proxy.tls)});
    INFO(out);
    CHECK(plain == 69);
    auto [tls_to_plain, out2] = run({"--url", "https://localhost:" + std::to_string(server.port()),
                                     "--ca-file", certs.path("ca.pem")});
    INFO(out2);
    CHECK(tls_to_plain == 69);
    CHECK(out2.find("TLS handshake") != std::string::npos);
  }
}
