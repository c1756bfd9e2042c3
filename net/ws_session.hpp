#pragma once

// One WebSocket connection (docs/websocket-api.md): requests in any order, answers and pushes
// through one bounded outbound queue. Like http_session it lives on its own strand and bridges to
// the service asynchronously: service callbacks only post back to the strand.
//
// What the session remembers, so that a socket that goes away leaves nothing behind:
//   - acquires still waiting: withdrawn (or their grant undone) when the socket closes;
//   - leases acquired or renewed here: watched for lease_lost; session-bound ones are released
//     when the socket closes;
//   - subscriptions: removed when the socket closes.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "net/coalescing_stream.hpp"
#include "net/http_session.hpp" // server_context
#include "net/rate_limiter.hpp"
#include "net/tls.hpp"
#include "net/ws_protocol.hpp"

namespace fencelock::net {

class ws_session : public std::enable_shared_from_this<ws_session>, public frames_listener {
public:
  /// Takes over the stream of an HTTP connection whose request was a WebSocket upgrade; its
  /// executor must be a strand of its own (or the io_context's, when a single thread runs it).
  /// `credential` is the hash of the bearer token the upgrade carried, if any;
  /// `certificate_name` the subject CN of the client's verified certificate (mutual TLS), if any.
  ws_session(flex_stream&& stream, std::shared_ptr<server_context> ctx, std::string peer,
             std::optional<token_hash> credential = std::nullopt,
             std::string certificate_name = {});

  /// Completes the upgrade `req`, then serves the socket. Call once, on the socket's strand.
  void run(boost::beast::http::request<boost::beast::http::string_body> req);

  /// Closes the socket with 1001 (going away) from any thread: the server is stopping.
  void close_going_away();

  /// Ends the session gracefully from any thread (server shutdown): reads no more requests,
  /// sends the answers of those in progress, then closes with 1001 (going away).
  void drain();

  /// Closes the TCP connection of a session that was never run (no slot was free).
  void drop();

private:
  using error_code = boost::system::error_code;

  /// A lease this socket acquired or renewed.
  struct held_lease {
    std::string owner;
    uint64_t watch_id = 0;
    bool session_bound = false;
  };
  using lease_key = std::pair<std::string, uint64_t>; // (lock, token)

  void on_accept(error_code ec);
  void do_read();
  void on_read(error_code ec, std::size_t bytes);
  void handle_frame(std::string_view text);
  /// With authentication: answers an auth frame, or checks that the socket's principal may make
  /// `req`. Returns false when it answered the frame (refused it, or it was auth).
  bool admit(ws_request& req);

  void start_acquire(boost::json::value id, ws_acquire call);
  void start_renew(boost::json::value id, renew_request req);
  void start_release(boost::json::value id, release_request req);
  void start_subscribe(boost::json::value id, ws_subscribe call);
  void unsubscribe(const boost::json::value& id, uint64_t subscription);

  /// Opens a watch on the end of a lease of `lock` (bound to its token later), whose firing
  /// pushes lease_lost here. Returns its id.
  uint64_t watch_lease_end(const std::string& lock);
  /// Returns the callback that answers request `id` of a read-only `op` with its result.
  template <class T>
  callback<T> reply_with(const boost::json::value& id, std::string_view op);
  /// Runs `f` on the strand later, unless the server stopped taking replies; thread-safe.
  template <class F>
  void post(F&& f);
  /// Counts an answered request and resumes reading if it was paused for backpressure.
  void answered();
  /// Closes with 1001 once a draining session has nothing left to answer or send.
  void finish_drain_if_done();
  /// Remembers lease (lock, token) as held through this socket, watched by `watch_id`.
  void remember_lease(const std::string& lock, uint64_t token, const std::string& owner,
                      uint64_t watch_id, bool session_bound);
  void forget_lease(const std::string& lock, uint64_t token);
  void on_lease_end(const lock_event& ev);

  /// Queues one text frame, unless the socket is closing; closes a client that does not read.
  void send(const std::string& frame);
  /// A write of queued frames ended (coalescing_stream): a failure ends the session.
  void on_frames_written(error_code ec) override;
  void close_with(boost::beast::websocket::close_code code, std::string_view reason);
  /// Ends the session once: withdraws, releases and unsubscribes everything it holds.
  void on_closed(error_code ec, std::string_view stage);

  call_context context(const boost::json::value& id) const;

  std::shared_ptr<server_context> ctx_;
  /// Data frames go out through the layer under Beast (ws_.next_layer().send_text), several
  /// in one write; Beast reads, and writes the handshake and the control frames.
  boost::beast::websocket::stream<coalescing_stream<flex_stream>> ws_;
  boost::beast::flat_buffer in_;
  boost::asio::steady_timer close_timer_;
  std::string peer_;
  std::string id_;
  bool open_ = false;    // the handshake completed
  bool closing_ = false; // a close began: no more requests, no more frames queued
  bool closed_ = false;  // on_closed ran
  bool reading_ = false;
  bool draining_ = false; // drain(): no more requests; close once everything is answered
  std::size_t pending_ = 0;
  std::map<uint64_t, std::string> waiting_acquires_; // request_id -> lock
  std::map<lease_key, held_lease> leases_;
  std::set<uint64_t> subscriptions_;
  rate_limiter rate_;
  /// The hash of the socket's bearer token; looked up again for every frame, so that a token
  /// revoked by a reload stops working on open sockets too.
  std::optional<token_hash> credential_;
  /// The subject CN of the client's certificate: the principal when no token was given.
  std::string certificate_name_;
  /// The principal of the frame being served ("" without authentication).
  std::string principal_;
  /// Set by admit() for an acquire that counts as a waiter of this principal; the acquire's
  /// answer gives the count back.
  std::string waiting_as_;
};

} // namespace fencelock::net
