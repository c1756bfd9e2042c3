#pragma once

// The seam between the one lock actor (actors/lock_actor.cpp) and the stores. The lock actor
// keeps the protocol: waiters, admission, timers, idle and retirement, drain, events and
// metrics. A lock_backend keeps only the durable effect of each operation on one lock and
// answers in one vocabulary (store_answer). A store_runtime is what make_store()
// (actors/store/factory.hpp) builds once from config.store: the backends, the store's own
// actors and its event source. Nothing above this seam knows which store runs.
//
//   store           backend does                                      event source
//   embedded        lock_state + fence issuer + group-committing      the lock actors announce
//                   store actor (SQLite)                              each change locally
//   redis://...     one Lua script per operation                      the store's channel

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_clock.hpp>
#include <caf/expected.hpp>
#include <caf/typed_actor.hpp>

#include "actors/interfaces.hpp"
#include "fencelock/events.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

class stall_window;

/// A lease as the store answered it.
struct lease_record {
  std::string owner;
  uint64_t token = 0;
  int64_t ttl_ms = 0;
  /// The deadline on this instance's actor clock: where its expiry is armed.
  caf::actor_clock::time_point deadline;
  /// The deadline as clients are told it (ms since the Unix epoch).
  int64_t expires_at_ms = 0;
  /// Events of this lease so far, minus one (lock_event::revision).
  uint64_t revision = 0;
};

/// What a backend answers to a change.
enum class verdict : uint8_t {
  /// acquire: a new lease with a new token (`lease`).
  granted,
  /// acquire: someone else holds the lock (`lease` is the holder's); expire: the lease lives on
  /// until `lease.deadline` at least (renewed, or protected by the stall grace).
  held,
  /// acquire by the holder (a refresh), renew, release: done (`lease` as it is now, or as it
  /// was when it ended); expire: the lease ended now.
  ok,
  /// renew, release, expire: the token is not (any longer) the owner's current lease.
  lost,
};

/// A backend's answer to acquire, renew, release or expire.
struct store_answer {
  verdict v = verdict::lost;
  lease_record lease;
  /// A lease that the operation found past its deadline and ended first (an acquire of a lock
  /// whose expiry was not processed yet): its end is announced before the new lease.
  std::optional<lease_record> settled;
  /// lost, from expire: the store lost the lease before its deadline (a Redis that restarted
  /// without its data), so no write of any instance ended it.
  bool store_lost = false;
  /// granted: the token of the lease this grant replaced in the store, ended before or by it
  /// (0 = the store had none). A lease the lock actor watched that is not this one was lost.
  uint64_t replaced = 0;
};

/// A backend's answer to a hand-over: the release or expiry, and then the next waiter's acquire.
struct hand_over_answer {
  /// As release() or expire() answers. Only when it is ok (or, for an expiry, lost) was the
  /// acquire made.
  store_answer released;
  /// The next waiter's acquire, as acquire() answers it.
  store_answer granted;
  /// When the acquire was made and failed: why (then `granted` means nothing).
  caf::error grant_failed;
};

/// A backend's answer to a read (status, check).
struct lock_view {
  /// The current lease; nothing when the lock is free.
  std::optional<lease_record> lease;
  /// The highest token the lock ever had (0 = never, or forgotten: docs/durability.md).
  uint64_t last_token = 0;
};

/// The lock actor as its backend sees it: backends issue their requests from it (with await, so
/// that the lock actor handles nothing else meanwhile).
using lock_self = lock_actor::pointer;

/// The durable effect of one lock's operations. Each call answers exactly once through its
/// callback, on the lock actor's thread: synchronously, or from an awaited response. A failure
/// is an error (store_unavailable when the store cannot confirm): it changed nothing the
/// caller may rely on.
class lock_backend {
public:
  template <class T>
  using reply = std::function<void(caf::expected<T>)>;

  virtual ~lock_backend() = default;

  /// Loads what the store knows of the lock before anything else is served.
  virtual void load(lock_self self, reply<lock_view> done) = 0;

