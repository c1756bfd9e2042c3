#pragma once

// One structured event per client operation (docs/logging.md): the "op" line, with stable field
// names, written through the one log renderer (common/log.hpp). Never request bodies, never
// secrets.

#include <chrono>
#include <cstdint>
#include <string_view>

#include <caf/error.hpp>

namespace fencelock {

/// What one finished operation reports.
struct op_event {
  std::string_view op;         // acquire, renew, release, status, list
  std::string_view request_id; // correlation id
  std::string_view lock;       // lock name ("" for list)
  std::string_view owner;      // "" when not applicable; may be qualified (fencelock/owner.hpp)
  std::string_view principal;  // who called; "" without authentication
  uint64_t token = 0;          // 0 when not applicable
  std::chrono::steady_clock::time_point started;
};

/// Returns the outcome of an operation as logged and counted: "ok", the fencelock error code,
/// or "unavailable" for any other error.
std::string_view outcome_of(const caf::error& err);

/// Writes the event of an operation that finished now with `err` (none = ok). Runs on any thread.
void log_operation(const op_event& ev, const caf::error& err);

} // namespace fencelock
