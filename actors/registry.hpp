#pragma once

#include <memory>
#include <string>
#include <vector>

#include "actors/lock_actor.hpp"

namespace fencelock {

struct registry_state {
  // Not an aggregate: CAF would otherwise try to build the state from the actor pointer.
  registry_state() = default;

  lock_context_ptr ctx;
  lister_actor lister;

  static inline const char* name = "fencelock.registry";
};

/// Routes each request to the actor of its lock, spawning it on first use (never more than
/// ctx.max_locks at once), and spawns at once the actors of the `held` locks so that their
/// leases' expiry is armed after a restart. Lists go to `lister`.
///
/// Retirement is race-free: a lock actor reports idle (in ctx.locks) with the number of routed
/// messages it has handled; the registry retires it only if that equals the number routed to it
/// (by the registry and by the front end, through ctx.locks), i.e. nothing is in flight to it.
/// Otherwise the report is stale and ignored. A lock actor tells the registry (idle_atom) only
/// when more actors are idle than are kept. Up to ctx.idle_kept idle actors are kept for their next request (a name
/// used again soon, as most are, costs no spawn and no load); the oldest are retired beyond that,
/// and first when max-locks needs a place. An actor whose lease is held but that has nothing
/// else to do retires the same way and leaves its place as a *kept lease* (lock_directory.hpp):
/// the next call for the lock, or the lease's expiry (the watchdog sends expiries here), spawns
/// a new actor, which loads the lease from the store. Kept leases are never evicted.
registry_actor::behavior_type registry_impl(registry_actor::stateful_pointer<registry_state> self,
                                            lock_context ctx, lister_actor lister,
                                            std::vector<std::string> held);

} // namespace fencelock
