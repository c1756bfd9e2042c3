#pragma once

// A response as HTTP/1.x puts it on the wire, written straight from the reply into one flat
// buffer. Building a Beast message first cost an allocation per header field, and Beast's
// serializer then walked a chain of buffer views: for our responses of a few hundred bytes that
// was more work than parsing, routing and answering the request together. The bytes are those
// Beast writes for the message http_session used to build (unit tests compare the two).

#include <string>
#include <string_view>

#include "net/reply.hpp"

namespace fencelock::net {

/// What the connection, not the reply, decides about a response.
struct response_framing {
  /// The request's HTTP version: 10 or 11.
  unsigned version = 11;
  /// Whether the connection stays open after this response.
  bool keep_alive = true;
  /// A response to HEAD: it announces the body's length but does not carry the body.
  bool head = false;
  std::string_view request_id;
};

/// Replaces `out` with the response to `r`: the status line; Server, Content-Type, x-request-id,
/// Retry-After and Allow when set, then r.headers (names distinct from those); the Connection
/// header the version needs for `keep_alive`; Content-Length, except for 1xx, 204 and 304, which
/// have no body; a blank line and the body (`r.text`, or `r.body` serialized).
void write_response(const reply& r, const response_framing& framing, std::string& out);

} // namespace fencelock::net
