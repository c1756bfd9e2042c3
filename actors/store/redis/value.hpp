#pragma once

// A Redis reply as plain data (RESP2): what hiredis's reader produced, copied out of its
// structures so that it can be passed around and outlive the reader.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fencelock::redis {

struct value {
  enum class kind { nil, integer, string, status, error, array };
  kind type = kind::nil;
  int64_t integer = 0;
  std::string str;              // string, status and error
  std::vector<value> elements;  // array

  bool is_error() const noexcept {
    return type == kind::error;
  }

  /// Returns whether this is a string or status equal to `s`.
  bool is(const std::string& s) const noexcept {
    return (type == kind::string || type == kind::status) && str == s;
  }
};

/// A reply, or why there is none (not connected, connection lost, timed out).
struct outcome {
  std::optional<value> reply;
  std::string failure;

  explicit operator bool() const noexcept {
    return reply.has_value();
  }
};

/// Returns a short description of `v` for error messages (never its whole content).
std::string describe(const value& v);

} // namespace fencelock::redis
