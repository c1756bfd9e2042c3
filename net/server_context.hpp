#pragma once

// What an HTTP server shares with its sessions: the io_context, the service, the configuration,
// the gate that replies pass once the server stopped, and the registry of open connections.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "fencelock/config.hpp"
#include "fencelock/service.hpp"
#include "net/auth.hpp"
#include "net/principal_limits.hpp"
#include "net/tls.hpp"

namespace fencelock::net {

class ws_session;

/// Logs a request refused for `err` (unauthenticated or forbidden) as an access_denied event:
/// the audit trail of what was refused, to whom (`principal`, "" when unknown) and from where.
void log_denied(const caf::error& err, std::string_view request_id, std::string_view principal,
                std::string_view peer);

/// What the server shares with its sessions. Sessions hold it, so the io_context outlives every
/// session, including one that a late service callback still owns after the server stopped.
class server_context {
public:
  /// Prepares the context of a server for `svc` with `cfg`; `svc` must outlive every session.
  /// `auth` is null or disabled when requests need no credentials; `tls` is null for a plain
  /// listener.
  server_context(service& svc, const config& cfg, std::shared_ptr<authenticator> auth,
                 std::shared_ptr<tls_credentials> tls)
    : svc_(svc), cfg_(cfg), auth_(auth && auth->enabled() ? std::move(auth) : nullptr),
      tls_(std::move(tls)) {
  }

  /// Returns the I/O context every socket of the server runs on.
  boost::asio::io_context& ioc() noexcept {
    return ioc_;
  }

  /// Destroys every handler still queued or waiting on the io_context, once no thread runs it
  /// any more (server stop). A handler holds its session and the session holds this context, so
  /// one left queued by a stopped loop (the aborted read of a socket closed just before) would
  /// keep both alive for good. The io_context runs nothing after this.
  void destroy_pending_handlers() {
    ioc_.shutdown();
  }

  /// Returns the lock service the sessions call.
  service& svc() noexcept {
    return svc_;
  }

  /// Returns the authenticator, or null when requests need no credentials.
  const authenticator* auth() const noexcept {
    return auth_.get();
  }

  /// Returns the per-principal rate and waiter accounts (with an auth file).
  principal_limits& limits() noexcept {
    return limits_;
  }

  /// Returns the listener's TLS credentials, or null when it speaks plain HTTP.
  const tls_credentials* tls() const noexcept {
    return tls_.get();
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
  /// An io_context whose services can be shut down before it is destroyed.
  struct closable_io_context : boost::asio::io_context {
    using boost::asio::io_context::shutdown;
  };

  closable_io_context ioc_;
  service& svc_;
  const config cfg_;
  const std::shared_ptr<authenticator> auth_;
  const std::shared_ptr<tls_credentials> tls_;
  principal_limits limits_;
  std::mutex gate_mutex_;
  bool gate_open_ = true;
  std::atomic<int64_t> http_sessions_{0};
  mutable std::mutex ws_mutex_;
  std::unordered_map<const ws_session*, std::weak_ptr<ws_session>> ws_sessions_;
  bool ws_stopped_ = false;
};

} // namespace fencelock::net
