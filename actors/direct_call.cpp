#include "actors/direct_call.hpp"

#include "fencelock/errc.hpp"

namespace fencelock {

caf::error dropped_call_error(const std::atomic<bool>& running) {
  if (!running.load())
    return caf::make_error(errc::shutting_down, std::string{"the service is stopping"});
  return caf::make_error(errc::unavailable,
                         std::string{"internal: the lock's actor ended without answering"});
}

caf::error overdue_call_error(const std::atomic<bool>& running) {
  if (!running.load())
    return caf::make_error(errc::shutting_down, std::string{"the service is stopping"});
  return caf::make_error(errc::unavailable,
                         std::string{"internal: no answer in time (is the store stalled?)"});
}

bool direct_deadlines::add(time_point deadline, std::weak_ptr<open_direct_call> call) {
  auto second = std::chrono::ceil<std::chrono::seconds>(deadline.time_since_epoch());
  std::lock_guard guard{mtx_};
  due_[time_point{second}].push_back(std::move(call));
  return watched_++ == 0;
}

std::size_t direct_deadlines::expire(time_point now) {
  std::vector<std::weak_ptr<open_direct_call>> overdue;
  std::size_t left = 0;
  {
    std::lock_guard guard{mtx_};
    for (auto i = due_.begin(); i != due_.end() && i->first <= now; i = due_.erase(i)) {
      watched_ -= i->second.size();
      for (auto& call : i->second)
        overdue.push_back(std::move(call));
    }
    left = watched_;
  }
  // Outside the mutex: the callbacks may take their time, and a front end adds meanwhile.
  for (auto& call : overdue)
    if (auto open = call.lock())
      open->expire();
  return left;
}

} // namespace fencelock
