#pragma once

// Catch2 assertions shared by the integration tests (header-only: the support library stays free
// of Catch, because the holder program links it without a test runner).

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "support/child_process.hpp"
#include "support/lock_api.hpp"
#include "support/poll.hpp"
#include "support/server_process.hpp"

namespace fencelock::test {

/// Requires `res` to be a 200 lease and returns it.
inline lease_view require_lease(const http_response& res) {
  INFO(res.describe());
  REQUIRE(res.status == 200);
  auto lease = lease_view::from(res);
  REQUIRE(lease.has_value());
  return *lease;
}

/// Runs the fencelock binary with `args` (and `env`) to its end, within a minute; returns its
/// exit code and what it printed, stdout then stderr.
inline std::pair<int, std::string> run_fencelock(const std::vector<std::string>& args,
                                                 const std::vector<std::string>& env = {}) {
  child_process p{server_binary(), args, env};
  auto st = p.wait(std::chrono::seconds{60});
  INFO(p.diagnostics());
  REQUIRE(st.has_value());
  REQUIRE(st->exited);
  eventually([&] { return p.output_closed(); }, std::chrono::seconds{5});
  std::string out;
  for (const auto& l : p.lines())
    out += l + "\n";
  for (const auto& l : p.stderr_lines())
    out += l + "\n";
  return {st->code, out};
}

} // namespace fencelock::test
