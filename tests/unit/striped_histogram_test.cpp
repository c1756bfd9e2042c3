// actors/striped_histogram and striped_counter: the same buckets, count and sum as
// prometheus-cpp's Histogram for the same values, and exact totals when several threads add at
// once.

#include <catch2/catch.hpp>

#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#include <prometheus/histogram.h>

#include "actors/striped_counter.hpp"
#include "actors/striped_histogram.hpp"

using fencelock::striped_histogram;

TEST_CASE("a striped histogram collects what prometheus-cpp's would", "[metrics]") {
  const std::vector<double> bounds{0.001, 0.01, 0.1, 1.0};
  striped_histogram striped{bounds};
  prometheus::Histogram reference{bounds};
  // Below the first bound, on bounds (a bound's own bucket), between them, above the last.
  for (double v : {0.0, 0.0005, 0.001, 0.002, 0.01, 0.05, 0.1, 0.5, 1.0, 1.5, 100.0, -3.0}) {
    striped.observe(v);
    reference.Observe(v);
  }
  auto got = striped.collect().histogram;
  auto want = reference.Collect().histogram;
  CHECK(got.sample_count == want.sample_count);
  CHECK(got.sample_count == 12u);
  CHECK(got.sample_sum == Approx(want.sample_sum));
  REQUIRE(got.bucket.size() == want.bucket.size());
  REQUIRE(got.bucket.size() == bounds.size() + 1);
  for (std::size_t i = 0; i < got.bucket.size(); ++i) {
    CAPTURE(i);
    CHECK(got.bucket[i].cumulative_count == want.bucket[i].cumulative_count);
    CHECK(got.bucket[i].upper_bound == want.bucket[i].upper_bound);
  }
  CHECK(got.bucket.back().upper_bound == std::numeric_limits<double>::infinity());
  CHECK(got.bucket[0].cumulative_count == 4u); // -3, 0, 0.0005 and 0.001 itself
}

TEST_CASE("a striped histogram loses no observation from concurrent threads", "[metrics]") {
  striped_histogram h{{1.0, 2.0}};
  constexpr int threads = 12; // more than its stripes: some threads share one
  constexpr int each = 20'000;
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t)
    running.emplace_back([&h, t] {
      for (int i = 0; i < each; ++i)
        h.observe(static_cast<double>((t + i) % 3)); // 0, 1 and 2: whole sums stay exact
    });
  for (auto& t : running)
    t.join();
  auto got = h.collect().histogram;
  CHECK(got.sample_count == static_cast<uint64_t>(threads) * each);
  // Each thread observes 0, 1, 2 in turn from its own start: count them as the threads did.
  uint64_t up_to_1 = 0;
  double sum = 0;
  for (int t = 0; t < threads; ++t)
    for (int i = 0; i < each; ++i) {
      auto v = (t + i) % 3;
      up_to_1 += v <= 1 ? 1 : 0;
      sum += v;
    }
  CHECK(got.bucket[0].cumulative_count == up_to_1); // le 1: the 0s and 1s
  CHECK(got.bucket[1].cumulative_count == got.sample_count); // le 2: all
  CHECK(got.bucket[2].cumulative_count == got.sample_count);
  CHECK(got.sample_sum == sum);
}

TEST_CASE("a striped histogram takes only ascending bounds, at most 24", "[metrics]") {
  CHECK_THROWS_AS(striped_histogram({2.0, 1.0}), std::invalid_argument);
  CHECK_THROWS_AS(striped_histogram(std::vector<double>(25, 1.0)), std::invalid_argument);
  CHECK_NOTHROW(striped_histogram(std::vector<double>{}));
}

TEST_CASE("a striped counter loses no increment from concurrent threads", "[metrics]") {
  fencelock::striped_counter c;
  CHECK(c.value() == 0u);
  constexpr int threads = 12; // more than its stripes: some threads share one
  constexpr int each = 20'000;
  {
    std::vector<std::thread> running;
    for (int t = 0; t < threads; ++t)
      running.emplace_back([&c] {
        for (int i = 0; i < each; ++i)
          c.increment();
      });
    for (auto& t : running)
      t.join();
  }
  CHECK(c.value() == static_cast<uint64_t>(threads) * each);
}
