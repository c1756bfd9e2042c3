#pragma once

// The C++ client of fencelock: holds leases over the WebSocket API (docs/websocket-api.md) and
// keeps them alive. It needs the C++ standard library alone in this header, and neither CAF nor
// the server: a client program links `fencelock_client` (Boost.Beast inside) and nothing else.
//
//   fencelock::client_options opts;
//   opts.url = "http://locks.internal:7070";
//   fencelock::client c{opts};
//   auto lease = c.acquire("reports:daily", 30s, 10s);   // throws client_error (lock_held...)
//   lease.on_lost([](const fencelock::lease_loss& l) { /* stop using lease.token() */ });
//   write_report(lease.token());                          // pass the token to the resource
//   lease.release();                                      // or let the destructor release it
//
// One background thread per client runs all network I/O and every renewal; the calls below
// block the calling thread until the server answers (or a timeout passes), and must not be made
// from that background thread (from inside a callback): they throw client_error "invalid_call".
//
// The rule a holder lives by (docs/client.md): a lease is held until its LOCAL deadline, counted
// on std::chrono::steady_clock from when the acquire or the last confirmed renew was SENT, plus
// the TTL. The server's deadline starts later than that, so the client never believes it holds a
// lease the server has already ended; when a renewal is not confirmed in time, for whatever
// reason, the lease is reported lost at that local deadline.

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fencelock {

namespace detail {
class client_core;
struct lease_state;
struct watch_state;
} // namespace detail

/// Settings of a client; every field has a usable default.
struct client_options {
  /// Where the server listens: http://host:port or ws://host:port (the path /v1/ws is implied;
  /// a path prefix, as behind a proxy, is kept: http://gw/locks -> /locks/v1/ws). Or several,
  /// separated by commas ("http://a:7070,http://b:7070"): instances that share one store
  /// (docs/redis.md). The client connects to the first that answers, tries the next at once
  /// when a connection attempt fails, and after a dropped connection starts with the next.
  std::string url = "http://127.0.0.1:7070";
  /// Names this client in every lease it takes; empty = "<hostname>:<pid>:<random hex>".
  std::string owner;
  /// Renews when this fraction of the TTL has passed since the last renewal was sent; 0 < f < 1.
  double renew_fraction = 1.0 / 3.0;
  /// Bounds opening a connection (TCP connect plus the WebSocket upgrade).
  std::chrono::milliseconds connect_timeout{5'000};
  /// Bounds the answer to one request; an acquire's wait comes on top.
  std::chrono::milliseconds request_timeout{10'000};
  /// With a server that authenticates (docs/security.md): the bearer token of this client's
  /// principal, sent on every connection. Empty: none.
  std::string bearer_token;
  /// For https:// and wss:// URLs: the CA certificates (PEM) that the server's certificate
  /// must chain to; empty: the system's (/etc/ssl/certs). The server's certificate must name
  /// the URL's host, always.
  std::string tls_ca_file;
  /// For a server that asks for a client certificate (mutual TLS): its PEM certificate chain
  /// and private key; both or neither.
  std::string tls_cert_file;
  std::string tls_key_file;
};

/// Who holds a lock, as named by a lock_held error.
struct lock_holder {
  std::string owner;
  /// Wall-clock estimate of the holder's deadline (ms since the Unix epoch), for display.
  int64_t expires_at_ms = 0;
};

/// A failed call. code() is the wire code of docs/http-api.md (lock_held, lease_lost,
/// too_many_waiters, store_unavailable, invalid_request...) or a client-side one:
/// "connection_failed" (cannot reach the server, or the connection dropped with the request
/// open), "timeout" (no answer in time), "invalid_call" (misuse of this API), "protocol_error"
/// (an answer this client cannot read), "client_closed".
class client_error : public std::runtime_error {
public:
  /// Creates an error with its wire `code`, a human `message`, and what the server added.
  client_error(std::string code, const std::string& message,
               std::optional<lock_holder> holder = std::nullopt,
               std::chrono::milliseconds retry_after = std::chrono::milliseconds{0});

  /// Returns the wire code.
  const std::string& code() const noexcept {
    return code_;
  }

  /// Returns the holder named by a lock_held error, if the server named one.
  const std::optional<lock_holder>& holder() const noexcept {
    return holder_;
  }

  /// Returns the server's retryAfterMs hint (0 = none).
  std::chrono::milliseconds retry_after() const noexcept {
    return retry_after_;
  }

private:
  std::string code_;
  std::optional<lock_holder> holder_;
  std::chrono::milliseconds retry_after_;
};

/// Why a lease was lost.
enum class loss_cause : uint8_t {
  /// The server answered a renewal with lease_lost: the lease had already ended there.
  refused = 1,
  /// A lease_lost push with cause "expired": the server's deadline passed.
  expired,
  /// A lease_lost push with cause "undelivered": the grant was undone.
  undelivered,
  /// The lease was session-bound and its connection closed, or the server said so in a push.
  session_closed,
  /// The local deadline passed without a confirmed renewal (server unreachable or frozen,
  /// store_unavailable, connection dropped): the server may have ended the lease by now.
  deadline,
  /// A lease_lost push with cause "store_lost": the server's Redis store lost the lease
  /// (restarted without its data, or failed over to a replica without it).
  store_lost,
  /// A lease_lost push with cause "revoked": an admin force-released the lease.
  revoked,
};

/// Returns the name of `x` ("refused", "expired", "undelivered", "session_closed", "deadline",
/// "store_lost", "revoked").
const char* to_string(loss_cause x) noexcept;

/// How and when a lease was lost.
struct lease_loss {
  loss_cause cause = loss_cause::deadline;
  /// A sentence for logs ("renew: store_unavailable: ...; local deadline passed").
  std::string message;
  /// When the client declared the loss.
  std::chrono::steady_clock::time_point at;
};

/// Whether a lease outlives its connection.
enum class lease_scope : uint8_t {
  /// Lives until released or expired; renewals continue over a new connection after a drop.
  ttl = 1,
  /// Ends the moment its connection closes (the server releases it at once).
  session,
};

/*
 * A lease this client holds and renews: a move-only handle. Destroying it releases the lease
 * (best effort, never throws; it waits for the server's answer up to the request timeout).
 * A handle keeps its client's connection and thread alive, so it may outlive the `client`.
 * Accessors are thread-safe; calling any of them on an empty (moved-from) handle throws
 * client_error "invalid_call".
 */
class held_lease {
public:
  /// Creates an empty handle.
  held_lease() noexcept;
  held_lease(held_lease&& other) noexcept;
  /// Releases the lease this handle held (best effort), then takes `other`'s.
  held_lease& operator=(held_lease&& other) noexcept;
  /// Releases the lease unless it was released, detached or lost (best effort, no throw).
  ~held_lease();

  held_lease(const held_lease&) = delete;
  held_lease& operator=(const held_lease&) = delete;

  /// Returns whether this handle refers to a lease (it was not moved from).
  explicit operator bool() const noexcept {
    return state_ != nullptr;
  }

  /// Returns the lock's name.
  const std::string& name() const;

  /// Returns the owner the lease was granted to.
  const std::string& owner() const;

  /// Returns the fencing token: pass it with every write to the protected resource.
  uint64_t token() const;

  /// Returns the TTL each renewal asks for.
  std::chrono::milliseconds ttl() const;

  /// Returns whether the lease ends with its connection.
  lease_scope scope() const;

  /// Returns the local deadline: the send time of the last confirmed acquire or renew plus
  /// the TTL. The lease counts as lost from then on unless a renewal was confirmed before.
  std::chrono::steady_clock::time_point local_deadline() const;

  /// Returns the server's wall-clock estimate of its deadline from the last answer (display).
  int64_t expires_at_ms() const;

  /// Returns whether the lease was lost (the callback has fired or is firing).
  bool lost() const;

  /// Returns the loss, once lost.
  std::optional<lease_loss> loss() const;

  /// Sets the function called once when the lease is lost. It runs on the client's I/O thread
  /// (keep it short; do not call blocking client functions in it), or at once on the calling
  /// thread when the lease is already lost. It is never called after release() or detach().
  void on_lost(std::function<void(const lease_loss&)> callback);

  /// Returns a future that becomes ready when the lease is lost (never after a release).
  std::shared_future<lease_loss> lost_future() const;

  /// Stops renewing and releases the lease; returns once the server confirmed. Throws
  /// client_error: "lease_lost" when it was lost already (or the server says it ended), a
  /// transport code when the release could not be confirmed (the lease then ends at its TTL).
  void release();

  /// Stops renewing without releasing: the lease ends at its deadline on the server, or by a
  /// `fencelock release` elsewhere (etcd's Orphan).
  void detach() noexcept;

private:
  friend class client;
  held_lease(std::shared_ptr<detail::client_core> core, std::shared_ptr<detail::lease_state> st);
  const detail::lease_state& state() const;
  void end_quietly() noexcept;

  std::shared_ptr<detail::client_core> core_;
  std::shared_ptr<detail::lease_state> state_;
};

/// One lock as the server sees it (an answer of status, an entry of a watch snapshot).
struct lock_info {
  std::string name;
  bool held = false;
  std::string owner;          // empty unless held
  uint64_t token = 0;         // 0 unless held
  int64_t expires_at_ms = 0;  // 0 unless held
  uint64_t waiters = 0;
  /// The highest token ever granted for this lock (0 = never).
  uint64_t last_token = 0;
};

/// A lease as the server answered a renewal by token (client::renew): a lease this client may
/// not hold itself, e.g. one taken by `fencelock acquire`. Nothing renews it afterwards.
struct lease_info {
  std::string name;
  std::string owner;
  uint64_t token = 0;
  std::chrono::milliseconds ttl{0};
  /// Wall-clock estimate of the server's deadline (ms since the Unix epoch), for display.
  int64_t expires_at_ms = 0;
};

/// Whether a token is its lock's current, unexpired lease, at the instant of the answer.
struct token_check {
  bool current = false;
  /// The lock's current token; 0 when the lock is free.
  uint64_t token = 0;
  /// The current lease's deadline estimate (ms since the Unix epoch); 0 when the lock is free.
  int64_t expires_at_ms = 0;
};

/// One change of a watched lock (a lock_event frame).
struct watch_event {
  /// "acquired", "renewed", "released" or "expired".
  std::string event;
  std::string lock;
  std::string owner;
  uint64_t token = 0;
  /// Absent on released and expired.
  std::optional<int64_t> expires_at_ms;
  /// Counts the events of one lease from 0 at acquired; (token, revision) orders a lock's events.
  uint64_t revision = 0;
  /// The server's wall-clock time of the change (ms since the Unix epoch).
  int64_t at_ms = 0;
  /// On released ("released", "session_closed") and expired ("expired", "undelivered").
  std::string cause;
};

/// What a watch reports. Every function runs on the client's I/O thread, in order.
struct watch_handlers {
  /// Called with the current state before any event: at subscribe, and again after every
  /// reconnect (events between the two connections are not replayed; the new snapshot is the
  /// truth).
  std::function<void(const std::vector<lock_info>&)> on_snapshot;
  /// Called for every change after the snapshot.
  std::function<void(const watch_event&)> on_event;
  /// Called when the watch is interrupted (the connection dropped; it resubscribes once the
  /// client reconnects) or a resubscription was refused.
  std::function<void(const client_error&)> on_interrupted;
};

/// A running watch; destroying or cancelling it unsubscribes. Move-only.
class subscription {
public:
  subscription() noexcept;
  subscription(subscription&& other) noexcept;
  subscription& operator=(subscription&& other) noexcept;
  ~subscription();

  subscription(const subscription&) = delete;
  subscription& operator=(const subscription&) = delete;

  /// Stops the watch: no handler is called once this returns... except one already running on
  /// the I/O thread.
  void cancel() noexcept;

private:
  friend class client;
  subscription(std::shared_ptr<detail::client_core> core, std::shared_ptr<detail::watch_state> w);

  std::shared_ptr<detail::client_core> core_;
  std::shared_ptr<detail::watch_state> state_;
};

/// A connection to one fencelock server and the leases held through it. Thread-safe.
class client {
public:
  /// Starts the client's I/O thread; connects on first use. Throws client_error
  /// "invalid_request" for an unusable url, owner or renew_fraction.
  explicit client(client_options opts = {});

  /// Drops this handle; the connection closes once no lease or subscription uses it.
  ~client();

  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// Returns the owner name every lease of this client carries.
  const std::string& owner() const noexcept;

  /// Returns the options in force (with the owner filled in).
  const client_options& options() const noexcept;

  /*
   * Acquires `name` for `ttl`, waiting up to `wait` in the server's FIFO queue (0 = try once).
   * Returns the lease, renewed in the background from now on. Throws client_error: lock_held
   * (with holder()), too_many_waiters, invalid_request, store_unavailable, connection_failed,
   * timeout... When a waited grant arrives so late that its local deadline is near, the client
   * renews once before returning, and a lease_lost there means the lease ended before it could
   * be confirmed.
   */
  held_lease acquire(std::string_view name, std::chrono::milliseconds ttl,
                     std::chrono::milliseconds wait = std::chrono::milliseconds{0},
                     lease_scope scope = lease_scope::ttl);

  /// Releases lease `token` of lock `name` held by this client's owner (e.g. one taken by
  /// another process with the same owner). Throws client_error (lease_lost when it had ended).
  void release(std::string_view name, uint64_t token);

  /// An admin's force-release (docs/security.md): ends the lease of lock `name` whoever holds
  /// it, or only lease `token` when it is not 0; its holder is told lease_lost (revoked). Needs
  /// admin on the lock with an auth file. Throws client_error (lease_lost when the lock is free
  /// or holds another token, forbidden without the permission).
  void force_release(std::string_view name, uint64_t token = 0);

  /// Renews lease `token` of lock `name` held by this client's owner once, for `ttl` from now
  /// (0 = the lease's own TTL), and returns it. The client does not renew it again. Throws
  /// client_error (lease_lost when it had ended).
  lease_info renew(std::string_view name, uint64_t token,
                   std::chrono::milliseconds ttl = std::chrono::milliseconds{0});

  /// Returns whether `token` is the current, unexpired lease of lock `name` (no owner needed;
  /// nothing changes). True only at the instant of the answer (docs/fencing.md). Throws
  /// client_error.
  token_check check(std::string_view name, uint64_t token);

  /// Returns the locks held now whose names start with `prefix` ("" = all), in name order: the
  /// snapshot of a subscription that ends at once. Throws client_error.
  std::vector<lock_info> list(std::string_view prefix);

  /// Returns the lock's status. Throws client_error.
  lock_info status(std::string_view name);

  /// Watches one lock (`prefix` false) or every lock whose name starts with `name` (`prefix`
  /// true; "" = all). Returns once subscribed; `handlers.on_snapshot` has run by then.
  /// Throws client_error.
  subscription watch(std::string_view name, bool prefix, watch_handlers handlers);

private:
  std::shared_ptr<detail::client_core> core_;
};

} // namespace fencelock
