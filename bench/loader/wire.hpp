#pragma once

// The loader's own wire code: an HTTP/1.1 response parser, WebSocket client framing and a
// scanner for the few JSON fields the loader reads. They are written for the loader's cost, not
// generality: a loader that spends a core on Beast's parsers takes that core from the server it
// measures on a small machine. Every function is pure and tested by the smoke run's answers.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fencelock::bench::wire {

/// One parsed HTTP response.
struct http_response {
  int status = 0;
  /// The body: a view into the parser's input, or into `chunked_body` for a chunked one.
  std::string_view body;
  bool close = false; // the server sent `Connection: close`
};

/*
 * Parses one complete HTTP/1.1 response at the start of `in`. Returns the number of bytes it
 * took (the caller drops them), 0 when `in` holds no complete response yet, or -1 when `in` is
 * not HTTP. `chunked_body` receives the body of a chunked response (and must live as long as
 * `out.body` is read).
 */
long parse_http_response(std::string_view in, http_response& out, std::string& chunked_body);

/// Appends `POST <target> HTTP/1.1` with a JSON `body` and keep-alive to `out`.
void append_post(std::string& out, std::string_view host, std::string_view target,
                 std::string_view body);

/// Returns the WebSocket upgrade request for `GET <target>`.
std::string ws_upgrade_request(std::string_view host, std::string_view target);

/// Appends `payload` to `out` as one masked client text frame (the mask key is zero, which RFC
/// 6455 allows: the payload is sent as is and the server unmasks it to itself).
void append_ws_frame(std::string& out, std::string_view payload, uint8_t opcode = 0x1);

/// One frame a server sent.
struct ws_frame {
  uint8_t opcode = 0;
  bool fin = true;
  std::string_view payload; // a view into the parser's input
};

/// Parses one frame at the start of `in`: returns the bytes it took, 0 when incomplete, -1 when
/// the frame is malformed (masked, or a length beyond 64 MiB).
long parse_ws_frame(std::string_view in, ws_frame& out);

/// Returns the unsigned integer after the first `"key":` in `json`, if it is one.
std::optional<uint64_t> find_uint(std::string_view json, std::string_view key);

/// Returns the string after the first `"key":"` in `json` up to the next quote (no escapes).
std::optional<std::string_view> find_string(std::string_view json, std::string_view key);

/// Returns `in` in base64 (etcd's gateway sends bytes so).
std::string base64(std::string_view in);

} // namespace fencelock::bench::wire
