#pragma once

// One WebSocket connection to the server, reopened after a drop: sends requests with fresh ids,
// matches answers to them (in any order), times each one out, and hands pushes to its owner.
// Everything here runs on one strand; no member may be called from another thread.
//
//   idle ──request──▶ connecting ──upgraded──▶ open ──read/write error, close──▶ (drop)
//     ▲                   │ failed                                                 │
//     └──── nothing ◀─────┴──────────── wanted()? ── yes ─▶ backoff ──timer──▶ connecting
//
// With several endpoints (servers that share one store), an attempt that fails moves on to the
// next endpoint at once, keeping the requests that wait for a connection, as etcdctl's
// --endpoints does; only when every endpoint failed once does the round count as failed. A
// drop, or a failed round, fails every open request with "connection_failed" (the owner
// retries what it must), and reconnects with backoff, starting with the next endpoint, while
// the owner wants a connection (leases to renew, watches to keep). Requests made during backoff
// fail at once; requests made while connecting wait for the outcome.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/json/object.hpp>

#include "client/endpoint.hpp"
#include "client/wire.hpp"

namespace fencelock::detail {

class connection {
public:
  using executor = boost::asio::strand<boost::asio::io_context::executor_type>;
  using answer_handler = std::function<void(answer)>;

  /// What the owner is told. Each runs on the strand.
  struct hooks {
    /// A frame that answers no request (lease_lost, lock_event).
    std::function<void(const boost::json::object&)> push;
    /// The connection is open (first time or again).
    std::function<void()> opened;
    /// The open connection dropped; open requests have already failed.
    std::function<void()> dropped;
    /// Returns whether to reconnect after a drop or a failed attempt.
    std::function<bool()> wanted;
  };

  /// Prepares a connection to the first of `endpoints` (at least one; nothing connects yet).
  /// `connect_timeout` bounds TCP connect plus upgrade, per endpoint tried; `idle_timeout`
  /// closes a connection that hears nothing (pings go out after half of it). A non-empty
  /// `bearer_token` goes out as the upgrade's Authorization header (docs/security.md). `tls`
  /// configures the endpoints that speak TLS (null when none does).
  connection(executor ex, std::vector<endpoint> endpoints,
             std::chrono::milliseconds connect_timeout, std::chrono::milliseconds idle_timeout,
             std::string bearer_token, std::shared_ptr<boost::asio::ssl::context> tls, hooks h);

  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Sends `fields` (op and its fields; the id is added here) and calls `handler` exactly once
  /// with the answer, or with "timeout" after `timeout`, or "connection_failed".
  void request(boost::json::object fields, std::chrono::milliseconds timeout,
               answer_handler handler);

  /// Sends `fields` without waiting for an answer (unsubscribe); dropped when not open.
  void send_only(boost::json::object fields);

  /// Starts connecting now unless open, connecting or closed (a reconnect without waiting).
  void connect_now();

  /// Fails open requests with "client_closed", closes the socket politely (at most ~1 s) and
  /// calls `done`. Nothing reconnects afterwards.
  void shutdown(std::function<void()> done);

  /// Returns whether the connection is open.
  bool is_open() const noexcept {
    return state_ == state::open;
  }

  /*
   * Returns how long after the server last received a frame of ours it may already have closed
   * this connection: half its idle timeout from the hello (Beast's idle timer ticks every half
   * and closes on the second quiet tick), or a cautious 500 ms before any hello or from a
   * server that sends none. A session-bound lease ends with the connection, so its holder
   * counts its local deadline with this too.
   */
  std::chrono::milliseconds session_window() const noexcept {
    return server_idle_timeout_ ? *server_idle_timeout_ / 2 : std::chrono::milliseconds{500};
  }

  /// Returns the endpoint connected to, or the one to try next.
  const endpoint& current() const noexcept {
    return endpoints_[current_];
  }

private:
  struct link;
  struct pending {
    answer_handler handler;
    std::unique_ptr<boost::asio::steady_timer> timer;
  };
  enum class state : uint8_t { idle, connecting, open, backoff, closed };

  void start_connect();
  void on_resolved(uint64_t gen, const std::vector<boost::asio::ip::tcp::endpoint>& addresses);
  void on_tcp_connected(uint64_t gen);
  /// Sends the WebSocket upgrade on the connected (and, with TLS, verified) socket.
  void upgrade(uint64_t gen);
  void on_upgraded(uint64_t gen);
  void do_read();
  void on_read(uint64_t gen, boost::system::error_code ec);
  void on_frame(std::string_view text);
  void queue_frame(std::string frame);
  void do_write();
  void on_write(uint64_t gen, boost::system::error_code ec);
  // Ends the current attempt or connection with reason `why`; see the diagram. `code` is what
  // the requests failed by it get: connection_failed, or the server's refusal of the upgrade
  // (unauthenticated, forbidden), which retrying with the same credentials will not mend.
  void fail_link(const std::string& why, const std::string& code = "connection_failed");
  void fail_all(const std::string& code, const std::string& why);
  void on_timeout(uint64_t id);

  executor ex_;
  std::vector<endpoint> endpoints_;
  size_t current_ = 0;         // index into endpoints_
  size_t failed_in_round_ = 0; // attempts that failed since one last succeeded
  std::string round_failures_; // why, one "; "-separated sentence per endpoint
  std::string round_code_;     // a server's refusal in this round, which outranks the rest
  std::chrono::milliseconds connect_timeout_;
  std::chrono::milliseconds idle_timeout_;
  std::string bearer_token_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  hooks hooks_;
  std::optional<std::chrono::milliseconds> server_idle_timeout_; // from this link's hello

  state state_ = state::idle;
  uint64_t gen_ = 0; // bumped per attempt and per drop: a handler of an older one returns
  std::shared_ptr<link> link_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::steady_timer backoff_timer_;
  std::chrono::milliseconds backoff_;
  std::string last_failure_;

  uint64_t next_id_ = 1;
  std::map<uint64_t, pending> pending_;
  std::vector<std::string> waiting_; // frames made while connecting
  std::deque<std::string> out_;      // frames to write; the front one is being written
  bool writing_ = false;
};

} // namespace fencelock::detail
