#pragma once

// Helpers of the client and CLI integration tests: the server's URL, a port nothing listens on,
// a server restarted on a port it had before, and running the fencelock CLI to completion.

#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support/child_process.hpp"
#include "support/http_client.hpp"
#include "support/poll.hpp"
#include "support/free_port.hpp"
#include "support/server_process.hpp"

namespace fencelock::test {

/// Returns the client URL of a server on 127.0.0.1:`port`.
inline std::string url_of(uint16_t port) {
  return "http://127.0.0.1:" + std::to_string(port);
}

/// Returns a loopback port with no listener, held closed for the rest of the test run.
inline uint16_t closed_port() {
  return hold_closed_port();
}

/// The server binary serving `data_dir` on a fixed `port` (server_process always asks for
/// port 0); ready once /readyz answers 200. Killed and reaped with the object.
struct fixed_port_server {
  child_process proc;

  fixed_port_server(const std::string& data_dir, uint16_t port)
    : proc(server_binary(),
           {"serve", "--port", std::to_string(port), "--data-dir", data_dir}) {
    auto line = proc.wait_for_line(
      [](std::string_view l) { return parse_listening_port(l).has_value(); },
      std::chrono::seconds{30});
    INFO(proc.diagnostics());
    REQUIRE(line.has_value());
    http_client c{port, http_options{std::chrono::seconds{5}, false}};
    REQUIRE(eventually(
      [&] {
        auto res = c.try_request("GET", "/readyz");
        return res && res.response.status == 200;
      },
      std::chrono::seconds{30}));
  }
};

/// Runs `fencelock <args...>` to completion (at most `timeout`) and returns how it ended.
inline exit_status run_cli(const std::vector<std::string>& args,
                           std::chrono::milliseconds timeout = std::chrono::seconds{60},
                           std::vector<std::string>* out = nullptr) {
  child_process cli{server_binary(), args};
  auto st = cli.wait(timeout);
  INFO(cli.diagnostics());
  REQUIRE(st.has_value());
  // The reader threads drain the pipes before the object goes; wait for them to see EOF.
  eventually([&] { return cli.stdout_closed(); }, std::chrono::seconds{5});
  if (out != nullptr)
    *out = cli.lines();
  return *st;
}

/// Returns the contents of the file at `path`, or "" when it cannot be read.
inline std::string read_file(const std::string& path) {
  std::ifstream in{path};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace fencelock::test
