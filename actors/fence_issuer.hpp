#pragma once

#include <deque>

#include "actors/interfaces.hpp"
#include "actors/store/embedded/store_actor.hpp"

namespace fencelock {

struct fence_issuer_state {
  // Not an aggregate: CAF would otherwise try to build the state from the actor pointer.
  fence_issuer_state() = default;
  fence_issuer_state(const fence_issuer_state&) = delete;
  fence_issuer_state& operator=(const fence_issuer_state&) = delete;
  ~fence_issuer_state();

  store_actor store;
  uint64_t next = 0;    // the next token to hand out
  uint64_t ceiling = 0; // tokens below it are covered by a durable reservation
  uint64_t block = 0;   // tokens reserved per durable write
  bool reserving = false;
  /// Set by a clean stop: no token goes out any more, and the ceiling is settled back to `next`.
  bool settling = false;
  caf::error stop_reason;
  std::deque<caf::typed_response_promise<uint64_t>> queued; // wait for a reservation
  static inline const char* name = "fencelock.fence_issuer";
};

/// Hands out tokens `floor`, `floor`+1, ... Before a token leaves, a ceiling above it is durable
/// in `store`, so after a crash at any instant the next process starts at or above that ceiling
/// and never repeats a token. Ceilings advance `block` tokens at a time, and the next block is
/// reserved while the current one still has half its tokens left, so a grant rarely waits on it.
/// A clean stop (exit reason user_shutdown, as service::stop sends) writes the ceiling back down
/// to the next unused token before the actor quits, so that a restart continues the sequence
/// instead of skipping the rest of the block; a crash still skips at most one block.
fence_issuer_actor::behavior_type
fence_issuer_impl(fence_issuer_actor::stateful_pointer<fence_issuer_state> self,
                  store_actor store, uint64_t floor, uint64_t block);

} // namespace fencelock
