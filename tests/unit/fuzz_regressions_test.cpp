// Every committed fuzz input, through the same bodies the libFuzzer targets run (fuzz/fuzz.hpp),
// compiled by the ordinary build: the seed corpora (fuzz/corpus/<target>/) and the inputs that
// once broke something (fuzz/regressions/<target>/). A broken invariant aborts, and Catch2
// reports the SIGABRT with the file that caused it. No fuzzing happens here: scripts/fuzz.sh
// does that.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/fuzz.hpp"

namespace {

namespace fs = std::filesystem;
using entry = int (*)(const uint8_t*, size_t);

/// Returns the files of fuzz/<kind>/<target>/, sorted (an absent directory has none).
std::vector<fs::path> inputs(const char* kind, const char* target) {
  std::vector<fs::path> out;
  fs::path dir = fs::path{FENCELOCK_FUZZ_DIR} / kind / target;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator{dir, ec})
    if (f.is_regular_file())
      out.push_back(f.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_file(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

/// Runs every committed input of `target` through `body`; returns how many ran.
size_t run_all(const char* target, entry body) {
  size_t count = 0;
  for (const char* kind : {"corpus", "regressions"}) {
    for (const auto& p : inputs(kind, target)) {
      INFO("input " << p.string()); // named in Catch2's report if the body aborts
      auto bytes = read_file(p);
      CHECK(body(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()) == 0);
      ++count;
    }
  }
  return count;
}

} // namespace

TEST_CASE("fuzz inputs: HTTP routes", "[fuzz]") {
  CHECK(run_all("fuzz_http_route", fencelock::fuzz::fuzz_http_route) > 0);
}

TEST_CASE("fuzz inputs: WebSocket frames", "[fuzz]") {
  CHECK(run_all("fuzz_ws_frame", fencelock::fuzz::fuzz_ws_frame) > 0);
}

TEST_CASE("fuzz inputs: JSON reader", "[fuzz]") {
  CHECK(run_all("fuzz_json_reader", fencelock::fuzz::fuzz_json_reader) > 0);
}

TEST_CASE("fuzz inputs: config loader", "[fuzz]") {
  CHECK(run_all("fuzz_config", fencelock::fuzz::fuzz_config) > 0);
}

TEST_CASE("fuzz inputs: Redis replies", "[fuzz]") {
  CHECK(run_all("fuzz_redis_reply", fencelock::fuzz::fuzz_redis_reply) > 0);
}
