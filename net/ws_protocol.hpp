#pragma once

// The WebSocket API's frames (docs/websocket-api.md): a text frame in becomes a validated
// request or the error frame that answers it; results and pushes become text frames out.
// Nothing here touches a socket, so every decision about a frame can be unit-tested.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include <boost/json/value.hpp>
#include <caf/error.hpp>

#include "fencelock/config.hpp"
#include "fencelock/events.hpp"
#include "fencelock/types.hpp"
#include "net/auth.hpp"

namespace fencelock::net {

/// acquire: the request, and whether its lease is bound to the socket's session.
struct ws_acquire {
  acquire_request req;
  bool session = false;
};

/// status: one lock's state.
struct ws_status {
  std::string name;
};

/// subscribe: a name or a prefix.
struct ws_subscribe {
  subscribe_request req;
};

/// unsubscribe: a subscription of this socket.
struct ws_unsubscribe {
  uint64_t subscription = 0;
};

/// auth: a bearer token for the socket (docs/security.md), for clients that cannot set the
/// Authorization header on the upgrade, such as browsers.
struct ws_auth {
  std::string token;
};

using ws_op = std::variant<ws_acquire, renew_request, release_request, ws_status, check_request,
                           ws_subscribe, ws_unsubscribe, ws_auth>;

/// A frame that passed every boundary check.
struct ws_request {
  /// The client's id, echoed in the answer: a string or a non-negative integer.
  boost::json::value id;
  /// The op's wire name ("acquire", ...).
  std::string op;
  ws_op call;
};

/// A frame that did not: the error frame to send back (its id is null when it had none).
struct ws_rejection {
  boost::json::value id;
  caf::error error;
};

/// Reads one text frame. Checks shape, types and ranges against `cfg` exactly as the HTTP API
/// does; every failure is invalid_request naming the field.
std::variant<ws_request, ws_rejection> parse_ws_request(std::string_view text, const config& cfg);

/// Checks that `who` may make `op` and qualifies its owner by `who`; errc::forbidden otherwise.
/// unsubscribe and auth need no permission.
caf::error authorize(const principal& who, ws_op& op);

/// Returns whether `id` can be echoed: a string of 1..128 printable ASCII characters or an
/// integer in 0..2^53-1.
bool valid_ws_id(const boost::json::value& id) noexcept;

/// {"type":"hello","session","server","version","limits":{...}}
std::string hello_frame(std::string_view session, std::string_view version, const config& cfg);

/// {"type":"reply","id","op","result"}
std::string reply_frame(const boost::json::value& id, std::string_view op,
                        const boost::json::value& result);

/// The same, with `result` as JSON text rendered already.
std::string reply_frame_text(const boost::json::value& id, std::string_view op,
                             std::string_view result);

/// {"type":"granted","id","result":<lease>}: the answer to a successful acquire.
std::string granted_frame(const boost::json::value& id, const lease& x);

/// {"type":"error","id"?,"error","message","holder"?,"retryAfterMs"?} for a service error, with
/// the same code and message as the HTTP API gives.
std::string error_frame(const boost::json::value& id, const caf::error& err);

/// An error frame for a code the front end raises itself (rate_limited), with a retry hint in
/// milliseconds (0 = none).
std::string error_frame(const boost::json::value& id, std::string_view code,
                        std::string_view message, uint32_t retry_after_ms);

/// {"type":"lease_lost","lock","owner","token","cause"}
std::string lease_lost_frame(const lock_event& ev);

/// {"type":"lock_event","subscription","event","lock","owner","token","revision","at",
///  "expiresAt"? (while the lease lives),"cause"? (when it ended)}
std::string lock_event_frame(uint64_t subscription, const lock_event& ev);

} // namespace fencelock::net
