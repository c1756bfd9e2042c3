#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "actors/lock_actor.hpp"

namespace fencelock {

struct registry_state {
  // Not an aggregate: CAF would otherwise try to build the state from the actor pointer.
  registry_state() = default;

  struct entry {
    lock_actor handle;
    uint64_t routed = 0; // messages routed to `handle` so far
  };
  lock_context_ptr ctx;
  lister_actor lister;
  std::unordered_map<std::string, entry> locks;
  static inline const char* name = "fencelock.registry";
};

/// Routes each request to the actor of its lock, spawning it on first use (never more than
/// ctx.max_locks at once), and spawns at once the actors of the `held` locks so that their
/// leases' expiry is armed after a restart. Lists go to `lister`.
///
/// Retirement is race-free: a lock actor reports idle with the number of routed messages it has
/// handled; the registry retires it only if that equals the number it routed, i.e. nothing is
/// in flight to it. Otherwise the report is stale and ignored.
registry_actor::behavior_type registry_impl(registry_actor::stateful_pointer<registry_state> self,
                                            lock_context ctx, lister_actor lister,
                                            std::vector<std::string> held);

} // namespace fencelock
