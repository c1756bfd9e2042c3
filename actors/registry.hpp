#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "actors/lock_actor.hpp"

namespace fencelock {

struct registry_state {
  // Not an aggregate: CAF would otherwise try to build the state from the actor pointer.
  registry_state() = default;

  /// An idle report kept: the actor is still idle if nothing was routed to it since.
  struct idle_report {
    std::string name;
    caf::actor_addr actor;
    uint64_t seen = 0;
  };
  lock_context_ptr ctx;
  lister_actor lister;
  /// Idle reports, oldest first (at most ctx->idle_kept): the actors to retire first. A report
  /// of an actor that was used again since is stale and skipped.
  std::deque<idle_report> idle;
  static inline const char* name = "fencelock.registry";
};

/// Routes each request to the actor of its lock, spawning it on first use (never more than
/// ctx.max_locks at once), and spawns at once the actors of the `held` locks so that their
/// leases' expiry is armed after a restart. Lists go to `lister`.
///
/// Retirement is race-free: a lock actor reports idle with the number of routed messages it has
/// handled; the registry retires it only if that equals the number routed to it (by the registry
/// and by the front end, through ctx.locks), i.e. nothing is in flight to it. Otherwise the report
/// is stale and ignored. Up to ctx.idle_kept idle actors are kept for their next request (a name
/// used again soon, as most are, costs no spawn and no load); the oldest are retired beyond that,
/// and first when max-locks needs a place.
registry_actor::behavior_type registry_impl(registry_actor::stateful_pointer<registry_state> self,
                                            lock_context ctx, lister_actor lister,
                                            std::vector<std::string> held);

} // namespace fencelock
