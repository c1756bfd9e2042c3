// The embedding example (examples/embed) runs the service inside its own actor system and exits
// 0 when everything it tried worked.

#include <catch2/catch.hpp>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

TEST_CASE("embed_example_exits_zero", "[integration]") {
  temp_dir dir;
  child_process example{FENCELOCK_EMBED_EXAMPLE, {dir.str()}};
  auto st = example.wait(120s);
  INFO(example.diagnostics());
  REQUIRE(st.has_value());
  CHECK(st->clean());
}
