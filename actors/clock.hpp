#pragma once

// Expiry is judged on the monotonic clock only. Clients still want a wall-clock `expiresAt`, so
// we map monotonic time to wall time through one (wall, monotonic) pair taken at start-up: wall
// clock jumps after start-up never move a deadline.

#include <chrono>
#include <cstdint>

#include <caf/actor_clock.hpp>

namespace fencelock {

struct clock_mapping {
  int64_t wall_ms_at_base = 0;
  int64_t steady_ns_at_base = 0;

  /// Returns the wall-clock estimate (ms since the Unix epoch) of monotonic time `steady_ns`.
  int64_t to_wall_ms(int64_t steady_ns) const noexcept {
    return wall_ms_at_base + (steady_ns - steady_ns_at_base) / 1'000'000;
  }

  /// Takes the pair now, from the system clocks.
  static clock_mapping now() noexcept {
    using namespace std::chrono;
    return {duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count(),
            duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count()};
  }
};

/// Returns `t` as nanoseconds since the actor clock's epoch (steady_clock in production).
inline int64_t to_ns(caf::actor_clock::time_point t) noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

/// Returns the actor clock time point of `ns` nanoseconds since its epoch.
inline caf::actor_clock::time_point from_ns(int64_t ns) noexcept {
  return caf::actor_clock::time_point{
    std::chrono::duration_cast<caf::actor_clock::duration_type>(std::chrono::nanoseconds{ns})};
}

} // namespace fencelock
