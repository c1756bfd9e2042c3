#pragma once

// One HTTP/1.1 connection: read a request, validate it, call the service, write the reply, and
// read again (keep-alive). Modelled on Beast's advanced_server example: the session owns its
// stream on its own strand, every handler is bound to shared_from_this(), and fail() is the
// one place a connection ends on an error. On a TLS listener the session first makes sure the
// client speaks TLS (plain HTTP gets a clear 400) and completes the handshake.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/object.hpp>

#include "fencelock/config.hpp"
#include "fencelock/service.hpp"
#include "net/rate_limiter.hpp"
#include "net/reply.hpp"
#include "net/routes.hpp"
#include "net/server_context.hpp"
#include "net/tls.hpp"

namespace fencelock::net {

/// Serves the requests of one connection, one at a time.
class http_session : public std::enable_shared_from_this<http_session> {
public:
  /// Takes over an accepted `socket`, whose executor must be a strand of its own (or the
  /// io_context's, when a single thread runs it).
  http_session(boost::asio::ip::tcp::socket&& socket, std::shared_ptr<server_context> ctx);

  /// Starts reading requests; call once, from any thread.
  void run();

  /// Closes the connection from any thread, withdrawing a pending acquire.
  void close();

  /// Ends the connection gracefully from any thread (server shutdown): an idle connection
  /// closes now; a request in progress is answered first, with "Connection: close".
  void drain();

  ~http_session();

private:
  /// Where the session is in its request cycle; every handler checks it on entry.
  enum class phase {
    reading,  // reading a request (header, 100-continue, body)
    calling,  // waiting for the service; a watch read may be in flight
    replying, // the reply is ready, waiting for the watch read to stop
    writing,  // writing the response
    closing,  // the response said "close": draining the client before closing
    closed,
  };

  /// The acquire in progress, so that it can be withdrawn if its answer cannot be delivered.
  struct pending_acquire {
    std::string name;
    uint64_t request_id = 0;
  };

  using error_code = boost::system::error_code;

  void start();
  /// On a TLS listener: reads the first bytes, to tell a TLS handshake from plain HTTP.
  void do_detect_tls();
  void on_detect_tls(error_code ec, bool tls);
  void on_handshake(error_code ec, std::size_t bytes_used);
  void do_read_header();
  void on_read_header(error_code ec, std::size_t bytes);
  void do_write_continue();
  void on_write_continue(error_code ec, std::size_t bytes);
  void do_read_body();
  void on_read_body(error_code ec, std::size_t bytes);
  void on_read_error(error_code ec);

  void handle_request();
  /// Hands a WebSocket upgrade of /v1/ws to a ws_session (or refuses it).
  void upgrade(boost::beast::http::request<boost::beast::http::string_body> req);
  /// Calls the service; `waiting_as` names the principal whose waiter count the call holds
  /// until it is answered ("" when none).
  void start_call(service_call call, std::string waiting_as = {});
  void post_reply(reply r);
  void on_reply(reply r);
  /// Returns whether the client closed its side (or the connection broke): checked before a
  /// grant goes out, so that a grant nobody reads is undone rather than written.
  bool peer_closed();
  /// Returns whether any byte of a next request arrived (read or still in the kernel): a drain
  /// lets such a request finish and answers it, as it closes a connection that is only idle.
  bool request_begun();

  void do_watch_client();
  void on_watch_client(error_code ec, std::size_t bytes);

  void send(reply r);
  void reply_and_close(reply r);
  void do_write();
  void on_write(error_code ec, std::size_t bytes);

  void do_close();
  void do_linger();
  void on_linger(error_code ec, std::size_t bytes);

  void close_now();
  void fail(error_code ec, const char* what);
  void abandon();

  /// Returns the bytes read but not parsed yet.
  std::string_view unread() const;

  /// Returns the client's x-request-id when it is sane, else a fresh one.
  static std::string request_id_of(const boost::beast::http::fields& fields);

  std::shared_ptr<server_context> ctx_;
  /// The session's strand. Kept apart from the stream, which moves to a ws_session on an
  /// upgrade while a server stop may still post a drain() here.
  const flex_stream::executor_type strand_;
  flex_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  /// The response being sent, and its bytes as written (net/response_bytes.hpp).
  reply response_;
  std::string wire_;
  std::string peer_;
  phase phase_ = phase::reading;
  /// Whether an async_read_some watching the client is in flight.
  bool watching_ = false;
  unsigned version_ = 11;
  bool keep_alive_ = false;
  /// Whether the request in progress is a HEAD (its response goes without a body).
  bool head_ = false;
  /// Set by drain(): no request after the one in progress.
  bool draining_ = false;
  std::string request_id_;
  /// The authenticated principal of the request being served ("" without authentication).
  std::string principal_;
  /// The subject CN of the client's verified certificate (mutual TLS), else "".
  std::string certificate_name_;
  std::optional<pending_acquire> acquire_;
  rate_limiter rate_;
};

} // namespace fencelock::net
