#include "actors/striped_histogram.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace fencelock {

striped_histogram::striped_histogram(std::vector<double> bounds)
  : bounds_(std::move(bounds)), stripes_(std::make_unique<stripe[]>(metric_stripes)) {
  if (bounds_.size() > max_bounds || !std::is_sorted(bounds_.begin(), bounds_.end()))
    throw std::invalid_argument("striped_histogram: at most " + std::to_string(max_bounds) +
                                " ascending bounds");
}

void striped_histogram::observe(double value) noexcept {
  auto bucket = static_cast<std::size_t>(
    std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  auto& s = stripes_[thread_stripe()];
  s.counts[bucket].fetch_add(1, std::memory_order_relaxed);
  s.sum.fetch_add(value, std::memory_order_relaxed);
}

prometheus::ClientMetric striped_histogram::collect() const {
  prometheus::ClientMetric out;
  auto& h = out.histogram;
  h.bucket.reserve(bounds_.size() + 1);
  uint64_t cumulative = 0;
  for (std::size_t b = 0; b <= bounds_.size(); ++b) {
    for (std::size_t s = 0; s < metric_stripes; ++s)
      cumulative += stripes_[s].counts[b].load(std::memory_order_relaxed);
    prometheus::ClientMetric::Bucket bucket;
    bucket.cumulative_count = cumulative;
    bucket.upper_bound =
      b < bounds_.size() ? bounds_[b] : std::numeric_limits<double>::infinity();
    h.bucket.push_back(bucket);
  }
  h.sample_count = cumulative;
  for (std::size_t s = 0; s < metric_stripes; ++s)
    h.sample_sum += stripes_[s].sum.load(std::memory_order_relaxed);
  return out;
}

} // namespace fencelock
