#pragma once

// What every fencelock benchmark shares: a plan of alternating rounds (so that the machine's
// noise hits baseline and subject alike), the median that summarizes them and the percentiles of
// latency samples.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace fencelock::bench {

/// How long each trial runs and how many alternating rounds make one measurement.
struct plan {
  double seconds = 2.0;
  int rounds = 3;
};

/// Reads `[seconds-per-trial] [rounds]` from the command line.
inline plan parse_plan(int argc, char** argv) {
  plan result;
  if (argc > 1)
    result.seconds = std::stod(argv[1]);
  if (argc > 2)
    result.rounds = std::stoi(argv[2]);
  return result;
}

/// Returns the median of `xs` (the upper one for an even count).
inline double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

/// Returns the `p`-th percentile (0 < p <= 100) of `xs` by the nearest-rank method: the smallest
/// value that at least p % of `xs` do not exceed. `xs` must not be empty.
inline double percentile(std::vector<double> xs, double p) {
  std::sort(xs.begin(), xs.end());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(xs.size())));
  return xs[std::clamp<std::size_t>(rank, 1, xs.size()) - 1];
}

} // namespace fencelock::bench
