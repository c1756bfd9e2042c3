#pragma once

// Every log line fencelock writes, in one place: {"ts", "level", "event", ...fields} as one JSON
// object per line (the default, for machines) or as logfmt-style text (`ts level event
// key=value ...`, for people at a terminal), through spdlog's default logger: the binary makes
// its "fencelock" logger the default, an embedding host keeps its own. docs/logging.md lists
// the events.

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include <boost/json/object.hpp>

namespace fencelock {

/// How much a line matters.
enum class log_level : uint8_t { debug, info, warn, error };

/// Returns "debug", "info", "warn" or "error".
std::string_view to_string(log_level x) noexcept;

/// How log lines are written.
enum class log_format { json, text };

/// Sets the format of every log line from now on; call once at start-up.
void set_log_format(log_format x) noexcept;

/// Returns the current UTC time as ISO-8601 with milliseconds, for the `ts` field.
std::string iso_timestamp();

/// Renders `line`, an object that holds ts, level and event first, in the configured format.
std::string render_log_line(const boost::json::object& line);

/// Returns the line {"ts": now, "level", "event", ...fields} rendered in the configured format:
/// the one renderer behind every log line.
std::string log_line(log_level level, std::string_view event, const boost::json::object& fields);

/// Builds one log line field by field in the configured format: the line render_log_line()
/// makes of {"ts", "level", "event", ...fields}, without building that object. log_line() uses
/// it; the op event, written per operation, builds its line with it directly.
class log_line_builder {
public:
  /// Begins the line {"ts": now, "level", "event"}.
  log_line_builder(log_level level, std::string_view event);

  /// Adds a text field.
  log_line_builder& add(std::string_view key, std::string_view value);

  /// Adds a field of any JSON value (strings as add() writes them).
  log_line_builder& add_value(std::string_view key, const boost::json::value& value);

  /// Adds a number field.
  template <class Int,
            std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>, int> = 0>
  log_line_builder& add(std::string_view key, Int value) {
    begin_field(key);
    line_ += std::to_string(value);
    return *this;
  }

  /// Returns the finished line; call once, last.
  std::string finish();

private:
  void begin_field(std::string_view key);

  std::string line_;
  bool json_;
};

/// Writes `line`, rendered by log_line_builder, at `level` when that level is enabled.
void log_rendered(log_level level, std::string line);

/// Returns whether a line at `level` would be written now.
bool log_enabled(log_level level);

/// Writes log_line(level, event, fields) when `level` is enabled. Never pass request bodies or
/// secrets. Thread-safe.
void log_event(log_level level, std::string_view event, const boost::json::object& fields);

} // namespace fencelock
