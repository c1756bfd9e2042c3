#pragma once

// The embedded store as the service runs it: a lease_store (SQLite by default) behind the
// group-committing store actor, the fence issuer handing out tokens, and one backend per lock
// that keeps the lock's record (lock_record) and makes each change durable before it answers.
// Its event source is local: lock actors announce their changes to the event hub.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>

#include "actors/clock.hpp"
#include "actors/interfaces.hpp"
#include "actors/stall.hpp"
#include "actors/store/backend.hpp"
#include "actors/store/embedded/lease_store.hpp"
#include "actors/store/embedded/store_actor.hpp"
#include "actors/store/reporter.hpp"

namespace fencelock {

class event_hub;
class token_window;

/// How the embedded store runs.
struct embedded_settings {
  clock_mapping clock = clock_mapping::now();
  /// Tokens reserved per durable write of the fence ceiling.
  uint64_t fence_block = 10'000;
  /// The lowest token to hand out, if above the store's own fence floor (0: none).
  uint64_t fence_floor = 0;
  /// How long a commit may run before the store reports itself not ready (a stalled disk).
  std::chrono::steady_clock::duration commit_stall_limit = std::chrono::seconds{5};
  /// Whether the store actor gets a thread of its own (a store that blocks on I/O, with a
  /// single scheduler worker: actors/store/factory.cpp).
  bool detached = true;
  /// Whether to watch for stalls of the process (the grace of actors/stall.hpp).
  bool watch_stalls = true;
  /// Released locks whose records are kept (their lastToken stays readable).
  uint64_t released_kept = 100'000;
};

class embedded_store : public store_runtime {
public:
  /// Runs `store` on `sys`: reads its fence floor and held locks (blocking: call it before
  /// serving), then spawns the store actor and the fence issuer. Changes are announced to
  /// `events` and reported to `reporter` (either may be null).
  static caf::expected<std::shared_ptr<embedded_store>> make(
    caf::actor_system& sys, std::shared_ptr<lease_store> store, embedded_settings settings,
    std::shared_ptr<event_hub> events, std::shared_ptr<store_reporter> reporter);

  std::unique_ptr<lock_backend> make_backend(const std::string& name) override;
  bool shared() const noexcept override;
  std::shared_ptr<change_announcer> announcer() const override;
  std::shared_ptr<stall_window> stalls() const override;
  std::vector<std::string> held_at_start() override;
  lister_actor lister() const override;
  void start(registry_actor registry) override;
  bool ready() const noexcept override;
  std::vector<caf::actor> actors() const override;
  void close() override;

  /// Returns the store actor (for tests).
  store_actor store_handle() const noexcept {
    return env_->store;
  }

  /// Returns the fence issuer (for tests).
  fence_issuer_actor issuer_handle() const noexcept {
    return env_->fence;
  }

  /// Returns how the store's commits go (for tests).
  commit_health& health() const noexcept {
    return *health_;
  }

  /// Returns the lease table (for tests).
  const lease_table& table() const noexcept {
    return *env_->table;
  }

  /// What every lock's backend shares.
  struct environment {
    store_actor store;
    /// The store's records in memory: where a lock's record is loaded from.
    std::shared_ptr<lease_table> table;
    fence_issuer_actor fence;
    /// The fence issuer's tokens, taken here directly while it has plenty.
    std::shared_ptr<token_window> tokens;
    clock_mapping clock;
    std::shared_ptr<stall_window> stalls;
    std::shared_ptr<store_reporter> reporter;
    /// How the store's commits go.
    std::shared_ptr<commit_health> health;
  };

private:
  embedded_store() = default;

  std::shared_ptr<lease_store> store_;
  std::shared_ptr<environment> env_;
  std::shared_ptr<change_announcer> announcer_;
  table_lister_actor lister_;
  std::shared_ptr<commit_health> health_ = std::make_shared<commit_health>();
  std::vector<std::string> held_;
};

} // namespace fencelock
