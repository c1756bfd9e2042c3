#pragma once

// One connection to Redis, driven asynchronously on a Boost.Asio io_context: commands are
// written as RESP, replies are parsed by hiredis's reply reader and matched to their commands
// in order (Redis answers a connection's commands in the order it received them). No thread per
// request and no blocking: every callback runs on the io_context's thread.
//
// The connection keeps itself up: it connects, authenticates, selects the database and sends
// its set-up commands (SUBSCRIBE, for example), and only then counts as up. When the socket
// fails, a reply takes longer than the timeout, or Redis answers a set-up command with an error,
// it fails every pending command, goes down and reconnects with exponential backoff. Commands
// sent while it is down fail at once: callers fail closed instead of queueing behind an outage.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/object.hpp>

#include "actors/store/redis/reply_reader.hpp"
#include "actors/store/redis/value.hpp"
#include "common/log.hpp"
#include "common/redis_url.hpp"

namespace fencelock::redis {

using command = std::vector<std::string>;
using reply_handler = std::function<void(outcome)>;

class connection : public std::enable_shared_from_this<connection> {
public:
  struct settings {
    endpoint where;
    /// Longest a command may wait for its reply before the connection counts as failed.
    std::chrono::milliseconds timeout{2000};
    std::chrono::milliseconds backoff_min{50};
    std::chrono::milliseconds backoff_max{2000};
    /// Sent after AUTH and SELECT on every (re)connect; each must succeed before the connection
    /// counts as up.
    std::vector<command> setup;
    /// Silence after which a PING checks that Redis still answers (0 = never). A subscriber
    /// connection needs it: it sends no commands of its own.
    std::chrono::milliseconds keepalive{0};
    /// Receives what an operator should know: the connection up, down or unreachable (null =
    /// nobody). Runs on the I/O thread.
    std::function<void(log_level, std::string_view, const boost::json::object&)> note;
    /// Names the connection in log lines.
    std::string role = "redis";
  };

  /// Receives the messages of a subscriber connection ("message" arrays).
  using push_handler = std::function<void(const value&)>;
  /// Learns when the connection goes up (true) or down (false, with the reason).
  using state_handler = std::function<void(bool up, const std::string& why)>;

  static std::shared_ptr<connection> make(boost::asio::io_context& io, settings s,
                                          state_handler on_state = {},
                                          push_handler on_push = {});
  ~connection();

  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Starts connecting. Thread-safe.
  void start();

  /// Closes the socket for good; pending commands fail. Thread-safe.
  void stop();

  /// Sends `cmd`; `done` runs once on the I/O thread. Thread-safe.
  void send(command cmd, reply_handler done);

  /// Drops the connection as if it had failed (it reconnects after the backoff): for tests and
  /// for callers that saw a reply that makes no sense. Thread-safe.
  void reset(std::string why);

  /// Returns whether the connection is up now. Thread-safe.
  bool up() const noexcept;

private:
  connection(boost::asio::io_context& io, settings s, state_handler on_state,
             push_handler on_push);

  struct pending {
    reply_handler done;
    std::chrono::steady_clock::time_point sent;
  };

  void do_send(command cmd, reply_handler done);
  void connect();
  void on_connected();
  void send_setup();
  void read();
  void flush();
  void on_reply(value v);
  void arm_timeout();
  void arm_keepalive();
  void fail(const std::string& why);
  void schedule_reconnect();
  void note(log_level level, std::string_view event, const boost::json::object& fields);

  boost::asio::io_context& io_;
  settings settings_;
  state_handler on_state_;
  push_handler on_push_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer reconnect_timer_;
  boost::asio::steady_timer timeout_timer_;
  boost::asio::steady_timer keepalive_timer_;
  std::unique_ptr<reply_reader> reader_;
  std::deque<pending> pending_;
  std::string outbox_;    // RESP not yet handed to the socket
  std::string writing_;   // RESP being written
  bool write_in_flight_ = false;
  bool connected_ = false; // TCP up (set-up commands may still run)
  std::atomic_bool up_{false};
  bool stopped_ = false;
  bool timeout_armed_ = false;
  uint64_t generation_ = 0; // bumps on every (re)connect: stale handlers of old sockets bail out
  std::chrono::milliseconds backoff_;
  std::array<char, 16 * 1024> read_buf_{};
  std::chrono::steady_clock::time_point last_activity_;
};

/// Returns `cmd` encoded as a RESP array of bulk strings.
std::string encode(const command& cmd);

} // namespace fencelock::redis
