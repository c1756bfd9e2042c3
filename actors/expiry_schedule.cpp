#include "actors/expiry_schedule.hpp"

#include <algorithm>

namespace fencelock {

std::optional<expiry_schedule::time_point> expiry_schedule::arm(const std::string& name,
                                                                 uint64_t token,
                                                                 time_point deadline) {
  std::lock_guard<std::mutex> guard{mtx_};
  remove(name);
  auto pos = timers_.emplace(deadline, timer{name, token});
  by_lock_.emplace(pos->second.name, pos);
  return claim_tick(deadline);
}

void expiry_schedule::disarm(const std::string& name, uint64_t token) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto i = by_lock_.find(name);
  if (i != by_lock_.end() && i->second->second.token == token)
    remove(name);
}

void expiry_schedule::ticked(time_point now) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (tick_ && *tick_ <= now)
    tick_.reset();
}

std::vector<expiry_schedule::timer> expiry_schedule::take_due(time_point now, uint32_t max,
                                                              bool& more) {
  std::lock_guard<std::mutex> guard{mtx_};
  std::vector<timer> out;
  while (!timers_.empty() && timers_.begin()->first <= now && out.size() < max) {
    auto& t = timers_.begin()->second;
    by_lock_.erase(t.name); // first: its key views the timer's name
    out.push_back(std::move(t));
    timers_.erase(timers_.begin());
  }
  more = !timers_.empty() && timers_.begin()->first <= now;
  return out;
}

void expiry_schedule::pace_until(time_point until) {
  std::lock_guard<std::mutex> guard{mtx_};
  paced_until_ = until;
}

std::optional<expiry_schedule::time_point> expiry_schedule::next_tick() {
  std::lock_guard<std::mutex> guard{mtx_};
  if (timers_.empty())
    return std::nullopt;
  return claim_tick(timers_.begin()->first);
}

std::size_t expiry_schedule::size() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return timers_.size();
}

std::optional<expiry_schedule::time_point> expiry_schedule::claim_tick(time_point at) {
  at = std::max(at, paced_until_);
  if (tick_ && *tick_ <= at)
    return std::nullopt;
  tick_ = at;
  return at;
}

void expiry_schedule::remove(std::string_view name) {
  if (auto i = by_lock_.find(name); i != by_lock_.end()) {
    auto pos = i->second;
    by_lock_.erase(i); // first: its key views the timer's name
    timers_.erase(pos);
  }
}

} // namespace fencelock
