#pragma once

// What every fencelock benchmark shares: a plan of alternating rounds (so that the machine's
// noise hits baseline and subject alike) and the median that summarizes them.

#include <algorithm>
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

} // namespace fencelock::bench
