#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <caf/actor_clock.hpp>

#include "actors/expiry_schedule.hpp"
#include "actors/interfaces.hpp"
#include "actors/stall.hpp"

namespace fencelock {

class metrics;

/// How the watchdog paces expiries: at most `batch` go out per `interval`, the rest in the
/// intervals after, so that a mass expiry cannot starve renewals (etcd's lessor paces its
/// revocations the same way).
struct expiry_pacing {
  uint32_t batch = 100;
  caf::timespan interval = std::chrono::milliseconds{10};

  /// Returns the pacing that lets `per_second` expiries out per second (0 = unpaced).
  static expiry_pacing per_second(uint32_t per_second);
};

struct watchdog_state {
  // Not an aggregate: CAF would otherwise try to build the state from the actor pointer.
  watchdog_state() = default;

  /// The timers, armed and disarmed there by the lock actors.
  std::shared_ptr<expiry_schedule> schedule;
  /// Where expiries go: the registry finds the lock's actor, or spawns one for a lease whose
  /// actor retired (a held lease nobody waits for keeps no actor).
  registry_actor registry;
  expiry_pacing pacing;
  stall_settings stalls;
  std::shared_ptr<stall_window> window; // null = stalls are not watched
  std::shared_ptr<fencelock::metrics> metrics;
  caf::actor_clock::time_point last_beat;
  static inline const char* name = "fencelock.watchdog";
};

/// Sends the registry `(expire, name, token)` when a lease's deadline in `schedule` is reached;
/// the registry hands it to the lock's actor, spawning one if the lock's actor retired. A lock
/// has at most one timer, by name: arming again (after a renewal, or by a new actor of the
/// lock) replaces it, and disarming (after a release) removes it. The lock actor ignores an
/// expiry for a token that is no longer its lease or whose deadline moved, so a late timer is
/// harmless. One delayed tick is in flight for the earliest deadline, not one per lease; whoever
/// arms a timer earlier than that sends `(arm, tick_ns)` as expiry_schedule::arm says. Each
/// tick sends at most `pacing.batch` expiries.
///
/// A heartbeat also watches for stalls of the process (actors/stall.hpp): it opens the grace of
/// `window` (null = none, as with Redis) before any expiry goes out after one, and beats it so
/// that readers know of a stall under way before the watchdog has run. Stalls are logged
/// (`process_stalled`) and counted in `stats` (null = not counted).
watchdog_actor::behavior_type watchdog_impl(watchdog_actor::stateful_pointer<watchdog_state> self,
                                            std::shared_ptr<expiry_schedule> schedule,
                                            std::shared_ptr<stall_window> window = nullptr,
                                            stall_settings settings = {},
                                            std::shared_ptr<metrics> stats = nullptr,
                                            expiry_pacing pacing = {});

} // namespace fencelock