  /// Grants the lock to `req.owner` if it is free (or its lease ended), refreshes the lease if
  /// `req.owner` holds it, and otherwise names the holder: granted, ok or held.
  virtual void acquire(lock_self self, const acquire_request& req, reply<store_answer> done) = 0;

  /// Extends lease `req.token` of `req.owner`: ok or lost.
  virtual void renew(lock_self self, const renew_request& req, reply<store_answer> done) = 0;

  /// Ends lease `req.token` of `req.owner` for `cause`: ok or lost.
  virtual void release(lock_self self, const release_request& req, lease_end_cause cause,
                       reply<store_answer> done) = 0;

  /// Ends lease `req.token` as release() does and, if it ended, acquires the lock for `next`
  /// (the first waiter) as acquire() does. A failure before the release is done is an error.
  /// This one releases, then acquires; a store that can record both in one write overrides it,
  /// so that a hand-off costs one durable write instead of two in a row.
  virtual void hand_over(lock_self self, const release_request& req, lease_end_cause cause,
                         const acquire_request& next, reply<hand_over_answer> done);

  /// Ends lease `known` (as the lock actor last heard of it) if its deadline passed: ok (ended
  /// now), held (it lives on) or lost (gone already, or lost by the store: `store_lost`).
  virtual void expire(lock_self self, const lease_record& known, reply<store_answer> done) = 0;

  /// Expires `known` as expire() does and, unless it lives on (held), acquires the lock for
  /// `next` (the first waiter) as acquire() does: a takeover. Composed like hand_over(), and
  /// overridden by a store that records both in one write.
  virtual void hand_over_expired(lock_self self, const lease_record& known,
                                 const acquire_request& next, reply<hand_over_answer> done);

  /// Reads the lock as it is now.
  virtual void read(lock_self self, reply<lock_view> done) = 0;
};

/// Answers list requests; the registry delegates them here.
using lister_actor = caf::typed_actor<caf::replies_to<list_atom, list_request>::with<lock_list>>;

/// Receives every change that lock actors make, once it is on record. The embedded store's
/// event source publishes them all; a shared store, whose changes reach every instance on a
/// channel of its own, takes from here only what no write announced (a lease the store lost).
class change_announcer {
public:
  virtual ~change_announcer() = default;

  /// Takes in `ev`. Called by the lock actor of `ev.name`, so the changes of one lock arrive in
  /// order.
  virtual void announce(const lock_event& ev) = 0;
};

/// A store as the service runs it: built once by make_store(), then the same to everybody.
class store_runtime {
public:
  virtual ~store_runtime() = default;

  /// Makes the backend of lock `name`; called by each lock actor as it starts.
  virtual std::unique_ptr<lock_backend> make_backend(const std::string& name) = 0;

  /// Returns whether other instances may grant leases in this store: then a lock without an
  /// actor here may still be held, and renewals, releases and checks must ask the store.
  virtual bool shared() const noexcept = 0;

  /// Returns where lock actors announce their changes.
  virtual std::shared_ptr<change_announcer> announcer() const = 0;

  /// Returns the window of process stalls under which leases are judged (null: this store judges
  /// deadlines on a clock of its own, and a stall of this process cannot end a lease early).
  virtual std::shared_ptr<stall_window> stalls() const = 0;

  /// Returns the names of locks held at start-up: their actors start at once to arm expiry.
  virtual std::vector<std::string> held_at_start() = 0;

  /// Returns the actor that answers list requests.
  virtual lister_actor lister() const = 0;

  /// Connects the store's event source to `registry` (wake-ups of waiters, watches) and starts
  /// whatever the store runs in the background. Called once, before anything is served.
  virtual void start(registry_actor registry) = 0;

  /// Returns whether the store is reachable and its event source is up: /readyz.
  virtual bool ready() const noexcept = 0;

  /// Returns the store's actors, in the order to stop them (after the lock actors).
  virtual std::vector<caf::actor> actors() const = 0;

  /// Releases what the store holds (files, connections, threads), once its actors are down.
  virtual void close() = 0;
};

} // namespace fencelock
