#pragma once

// The whole message vocabulary of fencelock's actors. Atom texts are at most 10 characters and
// start with "fl" so that none of them collides with CAF's own atoms (a text of "get" *is*
// caf::get_atom).

#include <caf/atom.hpp>

namespace caf {
class actor_system_config;
} // namespace caf

namespace fencelock {

#define FENCELOCK_ATOM(name, text)                                                               \
  using name##_atom = caf::atom_constant<caf::atom(text)>;                                       \
  inline constexpr name##_atom name##_atom_v = name##_atom::value

// Client operations (registry and lock actors).
FENCELOCK_ATOM(acquire, "flacquire");
FENCELOCK_ATOM(renew, "flrenew");
FENCELOCK_ATOM(release, "flrelease");
FENCELOCK_ATOM(status, "flstatus");
FENCELOCK_ATOM(list, "fllist");
FENCELOCK_ATOM(cancel, "flcancel");
FENCELOCK_ATOM(check, "flcheck");

// Internal: registry <-> lock actor.
FENCELOCK_ATOM(idle, "flidle");
FENCELOCK_ATOM(retire, "flretire");
/// The registry tells the watchdog where expiries go: to the registry, which finds the lock's
/// actor (or spawns one for a held lease whose actor retired).
FENCELOCK_ATOM(route, "flroute");
/// A shared store's event source heard a lease start or end (on any instance).
FENCELOCK_ATOM(heard, "flheard");
/// A shared store's event source is back after an outage: every lock looks again.
FENCELOCK_ATOM(resync, "flresync");
/// The service drains (shutdown): waiters are answered shutting_down, no new ones queue.
FENCELOCK_ATOM(drain, "fldrain");
/// A shared store: watch a lease another instance granted, to report its expiry here.
FENCELOCK_ATOM(watch, "flwatch");

// Internal: timers.
FENCELOCK_ATOM(expire, "flexpire");
FENCELOCK_ATOM(wait_timeout, "flwaitto");
FENCELOCK_ATOM(arm, "flarm");
FENCELOCK_ATOM(tick, "fltick");
FENCELOCK_ATOM(heartbeat, "flheartbt");
/// The bridge's once-a-second look for calls past their deadline.
FENCELOCK_ATOM(sweep, "flsweep");

// Internal: fence issuer.
FENCELOCK_ATOM(next_token, "flnexttok");

// Internal: store.
FENCELOCK_ATOM(load, "flload");
FENCELOCK_ATOM(put, "flput");
FENCELOCK_ATOM(held, "flheld");
FENCELOCK_ATOM(fence_load, "flfenceld");
FENCELOCK_ATOM(reserve, "flreserve");
/// A clean stop: the fence ceiling goes back down to the next unused token.
FENCELOCK_ATOM(settle, "flsettle");
FENCELOCK_ATOM(flush, "flflush");
FENCELOCK_ATOM(redis_reply, "flrreply");

#undef FENCELOCK_ATOM

/// Registers every fencelock message type with `cfg`; call before the actor_system exists.
void add_message_types(caf::actor_system_config& cfg);

} // namespace fencelock
