// The fence guard: the resource-side check that rejects stale holders (include/fencelock/
// fence_guard.hpp), its bounded memory, and its file persistence. No sockets or sleeps; only the
// concurrency test starts threads.

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fencelock/fence_guard.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock;
using fencelock::test::temp_dir;

namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in{p, std::ios::binary};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void append_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out{p, std::ios::binary | std::ios::app};
  out << text;
}

// Opens the log at `p` and a guard over it; REQUIREs both to work.
std::unique_ptr<fence_guard> open_guard(const std::filesystem::path& p, size_t max_names = 1024) {
  std::error_code ec;
  auto store = file_fence_store::open(p.string(), ec);
  INFO(ec.message());
  REQUIRE(store != nullptr);
  auto g = std::make_unique<fence_guard>(fence_options{max_names}, std::move(store));
  REQUIRE_FALSE(g->restore());
  return g;
}

} // namespace

TEST_CASE("fence guard admits rising tokens and rejects lower ones", "[fence]") {
  fence_guard g;
  auto d = g.admit("jobs:a", 5);
  CHECK(d.admitted);
  CHECK(d.reason == fence_reason::ok);
  CHECK(d.highest == 5);
  d = g.admit("jobs:a", 3);
  CHECK_FALSE(d.admitted);
  CHECK(d.reason == fence_reason::stale);
  CHECK(d.highest == 5);
  d = g.admit("jobs:a", 7);
  CHECK(d.admitted);
  CHECK(d.highest == 7);
  CHECK(g.highest("jobs:a") == 7);
  CHECK(std::string{to_string(fence_reason::stale)} == "stale");
}

TEST_CASE("fence guard admits an equal token again", "[fence]") {
  fence_guard g;
  REQUIRE(g.admit("a", 4).admitted);
  int writes = 0;
  auto d = g.guarded("a", 4, [&] { ++writes; return true; });
  CHECK(d.admitted);
  CHECK(d.highest == 4);
  d = g.guarded("a", 4, [&] { ++writes; });
  CHECK(d.admitted);
  CHECK(writes == 2);
}

TEST_CASE("fence guard keeps names apart", "[fence]") {
  fence_guard g;
  REQUIRE(g.admit("a", 10).admitted);
  CHECK(g.admit("b", 1).admitted);
  CHECK(g.highest("a") == 10);
  CHECK(g.highest("b") == 1);
  CHECK(g.highest("never-seen") == 0);
  CHECK(g.size() == 2u);
}

TEST_CASE("fence guard runs no write for a stale token", "[fence]") {
  fence_guard g;
  REQUIRE(g.admit("a", 9).admitted);
  bool ran = false;
  auto d = g.guarded("a", 8, [&] { ran = true; return true; });
  CHECK_FALSE(d.admitted);
  CHECK(d.reason == fence_reason::stale);
  CHECK(d.highest == 9);
  CHECK_FALSE(ran);
}

TEST_CASE("fence guard does not raise the mark when the write fails", "[fence]") {
  fence_guard g;
  REQUIRE(g.admit("a", 2).admitted);
  auto d = g.guarded("a", 6, [] { return false; });
  CHECK_FALSE(d.admitted);
  CHECK(d.reason == fence_reason::write_failed);
  CHECK(d.highest == 2);
  CHECK(g.highest("a") == 2);
  CHECK_THROWS_AS(g.guarded("a", 7, []() -> bool { throw std::runtime_error{"disk"}; }),
                  std::runtime_error);
  CHECK(g.highest("a") == 2);
  // The name is not left locked by the throwing write.
  CHECK(g.admit("a", 3).admitted);
}

TEST_CASE("fence guard forgets the least recently used name into the floor", "[fence]") {
  fence_guard g{fence_options{2}};
  REQUIRE(g.admit("a", 5).admitted);
  REQUIRE(g.admit("b", 3).admitted);
  REQUIRE(g.admit("a", 5).admitted); // a is now more recent than b
  REQUIRE(g.admit("c", 1).admitted); // full: b goes, the floor becomes 3
  CHECK(g.size() == 2u);
  CHECK(g.floor() == 3);
  CHECK(g.highest("a") == 5);
  CHECK(g.highest("c") == 1);
  CHECK(g.highest("b") == 3);
  // An unknown name below the floor is rejected (fail closed), at the floor admitted.
  auto d = g.admit("d", 2);
  CHECK_FALSE(d.admitted);
  CHECK(d.reason == fence_reason::stale);
  CHECK(d.highest == 3);
  // That call remembered d at the floor and forgot a (then least recently used): floor 5.
  CHECK(g.floor() == 5);
  CHECK(g.size() == 2u);
  CHECK(g.highest("d") == 3);
  CHECK(g.admit("d", 3).admitted);
  CHECK_FALSE(g.admit("a", 4).admitted);
  CHECK(g.admit("zz", 5).admitted);
}

TEST_CASE("fence guard with a file store remembers marks across a restart", "[fence]") {
  temp_dir dir{"fencelock-fence-"};
  auto log = dir.path() / "fence.log";
  {
    auto g = open_guard(log);
    REQUIRE(g->admit("a", 5).admitted);
    REQUIRE(g->admit("b", 7).admitted);
    REQUIRE(g->admit("b", 7).admitted);
    REQUIRE(g->admit("odd name%!", 11).admitted);
    CHECK(g->guarded("c", 4, [] { return false; }).reason == fence_reason::write_failed);
  }
  auto g = open_guard(log);
  CHECK(g->highest("a") == 5);
  CHECK(g->highest("b") == 7);
  CHECK(g->highest("odd name%!") == 11);
  // The mark of a failed write was persisted before the write ran: after a restart it counts
  // (the safe direction; see the header).
  CHECK(g->highest("c") == 4);
  CHECK_FALSE(g->admit("a", 4).admitted);
  CHECK(g->admit("a", 6).admitted);
  // Reopening compacts the log to one line per name, least recently written first.
  g.reset();
  g = open_guard(log);
  CHECK(read_text(log) == "b 7\nodd%20name%25%21 11\nc 4\na 6\n");
}

