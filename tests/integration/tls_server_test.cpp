// TLS on the server's own listener (docs/security.md): tls-cert and tls-key make the port speak
// TLS 1.2+ for HTTP and WebSocket; tls-client-ca asks for client certificates, whose subject CN
// names a `cert` principal of the auth file; SIGHUP loads new files without dropping open
// connections; plain HTTP to the TLS port, and TLS to a plain port, fail at once with a logged
// event. Certificates come from the openssl CLI (integration/certificates.hpp).

#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "integration/certificates.hpp"
#include "integration/checks.hpp"
#include "integration/tokens.hpp"
#include "support/child_process.hpp"
#include "support/http_client.hpp"
#include "support/poll.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

namespace {

/// A fencelock server on a TLS listener with the test certificates; with `mutual` it requires
/// client certificates signed by the test CA; `extra` adds settings.
struct tls_server {
  certificates certs;
  temp_dir data;
  std::unique_ptr<server_process> server;

  explicit tls_server(bool mutual = false, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--tls-cert", certs.path("server.pem"), "--tls-key",
                                  certs.path("server.key")};
    if (mutual)
      args.insert(args.end(), {"--tls-client-ca", certs.path("ca.pem")});
    args.insert(args.end(), extra.begin(), extra.end());
    server = std::make_unique<server_process>(data.str(), args);
  }

  std::string url(const char* scheme = "https") const {
    return std::string{scheme} + "://localhost:" + std::to_string(server->port());
  }

  /// Runs the CLI against this server with `args`, trusting `ca` (a file of `certs`).
  std::pair<int, std::string> cli(std::vector<std::string> args, const std::string& ca = "ca",
                                  const char* scheme = "https") const {
    args.insert(args.end(),
                {"--url", url(scheme), "--ca-file", certs.path(ca + ".pem"), "-o", "json"});
    return run_fencelock(args);
  }

  /// Like cli(), presenting the client certificate (CN=billing) too.
  std::pair<int, std::string> cli_with_certificate(std::vector<std::string> args,
                                                   const char* scheme = "https") const {
    args.insert(args.end(),
                {"--cert-file", certs.path("client.pem"), "--key-file", certs.path("client.key")});
    return cli(std::move(args), "ca", scheme);
  }

  bool logged(const std::string& event, std::chrono::milliseconds timeout = 20s) const {
    auto quoted = "\"" + event + "\"";
    return server
      ->wait_for_line([&](std::string_view l) { return l.find(quoted) != std::string_view::npos; },
                      timeout)
      .has_value();
  }
};

/// Copies `from` over `to` (certificate files swapped in place, as an operator would).
void replace_file(const std::string& from, const std::string& to) {
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
}

} // namespace

TEST_CASE("tls_the_listener_serves_https_and_wss_only", "[integration][tls]") {
  tls_server s;

  SECTION("HTTPS and WSS, verified against the CA") {
    auto [acquired, out] = s.cli({"acquire", "tls:a", "--owner", "o", "--ttl", "30s"}, "ca", "wss");
    INFO(out);
    CHECK(acquired == 0);
    CHECK(out.find("\"owner\":\"o\"") != std::string::npos);
    auto [status, out2] = s.cli({"status", "tls:a"});
    INFO(out2);
    CHECK(status == 0);
    CHECK(out2.find("\"held\":true") != std::string::npos);
    // A waiting acquire watches its connection while it waits, and is answered over TLS.
    auto [waited, out3] =
      s.cli({"acquire", "tls:a", "--owner", "p", "--ttl", "1s", "--wait", "200ms"});
    INFO(out3);
    CHECK(waited == 75); // lock_held after the wait: exit 75, answered, not cut off
  }
  SECTION("a client that does not trust the certificate is refused by the client") {
    auto [code, out] = s.cli({"status", "tls:a"}, "other-ca");
    INFO(out);
    CHECK(code == 69);
    CHECK(out.find("certificate verify failed") != std::string::npos);
  }
  SECTION("plain HTTP to the TLS port: a 400 that says so, at once, and a logged event") {
    http_client plain{s.server->port(), http_options{10s, false}};
    auto res = plain.try_request("GET", "/healthz");
    INFO(res.what);
    REQUIRE(res);
    CHECK(res.response.status == 400);
    CHECK(res.response.error() == "invalid_request");
    CHECK(res.response.body.find("this port speaks TLS") != std::string::npos);
    CHECK(s.logged("plain_http_on_tls_port"));
  }
  SECTION("below TLS 1.2: the handshake is refused, with a logged event") {
    // The client allows TLS 1.1 only (and its old ciphers, which OpenSSL 3 hides by default).
    child_process client{s.certs.openssl,
                         {"s_client", "-connect", "127.0.0.1:" + std::to_string(s.server->port()),
                          "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"}};
    client.close_stdin();
    auto st = client.wait(60s);
    INFO(client.diagnostics());
    REQUIRE(st.has_value());
    CHECK(st->code != 0);
    CHECK(s.logged("tls_handshake_failed"));
  }
}

