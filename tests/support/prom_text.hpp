#pragma once

// Reads samples out of a Prometheus text-format scrape (format 0.0.4), for tests.

#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace fencelock::test {

/// Returns the value of the sample `series` (name plus labels exactly as serialized, e.g.
/// `x_total{op="acquire"}`) in `scrape`, or nothing when no line carries it.
inline std::optional<double> sample(const std::string& scrape, std::string_view series) {
  std::istringstream in{scrape};
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > series.size() && line.starts_with(series) && line[series.size()] == ' ') {
      try {
        return std::stod(line.substr(series.size() + 1));
      } catch (...) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

/// Returns whether `scrape` holds the line `line` exactly.
inline bool has_line(const std::string& scrape, std::string_view line) {
  std::istringstream in{scrape};
  std::string x;
  while (std::getline(in, x))
    if (x == line)
      return true;
  return false;
}

} // namespace fencelock::test
