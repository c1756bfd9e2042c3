#pragma once

#include <memory>

#include "actors/interfaces.hpp"

namespace fencelock {

struct store_actor_state {
  // Not an aggregate: CAF would otherwise try to build the state from the actor pointer.
  store_actor_state() = default;

  std::shared_ptr<lease_store> store;
  store_batch batch;
  std::vector<caf::typed_response_promise<bool>> waiting;
  bool flush_scheduled = false;
  static inline const char* name = "fencelock.store";
};

/// Serves `store` to the other actors with group commit: writes that arrive while a commit runs
/// are collected and made durable together by the next one, and each is acknowledged only after
/// its commit returned. Spawn it `detached` over a store that blocks on I/O (SQLite).
store_actor::behavior_type store_actor_impl(store_actor::stateful_pointer<store_actor_state> self,
                                            std::shared_ptr<lease_store> store);

} // namespace fencelock
