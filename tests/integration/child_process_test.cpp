// The test support's child_process: what a child printed is there once it has been waited for.
// Its users read a program's result from lines() right after wait() (the benchmark loader reads
// redis-benchmark's CSV line so), and a child's last lines reach its pipe just before it exits.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "support/child_process.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

TEST_CASE("child_process_has_every_line_a_child_printed_once_wait_returns", "[integration]") {
  // The race is between the reader thread and the reaping: try it many times.
  for (int i = 0; i < 200; ++i) {
    child_process p{"/bin/sh", {"-c", "echo first; echo last; echo oops >&2"}};
    auto st = p.wait(10s);
    REQUIRE(st.has_value());
    REQUIRE(st->clean());
    INFO("run " << i << ": " << p.diagnostics());
    REQUIRE(p.lines() == std::vector<std::string>{"first", "last"});
    REQUIRE(p.stderr_lines() == std::vector<std::string>{"oops"});
  }
}
