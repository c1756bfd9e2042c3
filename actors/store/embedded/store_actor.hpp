#pragma once

// The embedded store's actors: the store actor writes a lease_store (SQLite) on a thread of its
// own, with group commit, and applies what is durable to the lease table; the lister answers
// lists from the table, so that reads never queue in front of a commit.

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include <caf/replies_to.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/clock.hpp"
#include "actors/store/embedded/lease_store.hpp"
#include "actors/store/embedded/lease_table.hpp"
#include "actors/store/reporter.hpp"
#include "fencelock/messages.hpp"

namespace fencelock {

/// Wraps a lease_store; batches concurrent writes into one durable commit.
/// reserve raises the fence ceiling; settle sets it, lower too (the issuer's clean stop).
using store_actor = caf::typed_actor<caf::replies_to<put_atom, stored_lock>::with<bool>,
                                     caf::replies_to<reserve_atom, uint64_t>::with<bool>,
                                     caf::replies_to<settle_atom, uint64_t>::with<bool>,
                                     caf::reacts_to<flush_atom>>;

/// Lists held locks from the lease table.
using table_lister_actor =
  caf::typed_actor<caf::replies_to<list_atom, list_request>::with<lock_list>>;

/// How the store actor's commits go, for the store's readiness (read from any thread).
struct commit_health {
  /// Whether the last commit succeeded.
  std::atomic<bool> ok{true};
  /// When the commit in progress began (steady clock, ns since its epoch); 0 = none runs.
  std::atomic<int64_t> running_since_ns{0};
  /// A commit running longer than this is a stall: the store is not ready, and the commit is
  /// reported when it returns. Writes are not timed out one by one (their requesters await them
  /// without a timeout): a write's outcome is known only once its commit returns.
  std::chrono::steady_clock::duration stall_limit = std::chrono::seconds{5};

  /// Returns whether the last commit succeeded and none has run past the stall limit.
  bool ready(std::chrono::steady_clock::time_point now) const noexcept;
};

struct store_actor_state {
  // Not an aggregate: CAF would otherwise try to build the state from the actor pointer.
  store_actor_state() = default;
  store_actor_state(const store_actor_state&) = delete;
  store_actor_state& operator=(const store_actor_state&) = delete;
  ~store_actor_state();

  std::shared_ptr<lease_store> store;
  std::shared_ptr<lease_table> table;
  /// Tracks the commits for the store's readiness (null = not tracked).
  std::shared_ptr<commit_health> health;
  std::shared_ptr<store_reporter> reporter;
  store_batch batch;
  std::vector<caf::typed_response_promise<bool>> waiting;
  bool flush_scheduled = false;
  static inline const char* name = "fencelock.store";
};

/// Serves `store` to the other actors with group commit: writes that arrive while a commit runs
/// are collected and made durable together by the next one, and each is acknowledged only after
/// its commit returned and `table` has it. Commits that start or stop failing are reported to
/// `reporter` and tracked in `health` (either may be null). Over a store that blocks on I/O
/// (SQLite), spawn it `detached` when the scheduler has a single worker (actors/store/factory.cpp).
store_actor::behavior_type store_actor_impl(store_actor::stateful_pointer<store_actor_state> self,
                                            std::shared_ptr<lease_store> store,
                                            std::shared_ptr<lease_table> table,
                                            std::shared_ptr<commit_health> health,
                                            std::shared_ptr<store_reporter> reporter);

/// Answers lists with the held locks in `table` whose deadline has not passed, their deadlines
/// shown through `clock`.
table_lister_actor::behavior_type table_lister_impl(table_lister_actor::pointer self,
                                                    std::shared_ptr<const lease_table> table,
                                                    clock_mapping clock);

} // namespace fencelock
