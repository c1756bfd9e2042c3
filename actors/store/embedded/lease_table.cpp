#include "actors/store/embedded/lease_table.hpp"

#include <algorithm>
#include <mutex>
#include <string_view>
#include <unordered_map>

namespace fencelock {

lease_table::lease_table(uint64_t released_kept) : released_kept_(released_kept) {
}

void lease_table::load(std::vector<stored_lock> records) {
  std::unique_lock guard{mutex_};
  records_.clear();
  held_.clear();
  released_.clear();
  release_seq_ = 0;
  for (auto& rec : records) {
    if (rec.held)
      held_.insert(rec.name);
    else
      released_.emplace(rec.released_seq, rec.name);
    release_seq_ = std::max(release_seq_, rec.released_seq);
    auto name = rec.name;
    records_.insert_or_assign(std::move(name), std::move(rec));
  }
  pruned_through_ = released_.empty() ? release_seq_ : released_.begin()->first - 1;
}

stored_lock lease_table::find(const std::string& name) const {
  std::shared_lock guard{mutex_};
  if (auto i = records_.find(name); i != records_.end())
    return i->second;
  stored_lock result;
  result.name = name;
  return result;
}

std::vector<stored_lock> lease_table::list_held(const list_request& req) const {
  std::shared_lock guard{mutex_};
  std::vector<stored_lock> result;
  auto i = req.cursor < req.prefix ? held_.lower_bound(req.prefix) : held_.upper_bound(req.cursor);
  for (; i != held_.end() && result.size() < req.limit; ++i) {
    if (!i->starts_with(req.prefix))
      break; // names in order: past the prefix's range
    result.push_back(records_.at(*i));
  }
  return result;
}

std::vector<std::string> lease_table::held_names() const {
  std::shared_lock guard{mutex_};
  return {held_.begin(), held_.end()};
}

void lease_table::prepare(store_batch& batch) {
  // Only the store actor changes the table, so reading the counters needs no lock.
  auto seq = release_seq_;
  for (auto& rec : batch.locks)
    rec.released_seq = rec.held ? 0 : ++seq;
  // Pruned a tenth of the bound at a time, so that most commits pay nothing for it.
  if (seq <= pruned_through_ + released_kept_ + released_kept_ / 10)
    return;
  auto through = seq - released_kept_;
  batch.prune_released_through = through;
  // The store deletes by name what apply() will drop: the records left released and numbered
  // up to `through` once the batch is in. A name the batch writes takes its last record there.
  std::unordered_map<std::string_view, const stored_lock*> last;
  for (const auto& rec : batch.locks)
    last[rec.name] = &rec;
  for (auto i = released_.begin(); i != released_.end() && i->first <= through; ++i)
    if (!last.contains(i->second))
      batch.pruned.push_back(i->second);
  for (const auto& [name, rec] : last)
    if (!rec->held && rec->released_seq <= through)
      batch.pruned.emplace_back(name);
}

void lease_table::apply(const store_batch& batch) {
  std::unique_lock guard{mutex_};
  for (const auto& rec : batch.locks) {
    auto i = records_.find(rec.name);
    if (i != records_.end()) {
      if (i->second.held)
        held_.erase(rec.name);
      else
        released_.erase(i->second.released_seq);
      i->second = rec;
    } else {
      records_.emplace(rec.name, rec);
    }
    if (rec.held)
      held_.insert(rec.name);
    else
      released_.emplace(rec.released_seq, rec.name);
    release_seq_ = std::max(release_seq_, rec.released_seq);
  }
  // The records the store deleted with this batch, as prepare() named them.
  for (const auto& name : batch.pruned) {
    auto i = records_.find(name);
    if (i == records_.end() || i->second.held)
      continue;
    released_.erase(i->second.released_seq);
    records_.erase(i);
  }
  pruned_through_ = std::max(pruned_through_, batch.prune_released_through);
}

std::size_t lease_table::size() const {
  std::shared_lock guard{mutex_};
  return records_.size();
}

} // namespace fencelock