TEST_CASE("tls_to_a_plain_port_is_closed_at_once_with_a_logged_event", "[integration][tls]") {
  temp_dir data;
  server_process server{data.str()};
  raw_connection c{server.port(), 10s};
  // The first bytes of a ClientHello: handshake record, TLS 1.0 record version.
  CHECK_FALSE(c.send(std::string{"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11}));
  CHECK(c.wait_closed(10s));
  CHECK(server.wait_for_line(
    [](std::string_view l) { return l.find("\"tls_on_plain_port\"") != std::string_view::npos; },
    20s));
}

TEST_CASE("tls_mutual_certificates_authenticate_their_cn_as_a_principal", "[integration][tls]") {
  temp_dir conf;
  auto auth_file = (conf.path() / "principals").string();
  auto token_file = (conf.path() / "reader-token").string();
  // billing authenticates with its certificate (CN=billing); reader with a token.
  std::ofstream{auth_file} << "billing cert lock:billing:\n"
                           << "reader " << sha256_hex("reader-secret") << " read:*\n";
  std::ofstream{token_file} << "reader-secret\n";
  tls_server s{true, {"--auth-file", auth_file}};

  SECTION("without a client certificate the handshake is refused") {
    auto [code, out] = s.cli({"status", "billing:a"});
    INFO(out);
    CHECK(code == 69);
    CHECK(s.logged("tls_handshake_failed"));
  }
  SECTION("the certificate's CN is the principal, over HTTPS and WSS") {
    for (const char* scheme : {"https", "wss"}) {
      auto lock = std::string{"billing:"} + scheme;
      auto [code, out] =
        s.cli_with_certificate({"acquire", lock, "--owner", "job", "--ttl", "30s"}, scheme);
      INFO(out);
      CHECK(code == 0);
      // The operation event names the principal that the certificate authenticated.
      CHECK(s.server->wait_for_line(
        [&](std::string_view l) {
          return l.find("\"event\":\"op\"") != std::string_view::npos
                 && l.find("\"lock\":\"" + lock + "\"") != std::string_view::npos
                 && l.find("\"principal\":\"billing\"") != std::string_view::npos;
        },
        20s));
      // Within its permissions only.
      auto [other, refused] =
        s.cli_with_certificate({"acquire", "payroll:a", "--owner", "job", "--ttl", "30s"}, scheme);
      INFO(refused);
      CHECK(other == 77);
      CHECK(refused.find("forbidden") != std::string::npos);
    }
  }
  SECTION("a bearer token on the same connection speaks for its own principal") {
    auto [code, out] = s.cli_with_certificate(
      {"acquire", "billing:t", "--owner", "job", "--ttl", "30s", "--auth-token-file", token_file});
    INFO(out);
    CHECK(code == 77); // the reader may not lock, whatever certificate the connection has
    auto [read, status] =
      s.cli_with_certificate({"status", "billing:t", "--auth-token-file", token_file});
    INFO(status);
    CHECK(read == 0);
  }
}

TEST_CASE("tls_sighup_loads_a_new_certificate_and_keeps_open_connections", "[integration][tls]") {
  tls_server s;
  // A watcher on a WebSocket that trusts the first CA only: were its connection dropped, it
  // could not connect again once the server shows a certificate from the other CA.
  child_process watcher{
    server_binary(),
    {"watch", "tls:*", "--url", s.url("wss"), "--ca-file", s.certs.path("ca.pem"), "-o", "json"}};
  REQUIRE(eventually([&] { return !watcher.lines().empty() || !watcher.running(); }, 30s));
  REQUIRE(watcher.running());

  SECTION("new files are used by new connections") {
    s.certs.make_leaf("server2", "/CN=localhost", "subjectAltName=DNS:localhost", "other-ca");
    replace_file(s.certs.path("server2.pem"), s.certs.path("server.pem"));
    replace_file(s.certs.path("server2.key"), s.certs.path("server.key"));
    s.server->process().send_signal(SIGHUP);
    REQUIRE(s.logged("tls_reloaded"));
    auto [old_ca, refused] = s.cli({"status", "tls:a"});
    INFO(refused);
    CHECK(old_ca == 69);
    auto [new_ca, out] = s.cli({"acquire", "tls:a", "--owner", "o", "--ttl", "30s"}, "other-ca");
    INFO(out);
    CHECK(new_ca == 0);
  }
  SECTION("files that cannot be used leave the ones in force") {
    std::ofstream{s.certs.path("server.key")} << "not a key\n";
    s.server->process().send_signal(SIGHUP);
    REQUIRE(s.logged("tls_reload_failed"));
    auto [code, out] = s.cli({"acquire", "tls:a", "--owner", "o", "--ttl", "30s"});
    INFO(out);
    CHECK(code == 0);
  }
  // Either way the watcher's connection lived on, and it saw the grant.
  CHECK(eventually(
    [&] {
      for (const auto& l : watcher.lines())
        if (l.find("\"owner\":\"o\"") != std::string::npos)
          return true;
      return false;
    },
    30s));
  INFO(watcher.diagnostics());
  CHECK(watcher.running());
}

TEST_CASE("tls_files_that_cannot_be_used_stop_the_boot_naming_the_key", "[integration][tls]") {
  certificates certs;
  temp_dir data;
  auto boot = [&](std::vector<std::string> tls_args) {
    std::vector<std::string> args{"serve", "--data-dir", data.str(), "--port", "0"};
    args.insert(args.end(), tls_args.begin(), tls_args.end());
    auto [code, out] = run_fencelock(args);
    CHECK(code == 78);
    return out;
  };
  auto missing = certs.path("missing.pem");
  CHECK(boot({"--tls-cert", missing, "--tls-key", certs.path("server.key")})
          .find("config error: tls-cert: " + missing)
        != std::string::npos);
  // The client's key does not belong to the server's certificate.
  CHECK(boot({"--tls-cert", certs.path("server.pem"), "--tls-key", certs.path("client.key")})
          .find("config error: tls-key: " + certs.path("client.key") + ": does not belong")
        != std::string::npos);
  CHECK(boot({"--tls-cert", certs.path("server.pem"), "--tls-key", certs.path("server.key"),
              "--tls-client-ca", missing})
          .find("config error: tls-client-ca: " + missing)
        != std::string::npos);
  CHECK(boot({"--tls-cert", certs.path("server.pem")}).find("tls-key: must be set with tls-cert")
        != std::string::npos);
}
