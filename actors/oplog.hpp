#pragma once

// One structured event per client operation: a JSON line through spdlog with stable field names
// (docs/logging.md). Never request bodies, never secrets.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <caf/error.hpp>

namespace fencelock {

/// What one finished operation reports.
struct op_event {
  std::string_view op;         // acquire, renew, release, status, list
  std::string_view request_id; // correlation id
  std::string_view lock;       // lock name ("" for list)
  std::string_view owner;      // "" when not applicable
  uint64_t token = 0;          // 0 when not applicable
  std::chrono::steady_clock::time_point started;
};

/// Writes the event of an operation that finished now with `err` (none = ok). Runs on any thread.
void log_operation(const op_event& ev, const caf::error& err);

/// Writes one event line {"ts", "level", "event", ...fields} at `level` (info, warn or error),
/// for what happens outside client operations (a store connection going down, say).
void log_event(std::string_view level, std::string_view event, const boost::json::object& fields);

/// Returns the current UTC time as ISO-8601 with milliseconds, for the `ts` field.
std::string iso_timestamp();

/// How log lines are written: one JSON object per line (the default, for machines), or
/// logfmt-style text (`ts level event key=value ...`, for people reading a terminal).
enum class log_format { json, text };

/// Sets the format of every log line from now on; call once at start-up.
void set_log_format(log_format x) noexcept;

/// Renders one log line {"ts", "level", "event", ...fields} in the configured format.
std::string render_log_line(const boost::json::object& line);

} // namespace fencelock
