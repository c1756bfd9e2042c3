#pragma once

// A small synchronous HTTP/1.1 client for tests (Boost.Beast underneath): tests may block, they
// are not actors. Every call has a deadline. raw_connection sends arbitrary bytes (malformed
// requests, oversized bodies, slow or vanishing clients).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

namespace fencelock::test {

/// Extra request headers, in order.
using header_list = std::vector<std::pair<std::string, std::string>>;

/// What the server answered.
struct http_response {
  int status = 0;
  /// Header fields in arrival order, names in lower case.
  header_list headers;
  std::string body;
  /// The parsed body, when it is JSON.
  std::optional<boost::json::value> json;

  /// Returns the value of header `name` (case-insensitive), or "".
  std::string header(std::string_view name) const;

  /// Returns whether header `name` is present.
  bool has_header(std::string_view name) const;

  /// Returns the body's "error" string, or "".
  std::string error() const;

  /// Returns the body's "message" string, or "".
  std::string message() const;

  /// Returns a one-line summary ("409 {...}") for failure messages.
  std::string describe() const;
};

/// Turns raw HTTP response bytes' parsed parts into an http_response (parses JSON bodies).
http_response make_response(int status, header_list headers, std::string body);

/// The outcome of a call: a response, or a transport error (connect refused, timeout, reset).
struct http_result {
  boost::system::error_code ec;
  std::string what;  // describes the failed step when ec is set
  http_response response;

  explicit operator bool() const noexcept {
    return !ec;
  }
};

struct http_options {
  /// Deadline of one whole call (connect, write, read).
  std::chrono::milliseconds timeout{30'000};
  /// Reuses one connection across calls; otherwise each call connects anew.
  bool keep_alive = false;
};

class http_client {
public:
  /// Prepares a client for http://127.0.0.1:`port` (nothing connects yet).
  explicit http_client(uint16_t port, http_options opts = {});
  ~http_client();

  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  /// Sends one request; `body` (if any) goes out as application/json. `timeout` overrides the
  /// client's deadline for this call (0 = the client's). Never throws.
  http_result try_request(std::string_view method, std::string_view target,
                          const std::optional<std::string>& body = std::nullopt,
                          const header_list& headers = {},
                          std::chrono::milliseconds timeout = std::chrono::milliseconds{0});

  /// Like try_request, but throws std::runtime_error on a transport error.
  http_response request(std::string_view method, std::string_view target,
                        const std::optional<std::string>& body = std::nullopt,
                        const header_list& headers = {},
                        std::chrono::milliseconds timeout = std::chrono::milliseconds{0});

  /// Sends GET `target`.
  http_response get(std::string_view target, const header_list& headers = {});

  /// Sends POST `target` with `body` serialized as JSON.
  http_response post(std::string_view target, const boost::json::value& body,
                     const header_list& headers = {},
                     std::chrono::milliseconds timeout = std::chrono::milliseconds{0});

  /// Returns the port this client talks to.
  uint16_t port() const noexcept;

  /// Drops a kept-alive connection.
  void disconnect();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// A plain TCP connection to 127.0.0.1 that sends whatever bytes a test wants.
class raw_connection {
public:
  /// Connects to 127.0.0.1:`port`; throws std::runtime_error on failure. `timeout` bounds each
  /// later call.
  explicit raw_connection(uint16_t port,
                          std::chrono::milliseconds timeout = std::chrono::milliseconds{30'000});
  ~raw_connection();

  raw_connection(const raw_connection&) = delete;
  raw_connection& operator=(const raw_connection&) = delete;

  /// Writes all of `bytes`; returns the error, if any (EPIPE/reset when the peer closed).
  boost::system::error_code send(std::string_view bytes);

  /// Reads one HTTP response; returns nothing on EOF, reset, parse error or timeout (the error
  /// is stored in `ec` when not null).
  std::optional<http_response> read_response(boost::system::error_code* ec = nullptr);

  /// Waits up to `timeout` for the peer to close the connection (EOF or reset), discarding any
  /// data; returns whether it closed.
  bool wait_closed(std::chrono::milliseconds timeout);

  /// Returns whether data or EOF is ready to read within `timeout`, without consuming it.
  bool readable(std::chrono::milliseconds timeout);

  /// Shuts down the sending side (the peer reads EOF, we can still read).
  void shutdown_send();

  /// Writes `bytes` and shuts down the sending side in one TCP segment, so that the peer reads
  /// the end of the stream together with the bytes: it cannot answer them before it can see
  /// that we are gone. For bytes that fit one segment (a small request).
  boost::system::error_code send_and_shutdown(std::string_view bytes);

  /// Closes the socket; later calls fail.
  void close();

  /// Aborts the connection: the peer gets a reset (RST), not an orderly close.
  void reset();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Returns a complete HTTP/1.1 request text with Host and, when `body` is given, Content-Type
/// application/json and Content-Length.
std::string raw_request(std::string_view method, std::string_view target,
                        const std::optional<std::string>& body = std::nullopt,
                        const header_list& headers = {});

/// Percent-encodes `s` for a URL query value (keeps only unreserved characters).
std::string url_encode(std::string_view s);

} // namespace fencelock::test
