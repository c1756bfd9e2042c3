#pragma once

// A lease store in process memory: `store = memory` (nothing is durable: for tests, benchmarks
// and embedders that keep no state across restarts; docs/durability.md), and the unit tests'
// store, which "survives a crash" as long as the object does: tests keep it alive across actor
// systems to simulate a restart.

#include <map>
#include <memory>
#include <mutex>

#include "actors/store/embedded/lease_store.hpp"

namespace fencelock {

class memory_store : public lease_store {
public:
  /// `first_token` is the lowest token it lets the fence issuer hand out while it is empty.
  explicit memory_store(uint64_t first_token = 1) : first_token_(first_token) {
  }

  caf::expected<std::vector<stored_lock>> load_all() override;
  caf::error commit(const store_batch& batch) override;
  caf::expected<uint64_t> fence_floor() override;

  /// Returns the record of `name` as stored (held=false for an unknown name; for tests).
  stored_lock record(const std::string& name) const;

  /// Returns the durable fence ceiling (for tests).
  uint64_t fence_ceiling() const;

  /// Returns how many commits succeeded (for tests of group commit).
  uint64_t commits() const;

private:
  mutable std::mutex mtx_; // tests may read from the test thread while actors write
  std::map<std::string, stored_lock> locks_;
  uint64_t fence_ceiling_ = 0;
  uint64_t commits_ = 0;
  const uint64_t first_token_;
};

} // namespace fencelock
