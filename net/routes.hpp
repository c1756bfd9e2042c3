#pragma once

// The HTTP API's routes: which method and path mean which operation, the boundary checks of each
// request, and the hand-off to fencelock::service. Nothing here touches a socket, so every
// decision about a request can be unit-tested.
//
//   POST /v1/locks/{name}/acquire   {owner, ttlMs, waitMs?}
//   POST /v1/locks/{name}/renew     {owner, token, ttlMs?}
//   POST /v1/locks/{name}/release   {owner, token}
//   GET  /v1/locks/{name}
//   GET  /v1/locks?prefix=&limit=&cursor=
//   GET  /healthz                   GET /readyz
//   GET  /metrics                   (Prometheus text format, docs/metrics.md)
//   GET  /v1/openapi.json           (this API's OpenAPI document, docs/openapi.json)

#include <functional>
#include <string>
#include <string_view>
#include <variant>

#include <boost/beast/http/verb.hpp>

#include "fencelock/config.hpp"
#include "fencelock/service.hpp"
#include "fencelock/types.hpp"
#include "net/auth.hpp"
#include "net/reply.hpp"

namespace fencelock::net {

/// Asks for the state of one lock (GET /v1/locks/{name}).
struct status_query {
  std::string name;
};

/// Asks for the service's metrics (GET /metrics).
struct metrics_query {};

/// A request that passed every boundary check, ready for the service. An acquire_request still
/// needs its request_id, which the session assigns because it may have to cancel it.
using service_call = std::variant<acquire_request, renew_request, release_request, check_request,
                                  status_query, list_request, metrics_query>;

/// Either the call to make, or the reply that answers the request at once (an error, or a probe).
using route_result = std::variant<service_call, reply>;

/// Receives the reply of a service call.
using reply_handler = std::function<void(reply)>;

/// Matches `method target`, parses `body` and checks the request against `cfg`. `ready` is the
/// answer of GET /readyz. Unknown paths get 404, a wrong method 405 with Allow, and any invalid
/// input 400 invalid_request naming the field.
route_result route(boost::beast::http::verb method, std::string_view target, std::string_view body,
                   const config& cfg, bool ready);

/// Returns whether a request for `target` needs credentials when authentication is on: all but
/// /healthz, the OpenAPI document, and /readyz and /metrics where `cfg` opens them. (The
/// dashboard's files are open too; they hold no data.)
bool needs_credentials(std::string_view target, const config& cfg) noexcept;

/// Checks that `who` may make `call` (docs/security.md) and qualifies its owner by `who`;
/// errc::forbidden otherwise.
caf::error authorize(const principal& who, service_call& call, const config& cfg);

/// The answer to a request without valid credentials: 401 with a WWW-Authenticate challenge.
reply unauthenticated_reply();

/// Runs `call` on `svc` tagged with `ctx`, and hands the reply (200 or the mapped error) to
/// `done` exactly once: on a CAF worker thread, or on the calling thread when the service refuses
/// the request at once.
void dispatch(service& svc, service_call call, call_context ctx, reply_handler done);

/// Returns whether a client's x-request-id may be echoed: 1..128 printable ASCII, no spaces.
bool valid_request_id(std::string_view x) noexcept;

/// Returns a fresh request id of 16 hex characters, unique within this process. Thread-safe.
std::string make_request_id();

} // namespace fencelock::net
