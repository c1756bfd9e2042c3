#include "fencelock/fence_guard.hpp"

#include <algorithm>
#include <atomic>
#include <list>
#include <unordered_map>

namespace fencelock {

const char* to_string(fence_reason x) noexcept {
  switch (x) {
    case fence_reason::ok:
      return "ok";
    case fence_reason::stale:
      return "stale";
    case fence_reason::write_failed:
      return "write_failed";
    case fence_reason::store_failed:
      return "store_failed";
  }
  return "unknown";
}

// One remembered name. `mark` and `persisted` change only under `mtx` while the entry is pinned
// (users > 0); `users` and `lru` change only under the guard's map mutex. The evictor reads
// `mark` of unpinned entries under the map mutex: the last writer unpinned under that mutex
// after writing, which orders its write before the read.
struct fence_guard::entry {
  std::string name;
  std::mutex mtx;
  uint64_t mark = 0;
  // The highest token the store has durably recorded for this name through this entry.
  uint64_t persisted = 0;
  size_t users = 0;
  std::list<std::shared_ptr<entry>>::iterator lru;
};

namespace {

struct string_hash {
  using is_transparent = void;
  size_t operator()(std::string_view x) const noexcept {
    return std::hash<std::string_view>{}(x);
  }
};

} // namespace

struct fence_guard::state {
  fence_options opts;
  std::unique_ptr<fence_store> store;
  // False while a store is present and restore() has not succeeded: everything is rejected.
  std::atomic<bool> restored{false};

  mutable std::mutex mtx;
  std::unordered_map<std::string, std::shared_ptr<entry>, string_hash, std::equal_to<>> map;
  // Most recently used first.
  std::list<std::shared_ptr<entry>> lru;
  uint64_t floor = 0;

  // With `mtx` held: forgets unpinned least recently used names while there are more than
  // max_names, raising the floor; persists a raised floor (best effort: the store still holds the
  // forgotten marks until it sees the floor, so a failed save loses nothing).
  void evict_locked() {
    auto old_floor = floor;
    auto i = lru.end();
    while (map.size() > opts.max_names && i != lru.begin()) {
      --i;
      if ((*i)->users > 0)
        continue;
      floor = std::max(floor, (*i)->mark);
      map.erase((*i)->name);
      i = lru.erase(i);
    }
    if (store && floor > old_floor)
      static_cast<void>(store->save_floor(floor));
  }
};

fence_guard::fence_guard(fence_options opts) : st_(std::make_unique<state>()) {
  st_->opts = opts;
  st_->opts.max_names = std::max<size_t>(opts.max_names, 1);
  st_->restored = true;
}

fence_guard::fence_guard(fence_options opts, std::unique_ptr<fence_store> store)
  : fence_guard(opts) {
  st_->store = std::move(store);
  st_->restored = st_->store == nullptr;
}

fence_guard::~fence_guard() = default;

std::error_code fence_guard::restore() {
  if (!st_->store)
    return {};
  fence_snapshot snap;
  if (auto ec = st_->store->load(snap))
    return ec;
  std::lock_guard<std::mutex> guard{st_->mtx};
  st_->map.clear();
  st_->lru.clear();
  st_->floor = snap.floor;
  for (auto& [name, mark] : snap.marks) {
    if (mark <= st_->floor || st_->map.count(name) > 0)
      continue; // an unknown name has the floor anyway
    auto e = std::make_shared<entry>();
    e->name = name;
    e->mark = mark;
    e->persisted = mark;
    st_->lru.push_front(e);
    e->lru = st_->lru.begin();
    st_->map.emplace(name, std::move(e));
  }
  st_->evict_locked();
  st_->restored = true;
  return {};
}

fence_guard::pin::pin(fence_guard& g, std::string_view name) : g_(g) {
  auto& st = *g_.st_;
  std::lock_guard<std::mutex> guard{st.mtx};
  if (auto i = st.map.find(name); i != st.map.end()) {
    e_ = i->second;
    st.lru.splice(st.lru.begin(), st.lru, e_->lru);
    ++e_->users;
    return;
  }
  e_ = std::make_shared<entry>();
  e_->name = std::string{name};
  e_->mark = st.floor;
  e_->users = 1;
  st.lru.push_front(e_);
  e_->lru = st.lru.begin();
  st.map.emplace(e_->name, e_);
  st.evict_locked();
}

fence_guard::pin::~pin() {
  auto& st = *g_.st_;
  std::lock_guard<std::mutex> guard{st.mtx};
  --e_->users;
  // Pinned names may have pushed the count above max_names; shrink back now.
  if (st.map.size() > st.opts.max_names)
    st.evict_locked();
}

std::mutex& fence_guard::pin::mutex() const noexcept {
  return e_->mtx;
}

fence_decision fence_guard::prepare(entry& e, std::string_view name, uint64_t token) {
  if (!st_->restored)
    return {false, e.mark, fence_reason::store_failed,
            std::make_error_code(std::errc::operation_not_permitted)};
  if (token < e.mark)
    return {false, e.mark, fence_reason::stale, {}};
  if (st_->store && token > e.persisted) {
    if (auto ec = st_->store->save(name, token))
      return {false, e.mark, fence_reason::store_failed, ec};
    e.persisted = token;
  }
  return {true, e.mark, fence_reason::ok, {}};
}

fence_decision fence_guard::commit(entry& e, uint64_t token) {
  e.mark = std::max(e.mark, token);
  return {true, e.mark, fence_reason::ok, {}};
}

fence_decision fence_guard::admit(std::string_view name, uint64_t token) {
  return guarded(name, token, [] {});
}

uint64_t fence_guard::highest(std::string_view name) const {
  std::shared_ptr<entry> e;
  {
    std::lock_guard<std::mutex> guard{st_->mtx};
    auto i = st_->map.find(name);
    if (i == st_->map.end())
      return st_->floor;
    e = i->second;
  }
  // Not under the map mutex: a guarded write may hold the entry's mutex for a while.
  std::lock_guard<std::mutex> guard{e->mtx};
  return e->mark;
}

uint64_t fence_guard::floor() const {
  std::lock_guard<std::mutex> guard{st_->mtx};
  return st_->floor;
}

size_t fence_guard::size() const {
  std::lock_guard<std::mutex> guard{st_->mtx};
  return st_->map.size();
}

} // namespace fencelock
