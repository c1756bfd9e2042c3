#pragma once

// The event hub: where lock actors publish lock_events and front ends pick them up, for
// subscriptions (every event of a name or a name prefix) and lease watches (the end of one
// lease, for lease_lost pushes).
//
// A subscription must never miss a change between its snapshot and its events. So it is added
// *before* its snapshot is taken, holds back what is published meanwhile, and goes live in
// open(), which delivers the snapshot and then the held-back events that are newer than it, all
// under the hub's mutex, so that nothing published concurrently can slip in between.
//
// Sinks run under that mutex on the publisher's thread (a lock actor's worker): they must only
// hand the event on (post it to an I/O strand, say), never block and never call the hub.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "fencelock/events.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

class event_hub {
public:
  using sink = std::function<void(const lock_event&)>;

  /// Events a subscription holds back while its snapshot is taken; past that it fails.
  static constexpr std::size_t held_back_limit = 10'000;

  /// Adds a subscription to every lock whose name starts with `prefix` (or, when `exact`, to the
  /// lock named `prefix`); events are held back until open(). Returns its id (never 0).
  uint64_t subscribe(std::string prefix, bool exact, sink on_event);

  /// Calls `deliver_snapshot`, then `on_event` for each held-back event newer than `snapshot`,
  /// and makes the subscription live. Returns false, calling nothing, when the subscription is
  /// gone (unsubscribed) or held back too many events; it is then removed.
  bool open(uint64_t id, const std::vector<lock_status>& snapshot,
            const std::function<void()>& deliver_snapshot);

  /// Removes a subscription; no event reaches it once this returns.
  void unsubscribe(uint64_t id);

  /// Starts watching for the end of a lease of lock `name` whose token is not known yet: call
  /// this before sending the acquire (or renew), and bind() the token from its answer. A lease
  /// that ends in between is not missed. Returns the watch's id (never 0).
  uint64_t watch_lease(const std::string& name, sink on_end);

  /// Binds watch `id` to lease `token`: `on_end` is called once when that lease ends other than
  /// by its holder's release (at once if it already did), and the watch then removes itself.
  void bind_lease_watch(uint64_t id, uint64_t token);

  /// Removes a lease watch; a no-op when it already fired.
  void unwatch_lease(uint64_t id);

  /// Hands `ev` to the matching subscriptions and lease watches. Thread-safe; called by the
  /// lock actor of `ev.name`, so the events of one lock arrive in their order.
  void publish(const lock_event& ev);

  /// Returns the number of subscriptions.
  std::size_t subscriptions() const;

  /// Removes every subscription and lease watch: none is called once this returns.
  void clear();

  /// Returns whether some subscription covers lock `name`. Thread-safe.
  bool subscribed_to(const std::string& name) const;

private:
  struct subscription {
    std::string prefix;
    bool exact = false;
    bool live = false;
    bool overflowed = false;
    sink on_event;
    std::vector<lock_event> held_back;
  };

  struct watch {
    uint64_t id = 0;
    uint64_t token = 0; // 0 until bound
    sink on_end;
  };

  /// The lease watches of one lock.
  struct watched_lock {
    std::vector<watch> watches;
    /// The last lease ends published while some watch was unbound, at most unbound_memory, in
    /// no order (the oldest is overwritten); bind() looks for its token here. One list per
    /// lock, not per watch: with a copy per unbound watch, a hand-off of a lock with n waiters
    /// (each watching for the lease it waits for) cost n copies of the event. An end from
    /// before a watch opened cannot carry that watch's token: its acquire is answered later,
    /// with a lease that was live then. A vector, not a std::deque, which allocates when
    /// constructed: every held lease watched from a WebSocket has an entry here.
    std::vector<lock_event> recent_ends;
    std::size_t oldest_end = 0; // the slot the next end takes once recent_ends is full

    void remember_end(const lock_event& ev);
    void forget_ends();
    bool has_unbound() const;
  };

  /// Lease ends a lock remembers for its unbound watches: more ends than this between an
  /// acquire and its answer would take as many grants of the same lock.
  static constexpr std::size_t unbound_memory = 16;

  /// Removes watch `id` of lock `name`; the caller holds the mutex.
  void erase_watch(const std::string& name, uint64_t id);

  void deliver(subscription& sub, const lock_event& ev);

  mutable std::mutex mutex_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, subscription> subscriptions_;
  std::unordered_map<std::string, watched_lock> watches_;
  std::unordered_map<uint64_t, std::string> watch_names_;
  /// Subscriptions plus watches, read without the mutex so that a lock nobody listens to pays
  /// nothing for publishing.
  std::atomic<std::size_t> listeners_{0};
};

} // namespace fencelock
