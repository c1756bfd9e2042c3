#include "support/memory_store.hpp"

#include <algorithm>

#include "fencelock/errc.hpp"

namespace fencelock {

caf::expected<stored_lock> memory_store::load(const std::string& name) {
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
  if (batch.fence_ceiling != 0)
    fence_ceiling_ = batch.fence_ceiling; // lower too, as SQLite: see store_batch
  ++commits_;
  return caf::none;
}

caf::expected<std::vector<stored_lock>> memory_store::list_held(const list_request& req) {
  std::lock_guard guard{mtx_};
  std::vector<stored_lock> result;
  for (auto i = locks_.upper_bound(req.cursor); i != locks_.end() && result.size() < req.limit;
       ++i) {
    if (i->first.compare(0, req.prefix.size(), req.prefix) != 0) {
      if (i->first > req.prefix)
        break; // past every name with this prefix
      continue;
    }
    if (i->second.held)
      result.push_back(i->second);
  }
  return result;
}

caf::expected<std::vector<std::string>> memory_store::held_names() {
  std::lock_guard guard{mtx_};
  std::vector<std::string> result;
  for (const auto& [name, rec] : locks_)
    if (rec.held)
      result.push_back(name);
  return result;
}

caf::expected<uint64_t> memory_store::fence_floor() {
  std::lock_guard guard{mtx_};
  uint64_t floor = std::max<uint64_t>(fence_ceiling_, 1);
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
