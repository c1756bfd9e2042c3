#pragma once

// The public typed interface of the lock service. A host program that embeds fencelock may send
// these messages to service::registry() directly instead of using service's callback API.

#include <cstdint>
#include <string>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "fencelock/messages.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

/// Routes each request to the actor of its lock (spawning it on first use) and retires idle
/// lock actors. Requests must be validated first (fencelock/validate.hpp).
using registry_actor = caf::typed_actor<
  caf::replies_to<acquire_atom, acquire_request>::with<lease>,
  caf::replies_to<renew_atom, renew_request>::with<lease>,
  caf::replies_to<release_atom, release_request>::with<bool>,
  caf::replies_to<status_atom, std::string>::with<lock_status>,
  caf::replies_to<list_atom, list_request>::with<lock_list>,
  caf::replies_to<check_atom, check_request>::with<check_result>,
  /// Withdraws the waiting acquire `request_id` on lock `name`, and undoes its grant when the
  /// grant could not be delivered.
  caf::reacts_to<cancel_atom, std::string, uint64_t>,
  /// Internal: more lock actors are idle than are kept (lock_directory::report_idle): retire
  /// the longest idle.
  caf::reacts_to<idle_atom>,
  /// Internal: a retired lock actor found that the lease it was kept for had ended meanwhile.
  caf::reacts_to<retire_atom, std::string>,
  /// Internal, from the watchdog: lease `token` of lock `name` may have reached its deadline;
  /// the lock's actor judges it (one is spawned if the lock's actor retired).
  caf::reacts_to<expire_atom, std::string, uint64_t>,
  /// Internal (a shared store's event source): lease `token` of lock `name` started (`ended`
  /// false) or ended, on any instance; the lock's actor here, if any, takes it in.
  caf::reacts_to<heard_atom, std::string, uint64_t, bool>,
  /// Internal (a shared store's event source, back after an outage): every lock looks again.
  caf::reacts_to<resync_atom>,
  /// Internal: the service drains; every lock actor answers its waiters shutting_down.
  caf::reacts_to<drain_atom>,
  /// Internal (a shared store's event source): lease (owner, token) of lock `name`, granted or
  /// renewed elsewhere, has subscribers here: watch it to its end, at `expires_at_ms` (wall
  /// clock), `remaining_ms` from now.
  caf::reacts_to<watch_atom, std::string, std::string, uint64_t, int64_t, int64_t>>;

} // namespace fencelock
