#pragma once

// The loader's connections: many per thread on Asio's asynchronous I/O, never a thread per
// connection, so that the loader takes as little of a small machine's CPU as it can and the
// server gets the rest. Each connection is a state machine driven by its reads; what it writes
// while handling one read goes out in one write (requests pipelined on a WebSocket leave
// together, as a pipelining client would send them).
//
// Threads: a connection belongs to one worker thread (its io_context), which alone runs its
// handlers and writes its worker's `tally`. The main thread only moves the trial's phase.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "bench/loader/histogram.hpp"
#include "bench/loader/wire.hpp"

namespace fencelock::bench {

using steady = std::chrono::steady_clock;

/// Where a connection goes: the address and the Host header that names it.
struct endpoint {
  boost::asio::ip::tcp::endpoint address;
  std::string host; // host:port
};

/// The phases of a trial, in order. Only what completes during `measure` counts.
enum class phase : int { warmup = 0, measure = 1, stop = 2 };

/// What the main thread and every connection of a trial share.
struct trial_shared {
  std::atomic<int> now{static_cast<int>(phase::warmup)};
  /// Connections that have connected (or given up): the trial waits for all before it starts.
  std::atomic<int> connected{0};
  /// Connections not finished yet: the trial ends when none is left.
  std::atomic<int> open{0};

  bool measuring() const noexcept {
    return now.load(std::memory_order_relaxed) == static_cast<int>(phase::measure);
  }
  bool stopping() const noexcept {
    return now.load(std::memory_order_relaxed) == static_cast<int>(phase::stop);
  }
};

/// What the connections of one worker thread count (written by that thread only).
struct tally {
  uint64_t cycles = 0;
  uint64_t errors = 0;
  histogram latency; // per request (round trip), in ns
  std::string first_error;

  /// Counts an error; keeps the first one's text.
  void error(std::string_view why) {
    ++errors;
    if (first_error.empty())
      first_error = std::string{why.substr(0, 400)};
  }

  void merge(const tally& other) {
    cycles += other.cycles;
    errors += other.errors;
    latency.merge(other.latency);
    if (first_error.empty())
      first_error = other.first_error;
  }
};

/*
 * A TCP connection with a read buffer and a coalescing write queue. Subclasses implement
 * on_connected() and on_data(); both run on the connection's worker thread.
 */
class stream_conn : public std::enable_shared_from_this<stream_conn> {
public:
  stream_conn(boost::asio::io_context& ioc, endpoint ep, trial_shared& shared, tally& counts);
  virtual ~stream_conn() = default;

  stream_conn(const stream_conn&) = delete;
  stream_conn& operator=(const stream_conn&) = delete;

  /// Connects; on_connected() follows. Call once, from any thread before the worker runs.
  void start();

protected:
  /// Called once connected.
  virtual void on_connected() = 0;

  /// Handles the bytes read so far; returns how many it consumed (the rest is kept for the next
  /// call), or -1 on a protocol error (the connection then fails).
  virtual long on_data(std::string_view in) = 0;

  /// Queues `bytes` to be written after the current read is handled.
  void write(std::string_view bytes) {
    out_.append(bytes);
  }

  /// Returns the buffer write() appends to, for encoders that append in place.
  std::string& out() noexcept {
    return out_;
  }

  /// Closes the connection and counts it finished (once).
  void finish();

  /// Counts `why` as an error and finishes.
  void fail(std::string_view why);

  /// Finishes once everything queued is written (a close frame, say).
  void finish_after_write();

  /// Returns whether the connection finished.
  bool finished() const noexcept {
    return finished_;
  }

  /// Returns when the read being handled completed: the receive time of what it holds.
  steady::time_point read_at() const noexcept {
    return read_at_;
  }

  /// Counts this connection as connected (once); called by subclasses when they are ready to
  /// run (a WebSocket after its upgrade).
  void mark_connected();

  trial_shared& shared_;
  tally& counts_;
  endpoint ep_;

private:
  void do_read();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  void flush();
  void on_write(const boost::system::error_code& ec);

