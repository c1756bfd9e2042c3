#include "client/renewal_schedule.hpp"

#include <algorithm>
#include <utility>

namespace fencelock::detail {

namespace {

using duration = renewal_schedule::duration;

// fraction · ttl, rounded to the clock's tick (1/3 of 300 ms is 100 ms, not 99.999999 ms).
duration scaled(std::chrono::milliseconds ttl, double fraction) noexcept {
  return std::chrono::round<duration>(
    std::chrono::duration<double, std::milli>{static_cast<double>(ttl.count()) * fraction});
}

} // namespace

renewal_schedule::renewal_schedule(std::chrono::milliseconds ttl, double fraction,
                                   time_point sent) noexcept
  : ttl_(ttl),
    period_(scaled(ttl, fraction)),
    deadline_(sent + ttl),
    renew_at_(sent + period_),
    last_sent_(sent) {
}

renewal_schedule::action renewal_schedule::poll(time_point now) noexcept {
  if (lost_)
    return action::wait;
  if (now >= deadline_) {
    lost_ = true;
    return action::lost;
  }
  if (now >= renew_at_)
    return action::renew;
  return action::wait;
}

void renewal_schedule::renew_sent(time_point now) noexcept {
  last_sent_ = now;
  renew_at_ = now + period_;
}

bool renewal_schedule::renew_confirmed(time_point sent, std::chrono::milliseconds ttl) noexcept {
  if (lost_)
    return false;
  deadline_ = std::max(deadline_, sent + ttl);
  return true;
}

void renewal_schedule::renew_failed(time_point sent, time_point now) noexcept {
  if (lost_ || sent != last_sent_)
    return; // a newer attempt is out; its answer decides
  renew_at_ = std::min(renew_at_, now + retry_interval());
}

bool renewal_schedule::mark_lost() noexcept {
  return !std::exchange(lost_, true);
}

renewal_schedule::time_point renewal_schedule::next_wakeup() const noexcept {
  if (lost_)
    return time_point::max();
  return std::min(renew_at_, deadline_);
}

duration renewal_schedule::retry_interval() const noexcept {
  using std::chrono::milliseconds;
  return std::clamp<duration>(ttl_ / 10, milliseconds{10}, milliseconds{1000});
}

bool renewal_schedule::stale_on_arrival(std::chrono::milliseconds ttl, double fraction,
                                        time_point sent, time_point now) noexcept {
  return now >= sent + scaled(ttl, fraction);
}

} // namespace fencelock::detail
