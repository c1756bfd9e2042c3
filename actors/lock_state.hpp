#pragma once

// One lock's state as plain data, and the pure decisions on it. The lock actor owns one
// lock_state and performs the decisions' side effects (tokens, store writes, replies, timers);
// keeping the decisions here makes them testable without actors.

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include <caf/actor_clock.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/clock.hpp"
#include "actors/store/lease_store.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

using time_point = caf::actor_clock::time_point;

/// The current lease.
struct holder_info {
  std::string owner;
  uint64_t token = 0;
  int64_t ttl_ms = 0;
  time_point deadline;
  /// The request_id of the acquire that was granted (0 = none), so that a grant whose answer
  /// never reached its client can be undone.
  uint64_t grant_id = 0;
  /// Events of this lease so far, minus one (lock_event::revision); not stored.
  uint64_t revision = 0;
};

/// An acquire waiting for the lock.
struct waiter_info {
  acquire_request req;
  time_point give_up_at;
  caf::typed_response_promise<lease> promise;
  /// When it started waiting, on the real clock: for the wait-time histogram only.
  std::chrono::steady_clock::time_point since;
};

/// What an acquire should do, given the lock's state.
enum class acquire_decision {
  grant,          // the lock is free: grant with a new token
  refresh,        // the caller holds the lease: same token, new deadline
  wait,           // queue behind the holder (or behind an ended lease that is being cleaned up)
  reject_held,    // held by someone else and the caller does not wait
  reject_full,    // the wait queue is full
};

struct lock_state {
  std::string name;
  std::optional<holder_info> holder;
  uint64_t last_token = 0;
  std::deque<waiter_info> waiters;

  /// Returns whether the holder's lease has reached its deadline (it may not be cleaned up yet).
  bool lease_ended(time_point now) const noexcept {
    return holder && holder->deadline <= now;
  }

  /// Returns whether `owner` holds the current, unexpired lease `token`.
  bool is_current(const std::string& owner, uint64_t token, time_point now) const noexcept {
    return holder && !lease_ended(now) && holder->owner == owner && holder->token == token;
  }

  /// Returns whether nothing is held or waiting, so the actor may retire.
  bool idle() const noexcept {
    return !holder && waiters.empty();
  }

  /// Decides what an acquire does. An ended but not yet cleaned-up lease counts as held by
  /// nobody: the caller waits (even with wait_ms 0) while the cleanup hands the lock over in FIFO
  /// order, so that waiters who came first keep their place.
  acquire_decision decide(const acquire_request& req, time_point now,
                          uint32_t max_waiters) const noexcept;

  /// Removes and returns the waiter of `request_id`, if any.
  std::optional<waiter_info> take_waiter(uint64_t request_id);

  /// Returns the record to store when `next` becomes the holder (or the lock becomes free).
  stored_lock record(const std::optional<holder_info>& next) const;

  /// Returns the lease of `h` on this lock.
  lease to_lease(const holder_info& h, const clock_mapping& clock) const;

  /// Returns whether `token` is the current, unexpired lease, and which lease is current.
  check_result check(uint64_t token, time_point now, const clock_mapping& clock) const;

  /// Returns the lock's status as clients see it.
  lock_status status(time_point now, const clock_mapping& clock) const;

  /// Rebuilds the state from its stored record.
  static lock_state from_record(const stored_lock& rec);
};

} // namespace fencelock
