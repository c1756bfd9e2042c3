#pragma once

// The flags that every baseline program takes (bench/baseline_caf.cpp, baseline_fsync.cpp):
// how long each trial warms up and measures, how many rounds, and a label for its JSON lines.

#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace fencelock::bench {

struct trial_args {
  double warmup = 0.5;   // seconds
  double duration = 2.0; // seconds
  int rounds = 1;
  std::string label;
};

/// Reads `--name value` pairs into `out`: the common ones here, the program's own through
/// `own(name, value)`, which returns false for a name it does not know. On a flag nobody knows,
/// a missing or unreadable value, prints why to stderr and returns false.
inline bool parse_trial_args(const char* program, int argc, char** argv, trial_args& out,
                             const std::function<bool(std::string_view, const char*)>& own) {
  for (int i = 1; i < argc; i += 2) {
    std::string_view name = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: %s needs a value\n", program, argv[i]);
      return false;
    }
    const char* value = argv[i + 1];
    try {
      if (name == "--warmup")
        out.warmup = std::stod(value);
      else if (name == "--duration")
        out.duration = std::stod(value);
      else if (name == "--rounds")
        out.rounds = std::stoi(value);
      else if (name == "--label")
        out.label = value;
      else if (!own(name, value)) {
        std::fprintf(stderr, "%s: unknown option %s\n", program, argv[i]);
        return false;
      }
    } catch (const std::logic_error&) { // std::stod and std::stoi: not a number, or too large
      std::fprintf(stderr, "%s: %s: not a number: %s\n", program, argv[i], value);
      return false;
    }
  }
  return true;
}

} // namespace fencelock::bench
