#pragma once

// A scratch directory for one test: created under /tmp, removed with everything in it at the end.

#include <filesystem>
#include <string>

namespace fencelock::test {

class temp_dir {
public:
  /// Creates a fresh directory /tmp/<prefix>XXXXXX; throws std::runtime_error on failure.
  explicit temp_dir(const std::string& prefix = "fencelock-it-");

  /// Removes the directory recursively (errors are ignored).
  ~temp_dir();

  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  /// Returns the directory's path.
  const std::filesystem::path& path() const noexcept {
    return path_;
  }

  /// Returns the directory's path as a string, for command lines.
  std::string str() const {
    return path_.string();
  }

private:
  std::filesystem::path path_;
};

} // namespace fencelock::test
