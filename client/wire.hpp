#pragma once

// The client's reading of server frames (docs/websocket-api.md): plain functions from JSON to
// the public structs, no I/O. A frame that does not have the documented shape reads as nothing
// (or a "protocol_error" answer) instead of throwing on the I/O thread.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "fencelock/client.hpp"

namespace fencelock::detail {

/// The server's answer to one request: a result (reply or granted frame) or an error.
struct answer {
  std::optional<boost::json::object> result;  // set on success
  std::optional<client_error> error;          // set on failure

  /// Returns a failed answer with a client-side `code`.
  static answer failure(std::string code, const std::string& message);

  /// Returns whether the request succeeded.
  bool ok() const noexcept {
    return result.has_value();
  }
};

/// The fields of a lease (a granted result, a renew result).
struct lease_fields {
  std::string name;
  std::string owner;
  uint64_t token = 0;
  int64_t ttl_ms = 0;
  int64_t expires_at_ms = 0;
};

/// A lease_lost push.
struct lease_lost_push {
  std::string lock;
  std::string owner;
  uint64_t token = 0;
  std::string cause;
};

/// Returns the frame's "type", or "".
std::string_view frame_type(const boost::json::object& frame);

/// Returns the frame's "id" when it is an integer this client could have sent.
std::optional<uint64_t> frame_id(const boost::json::object& frame);

/// Returns the idle timeout a hello frame announces (limits.idleTimeoutMs), if it is there and
/// positive.
std::optional<std::chrono::milliseconds> hello_idle_timeout(const boost::json::object& frame);

/// Reads a reply, granted or error frame.
answer decode_answer(const boost::json::object& frame);

/// Reads a lease object; nothing unless every field is present and well-typed.
std::optional<lease_fields> decode_lease(const boost::json::object& v);

/// Reads a status object; nothing unless name and held are present and well-typed.
std::optional<lock_info> decode_status(const boost::json::value& v);

/// Reads a lock_event frame; nothing unless event, lock and token are present.
std::optional<watch_event> decode_event(const boost::json::object& frame);

/// Reads a lease_lost push; nothing unless lock and token are present.
std::optional<lease_lost_push> decode_lease_lost(const boost::json::object& frame);

/// Maps a lease_lost push's cause to a loss_cause (an unknown cause counts as expired).
loss_cause loss_cause_of_push(std::string_view cause) noexcept;

} // namespace fencelock::detail
