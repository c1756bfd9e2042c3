#pragma once

// Which lock actors run, by name: the registry's map, shared with the service's front end so
// that a call for a running actor goes straight to it (actors/direct_call.hpp). The registry is
// its only writer; both count the messages they route, under one mutex, so that the registry's
// retirement check (nothing routed since the actor reported idle) sees the front end's calls too.
// It also knows which of them are waiting, as the lock actors tell it.

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <caf/actor_addr.hpp>

#include "actors/interfaces.hpp"

namespace fencelock {

class lock_directory {
public:
  /// Returns the actor of `name`, counting one more message routed to it (the caller sends it
  /// one), or null when none runs. Any thread.
  lock_actor route(const std::string& name);

  /// Returns the actor of `name` without counting a message routed to it (for messages that
  /// the actor does not count either), or null when none runs.
  lock_actor find(const std::string& name) const;

  // -- the registry's side --------------------------------------------------------------------

  /// Adds the actor of `name` (none runs), with `routed` messages on their way to it.
  void add(const std::string& name, lock_actor handle, uint64_t routed);

  /// Returns whether `actor` still runs `name` and has handled the `seen` messages routed to it:
  /// nothing is on its way to it.
  bool idle(const std::string& name, const caf::actor_addr& actor, uint64_t seen) const;

  /// Removes and returns the actor of `name` if idle(name, actor, seen); else null.
  lock_actor take_if_idle(const std::string& name, const caf::actor_addr& actor, uint64_t seen);

  /// Forgets `actor`, which ended; returns whether it was here.
  bool forget(const caf::actor_addr& actor);

  /// Removes and returns every actor.
  std::vector<lock_actor> take_all();

  /// Returns every actor.
  std::vector<lock_actor> all() const;

  std::size_t size() const;

  // -- the lock actors' side ------------------------------------------------------------------

  /// Notes whether `actor` is waiting: has waiters, or a wait timer pending (which holds on to
  /// the actor until it fires). Draining and stopping then reach these few actors only, with
  /// someone to answer or a timer to drop; the quiet others end with their last handle. (A
  /// message to each of a million quiet actors kept a stopping server busy for minutes.)
  void note_waiting(const caf::actor_addr& actor, bool waiting);

  /// Returns the running actors that are waiting.
  std::vector<lock_actor> waiting() const;

private:
  struct entry {
    lock_actor handle;
    uint64_t routed = 0; // messages routed to `handle` so far
  };
  /// Returns the entry of `name` if it is `actor` and nothing was routed to it since `seen`.
  std::unordered_map<std::string, entry>::const_iterator find_idle(const std::string& name,
                                                                   const caf::actor_addr& actor,
                                                                   uint64_t seen) const;

  mutable std::mutex mtx_;
  std::unordered_map<std::string, entry> locks_;
  // Apart from `mtx_`, which every call routed takes.
  mutable std::mutex waiting_mtx_;
  std::unordered_set<caf::actor_addr> waiting_; // weak: an actor killed outright is skipped
};

} // namespace fencelock
