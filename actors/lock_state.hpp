#pragma once

// One lock as its lock actor sees it, as plain data, and the pure decisions on it: the lease as
// the store last answered, and the FIFO of waiting acquires. The lock actor
// (actors/lock_actor.cpp) performs the decisions' effects; the store's own record of the lease
// lives behind the backend (actors/store/backend.hpp).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_clock.hpp>

#include "actors/direct_call.hpp"
#include "actors/store/backend.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

/// An acquire waiting for the lock.
struct waiter_info {
  acquire_request req;
  answer<lease> promise;
  /// When it started waiting, on the real clock: for the wait-time histogram only.
  std::chrono::steady_clock::time_point since;
  /// When it gives up (its wait_ms from when it queued), on the actor clock.
  caf::actor_clock::time_point deadline;
};

/// What the lock actor does with an acquire.
enum class admission {
  ask_store,   // nobody waits ahead: the store grants, refreshes or names the holder
  refresh,     // the caller holds the lease while others wait: renew it in place
  queue,       // wait behind the waiters ahead
  reject_held, // others wait ahead and the caller does not wait: lock_held
  reject_full, // the lock's queue is full: too_many_waiters
};

/*
 * The FIFO of waiting acquires, oldest first: a vector and the index of its front. Popping the
 * front (once per hand-off of a hot lock) moves nothing; the popped slots are reclaimed when
 * they outnumber the waiters, so a pop costs O(1) amortized, where erasing the vector's first
 * element moved every waiter behind it. Empty, it allocates nothing (a std::deque would, in
 * its constructor), which matters with a million idle held locks.
 */
class waiter_queue {
public:
  using iterator = std::vector<waiter_info>::iterator;
  using const_iterator = std::vector<waiter_info>::const_iterator;

  iterator begin() noexcept {
    return items_.begin() + static_cast<std::ptrdiff_t>(head_);
  }
  iterator end() noexcept {
    return items_.end();
  }
  const_iterator begin() const noexcept {
    return items_.begin() + static_cast<std::ptrdiff_t>(head_);
  }
  const_iterator end() const noexcept {
    return items_.end();
  }
  bool empty() const noexcept {
    return head_ == items_.size();
  }
  std::size_t size() const noexcept {
    return items_.size() - head_;
  }
  waiter_info& front() noexcept {
    return items_[head_];
  }
  const waiter_info& operator[](std::size_t i) const noexcept {
    return items_[head_ + i];
  }
  void push_back(waiter_info w) {
    items_.push_back(std::move(w));
  }
  /// Removes and returns the oldest waiter (there must be one).
  waiter_info pop_front();
  /// Removes waiters [first, last).
  void erase(iterator first, iterator last) {
    items_.erase(first, last);
    if (empty())
      clear();
  }
  void erase(iterator i) {
    erase(i, i + 1);
  }
  void clear() noexcept {
    items_.clear();
    head_ = 0;
  }

private:
  std::vector<waiter_info> items_; // [0, head_) are moved-from slots already popped
  std::size_t head_ = 0;
};

struct lock_state {
  std::string name;
  /// The lease as the store last answered: one this instance granted, renewed or was asked to
  /// watch (`watching`), or, while acquires wait, the holder they wait for.
  std::optional<lease_record> lease;
  /// Whether this instance watches `lease` to its end (and so arms its expiry even when no
  /// acquire waits for it).
  bool watching = false;
  /// The request_id of the acquire granted `lease` here (0 = none): a grant whose answer never
  /// reached its client is undone by it.
  uint64_t grant_id = 0;
  /// Waiting acquires, oldest first.
  waiter_queue waiters;

  /// Decides what an acquire does. FIFO: while others wait, only the holder's own acquire goes
  /// ahead (as a renewal of the lease it holds).
  admission decide(const acquire_request& req, uint32_t max_waiters) const noexcept;

  /// Returns whether the actor has nothing to keep: no lease it watches, no waiters.
  bool idle() const noexcept {
    return waiters.empty() && !(lease && watching);
  }

  /// Sets the lease the store answered; `watched` says whether this instance now watches it.
  /// A different token than before starts afresh (not watched, not granted here).
  void note_lease(const lease_record& x, bool watched);

  /// Forgets the lease (it ended, or is not current any more).
  void forget_lease() noexcept;

  /// Removes and returns the waiter of `request_id`, if any.
  std::optional<waiter_info> take_waiter(uint64_t request_id);

  /// Removes and returns the oldest waiter (there must be one).
  waiter_info pop_front();

  /// Removes and returns the waiters whose deadline is `now` or earlier, oldest first.
  std::vector<waiter_info> take_overdue(caf::actor_clock::time_point now);

  /// Returns the earliest deadline of a waiter, if any waits.
  std::optional<caf::actor_clock::time_point> earliest_deadline() const;

  /// Returns the lock as clients see it when the store says `view`.
  lock_status status(const lock_view& view) const;
};

/// Returns whether `token` is the current lease in `view`, and which lease is current.
check_result check(const lock_view& view, uint64_t token);

/// Returns the lease of `x` on lock `name`, as clients see it.
lease to_lease(const std::string& name, const lease_record& x);

} // namespace fencelock
