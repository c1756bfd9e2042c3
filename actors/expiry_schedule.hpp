#pragma once

// The watchdog's deadlines: one expiry timer per lock, by name, and the tick the watchdog has
// in flight for the earliest of them. The lock actors arm and disarm their timer here directly,
// under a mutex, instead of sending the watchdog a message for each (two per lease, each
// costing the watchdog a wake-up and a resume: a fifth of an in-process acquire+release). Only
// a timer earlier than the tick in flight needs the watchdog told, so that it ticks sooner;
// with leases of one TTL that is the first one after a quiet spell. The watchdog alone takes
// the due timers and sends the expiries (actors/watchdog.hpp).

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <caf/actor_clock.hpp>

namespace fencelock {

class expiry_schedule {
public:
  using time_point = caf::actor_clock::time_point;

  struct timer {
    std::string name;
    uint64_t token = 0;
  };

  /// Arms the expiry of lease `token` of lock `name` at `deadline`, replacing the lock's timer
  /// (a renewal moves it; a lock's next actor arms it again). Returns when the watchdog must
  /// tick for it, if no tick is in flight by then: the caller tells the watchdog (arm_atom).
  std::optional<time_point> arm(const std::string& name, uint64_t token, time_point deadline);

  /// Disarms the expiry of lease `token` of lock `name`; another token's timer stays.
  void disarm(const std::string& name, uint64_t token);

  // -- the watchdog's side --------------------------------------------------------------------

  /// Notes that the tick in flight for `now` or earlier fired.
  void ticked(time_point now);

  /// Removes and returns up to `max` timers due at `now`, earliest first; `more` tells whether
  /// due ones are left.
  std::vector<timer> take_due(time_point now, uint32_t max, bool& more);

  /// Holds back every tick until `until` (a backlog drains one slice at a time).
  void pace_until(time_point until);

  /// Returns when to tick for the earliest timer, if no tick is in flight by then (and notes
  /// one as in flight).
  std::optional<time_point> next_tick();

  /// Returns the timers armed.
  std::size_t size() const;

private:
  using queue = std::multimap<time_point, timer>;

  /// Notes a tick at `at` (not before pace_until) as in flight, unless one is by then.
  std::optional<time_point> claim_tick(time_point at);
  void remove(std::string_view name);

  mutable std::mutex mtx_;
  queue timers_; // by deadline
  /// One timer per lock, by name (a view of the timer's own name: map nodes do not move).
  std::unordered_map<std::string_view, queue::iterator> by_lock_;
  std::optional<time_point> tick_; // the earliest tick in flight
  time_point paced_until_;
};

} // namespace fencelock
