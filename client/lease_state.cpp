#include "client/lease_state.hpp"

namespace fencelock::detail {

lease_state::lease_state(const lease_fields& granted, lease_scope sc,
                         std::chrono::milliseconds local_ttl_, renewal_schedule sched,
                         const connection::executor& ex)
  : name(granted.name),
    owner(granted.owner),
    token(granted.token),
    ttl(granted.ttl_ms),
    local_ttl(local_ttl_),
    scope(sc),
    deadline_ticks(sched.deadline().time_since_epoch().count()),
    expires_at_ms(granted.expires_at_ms),
    schedule(sched),
    timer(ex) {
  lost_future = lost_promise_.get_future().share();
}

std::function<void()> lease_state::declare_lost(const lease_loss& loss) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (loss_ || standing_ != standing::holding)
    return {};
  loss_ = loss;
  lost_promise_.set_value(loss);
  if (!on_lost_)
    return {};
  return [cb = std::move(on_lost_), loss] { cb(loss); };
}

std::optional<lease_loss> lease_state::end_by_holder(standing to, bool& already_released) {
  std::lock_guard<std::mutex> guard{mtx_};
  already_released = standing_ == standing::released;
  if (loss_)
    return loss_;
  if (!already_released)
    standing_ = to;
  return std::nullopt;
}

std::function<void()> lease_state::set_on_lost(std::function<void(const lease_loss&)> cb) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (loss_)
    return [cb = std::move(cb), loss = *loss_] { cb(loss); };
  if (standing_ == standing::holding)
    on_lost_ = std::move(cb);
  return {};
}

std::optional<lease_loss> lease_state::loss() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return loss_;
}

lease_state::standing lease_state::holder_standing() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return standing_;
}

void lease_state::publish_deadline() noexcept {
  deadline_ticks.store(schedule.deadline().time_since_epoch().count());
}

} // namespace fencelock::detail
