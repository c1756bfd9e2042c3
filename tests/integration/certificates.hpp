#pragma once

// Test certificates made with the openssl CLI (header-only, for the TLS tests): a CA, a server
// certificate for `localhost` only (no IP address), a client certificate with CN billing, and a
// second CA that signed none of them. All P-256, valid for a day.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace fencelock::test {

/// Returns the first of `paths` that is an executable, or "".
inline std::string find_program(std::initializer_list<const char*> paths) {
  for (const char* path : paths)
    if (::access(path, X_OK) == 0)
      return path;
  return {};
}

/// Runs `program args`, requiring exit 0.
inline void run_ok(const std::string& program, const std::vector<std::string>& args) {
  child_process p{program, args};
  auto st = p.wait(std::chrono::seconds{60});
  INFO(p.diagnostics());
  REQUIRE(st.has_value());
  REQUIRE(st->exited);
  REQUIRE(st->code == 0);
}

struct certificates {
  temp_dir dir{"fencelock-tls-"};
  std::string openssl = find_program({"/usr/bin/openssl"});

  std::string path(const std::string& name) const {
    return (dir.path() / name).string();
  }

  void make_ca(const std::string& name) {
    run_ok(openssl, {"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                     "-nodes", "-keyout", path(name + ".key"), "-out", path(name + ".pem"), "-days",
                     "1", "-subj", "/CN=" + name});
  }

  /// Makes `name`.pem and `name`.key for `subject` with the extension `ext`, signed by `ca`.
  void make_leaf(const std::string& name, const std::string& subject, const std::string& ext,
                 const std::string& ca = "ca") {
    run_ok(openssl,
           {"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            path(name + ".key"), "-out", path(name + ".csr"), "-subj", subject});
    std::ofstream{path(name + ".ext")} << ext << "\n";
    run_ok(openssl, {"x509", "-req", "-in", path(name + ".csr"), "-CA", path(ca + ".pem"), "-CAkey",
                     path(ca + ".key"), "-CAcreateserial", "-out", path(name + ".pem"), "-days",
                     "1", "-extfile", path(name + ".ext")});
  }

  certificates() {
    REQUIRE_FALSE(openssl.empty());
    make_ca("ca");
    make_ca("other-ca");
    make_leaf("server", "/CN=localhost", "subjectAltName=DNS:localhost");
    make_leaf("client", "/CN=billing", "extendedKeyUsage=clientAuth");
    // haproxy takes the certificate and its key in one file.
    std::ofstream bundle{path("server-bundle.pem")};
    for (const auto* part : {"server.pem", "server.key"}) {
      std::ifstream in{path(part)};
      bundle << in.rdbuf();
    }
  }
};

} // namespace fencelock::test
