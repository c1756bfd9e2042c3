#pragma once

// Which lock actors run, by name: the registry's map, shared with the service's front end so
// that a call for a running actor goes straight to it (actors/direct_call.hpp). The registry is
// its only writer; both count the messages they route, under one mutex, so that the registry's
// retirement check (nothing routed since the actor reported idle) sees the front end's calls too.
// It also knows which of them are waiting, and which are idle, as the lock actors tell it.
//
// A lock whose lease is held but that has nothing else to do (nobody waits, no call in flight)
// keeps its place here without an actor: a *kept* lease. Its actor retired like an idle one;
// the store keeps the lease, the watchdog its expiry (by name), and the registry spawns a new
// actor for the next call or the expiry. So a million held leases cost a million records, not
// a million actors; the places still count toward max-locks.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <caf/actor_addr.hpp>

#include "actors/interfaces.hpp"

namespace fencelock {

class lock_directory {
public:
  /// A lock actor idle after handling `seen` routed messages: still idle if nothing was routed
  /// to it since.
  struct idle_report {
    std::string name;
    caf::actor_addr actor;
    uint64_t seen = 0;
    /// The actor keeps only a lease nobody waits for: retired, it leaves a kept lease.
    bool held = false;
    uint64_t grant_id = 0; // the held lease's grant here (lock_state::grant_id)
  };

  /// Returns the actor of `name`, counting one more message routed to it (the caller sends it
  /// one), or null when none runs (none is counted then). Any thread.
  lock_actor route(const std::string& name);

  /// Returns the actor of `name` without counting a message routed to it (for messages that
  /// the actor does not count either), or null when none runs.
  lock_actor find(const std::string& name) const;

  // -- the registry's side --------------------------------------------------------------------

  /// Adds the actor of `name` (none runs; the lease may be kept), with `routed` messages on
  /// their way to it.
  void add(const std::string& name, lock_actor handle, uint64_t routed);

  /// Returns whether `name` is a kept lease (its place without an actor), and if so the
  /// request the lease was granted to here (0 = not here).
  std::optional<uint64_t> kept(const std::string& name) const;

  /// Removes and returns the actor of `name` if it still runs `name` and has handled the `seen`
  /// messages routed to it (nothing is on its way to it); else null. With
  /// `keep_lease` the place stays as a kept lease granted to `grant_id`.
  lock_actor take_if_idle(const std::string& name, const caf::actor_addr& actor, uint64_t seen,
                          bool keep_lease = false, uint64_t grant_id = 0);

  /// Forgets the kept lease of `name` (it ended); returns whether there was one.
  bool forget_kept(const std::string& name);

  /// Forgets `actor`, which ended; returns whether it was here.
  bool forget(const caf::actor_addr& actor);

  /// Removes every place and returns the actors.
  std::vector<lock_actor> take_all();

  /// Returns every actor.
  std::vector<lock_actor> all() const;

  /// Returns the places: running actors and kept leases (what max-locks bounds).
  std::size_t size() const;

  /// Returns the running actors.
  std::size_t actors() const;

  /// Removes and returns the longest-standing idle report that is still its actor's latest
  /// (the actor may have been used again since: take_if_idle tells).
  std::optional<idle_report> pop_idle();

  /// Returns the actors with an idle report.
  std::size_t idle_actors() const;

  // -- the lock actors' side ------------------------------------------------------------------

  /// Notes whether `actor` is waiting: has waiters, or a wait timer pending (which holds on to
  /// the actor until it fires). Draining and stopping then reach these few actors only, with
  /// someone to answer or a timer to drop; the quiet others end with their last handle. (A
  /// message to each of a million quiet actors kept a stopping server busy for minutes.)
  void note_waiting(const caf::actor_addr& actor, bool waiting);

  /// Returns the running actors that are waiting.
  std::vector<lock_actor> waiting() const;

  /// Notes that `report.actor` is idle (nothing to keep, or only a lease nobody waits for),
  /// unless something was routed to it after the `report.seen` messages it handled. Returns
  /// whether the registry must retire some now: more than `kept` actors are idle. A report per
  /// idle spell, here rather than as a message to the registry: that was two messages and two
  /// registry resumes per acquire+release.
  bool report_idle(idle_report report, std::size_t kept);

private:
  struct entry {
    lock_actor handle;   // null: a kept lease
    uint64_t routed = 0; // messages routed to `handle` so far
    uint64_t grant_id = 0; // a kept lease's: the request it was granted to here
  };
  /// Returns the entry of `name` if it is `actor` and nothing was routed to it since `seen`.
  std::unordered_map<std::string, entry>::const_iterator find_idle(const std::string& name,
                                                                   const caf::actor_addr& actor,
                                                                   uint64_t seen) const;

  mutable std::mutex mtx_;
  std::unordered_map<std::string, entry> locks_;
  std::size_t kept_ = 0; // entries without an actor
  /// Idle reports, oldest first: the actors to retire first. An actor reports after every call
  /// that leaves it idle (also after a grant: it then keeps only the lease), so only its latest
  /// report counts (`latest_`); the others, like one of an actor used again since, are stale
  /// and skipped. Under `mtx_`.
  std::deque<std::pair<idle_report, uint64_t>> idle_; // with its number
  /// The number of each actor's latest report in `idle_`.
  std::unordered_map<caf::actor_addr, uint64_t> latest_;
  uint64_t reports_ = 0; // numbers the reports
  // Apart from `mtx_`, which every call routed takes.
  mutable std::mutex waiting_mtx_;
  std::unordered_set<caf::actor_addr> waiting_; // weak: an actor killed outright is skipped
};

} // namespace fencelock
