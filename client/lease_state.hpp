#pragma once

// What a held_lease and the client's I/O thread share about one lease, and what a subscription
// shares about one watch. Fields are either immutable, atomic, guarded by `mtx`, or touched on
// the client's strand only; each group says which.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>

#include <boost/asio/steady_timer.hpp>

#include "client/connection.hpp"
#include "client/renewal_schedule.hpp"
#include "client/wire.hpp"
#include "fencelock/client.hpp"

namespace fencelock::detail {

struct lease_state {
  /// Where the holder stands with the lease (guarded by mtx).
  enum class standing : uint8_t { holding, detached, released };

  /// `local_ttl` is what the local deadline counts with: the TTL, or for a session-bound lease
  /// at most the connection's session window (connection::session_window).
  lease_state(const lease_fields& granted, lease_scope sc, std::chrono::milliseconds local_ttl,
              renewal_schedule sched, const connection::executor& ex);

  // Immutable.
  const std::string name;
  const std::string owner;
  const uint64_t token;
  const std::chrono::milliseconds ttl;  // what each renewal asks for
  const std::chrono::milliseconds local_ttl;
  const lease_scope scope;

  // Atomic: written on the strand, read by any thread.
  std::atomic<int64_t> deadline_ticks;  // local deadline, steady_clock ticks since its epoch
  std::atomic<int64_t> expires_at_ms;

  /*
   * Declares the lease lost unless it was lost already or its holder ended it (released or
   * detached): sets the loss and fulfils the future at once. Returns the callback to run (may
   * be empty); the caller runs it once, with nothing of its own locked. Any thread.
   */
  std::function<void()> declare_lost(const lease_loss& loss);

  /// Moves the holder's standing to `to` unless the lease was lost first (returns the loss) or
  /// was released already (returns "released"). Any thread.
  std::optional<lease_loss> end_by_holder(standing to, bool& already_released);

  /// Sets the loss callback; returns a call to make at once when the lease is lost already.
  std::function<void()> set_on_lost(std::function<void(const lease_loss&)> cb);

  /// Returns the loss, if any (any thread).
  std::optional<lease_loss> loss() const;

  /// Returns the holder's standing (any thread).
  standing holder_standing() const;

  /// Copies schedule.deadline() into deadline_ticks (strand).
  void publish_deadline() noexcept;

  std::shared_future<lease_loss> lost_future;

  // Strand only: the renewer.
  renewal_schedule schedule;
  boost::asio::steady_timer timer;
  bool renewing = false;
  std::string last_failure;  // why the last renewal failed, for the loss message

private:
  mutable std::mutex mtx_;
  std::optional<lease_loss> loss_;
  standing standing_ = standing::holding;
  std::function<void(const lease_loss&)> on_lost_;
  std::promise<lease_loss> lost_promise_;
};

struct watch_state {
  watch_state(std::string t, bool p, watch_handlers h)
    : target(std::move(t)), prefix(p), handlers(std::move(h)) {
  }

  // Immutable.
  const std::string target;
  const bool prefix;
  const watch_handlers handlers;

  // Strand only.
  uint64_t server_id = 0;  // the server's subscription id on the current connection, 0 = none
  bool subscribing = false;  // a subscribe is in flight (do not send a second on reconnect)
  bool active = true;
};

} // namespace fencelock::detail
