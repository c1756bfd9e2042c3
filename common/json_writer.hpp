#pragma once

// Writes JSON text field by field, for what is written on every request: a log line, a lease in
// a response or a WebSocket frame. Building a boost::json::object only to serialize it costs an
// allocation per field and a second pass; on the WebSocket path that was a fifth of the I/O
// thread's work per frame. The output is what boost::json::serialize writes for the same object
// built in the same order (unit tests compare the two).

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include <boost/json/fwd.hpp>

namespace fencelock {

/// Appends `x` to `out` as a JSON string: quoted, with `"`, `\` and control characters escaped.
void append_json_string(std::string& out, std::string_view x);

/// Writes one JSON object at the end of a string: `{` now, `}` at close().
class json_object_writer {
public:
  explicit json_object_writer(std::string& out) : out_(out) {
    out_ += '{';
  }

  /// Adds a string field.
  json_object_writer& field(std::string_view key, std::string_view value);
  json_object_writer& field(std::string_view key, const char* value) {
    return field(key, std::string_view{value});
  }

  /// Adds a boolean field.
  json_object_writer& field(std::string_view key, bool value);

  /// Adds a number field.
  template <class Int,
            std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>, int> = 0>
  json_object_writer& field(std::string_view key, Int value) {
    begin(key);
    out_ += std::to_string(value);
    return *this;
  }

  /// Adds a field of any JSON value.
  json_object_writer& value(std::string_view key, const boost::json::value& value);

  /// Adds a field whose value is `json`, JSON text already rendered.
  json_object_writer& raw(std::string_view key, std::string_view json);

  /// Ends the object; call once, last.
  void close() {
    out_ += '}';
  }

private:
  void begin(std::string_view key);

  std::string& out_;
  bool first_ = true;
};

} // namespace fencelock
