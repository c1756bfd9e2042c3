#pragma once

// Every setting of the service, with its default. This struct is the one place defaults live;
// config/fencelock.conf documents them and a unit test checks that the two agree.

#include <cstdint>
#include <string>

namespace fencelock {

struct config {
  // --- network ---------------------------------------------------------------------------
  /// Address the HTTP listener binds to.
  std::string host = "127.0.0.1";
  /// TCP port of the HTTP listener (0 = any free port, reported in the log).
  uint16_t port = 7070;
  /// Threads running the network I/O loop.
  uint32_t io_threads = 1;
  /// Longest time, in µs, the (first) I/O thread polls for work before it sleeps; the window
  /// adapts to the gaps between events (net/poll_window.hpp). 0 = never poll.
  uint32_t io_poll_us = 500;
  /// Open client connections (HTTP and WebSocket); further ones get 503 and are closed.
  uint32_t max_connections = 10'000;
  /// Requests per second one connection may send (0 = no limit); faster gets 429
  /// rate_limited.
  uint32_t max_request_rate = 0;
  /// Largest accepted request body in bytes; larger bodies get 413 before they are read.
  uint32_t body_limit = 16 * 1024;
  /// Time a client has to send a request's headers (also the keep-alive idle limit).
  uint32_t header_timeout_ms = 10'000;
  /// Time a client has to send a request's body once its headers arrived.
  uint32_t body_timeout_ms = 10'000;
  /// On SIGTERM, how long requests in progress may take to be answered before the remaining
  /// connections are cut (0 = cut at once).
  uint32_t drain_timeout_ms = 10'000;
  /// Whether the dashboard page is served at / (docs/dashboard.md); off answers / with 404.
  bool dashboard = true;

  // --- security (docs/security.md) -----------------------------------------------------
  /// The auth file: principals, the SHA-256 of their bearer tokens and their permissions per
  /// lock-name prefix; reloaded on SIGHUP. Empty: no authentication (every client may do
  /// everything, as on a trusted network).
  std::string auth_file;
  /// With an auth file: whether GET /readyz answers without a token (load balancers probe it).
  bool open_readyz = true;
  /// With an auth file: whether GET /metrics answers without a token; otherwise it needs admin.
  bool open_metrics = false;
  /// PEM certificate chain of the listener; set (with tls_key) the listener speaks only TLS.
  /// Reloaded on SIGHUP.
  std::string tls_cert;
  /// PEM private key of tls_cert.
  std::string tls_key;
  /// PEM CA certificates: with it, every client must present a certificate they signed
  /// (mutual TLS); its subject CN can name a principal of the auth file.
  std::string tls_client_ca;

  // --- WebSocket (GET /v1/ws) -------------------------------------------------------------
  /// Largest frame a client may send, in bytes; larger closes the socket with 1009.
  uint32_t ws_max_frame = 16 * 1024;
  /// Open WebSocket sessions; further upgrades get 503 overloaded.
  uint32_t ws_max_sessions = 1'000;
  /// Subscriptions one socket may hold.
  uint32_t ws_max_subscriptions = 64;
  /// Unanswered requests one socket may have before the server stops reading it.
  uint32_t ws_max_pending = 256;
  /// Bytes of frames queued for one socket before it counts as too slow and is closed (1008).
  uint32_t ws_outbound_limit = 1024 * 1024;
  /// Silence after which a socket is closed; the server pings after half of it.
  uint32_t ws_idle_timeout_ms = 30'000;

  // --- store -----------------------------------------------------------------------------
  /// Where the embedded store keeps its files.
  std::string data_dir = "./data";
  /// Lease store: "embedded" (SQLite in data_dir), "memory" (nothing durable;
  /// docs/durability.md) or a Redis URL redis://[[user]:password@]host[:port][/db], shared by
  /// several instances (docs/redis.md).
  std::string store = "embedded";
  /// Prefix of every Redis key and of the event channel.
  std::string redis_key_prefix = "fencelock:";
  /// Longest wait for a Redis reply or connection before the request fails closed.
  uint32_t redis_timeout_ms = 2'000;
  /// Tokens reserved per durable write of the fence ceiling.
  uint32_t fence_block = 10'000;
  /// The lowest fencing token this run may hand out (0: none of its own): the next token is the
  /// higher of it and the store's own next one. For a store restored from a backup.
  int64_t fence_floor = 0;
  /// Released locks whose records the embedded store keeps, so that their lastToken stays
  /// readable; the oldest releases beyond this are pruned (0 = keep none).
  uint32_t max_released_records = 100'000;

  // --- semantics -------------------------------------------------------------------------
  int64_t ttl_min_ms = 100;
  int64_t ttl_max_ms = 3'600'000;
  int64_t wait_max_ms = 300'000;
  /// Waiters one lock may queue before acquires get 429 too_many_waiters.
  uint32_t max_waiters_per_lock = 1'000;
  /// Largest page size of GET /v1/locks.
  uint32_t list_limit_max = 1'000;

  // --- overload (docs/overload.md) -------------------------------------------------------
  /// Requests in progress (waiting acquires not counted) from which new acquires are shed with
  /// 503 overloaded; renewals and releases are still served.
  uint32_t shed_acquires_at = 512;
  /// Requests in progress from which status, check, list and subscribe are shed too.
  uint32_t shed_reads_at = 1'024;
  /// Reads in progress (status, check, list, subscribe snapshots) from which further reads are
  /// shed, whatever else is in progress: reads have a budget of their own.
  uint32_t max_reads_in_flight = 128;
  /// Requests in progress from which everything is refused, renewals included: the memory bound.
  uint32_t max_in_flight = 8'192;
  /// Waiting acquires over all locks before further ones get 429 too_many_waiters.
  uint32_t max_waiters_total = 100'000;
  /// Lag of the network I/O loop from which new acquires are shed too (0 = lag never sheds).
  uint32_t shed_io_lag_ms = 500;
  /// Average store write round trip from which new acquires are shed too (0 = never).
  uint32_t shed_store_latency_ms = 1'000;
  /// Locks in use (held leases, locks with requests in progress, idle actors kept) beyond which
  /// requests that need a new one get 503 overloaded, once no idle one can give way: the memory
  /// bound on locks. 2^20: a million held leases fit with room for the requests around them
  /// (with the embedded store about 1 KiB per held lease, some 1 GiB at the bound; with Redis
  /// each keeps an actor, about 3 KiB: lower it on a small machine).
  uint32_t max_locks = 1'048'576;
  /// Idle lock actors (no lease, no waiter, nothing in progress) kept for their next request
  /// instead of retired at once, most recently idle first; within max-locks, which evicts them
  /// first. Not a configuration key: a bound on a cache, set by embedders and tests.
  uint32_t idle_lock_actors = 1'024;
  /// How late the watchdog's heartbeat must be to count as a stall of the process (0 = stalls
  /// are not watched).
  uint32_t stall_threshold_ms = 2'000;
  /// After a stall, how long the leases whose deadlines fell into it still count as held: the
  /// holders' window to renew before they expire.
  uint32_t stall_grace_ms = 5'000;
  /// Expiries processed per second at most; the rest wait for the next slice, so that a mass
  /// expiry cannot starve renewals (0 = no limit).
  uint32_t max_expiries_per_second = 10'000;

  // --- runtime ---------------------------------------------------------------------------
  /// Worker threads of the actor system (0 = one per core).
  uint32_t actor_threads = 0;
  /// trace, debug, info, warn, error, critical or off.
  std::string log_level = "info";
  /// json (one object per line) or text (`ts level event key=value ...`).
  std::string log_format = "json";
};

} // namespace fencelock
