#pragma once

// A latency histogram in the manner of HdrHistogram: values in nanoseconds, each power of two
// split into 64 linear sub-buckets, so that a percentile is within 1.6 % of the true value
// whatever its magnitude, in a fixed 30 KB and with O(1) recording (no samples are kept).

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace fencelock::bench {

class histogram {
public:
  histogram() : counts_(bucket_count, 0) {
  }

  /// Records one value of `ns` nanoseconds (negative values count as 0).
  void record(int64_t ns) noexcept {
    auto v = static_cast<uint64_t>(std::max<int64_t>(ns, 0));
    ++counts_[index(v)];
    ++total_;
    sum_ += static_cast<double>(v);
    max_ = std::max(max_, v);
    min_ = std::min(min_, v);
  }

  /// Adds every value recorded in `other`.
  void merge(const histogram& other) noexcept {
    for (std::size_t i = 0; i < bucket_count; ++i)
      counts_[i] += other.counts_[i];
    total_ += other.total_;
    sum_ += other.sum_;
    max_ = std::max(max_, other.max_);
    min_ = std::min(min_, other.min_);
  }

  /// Returns the number of recorded values.
  uint64_t count() const noexcept {
    return total_;
  }

  /// Returns the largest recorded value in ns (0 when empty).
  uint64_t max() const noexcept {
    return max_;
  }

  /// Returns the mean in ns (0 when empty).
  double mean() const noexcept {
    return total_ == 0 ? 0.0 : sum_ / static_cast<double>(total_);
  }

  /*
   * Returns the `p`-th percentile in ns (0 < p <= 100): the upper end of the bucket that holds
   * the value of rank ceil(p % of the count), capped at the exact maximum. 0 when empty.
   */
  uint64_t percentile(double p) const noexcept {
    if (total_ == 0)
      return 0;
    auto rank = static_cast<uint64_t>(p / 100.0 * static_cast<double>(total_) + 0.999999);
    rank = std::clamp<uint64_t>(rank, 1, total_);
    uint64_t seen = 0;
    for (std::size_t i = 0; i < bucket_count; ++i) {
      seen += counts_[i];
      if (seen >= rank)
        return std::min(upper(i), max_);
    }
    return max_;
  }

  /*
   * Returns {"n", "mean_us", "p50_us", "p90_us", "p99_us", "p999_us", "max_us"}, and with
   * `buckets` also "buckets": [[upper_us, count], ...] for the non-empty buckets in order (what a
   * distribution plot needs).
   */
  boost::json::object summary(bool buckets = false) const {
    auto us = [](double ns) { return static_cast<double>(static_cast<int64_t>(ns)) / 1000.0; };
    boost::json::object out{{"n", total_},
                            {"mean_us", us(mean())},
                            {"p50_us", us(static_cast<double>(percentile(50)))},
                            {"p90_us", us(static_cast<double>(percentile(90)))},
                            {"p99_us", us(static_cast<double>(percentile(99)))},
                            {"p999_us", us(static_cast<double>(percentile(99.9)))},
                            {"max_us", us(static_cast<double>(max_))}};
    if (buckets) {
      boost::json::array bs;
      for (std::size_t i = 0; i < bucket_count; ++i)
        if (counts_[i] > 0)
          bs.push_back(boost::json::array{us(static_cast<double>(upper(i))), counts_[i]});
      out["buckets"] = std::move(bs);
    }
    return out;
  }

private:
  static constexpr int sub_bits = 6;
  static constexpr uint64_t sub_count = uint64_t{1} << sub_bits;
  // Values below sub_count have a bucket each; above, each power of two 2^m (m >= sub_bits) has
  // sub_count buckets of width 2^(m - sub_bits).
  static constexpr std::size_t bucket_count = (64 - sub_bits + 1) * sub_count;

  static std::size_t index(uint64_t v) noexcept {
    if (v < sub_count)
      return static_cast<std::size_t>(v);
    int msb = 63 - std::countl_zero(v);
    int shift = msb - sub_bits;
    auto sub = (v >> shift) - sub_count; // 0 .. sub_count - 1
    return static_cast<std::size_t>((static_cast<uint64_t>(shift) + 1) * sub_count + sub);
  }

  // The largest value that falls into bucket `i`.
  static uint64_t upper(std::size_t i) noexcept {
    if (i < sub_count)
      return i;
    auto shift = i / sub_count - 1;
    auto sub = i % sub_count;
    auto lower = (sub_count + sub) << shift;
    return lower + ((uint64_t{1} << shift) - 1);
  }

  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
  double sum_ = 0;
  uint64_t max_ = 0;
  uint64_t min_ = std::numeric_limits<uint64_t>::max();
};

} // namespace fencelock::bench
