// `fencelock serve` that cannot start says why in words on stderr and exits with a code of its
// own for each cause (docs/cli.md): 64 a bad command line, 78 a bad configuration, 69 the store
// cannot be opened, 71 the listener cannot be opened. And 64 is every command's usage error.

#include <catch2/catch.hpp>

#include <fstream>

#include "integration/client_support.hpp"
#include "support/child_process.hpp"
#include "support/poll.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

namespace {

struct outcome {
  int code = -1;
  std::string out; // stdout, lines joined
  std::string err; // stderr, lines joined
};

outcome run_binary(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  child_process p{server_binary(), args, env};
  auto st = p.wait(60s);
  INFO(p.diagnostics());
  REQUIRE(st.has_value());
  REQUIRE(st->exited);
  eventually([&] { return p.output_closed(); }, 5s); // stderr read to the end too
  outcome o;
  o.code = st->code;
  for (const auto& l : p.lines())
    o.out += l + "\n";
  for (const auto& l : p.stderr_lines())
    o.err += l + "\n";
  return o;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("serve_usage_and_config_errors", "[integration][cli]") {
  temp_dir dir;
  auto o = run_binary({"serve", "--data-dir", dir.str(), "--portt", "1"});
  CHECK(o.code == 64);
  CHECK(contains(o.err, "fencelock serve: --portt: unknown setting"));
  CHECK(o.out.empty());

  std::ofstream{dir.path() / "sectioned.conf"} << "# mine\n[server]\nport = 1\n";
  o = run_binary({"serve", "--config", (dir.path() / "sectioned.conf").string()});
  CHECK(o.code == 78);
  CHECK(contains(o.err, "config error: [server]: sections are not supported"));
  CHECK(contains(o.err, "line 2"));

  o = run_binary({"serve", "--data-dir", dir.str()}, {"FENCELOCK_PORT=abc"});
  CHECK(o.code == 78);
  CHECK(contains(o.err, "FENCELOCK_PORT"));

  CHECK(run_binary({"bogus"}).code == 64);
  CHECK(run_binary({}).code == 64);
}

TEST_CASE("serve_boot_failures_are_words_on_stderr_with_their_own_codes", "[integration][cli]") {
  temp_dir dir;
  temp_dir other;
  server_process first{dir.str()};

  // The data directory is locked by the running server.
  auto o = run_binary({"serve", "--port", "0", "--data-dir", dir.str()});
  CHECK(o.code == 69);
  CHECK(contains(o.err, "fencelock serve: cannot open the store: "));
  CHECK(contains(o.err, "in use by another fencelock process"));
  CHECK(contains(o.out, "\"event\":\"start_failed\""));
  CHECK(contains(o.out, "\"code\":\"store_unavailable\""));

  // The port is taken by the running server.
  o = run_binary({"serve", "--port", std::to_string(first.port()), "--data-dir", other.str()});
  CHECK(o.code == 71);
  CHECK(contains(o.err, "fencelock serve: cannot start the listener: cannot listen on 127.0.0.1:"
                          + std::to_string(first.port())));
  CHECK(contains(o.out, "\"code\":\"listen_failed\""));
  // No CAF internals in either.
  CHECK_FALSE(contains(o.out + o.err, "system_error"));
  CHECK_FALSE(contains(o.out + o.err, "invalid_argument"));
}
