#pragma once

// One HTTP/1.1 connection: read a request, validate it, call the service, write the reply, and
// read again (keep-alive). Modelled on Beast's advanced_server example: the session owns its
// tcp_stream on its own strand, every handler is bound to shared_from_this(), and fail() is the
// one place a connection ends on an error.

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
#include <boost/beast/core/tcp_stream.hpp>
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

namespace fencelock::net {

/// How much a network event matters; only connection-level problems are logged here.
enum class log_level { debug, warn, error };

/// Logs the JSON line {"ts", "level", "event", ...fields} through the "fencelock" logger (or
/// spdlog's default) if `level` is enabled. Never pass request bodies. Thread-safe.
void log_net_event(log_level level, std::string_view event, const boost::json::object& fields);

class ws_session;

/// What the server shares with its sessions. Sessions hold it, so the io_context outlives every
/// session, including one that a late service callback still owns after the server stopped.
class server_context {
public:
  /// Prepares the context of a server for `svc` with `cfg`; `svc` must outlive every session.
  server_context(service& svc, const config& cfg) : svc_(svc), cfg_(cfg) {
  }

  /// Returns the I/O context every socket of the server runs on.
  boost::asio::io_context& ioc() noexcept {
    return ioc_;
  }

  /// Returns the lock service the sessions call.
  service& svc() noexcept {
    return svc_;
  }

  /// Returns the server's configuration.
  const config& cfg() const noexcept {
    return cfg_;
  }

  /// Posts `f` to `executor` unless the server stopped accepting replies; thread-safe. Service
  /// callbacks deliver through here, so that nothing is queued on an io_context nobody runs.
  template <class Executor, class F>
  void post_reply(const Executor& executor, F&& f) {
    std::lock_guard<std::mutex> guard{gate_mutex_};
    if (gate_open_)
      boost::asio::post(executor, std::forward<F>(f));
  }

  /// Makes post_reply drop everything from now on; called once the server stops.
  void close_reply_gate() {
    std::lock_guard<std::mutex> guard{gate_mutex_};
    gate_open_ = false;
  }

  /// Registers a WebSocket session about to open; returns false when ws_max_sessions are open
  /// or the server is stopping. Thread-safe.
  bool add_ws(const std::shared_ptr<ws_session>& session);

  /// Unregisters a WebSocket session that closed. Thread-safe.
  void remove_ws(const ws_session* session);

  /// Returns the number of open WebSocket sessions. Thread-safe.
  std::size_t ws_sessions() const;

  /// Returns every open WebSocket session and refuses new ones from now on (server stop).
  std::vector<std::shared_ptr<ws_session>> stop_ws();

  /// Counts an HTTP session in (+1) or out (-1). Thread-safe.
  void count_http_session(int delta) noexcept {
    http_sessions_ += delta;
  }

  /// Returns the open client connections: HTTP sessions and WebSocket sessions. Thread-safe.
  std::size_t connections() const {
    return static_cast<std::size_t>(http_sessions_.load()) + ws_sessions();
  }

private:
  boost::asio::io_context ioc_;
  service& svc_;
  const config cfg_;
  std::mutex gate_mutex_;
  bool gate_open_ = true;
  std::atomic<int64_t> http_sessions_{0};
  mutable std::mutex ws_mutex_;
  std::unordered_map<const ws_session*, std::weak_ptr<ws_session>> ws_sessions_;
  bool ws_stopped_ = false;
};

/// Serves the requests of one connection, one at a time.
class http_session : public std::enable_shared_from_this<http_session> {
public:
  /// Takes over an accepted `socket`, whose executor must be a strand of its own.
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
  void start_call(service_call call);
  void post_reply(reply r);
  void on_reply(reply r);

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

  /// Returns the client's x-request-id when it is sane, else a fresh one.
  static std::string request_id_of(const boost::beast::http::fields& fields);

  std::shared_ptr<server_context> ctx_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  boost::beast::http::response<boost::beast::http::string_body> res_;
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
  std::optional<pending_acquire> acquire_;
  rate_limiter rate_;
};

} // namespace fencelock::net