TEST_CASE("fence guard file store tolerates a torn last line", "[fence]") {
  temp_dir dir{"fencelock-fence-"};
  auto log = dir.path() / "fence.log";
  {
    auto g = open_guard(log);
    REQUIRE(g->admit("a", 5).admitted);
  }
  append_text(log, "a 9"); // a crash in the middle of an append: never acknowledged
  {
    auto g = open_guard(log);
    CHECK(g->highest("a") == 5);
    CHECK(g->admit("a", 6).admitted); // appends after the compacted, newline-terminated log
  }
  auto g = open_guard(log);
  CHECK(g->highest("a") == 6);
  CHECK(read_text(log) == "a 6\n");
}

TEST_CASE("fence guard file store refuses a corrupt log", "[fence]") {
  temp_dir dir{"fencelock-fence-"};
  auto log = dir.path() / "fence.log";
  append_text(log, "a 5\ngarbage\nb 3\n");
  std::error_code ec;
  CHECK(file_fence_store::open(log.string(), ec) == nullptr);
  CHECK(ec == std::errc::bad_message);
}

TEST_CASE("fence guard with a store rejects everything until restored", "[fence]") {
  temp_dir dir{"fencelock-fence-"};
  std::error_code ec;
  auto store = file_fence_store::open((dir.path() / "fence.log").string(), ec);
  REQUIRE(store != nullptr);
  fence_guard g{fence_options{}, std::move(store)};
  auto d = g.admit("a", 1);
  CHECK_FALSE(d.admitted);
  CHECK(d.reason == fence_reason::store_failed);
  REQUIRE_FALSE(g.restore());
  CHECK(g.admit("a", 1).admitted);
}

TEST_CASE("fence guard persists its floor and folds extra names into it", "[fence]") {
  temp_dir dir{"fencelock-fence-"};
  auto log = dir.path() / "fence.log";
  {
    auto g = open_guard(log, 1);
    REQUIRE(g->admit("a", 5).admitted);
    REQUIRE(g->admit("b", 8).admitted); // forgets a: floor 5
    CHECK(g->floor() == 5);
  }
  {
    auto g = open_guard(log, 1);
    CHECK(g->floor() == 5);
    CHECK(g->highest("a") == 5);
    CHECK(g->highest("b") == 8);
    CHECK_FALSE(g->admit("a", 4).admitted);
  }
  // A larger log reopened with a smaller capacity folds the least recently written names.
  {
    auto g = open_guard(log, 10);
    REQUIRE(g->admit("c", 20).admitted);
    REQUIRE(g->admit("d", 9).admitted);
  }
  auto g = open_guard(log, 1);
  CHECK(g->size() == 1u);
  CHECK(g->highest("d") == 9);
  CHECK(g->floor() == 20);
  CHECK(g->highest("b") == 20);
}

TEST_CASE("fence guard serializes concurrent callers per name", "[fence]") {
  // Several threads write several names with tokens from one growing counter, some of them
  // deliberately old. Each admitted write appends its token to the name's history inside the
  // guarded call, so the history is exactly the order of admitted writes.
  const size_t max_names = GENERATE(size_t{64}, size_t{3});
  constexpr int threads = 4;
  constexpr int rounds = 2000;
  const std::vector<std::string> names{"n0", "n1", "n2", "n3", "n4", "n5"};

  fence_guard g{fence_options{max_names}};
  std::map<std::string, std::vector<uint64_t>> history;
  for (auto& n : names)
    history[n];
  std::atomic<uint64_t> counter{10};
  std::atomic<int> admitted{0};
  std::atomic<int> rejected{0};
  std::atomic<int> bad_rejections{0};

  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::minstd_rand rng{static_cast<unsigned>(t + 1)};
      for (int i = 0; i < rounds; ++i) {
        const auto& name = names[rng() % names.size()];
        uint64_t token = counter.fetch_add(1);
        if (rng() % 3 == 0)
          token -= rng() % 10; // a holder that paused for a while
        auto& h = history.at(name);
        auto d = g.guarded(name, token, [&] { h.push_back(token); });
        (d.admitted ? admitted : rejected).fetch_add(1);
        if (!d.admitted && d.highest <= token)
          bad_rejections.fetch_add(1); // Catch's CHECK is not thread-safe
      }
    });
  for (auto& th : pool)
    th.join();

  CHECK(admitted + rejected == threads * rounds);
  CHECK(admitted > 0);
  CHECK(rejected > 0);
  CHECK(bad_rejections == 0);
  for (auto& [name, h] : history) {
    INFO(name << " with max_names " << max_names);
    REQUIRE_FALSE(h.empty());
    CHECK(std::is_sorted(h.begin(), h.end()));
    auto max = *std::max_element(h.begin(), h.end());
    if (max_names >= names.size())
      CHECK(g.highest(name) == max);
    else
      CHECK(g.highest(name) >= max);
  }
  CHECK(g.size() <= max_names);
}
