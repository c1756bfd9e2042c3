#include "actors/store/embedded/lock_record.hpp"

#include <algorithm>
#include <chrono>

#include "actors/stall.hpp"

namespace fencelock {

bool lock_record::alive(caf::actor_clock::time_point now,
                        const stall_window* stalls) const noexcept {
  if (!holder)
    return false;
  return stalls ? stalls->alive(holder->deadline, now) : holder->deadline > now;
}

bool lock_record::is_current(const std::string& owner, uint64_t token,
                             caf::actor_clock::time_point now,
                             const stall_window* stalls) const noexcept {
  return alive(now, stalls) && holder->owner == owner && holder->token == token;
}

stored_lock lock_record::to_stored(const std::string& name,
                                   const std::optional<lease_record>& next) const {
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

void lock_record::apply(const std::optional<lease_record>& next) {
  if (next)
    last_token = std::max(last_token, next->token);
  holder = next;
}

lock_record lock_record::from_stored(const stored_lock& rec, const clock_mapping& clock) {
  lock_record result;
  result.last_token = rec.last_token;
  if (rec.held) {
    lease_record x;
    x.owner = rec.owner;
    x.token = rec.token;
    x.ttl_ms = rec.ttl_ms;
    x.deadline = from_ns(rec.deadline_ns);
    x.expires_at_ms = clock.to_wall_ms(rec.deadline_ns);
    result.holder = std::move(x);
  }
  return result;
}

lease_record make_lease(std::string owner, uint64_t token, int64_t ttl_ms,
                        caf::actor_clock::time_point now, const clock_mapping& clock) {
  lease_record x;
  x.owner = std::move(owner);
  x.token = token;
  x.ttl_ms = ttl_ms;
  x.deadline = now
               + std::chrono::duration_cast<caf::actor_clock::duration_type>(
                 std::chrono::milliseconds{ttl_ms});
  x.expires_at_ms = clock.to_wall_ms(to_ns(x.deadline));
  return x;
}

} // namespace fencelock
