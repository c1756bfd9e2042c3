#pragma once

// One lock's lease as the embedded store keeps it, and the pure judgements on it. All of a
// lock's changes go through its one lock actor on this instance, so this record is the truth;
// it changes only once the store made the change durable.

#include <cstdint>
#include <optional>
#include <string>

#include <caf/actor_clock.hpp>

#include "actors/clock.hpp"
#include "actors/store/backend.hpp"
#include "actors/store/embedded/lease_store.hpp"

namespace fencelock {

class stall_window;

struct lock_record {
  /// The lease on record; it may be past its deadline until its expiry is written.
  std::optional<lease_record> holder;
  /// The highest token the lock ever had, as far as the store remembers (docs/durability.md).
  uint64_t last_token = 0;

  /// Returns whether the holder's lease counts as held at `now`: before its deadline, or in the
  /// grace after a stall of the process that its deadline fell into (`stalls` may be null).
  bool alive(caf::actor_clock::time_point now, const stall_window* stalls) const noexcept;

  /// Returns whether `owner` holds the lease `token` and it counts as held at `now`.
  bool is_current(const std::string& owner, uint64_t token, caf::actor_clock::time_point now,
                  const stall_window* stalls) const noexcept;

  /// Returns the record to store when `next` becomes the holder (nothing: the lock is free).
  stored_lock to_stored(const std::string& name, const std::optional<lease_record>& next) const;

  /// Applies a change that the store made durable.
  void apply(const std::optional<lease_record>& next);

  /// Rebuilds the record from the store, its deadlines shown through `clock`.
  static lock_record from_stored(const stored_lock& rec, const clock_mapping& clock);
};

/// Returns a lease of `owner` with `token`, ending `ttl_ms` after `now`.
lease_record make_lease(std::string owner, uint64_t token, int64_t ttl_ms,
                        caf::actor_clock::time_point now, const clock_mapping& clock);

} // namespace fencelock
