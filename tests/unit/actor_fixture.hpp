#pragma once

// The lock service's actors over the embedded store on CAF's test coordinator
// (tests/support/lab.hpp): no sleeps, no sockets, time moves only when a test says so.

#include <memory>

#include "support/lab.hpp"

namespace fencelock::test {

struct actor_fixture : embedded_lab {
  /// Starts the service's actors over `shared` (a fresh memory store when null), as a restart.
  /// With `watch_stalls`, the watchdog watches for stalls of the process (advance time in one
  /// big step to simulate one). `idle_kept` idle lock actors are kept (0: every idle actor, and
  /// every actor that keeps only a lease, retires at once).
  explicit actor_fixture(std::shared_ptr<lease_store> shared = nullptr,
                         uint32_t max_waiters = 100, uint64_t fence_block = 10,
                         bool watch_stalls = false, uint32_t idle_kept = 0)
    : embedded_lab(std::move(shared), lab_options{.max_waiters = max_waiters,
                                                  .idle_kept = idle_kept,
                                                  .fence_block = fence_block,
                                                  .watch_stalls = watch_stalls}) {
  }
};

} // namespace fencelock::test
