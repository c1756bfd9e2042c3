#include "actors/store/embedded/memory_store.hpp"

#include <algorithm>

#include "fencelock/errc.hpp"

namespace fencelock {

caf::expected<std::vector<stored_lock>> memory_store::load_all() {
  std::lock_guard guard{mtx_};
  std::vector<stored_lock> result;
  for (const auto& [name, rec] : locks_)
    result.push_back(rec);
  return result;
}

stored_lock memory_store::record(const std::string& name) const {
  std::lock_guard guard{mtx_};
  if (auto i = locks_.find(name); i != locks_.end())
    return i->second;
  stored_lock result;
  result.name = name;
  return result;
}

caf::error memory_store::commit(const store_batch& batch) {
  std::lock_guard guard{mtx_};
  for (const auto& x : batch.locks)
    locks_[x.name] = x;
  for (const auto& name : batch.pruned)
    if (auto i = locks_.find(name); i != locks_.end() && !i->second.held)
      locks_.erase(i);
  if (batch.fence_ceiling != 0)
    fence_ceiling_ = batch.fence_ceiling; // lower too, as SQLite: see store_batch
  ++commits_;
  return caf::none;
}

caf::expected<uint64_t> memory_store::fence_floor() {
  std::lock_guard guard{mtx_};
  uint64_t floor = std::max<uint64_t>(fence_ceiling_, std::max<uint64_t>(first_token_, 1));
  for (const auto& [name, rec] : locks_)
    floor = std::max(floor, rec.last_token + 1);
  return floor;
}

uint64_t memory_store::fence_ceiling() const {
  std::lock_guard guard{mtx_};
  return fence_ceiling_;
}

uint64_t memory_store::commits() const {
  std::lock_guard guard{mtx_};
  return commits_;
}

} // namespace fencelock
