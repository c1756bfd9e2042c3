#pragma once

// A response as HTTP/1.x puts it on the wire, in one flat buffer. Beast's serializer yields the
// same bytes through a chain of buffer views; for our responses of a few hundred bytes that
// chain cost more instructions than parsing, routing and answering the request together
// (callgrind: ~40 % of the I/O thread under uncontended load).

#include <string>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace fencelock::net {

/// Replaces `out` with the bytes of `res`: its status line, its header fields in their order, a
/// blank line and its body. `res` must not be chunked: its Content-Length is set (or, as for a
/// 304 or a HEAD response, the body is empty), as http_session prepares every response.
void serialize_response(
  const boost::beast::http::response<boost::beast::http::string_body>& res, std::string& out);

} // namespace fencelock::net
