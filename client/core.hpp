#pragma once

// The engine behind fencelock::client: one I/O thread running one strand, the connection, the
// renewers of the held leases and the watches. Public functions are called from user threads
// and block on a future until the strand has done the work; the private ones run on the strand.
//
// Renewer of one lease (strand):
//   timer at schedule.next_wakeup() -> poll(now): renew -> send renew (answer awaited until the
//   local deadline) -> confirmed: deadline = send time + TTL | lease_lost: lost (refused) |
//   else: retry soon (and reconnect at once if the connection is down); lost -> declare it.
//   A lease_lost push for (lock, token) and, for a session lease, a dropped connection are
//   losses too.

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/object.hpp>

#include "client/connection.hpp"
#include "client/endpoint.hpp"
#include "client/lease_state.hpp"
#include "fencelock/client.hpp"

namespace fencelock::detail {

/// Returns "<hostname>:<pid>:<12 random hex digits>", a printable owner of at most 128 chars.
std::string default_owner();

/// Throws client_error "invalid_request" unless `opts` is usable; fills in a default owner.
/// Returns the parsed endpoints, in the order to try them.
std::vector<endpoint> check_options(client_options& opts);

class client_core {
public:
  /// Validates `opts` (throws client_error) and starts the I/O thread.
  explicit client_core(client_options opts);

  /// Closes the connection (politely, ~1 s at most) and joins the I/O thread.
  ~client_core();

  client_core(const client_core&) = delete;
  client_core& operator=(const client_core&) = delete;

  const client_options& options() const noexcept {
    return opts_;
  }

  /// Acquires and starts renewing; see client::acquire.
  std::shared_ptr<lease_state> acquire(std::string_view name, std::chrono::milliseconds ttl,
                                       std::chrono::milliseconds wait, lease_scope scope);

  /// Stops renewing `l` and releases it; throws client_error.
  void release(const std::shared_ptr<lease_state>& l);

  /// Stops renewing `l` and sends its release without waiting (from the I/O thread).
  void release_in_background(const std::shared_ptr<lease_state>& l) noexcept;

  /// Stops renewing `l`; the server lets it expire.
  void detach(const std::shared_ptr<lease_state>& l) noexcept;

  /// Releases (name, token) of this client's owner; throws client_error.
  void release_token(std::string_view name, uint64_t token);
  void force_release(std::string_view name, uint64_t token);

  /// Returns a lock's status; throws client_error.
  lock_info status(std::string_view name);

  /// Renews (name, token) of this client's owner once; throws client_error.
  lease_info renew_token(std::string_view name, uint64_t token, std::chrono::milliseconds ttl);

  /// Checks a token; throws client_error.
  token_check check(std::string_view name, uint64_t token);

  /// Subscribes; returns once the snapshot was delivered. Throws client_error.
  std::shared_ptr<watch_state> watch(std::string_view target, bool prefix, watch_handlers h);

  /// Unsubscribes `w`; once it returns (off the I/O thread) no handler of `w` runs.
  void unwatch(const std::shared_ptr<watch_state>& w) noexcept;

  /// Returns whether the caller runs on this client's I/O thread.
  bool on_io_thread() const noexcept;

private:
  struct runtime;

  // Throws client_error "invalid_call" on the I/O thread, where blocking would deadlock.
  void require_user_thread(const char* what) const;
  // Sends one request and blocks for its answer.
  answer call(boost::json::object fields, std::chrono::milliseconds timeout);
  // Returns how long to wait for a future the strand is bound to fulfil within `budget`.
  std::chrono::milliseconds guard(std::chrono::milliseconds budget) const;

  // Strand only.
  using grant_promise = std::promise<std::shared_ptr<lease_state>>;
  void on_granted(const std::shared_ptr<grant_promise>& done, renewal_schedule::time_point sent,
                  lease_scope scope, answer a);
  /// Returns the TTL a lease's local deadline counts with (see lease_state::local_ttl).
  std::chrono::milliseconds local_ttl_of(std::chrono::milliseconds ttl, lease_scope scope) const;
  void start_renewing(const std::shared_ptr<lease_state>& l);
  void arm(const std::shared_ptr<lease_state>& l);
  void tick(const std::shared_ptr<lease_state>& l);
  void send_renew(const std::shared_ptr<lease_state>& l);
  void on_renewed(const std::shared_ptr<lease_state>& l, renewal_schedule::time_point sent,
                  answer a);
  void stop_renewing(const std::shared_ptr<lease_state>& l);
  void lose(const std::shared_ptr<lease_state>& l, loss_cause cause, std::string message);
  void subscribe_on_server(const std::shared_ptr<watch_state>& w,
                           std::function<void(std::optional<client_error>)> done);
  void on_push(const boost::json::object& frame);
  void on_opened();
  void on_dropped();
  bool wanted() const;

  client_options opts_;
  std::vector<endpoint> endpoints_;
  std::shared_ptr<runtime> rt_;  // declared before everything bound to its io_context
  connection::executor strand_;
  std::unique_ptr<connection> conn_;

  // Strand only.
  std::vector<std::shared_ptr<lease_state>> renewing_;
  std::vector<std::shared_ptr<watch_state>> watches_;
};

} // namespace fencelock::detail
