#pragma once

// TLS on the server's own listener (docs/security.md). With tls-cert and tls-key set, every
// connection speaks TLS 1.2 or later: HTTP and WebSocket alike, through one stream type that is
// either plain TCP or TLS over it, so that http_session and ws_session stay one implementation
// each. tls-client-ca asks every client for a certificate signed by that CA (mutual TLS), whose
// subject common name can name a principal of the auth file. SIGHUP loads the files again: new
// connections use them, open ones keep the context they started with.

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <variant>

#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/role.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "fencelock/config.hpp"

namespace fencelock::net {

/// The listener's certificate chain, key and client CA, loaded into an OpenSSL context.
/// Thread-safe.
class tls_credentials {
public:
  /// Loads the files that `cfg` names; null when tls-cert is empty (a plain listener). An error
  /// names the setting and the file that could not be used.
  static caf::expected<std::shared_ptr<tls_credentials>> open(const config& cfg);

  /// Loads the files again. On an error the context in force stays, and the error is returned.
  caf::error reload();

  /// Returns the context that new connections handshake with.
  std::shared_ptr<boost::asio::ssl::context> current() const;

  /// Returns whether clients must present a certificate signed by tls-client-ca.
  bool mutual() const noexcept {
    return !client_ca_.empty();
  }

private:
  tls_credentials(std::string cert, std::string key, std::string client_ca)
    : cert_(std::move(cert)), key_(std::move(key)), client_ca_(std::move(client_ca)) {
  }

  const std::string cert_;
  const std::string key_;
  const std::string client_ca_;
  mutable std::mutex mutex_;
  std::shared_ptr<boost::asio::ssl::context> context_;
};

/// A connection's byte stream: plain TCP, or TLS over it once start_tls() ran. It is a Beast
/// AsyncStream whose next layer is the TCP stream in both cases, so that timeouts, cancel() and
/// beast::get_lowest_layer work the same either way.
class flex_stream {
public:
  using tcp_stream = boost::beast::tcp_stream;
  using tls_stream = boost::beast::ssl_stream<boost::beast::tcp_stream>;
  using executor_type = tcp_stream::executor_type;
  using next_layer_type = tcp_stream;

  explicit flex_stream(boost::asio::ip::tcp::socket&& socket)
    : stream_(std::in_place_type<tcp_stream>, std::move(socket)) {
  }

  /// Wraps the TCP connection in TLS with `context` (the server side); call once, before any
  /// byte was written.
  void start_tls(std::shared_ptr<boost::asio::ssl::context> context);

  /// Returns whether the connection speaks TLS.
  bool secure() const noexcept {
    return std::holds_alternative<tls_stream>(stream_);
  }

  /// Returns the TLS stream; only when secure().
  tls_stream& tls() noexcept {
    return std::get<tls_stream>(stream_);
  }

  /// Returns the TCP connection (under TLS, or alone).
  tcp_stream& next_layer() noexcept {
    return secure() ? tls().next_layer() : std::get<tcp_stream>(stream_);
  }

  executor_type get_executor() noexcept {
    return next_layer().get_executor();
  }

  template <class MutableBufferSequence, class ReadHandler>
  void async_read_some(const MutableBufferSequence& buffers, ReadHandler&& handler) {
    if (secure())
      tls().async_read_some(buffers, std::forward<ReadHandler>(handler));
    else
      std::get<tcp_stream>(stream_).async_read_some(buffers, std::forward<ReadHandler>(handler));
  }

  template <class ConstBufferSequence, class WriteHandler>
  void async_write_some(const ConstBufferSequence& buffers, WriteHandler&& handler) {
    if (secure())
      tls().async_write_some(buffers, std::forward<WriteHandler>(handler));
    else
      std::get<tcp_stream>(stream_).async_write_some(buffers, std::forward<WriteHandler>(handler));
  }

  template <class TeardownHandler>
  friend void async_teardown(boost::beast::role_type role, flex_stream& s,
                             TeardownHandler&& handler) {
    // Beast's own teardown of each: a TLS close_notify, or a TCP shutdown.
    using boost::beast::async_teardown;
    if (s.secure())
      async_teardown(role, s.tls(), std::forward<TeardownHandler>(handler));
    else
      async_teardown(role, std::get<tcp_stream>(s.stream_), std::forward<TeardownHandler>(handler));
  }

  friend void teardown(boost::beast::role_type role, flex_stream& s, boost::system::error_code& ec);

private:
  // Declared first, destroyed last: the TLS stream's SSL object was made from it.
  std::shared_ptr<boost::asio::ssl::context> context_;
  std::variant<tcp_stream, tls_stream> stream_;
};

/// Returns the subject common name of the client certificate that `s` verified during its
/// handshake, or "" (no TLS, no certificate, or none that verified).
std::string client_certificate_name(flex_stream& s);

/// Returns whether `bytes` begin like a TLS handshake record (a ClientHello sent to a plain
/// port): content type 22, protocol major version 3.
bool looks_like_tls(std::string_view bytes) noexcept;

} // namespace fencelock::net
