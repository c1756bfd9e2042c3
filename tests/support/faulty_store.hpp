#pragma once

// A lease store decorator for tests of failure: it fails the Nth call of a kind (and, if asked,
// every one after it), so that a test can show that each failure fails closed.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "actors/store/embedded/lease_store.hpp"

namespace fencelock {

class faulty_store : public lease_store {
public:
  /// The calls that can be made to fail.
  enum class call : uint8_t { load, commit };

  explicit faulty_store(std::shared_ptr<lease_store> inner) : inner_(std::move(inner)) {
  }

  /// How a call fails: it returns store_unavailable, or throws std::runtime_error.
  enum class failure : uint8_t { error, exception };

  /// Makes the `n`th `which` call from now fail (1 = the next one) as `how` says; with
  /// `and_after`, every `which` call after it fails too, until heal().
  void fail(call which, uint64_t n = 1, bool and_after = true, failure how = failure::error);

  /// Lets every call through again.
  void heal();

  /// Returns how many `which` calls were made, failed ones included.
  uint64_t calls(call which) const;

  /// Runs at the start of every commit, on the store actor's thread (null = nothing).
  std::function<void()> before_commit;

  caf::expected<std::vector<stored_lock>> load_all() override;
  caf::error commit(const store_batch& batch) override;
  caf::expected<uint64_t> fence_floor() override;

private:
  struct plan {
    uint64_t fail_at = 0; // the call number that fails first (0 = none)
    bool and_after = false;
    failure how = failure::error;
    uint64_t made = 0;
  };

  /// Counts a `which` call; returns the error it must fail with, or none.
  caf::error take(call which);

  std::shared_ptr<lease_store> inner_;
  mutable std::mutex mtx_; // the store actor calls from its thread, tests from theirs
  std::array<plan, 2> plans_{};
};

} // namespace fencelock
