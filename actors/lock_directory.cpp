#include "actors/lock_directory.hpp"

#include <algorithm>

namespace fencelock {

lock_actor lock_directory::route(const std::string& name) {
  std::lock_guard guard{mtx_};
  auto i = locks_.find(name);
  if (i == locks_.end() || !i->second.handle)
    return {};
  ++i->second.routed;
  return i->second.handle;
}

lock_actor lock_directory::find(const std::string& name) const {
  std::lock_guard guard{mtx_};
  auto i = locks_.find(name);
  return i == locks_.end() ? lock_actor{} : i->second.handle;
}

void lock_directory::add(const std::string& name, lock_actor handle, uint64_t routed) {
  std::lock_guard guard{mtx_};
  auto [i, added] = locks_.try_emplace(name);
  if (!added && !i->second.handle)
    --kept_;
  i->second = entry{std::move(handle), routed, 0};
}

std::optional<uint64_t> lock_directory::kept(const std::string& name) const {
  std::lock_guard guard{mtx_};
  auto i = locks_.find(name);
  if (i == locks_.end() || i->second.handle)
    return std::nullopt;
  return i->second.grant_id;
}

std::unordered_map<std::string, lock_directory::entry>::const_iterator lock_directory::find_idle(
  const std::string& name, const caf::actor_addr& actor, uint64_t seen) const {
  auto i = locks_.find(name);
  if (i != locks_.end()
      && (!i->second.handle || i->second.handle.address() != actor || i->second.routed != seen))
    return locks_.end();
  return i;
}

bool lock_directory::report_idle(idle_report report, std::size_t kept) {
  std::lock_guard guard{mtx_};
  if (find_idle(report.name, report.actor, report.seen) == locks_.end())
    return false; // something is still on its way to that actor
  auto number = ++reports_;
  latest_.insert_or_assign(report.actor, number);
  idle_.emplace_back(std::move(report), number);
  // Stale reports are dropped once they outnumber the latest ones, so that an actor reporting
  // again and again (a lease renewed often) cannot grow the queue.
  if (idle_.size() > 2 * latest_.size() + 64)
    std::erase_if(idle_, [&](const auto& x) {
      auto i = latest_.find(x.first.actor);
      return i == latest_.end() || i->second != x.second;
    });
  return latest_.size() > kept;
}

std::optional<lock_directory::idle_report> lock_directory::pop_idle() {
  std::lock_guard guard{mtx_};
  while (!idle_.empty()) {
    auto [report, number] = std::move(idle_.front());
    idle_.pop_front();
    auto i = latest_.find(report.actor);
    if (i == latest_.end() || i->second != number)
      continue; // superseded by a later report of the same actor
    latest_.erase(i);
    return std::move(report);
  }
  return std::nullopt;
}

std::size_t lock_directory::idle_actors() const {
  std::lock_guard guard{mtx_};
  return latest_.size();
}

lock_actor lock_directory::take_if_idle(const std::string& name, const caf::actor_addr& actor,
                                        uint64_t seen, bool keep_lease, uint64_t grant_id) {
  std::lock_guard guard{mtx_};
  auto found = find_idle(name, actor, seen);
  if (found == locks_.end())
    return {};
  auto i = locks_.find(name); // the mutable one
  auto handle = std::move(i->second.handle);
  if (keep_lease) {
    i->second = entry{{}, 0, grant_id};
    ++kept_;
  } else {
    locks_.erase(i);
  }
  return handle;
}

bool lock_directory::forget_kept(const std::string& name) {
  std::lock_guard guard{mtx_};
  auto i = locks_.find(name);
  if (i == locks_.end() || i->second.handle)
    return false;
  locks_.erase(i);
  --kept_;
  return true;
}

bool lock_directory::forget(const caf::actor_addr& actor) {
  std::lock_guard guard{mtx_};
  for (auto i = locks_.begin(); i != locks_.end(); ++i) {
    if (i->second.handle && i->second.handle.address() == actor) {
      locks_.erase(i);
      return true;
    }
  }
  return false;
}

std::vector<lock_actor> lock_directory::take_all() {
  std::lock_guard guard{mtx_};
  std::vector<lock_actor> out;
  out.reserve(locks_.size() - kept_);
  for (auto& [name, e] : locks_)
    if (e.handle)
      out.push_back(std::move(e.handle));
  locks_.clear();
  kept_ = 0;
  return out;
}

std::vector<lock_actor> lock_directory::all() const {
  std::lock_guard guard{mtx_};
  std::vector<lock_actor> out;
  out.reserve(locks_.size() - kept_);
  for (auto& [name, e] : locks_)
    if (e.handle)
      out.push_back(e.handle);
  return out;
}

std::size_t lock_directory::size() const {
  std::lock_guard guard{mtx_};
  return locks_.size();
}

std::size_t lock_directory::actors() const {
  std::lock_guard guard{mtx_};
  return locks_.size() - kept_;
}

void lock_directory::note_waiting(const caf::actor_addr& actor, bool waiting) {
  std::lock_guard guard{waiting_mtx_};
  if (waiting)
    waiting_.insert(actor);
  else
    waiting_.erase(actor);
}

std::vector<lock_actor> lock_directory::waiting() const {
  std::lock_guard guard{waiting_mtx_};
  std::vector<lock_actor> out;
  out.reserve(waiting_.size());
  for (auto& addr : waiting_)
    if (auto handle = caf::actor_cast<caf::strong_actor_ptr>(addr))
      out.push_back(caf::actor_cast<lock_actor>(std::move(handle)));
  return out;
}

} // namespace fencelock
