#pragma once

// The loader's command line and its output: `--name value` options, and one JSON object per
// line on stdout for every trial (what bench/report.py reads). Progress goes to stderr.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "bench/loader/runner.hpp"

namespace fencelock::bench {

/// Options as given: `--name value` pairs (a repeated name keeps every value) and bare flags.
class options {
public:
  /// Parses argv[first..]; throws std::runtime_error on a stray word.
  options(int argc, char** argv, int first);

  /// Returns whether `--name` was given.
  bool has(const std::string& name) const;

  /// Returns the last value of `--name`, or `fallback`.
  std::string text(const std::string& name, const std::string& fallback = "") const;

  /// Returns every value of `--name`, each split at commas.
  std::vector<std::string> list(const std::string& name,
                                const std::vector<std::string>& fallback = {}) const;

  /// Returns every value of `--name` unsplit (for arguments that may hold commas).
  std::vector<std::string> all(const std::string& name) const;

  double number(const std::string& name, double fallback) const;
  int64_t integer(const std::string& name, int64_t fallback) const;
  std::vector<int64_t> integers(const std::string& name, const std::vector<int64_t>& fallback) const;

private:
  std::map<std::string, std::vector<std::string>> values_;
};

/// Returns the trial settings of the common options: --warmup, --duration, --threads.
trial_settings trial_options(const options& o);

/// Writes `line` as one JSON line on stdout, with "label" added when --label was given.
void emit(boost::json::object line);

/// Sets the label emit() adds to every line.
void set_label(std::string label);

/// Returns the fields every trial reports: window, counts, rates, latency, CPU shares.
boost::json::object trial_fields(const trial_result& r);

/// Prints a progress line on stderr.
void note(const std::string& text);

} // namespace fencelock::bench
