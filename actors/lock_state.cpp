#include "actors/lock_state.hpp"

#include <algorithm>
#include <iterator>

namespace fencelock {

admission lock_state::decide(const acquire_request& req, uint32_t max_waiters) const noexcept {
  if (waiters.empty())
    return admission::ask_store;
  if (lease && lease->owner == req.owner)
    return admission::refresh;
  if (req.wait_ms == 0)
    return admission::reject_held;
  if (waiters.size() >= max_waiters)
    return admission::reject_full;
  return admission::queue;
}

void lock_state::note_lease(const lease_record& x, bool watched) {
  if (!lease || lease->token != x.token) {
    watching = false;
    grant_id = 0;
  }
  // An answer may come back with an older revision than an event already applied (a renewal
  // through another instance): keep the highest.
  auto revision =
    lease && lease->token == x.token ? std::max(lease->revision, x.revision) : x.revision;
  lease = x;
  lease->revision = revision;
  watching = watching || watched;
}

void lock_state::forget_lease() noexcept {
  lease.reset();
  watching = false;
  grant_id = 0;
}

std::optional<waiter_info> lock_state::take_waiter(uint64_t request_id) {
  auto i = std::find_if(waiters.begin(), waiters.end(),
                        [&](const waiter_info& w) { return w.req.request_id == request_id; });
  if (i == waiters.end())
    return std::nullopt;
  auto result = std::move(*i);
  waiters.erase(i);
  return result;
}

waiter_info waiter_queue::pop_front() {
  auto result = std::move(items_[head_]);
  ++head_;
  if (empty())
    clear();
  else if (head_ >= size()) { // the popped slots outnumber the waiters: drop them
    items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  return result;
}

waiter_info lock_state::pop_front() {
  return waiters.pop_front();
}

std::vector<waiter_info> lock_state::take_overdue(caf::actor_clock::time_point now) {
  std::vector<waiter_info> overdue;
  auto keep = std::stable_partition(waiters.begin(), waiters.end(),
                                    [&](const waiter_info& w) { return w.deadline > now; });
  std::move(keep, waiters.end(), std::back_inserter(overdue));
  waiters.erase(keep, waiters.end());
  return overdue;
}

std::optional<caf::actor_clock::time_point> lock_state::earliest_deadline() const {
  auto i = std::min_element(
    waiters.begin(), waiters.end(),
    [](const waiter_info& x, const waiter_info& y) { return x.deadline < y.deadline; });
  if (i == waiters.end())
    return std::nullopt;
  return i->deadline;
}

lock_status lock_state::status(const lock_view& view) const {
  lock_status result;
  result.name = name;
  result.last_token = view.last_token;
  result.waiters = waiters.size();
  if (view.lease) {
    result.held = true;
    result.owner = view.lease->owner;
    result.token = view.lease->token;
    result.expires_at_ms = view.lease->expires_at_ms;
    result.revision = view.lease->revision;
    result.last_token = std::max(result.last_token, view.lease->token);
  }
  return result;
}

check_result check(const lock_view& view, uint64_t token) {
  check_result result;
  if (view.lease) {
    result.current = view.lease->token == token;
    result.token = view.lease->token;
    result.expires_at_ms = view.lease->expires_at_ms;
  }
  return result;
}

lease to_lease(const std::string& name, const lease_record& x) {
  return {name, x.owner, x.token, x.ttl_ms, x.expires_at_ms};
}

} // namespace fencelock
