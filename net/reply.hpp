#pragma once

// What the HTTP layer sends back for one request, before the session adds the headers every
// response carries (x-request-id, Server, Content-Type, Connection).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/beast/http/status.hpp>
#include <boost/json/value.hpp>

namespace fencelock::net {

/// Describes one response: its status, JSON body and the headers that depend on its outcome.
struct reply {
  boost::beast::http::status status = boost::beast::http::status::ok;
  boost::json::value body;
  /// Content-Type of a body given as `text` (empty = the JSON `body`, serialized when sent):
  /// text that is not JSON, or JSON rendered already. Always a string literal.
  std::string_view text_type;
  /// The body sent instead of `body` when `text_type` is set.
  std::string text;
  /// Seconds for the Retry-After header (0 = no header).
  uint32_t retry_after_s = 0;
  /// Methods for the Allow header of a 405 (empty = no header); always a string literal.
  std::string_view allow;
  /// Further headers as (name, value), both static data: a page's Cache-Control, ETag, CSP.
  std::vector<std::pair<std::string_view, std::string_view>> headers;
};

} // namespace fencelock::net
