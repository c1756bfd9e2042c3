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

void open_direct_call::forget_deadline() {
  // Unlinked is final, and whoever unlinked the call touched it last before saying so.
  if (!table_ || !linked_.load(std::memory_order_acquire))
    return;
  std::lock_guard guard{table_->mtx_};
  if (linked_.load(std::memory_order_relaxed))
    table_->unlink(*this);
}

bool direct_deadlines::add(time_point deadline, open_direct_call& call) {
  auto second = time_point{std::chrono::ceil<std::chrono::seconds>(deadline.time_since_epoch())};
  call.table_ = this;
  std::lock_guard guard{mtx_};
  auto& head = heads_[second];
  call.linked_.store(true, std::memory_order_relaxed);
  call.second_ = second;
  call.prev_ = nullptr;
  call.next_ = head;
  if (head != nullptr)
    head->prev_ = &call;
  head = &call;
  return watched_++ == 0;
}

void direct_deadlines::unlink(open_direct_call& call) {
  if (call.prev_ != nullptr) {
    call.prev_->next_ = call.next_;
  } else if (call.next_ != nullptr) {
    heads_[call.second_] = call.next_;
  } else {
    heads_.erase(call.second_);
  }
  if (call.next_ != nullptr)
    call.next_->prev_ = call.prev_;
  call.prev_ = call.next_ = nullptr;
  call.linked_.store(false, std::memory_order_release);
  --watched_;
}

std::size_t direct_deadlines::expire(time_point now) {
  std::vector<std::shared_ptr<open_direct_call>> overdue;
  std::size_t left = 0;
  {
    std::lock_guard guard{mtx_};
    for (auto i = heads_.begin(); i != heads_.end() && i->first <= now; i = heads_.erase(i)) {
      for (auto* call = i->second; call != nullptr;) {
        auto* next = call->next_;
        // Null when its last owner is destroying it right now: its destructor waits for the
        // mutex to unlink it, and finds it unlinked; it answers the caller itself.
        if (auto alive = call->weak_from_this().lock())
          overdue.push_back(std::move(alive));
        call->prev_ = call->next_ = nullptr;
        call->linked_.store(false, std::memory_order_release); // the last touch of `call`
        --watched_;
        call = next;
      }
    }
    left = watched_;
  }
  // Outside the mutex: the callbacks may take their time, and front ends add meanwhile.
  for (auto& call : overdue)
    call->expire();
  return left;
}

} // namespace fencelock
