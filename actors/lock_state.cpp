#include "actors/lock_state.hpp"

#include <algorithm>

namespace fencelock {

acquire_decision lock_state::decide(const acquire_request& req, time_point now,
                                    uint32_t max_waiters) const noexcept {
  bool held = holder && !lease_ended(now);
  if (held && holder->owner == req.owner)
    return acquire_decision::refresh;
  if (!holder && waiters.empty())
    return acquire_decision::grant;
  if (held && req.wait_ms == 0)
    return acquire_decision::reject_held;
  if (waiters.size() >= max_waiters)
    return acquire_decision::reject_full;
  return acquire_decision::wait;
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

stored_lock lock_state::record(const std::optional<holder_info>& next) const {
  stored_lock rec;
  rec.name = name;
  rec.last_token = last_token;
  if (next) {
    rec.held = true;
    rec.owner = next->owner;
    rec.token = next->token;
    rec.ttl_ms = next->ttl_ms;
    rec.deadline_ns = to_ns(next->deadline);
    rec.last_token = std::max(last_token, next->token);
  }
  return rec;
}

lease lock_state::to_lease(const holder_info& h, const clock_mapping& clock) const {
  return {name, h.owner, h.token, h.ttl_ms, clock.to_wall_ms(to_ns(h.deadline))};
}

check_result lock_state::check(uint64_t token, time_point now,
                               const clock_mapping& clock) const {
  check_result result;
  if (holder && !lease_ended(now)) {
    result.current = holder->token == token;
    result.token = holder->token;
    result.expires_at_ms = clock.to_wall_ms(to_ns(holder->deadline));
  }
  return result;
}

lock_status lock_state::status(time_point now, const clock_mapping& clock) const {
  lock_status result;
  result.name = name;
  result.last_token = last_token;
  result.waiters = waiters.size();
  if (holder && !lease_ended(now)) {
    result.held = true;
    result.owner = holder->owner;
    result.token = holder->token;
    result.expires_at_ms = clock.to_wall_ms(to_ns(holder->deadline));
    result.revision = holder->revision;
  }
  return result;
}

lock_state lock_state::from_record(const stored_lock& rec) {
  lock_state result;
  result.name = rec.name;
  result.last_token = rec.last_token;
  if (rec.held)
    result.holder = holder_info{rec.owner, rec.token, rec.ttl_ms, from_ns(rec.deadline_ns), 0, 0};
  return result;
}

} // namespace fencelock
