#include "net/principal_limits.hpp"

#include "fencelock/errc.hpp"

namespace fencelock::net {

bool principal_limits::admit(const principal& who, clock::time_point now) {
  if (who.max_rate == 0)
    return true;
  std::lock_guard<std::mutex> guard{mutex_};
  auto& a = accounts_[who.name];
  if (a.rate_limit != who.max_rate) {
    a.rate = rate_limiter{who.max_rate};
    a.rate_limit = who.max_rate;
  }
  return a.rate.admit(now);
}

bool principal_limits::start_waiting(const principal& who) {
  if (who.max_waiting == 0)
    return true;
  std::lock_guard<std::mutex> guard{mutex_};
  auto& a = accounts_[who.name];
  if (a.waiting >= who.max_waiting)
    return false;
  ++a.waiting;
  return true;
}

void principal_limits::end_waiting(const std::string& name) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (auto it = accounts_.find(name); it != accounts_.end() && it->second.waiting > 0)
    --it->second.waiting;
}

uint32_t principal_limits::waiting(const std::string& name) const {
  std::lock_guard<std::mutex> guard{mutex_};
  auto it = accounts_.find(name);
  return it == accounts_.end() ? 0 : it->second.waiting;
}

std::string principal_limits::over_rate(const principal& who) {
  return "principal " + who.name + " sends more than " + std::to_string(who.max_rate)
         + " requests per second (rate:" + std::to_string(who.max_rate)
         + " in the auth file); renewals and releases still go through";
}

caf::error principal_limits::over_waiters(const principal& who) {
  return caf::make_error(errc::too_many_waiters,
                         "principal " + who.name + " has " + std::to_string(who.max_waiting)
                           + " acquires waiting already (waiters:" + std::to_string(who.max_waiting)
                           + " in the auth file)");
}

} // namespace fencelock::net
