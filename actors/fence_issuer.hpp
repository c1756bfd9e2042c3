#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "actors/interfaces.hpp"
#include "actors/store/embedded/store_actor.hpp"

namespace fencelock {

/*
 * The fence issuer's tokens: the next one and the durable ceiling above it. The lock actors
 * share them, so that a grant takes its token without a message to the issuer and back (two
 * hand-offs between threads per acquire). Only the issuer raises the ceiling and closes the
 * window. A take succeeds only while more than half a block is left: below that the lock actors
 * ask the issuer, which reserves the next block meanwhile, as it did when every token went
 * through it. A mutex, not atomics: when the clean stop closes the window and reads the next
 * token, no take may be under way; an uncontended lock costs far less than the hand-offs.
 */
class token_window {
public:
  /// Starts at `floor` with nothing reserved; takes leave `block` / 2 tokens to the issuer.
  token_window(uint64_t floor, uint64_t block);

  /// Returns the next token while more than half a block is left, else nothing: ask the issuer.
  std::optional<uint64_t> take();

  // The issuer's side.

  /// Returns the next token if one is below the ceiling, however few are left.
  std::optional<uint64_t> take_any();
  /// Returns how many tokens are left below the ceiling.
  uint64_t left();
  /// Returns where the next reservation's ceiling goes: `block` past the next token or the
  /// ceiling, whichever is higher.
  uint64_t next_ceiling(uint64_t block);
  /// Raises the ceiling to `ceiling`, once a reservation of it is durable.
  void raise(uint64_t ceiling);
  /// Closes the window (no take succeeds after it) and returns the next unused token.
  uint64_t close();

private:
  std::mutex mtx_;
  uint64_t next_;
  uint64_t ceiling_;
  uint64_t half_block_;
  bool open_ = true;
};

struct fence_issuer_state {
  // Not an aggregate: CAF would otherwise try to build the state from the actor pointer.
  fence_issuer_state() = default;
  fence_issuer_state(const fence_issuer_state&) = delete;
  fence_issuer_state& operator=(const fence_issuer_state&) = delete;
  ~fence_issuer_state();

  store_actor store;
  std::shared_ptr<token_window> tokens; // the next token, and the durable ceiling above it
  uint64_t block = 0;                   // tokens reserved per durable write
  bool reserving = false;
  /// Set by a clean stop: no token goes out any more, and the ceiling is settled back to `next`.
  bool settling = false;
  caf::error stop_reason;
  std::deque<caf::typed_response_promise<uint64_t>> queued; // wait for a reservation
  static inline const char* name = "fencelock.fence_issuer";
};

/// Hands out tokens `floor`, `floor`+1, ... from `tokens` (made with that floor), directly to
/// lock actors that take them there, and to those that ask. Before a token leaves, a ceiling
/// above it is durable in `store`, so after a crash at any instant the next process starts at
/// or above that ceiling and never repeats a token. Ceilings advance `block` tokens at a time, and
/// the next block is reserved while the current one still has half its tokens left, so a grant
/// rarely waits on it. A clean stop (exit reason user_shutdown, as service::stop sends) writes the
/// ceiling back down to the next unused token before the actor quits, so that a restart continues
/// the sequence instead of skipping the rest of the block; a crash still skips at most one block.
fence_issuer_actor::behavior_type fence_issuer_impl(
  fence_issuer_actor::stateful_pointer<fence_issuer_state> self, store_actor store,
  std::shared_ptr<token_window> tokens, uint64_t block);

} // namespace fencelock