  boost::asio::ip::tcp::socket socket_;
  std::vector<char> in_;
  std::size_t in_begin_ = 0;
  std::size_t in_end_ = 0;
  std::string out_;
  std::string sending_;
  bool writing_ = false;
  bool closing_ = false;
  bool finished_ = false;
  bool counted_connected_ = false;
  steady::time_point read_at_;
};

/*
 * A WebSocket client over stream_conn: upgrades at /v1/ws, answers pings, hands each text
 * message to on_text(). Frames it sends are masked with a zero key (RFC 6455 allows any key).
 */
class ws_conn : public stream_conn {
public:
  using stream_conn::stream_conn;

protected:
  /// Called once the upgrade is accepted; send the first requests here.
  virtual void on_open() = 0;

  /// Called for each text message (the hello included).
  virtual void on_text(std::string_view payload) = 0;

  /// Queues one text frame.
  void send_text(std::string_view payload) {
    wire::append_ws_frame(out(), payload);
  }

  /// Sends a close frame (1000) and finishes once it is written.
  void close();

private:
  void on_connected() final;
  long on_data(std::string_view in) final;

  bool open_ = false;
  std::string fragments_; // a fragmented message so far
};

// --- workloads ---------------------------------------------------------------------------------

/// The API a server speaks: fencelock's (the trivial baseline server answers it too) or etcd's.
enum class api { fencelock, etcd };

/*
 * Acquire+release cycles on one HTTP keep-alive connection, one request in flight, on the lock
 * `name` of its own. fencelock: POST /v1/locks/{name}/acquire then /release with the token.
 * etcd: a lease granted once per connection (/v3/lease/grant, TTL 60 s, as an etcd session
 * does), then /v3/lock/lock with it and /v3/lock/unlock of the key it answers.
 */
std::shared_ptr<stream_conn> make_http_cycle(boost::asio::io_context& ioc, endpoint ep,
                                             trial_shared& shared, tally& counts, api a,
                                             std::string name, int64_t ttl_ms);

/*
 * Acquire+release cycles over one WebSocket, `pipeline` of them open at once, each on its own
 * lock `<name>:<slot>`, matched by request id.
 */
std::shared_ptr<stream_conn> make_ws_cycle(boost::asio::io_context& ioc, endpoint ep,
                                           trial_shared& shared, tally& counts, std::string name,
                                           int pipeline, int64_t ttl_ms);

/// What the clients of one hot lock share (they run on one worker thread).
struct hot_shared {
  /// When the holder's release was queued, if no grant has followed it yet.
  std::optional<steady::time_point> release_sent;
  histogram handoff;  // release sent -> next holder's granted received, ns
  histogram wait;     // acquire sent -> granted received, ns
  std::vector<uint64_t> grants; // per client, during measure
  uint64_t total_grants = 0;
  uint64_t grants_without_release = 0; // grants during measure not preceded by a release
};

/*
 * One client of a hot lock over a WebSocket: acquires `lock` with waitMs (FIFO), releases as
 * soon as it is granted, and acquires again once the release is answered. Records into `hot`
 * under index `client`.
 */
std::shared_ptr<stream_conn> make_hot_client(boost::asio::io_context& ioc, endpoint ep,
                                             trial_shared& shared, tally& counts,
                                             hot_shared& hot, int client, std::string lock,
                                             int64_t ttl_ms, int64_t wait_ms);

/// What the connections that fill a server with held leases share.
struct fill_shared {
  std::atomic<uint64_t> next{0}; // the next lease index to take
  uint64_t end = 0;              // one past the last index
  std::atomic<uint64_t> granted{0};
  std::string prefix;            // leases are named <prefix><index>
};

/*
 * Acquires leases `<prefix><i>` for indexes taken from `fill` (ttlMs `ttl_ms`, not bound to
 * the socket, so they outlive it), `pipeline` at a time; finishes when none is left.
 */
std::shared_ptr<stream_conn> make_filler(boost::asio::io_context& ioc, endpoint ep,
                                         trial_shared& shared, tally& counts, fill_shared& fill,
                                         int pipeline, int64_t ttl_ms);

} // namespace fencelock::bench
