#pragma once

// The one place where an error becomes an HTTP status, a JSON body and Retry-After.

#include <cstdint>
#include <string_view>

#include <boost/beast/http/status.hpp>
#include <caf/error.hpp>

#include "fencelock/errc.hpp"
#include "net/reply.hpp"

namespace fencelock::net {

/// How one fencelock error code looks on the wire, apart from its message.
struct errc_wire {
  boost::beast::http::status status;
  /// Seconds for the Retry-After header (0 = no header).
  uint32_t retry_after_s;
  /// The message used when the error carries none of its own.
  std::string_view summary;
};

/// Returns the status and Retry-After of `x`; exhaustive over errc (no default).
errc_wire wire_of(errc x) noexcept;

/// Turns a service error into its reply: {"error","message"} plus "holder" for lock_held.
/// Errors that are not fencelock errors (or no error at all) become 503 unavailable.
reply error_reply(const caf::error& err);

/// Builds the reply for an error the HTTP layer raises itself (not_found, payload_too_large...).
reply error_reply(boost::beast::http::status status, std::string_view code,
                  std::string_view message);

} // namespace fencelock::net
