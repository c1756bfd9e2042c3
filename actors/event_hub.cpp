#include "actors/event_hub.hpp"

#include <algorithm>
#include <unordered_map>

namespace fencelock {

namespace {

/// Where a snapshot left one lock: events at or before it are already in the snapshot.
struct snapshot_mark {
  bool held = false;
  uint64_t token = 0;    // the holder's token when held, else the last token granted
  uint64_t revision = 0; // the holder's revision when held
};

/// Returns whether `ev` says nothing the snapshot (at `mark`) does not already show.
bool already_shown(const snapshot_mark& mark, const lock_event& ev) {
  if (ev.token != mark.token)
    return ev.token < mark.token;
  // The same token: a held snapshot shows the lease up to its revision; a free one shows it
  // ended.
  return !mark.held || ev.revision <= mark.revision;
}

bool matches(const std::string& prefix, bool exact, const std::string& name) {
  return exact ? name == prefix : name.starts_with(prefix);
}

} // namespace

uint64_t event_hub::subscribe(std::string prefix, bool exact, sink on_event) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto id = next_id_++;
  subscription sub;
  sub.prefix = std::move(prefix);
  sub.exact = exact;
  sub.on_event = std::move(on_event);
  subscriptions_.emplace(id, std::move(sub));
  ++listeners_;
  return id;
}

bool event_hub::open(uint64_t id, const std::vector<lock_status>& snapshot,
                     const std::function<void()>& deliver_snapshot) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto i = subscriptions_.find(id);
  if (i == subscriptions_.end())
    return false;
  auto& sub = i->second;
  if (sub.overflowed) {
    subscriptions_.erase(i);
    --listeners_;
    return false;
  }
  std::unordered_map<std::string, snapshot_mark> marks;
  for (const auto& st : snapshot)
    marks[st.name] = st.held ? snapshot_mark{true, st.token, st.revision}
                             : snapshot_mark{false, st.last_token, 0};
  deliver_snapshot();
  for (const auto& ev : sub.held_back) {
    auto mark = marks.find(ev.name);
    if (mark == marks.end() || !already_shown(mark->second, ev))
      sub.on_event(ev);
  }
  sub.held_back.clear();
  sub.held_back.shrink_to_fit();
  sub.live = true;
  return true;
}

void event_hub::unsubscribe(uint64_t id) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (subscriptions_.erase(id) != 0)
    --listeners_;
}

uint64_t event_hub::watch_lease(const std::string& name, sink on_end) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto id = next_id_++;
  watches_[name].watches.push_back(watch{id, 0, std::move(on_end)});
  watch_names_.emplace(id, name);
  ++listeners_;
  return id;
}

void event_hub::bind_lease_watch(uint64_t id, uint64_t token) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto name = watch_names_.find(id);
  if (name == watch_names_.end() || token == 0)
    return;
  auto& lock = watches_[name->second];
  auto w = std::find_if(lock.watches.begin(), lock.watches.end(),
                        [id](const watch& x) { return x.id == id; });
  if (w == lock.watches.end())
    return;
  auto ended = std::find_if(lock.recent_ends.begin(), lock.recent_ends.end(),
                            [token](const lock_event& ev) { return ev.token == token; });
  if (ended == lock.recent_ends.end()) {
    w->token = token;
    if (!lock.has_unbound())
      lock.forget_ends();
    return;
  }
  // The lease ended before its answer arrived.
  if (!ended_by_holder(ended->cause))
    w->on_end(*ended);
  erase_watch(name->second, id);
}

void event_hub::unwatch_lease(uint64_t id) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto name = watch_names_.find(id);
  if (name != watch_names_.end())
    erase_watch(name->second, id);
}

void event_hub::erase_watch(const std::string& name, uint64_t id) {
  auto lock = watches_.find(name);
  if (lock != watches_.end()) {
    std::erase_if(lock->second.watches, [id](const watch& w) { return w.id == id; });
    if (lock->second.watches.empty())
      watches_.erase(lock);
    else if (!lock->second.has_unbound())
      lock->second.forget_ends();
  }
  watch_names_.erase(id);
  --listeners_;
}

void event_hub::watched_lock::remember_end(const lock_event& ev) {
  if (recent_ends.size() < unbound_memory) {
    recent_ends.push_back(ev);
    return;
  }
  recent_ends[oldest_end] = ev;
  oldest_end = (oldest_end + 1) % unbound_memory;
}

void event_hub::watched_lock::forget_ends() {
  recent_ends = {}; // its memory too: the lock's watches may stay bound for long
  oldest_end = 0;
}

bool event_hub::watched_lock::has_unbound() const {
  return std::any_of(watches.begin(), watches.end(), [](const watch& w) { return w.token == 0; });
}

void event_hub::deliver(subscription& sub, const lock_event& ev) {
  if (sub.live) {
    sub.on_event(ev);
    return;
  }
  if (sub.overflowed)
    return;
  if (sub.held_back.size() >= held_back_limit) {
    sub.overflowed = true;
    sub.held_back.clear();
    return;
  }
  sub.held_back.push_back(ev);
}

bool event_hub::subscribed_to(const std::string& name) const {
  if (listeners_.load() == 0)
    return false;
  std::lock_guard<std::mutex> guard{mutex_};
  for (const auto& [id, sub] : subscriptions_)
    if (matches(sub.prefix, sub.exact, name))
      return true;
  return false;
}

void event_hub::publish(const lock_event& ev) {
  if (listeners_.load() == 0)
    return;
  std::lock_guard<std::mutex> guard{mutex_};
  for (auto& [id, sub] : subscriptions_)
    if (matches(sub.prefix, sub.exact, ev.name))
      deliver(sub, ev);
  if (!ev.ends_lease())
    return;
  auto lock = watches_.find(ev.name);
  if (lock == watches_.end())
    return;
  // A lease ends once: every watch of it fires (or, after its holder's own release, just goes).
  auto& watches = lock->second.watches;
  if (lock->second.has_unbound())
    lock->second.remember_end(ev);
  // The watches of a lock are in no order: one that fires takes the last one's place, so that
  // a hot lock's hand-off moves no watch of the waiters behind it.
  for (std::size_t i = 0; i < watches.size();) {
    if (watches[i].token != ev.token) {
      ++i;
      continue;
    }
    if (!ended_by_holder(ev.cause))
      watches[i].on_end(ev);
    watch_names_.erase(watches[i].id);
    --listeners_;
    if (i + 1 != watches.size())
      watches[i] = std::move(watches.back());
    watches.pop_back();
  }
  if (watches.empty())
    watches_.erase(lock);
}

std::size_t event_hub::subscriptions() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return subscriptions_.size();
}

void event_hub::clear() {
  std::lock_guard<std::mutex> guard{mutex_};
  subscriptions_.clear();
  watches_.clear();
  watch_names_.clear();
  listeners_ = 0;
}

} // namespace fencelock
