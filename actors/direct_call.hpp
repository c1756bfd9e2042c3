#pragma once

// Direct calls: the service's front end sends a call for a lock whose actor runs straight to
// that actor, with the caller's callback, and the lock actor runs the callback with its answer.
// The bridge and the registry (two actors each way) stay out of the path; they still carry the
// calls for locks without a running actor, which the registry spawns (actors/lock_directory.hpp
// tells the front end which actors run).

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <caf/actor_clock.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/error.hpp>
#include <caf/typed_response_promise.hpp>

#include "fencelock/service.hpp"

namespace fencelock {

/// Returns what a caller hears of a call that was dropped unanswered (its lock actor ended):
/// shutting_down once the service stops (`running` false), else unavailable.
caf::error dropped_call_error(const std::atomic<bool>& running);

/// Returns what a caller hears of a call still unanswered at its deadline (a store write that
/// does not return): shutting_down once the service stops, else unavailable.
caf::error overdue_call_error(const std::atomic<bool>& running);

/// A direct call as its deadline sees it.
class open_direct_call {
public:
  virtual ~open_direct_call() = default;
  /// Answers the caller with overdue_call_error(), unless it was answered already.
  virtual void expire() = 0;
};

/// Direct calls by deadline: the bridge's once-a-second sweep answers those still open past
/// theirs, as it answers the calls it carries itself. The lock actors await the store without a
/// timeout (a write timed out could still become durable), so a stalled write would otherwise
/// leave its callers waiting as long as it stalls. Thread-safe.
class direct_deadlines {
public:
  using time_point = caf::actor_clock::time_point;

  /// Watches `call` until `deadline`; returns true when no call was watched before, so that
  /// the caller has the sweep started.
  bool add(time_point deadline, std::weak_ptr<open_direct_call> call);

  /// Answers the watched calls whose deadline is `now` or earlier and that are still open;
  /// returns how many calls are watched after it.
  std::size_t expire(time_point now);

private:
  std::mutex mtx_;
  /// By deadline, rounded up to the second: one vector per second, not a node per call.
  std::map<time_point, std::vector<std::weak_ptr<open_direct_call>>> due_;
  std::size_t watched_ = 0;
};

/// A caller's callback carried to a lock actor. It runs exactly once: with the answer; or, when
/// the call is dropped unanswered (the actor ended with it in its mailbox or its queue of
/// waiters), with dropped_call_error() as the last copy goes; or with overdue_call_error() at
/// its deadline (direct_deadlines). Copies share the one callback.
template <class T>
class direct_reply {
public:
  direct_reply() = default;

  direct_reply(callback<T> fn, std::shared_ptr<const std::atomic<bool>> running)
    // Not make_shared: a deadline's weak reference would keep the whole block until the sweep.
    : st_(new state(std::move(fn), std::move(running))) {
  }

  /// Answers the caller, unless it was answered already.
  void deliver(caf::expected<T> x) const {
    if (st_ && !st_->answered.exchange(true))
      st_->fn(std::move(x));
  }

  /// Returns what a deadline watches.
  std::weak_ptr<open_direct_call> watch() const {
    return st_;
  }

private:
  struct state : open_direct_call {
    state(callback<T> f, std::shared_ptr<const std::atomic<bool>> r)
      : fn(std::move(f)), running(std::move(r)) {
    }
    state(const state&) = delete;
    state& operator=(const state&) = delete;
    ~state() override {
      if (!answered.load())
        fn(dropped_call_error(*running));
    }
    void expire() override {
      if (!answered.exchange(true))
        fn(overdue_call_error(*running));
    }
    callback<T> fn;
    std::shared_ptr<const std::atomic<bool>> running;
    /// The lock actor answers on its thread, the deadline on the sweep's.
    std::atomic<bool> answered{false};
  };
  std::shared_ptr<state> st_;
};

/// One request with the callback that takes its answer.
template <class Request, class T>
struct direct_call {
  Request req;
  direct_reply<T> reply;
};

/// A call for one lock, sent straight to its actor. (std::variant, wrapped: CAF's type macros
/// take no template arguments with commas.)
struct lock_call {
  std::variant<direct_call<acquire_request, lease>, direct_call<renew_request, lease>,
               direct_call<release_request, bool>, direct_call<std::string, lock_status>,
               direct_call<check_request, check_result>>
    op;
};

/// Where a lock actor's answer goes: a CAF response to the actor that asked, or the callback of
/// a direct call.
template <class T>
class answer {
public:
  answer() = default;

  explicit answer(caf::typed_response_promise<T> rp) : to_(std::move(rp)) {
  }

  explicit answer(direct_reply<T> reply) : to_(std::move(reply)) {
  }

  void deliver(T x) {
    std::visit([&](auto& to) { to.deliver(std::move(x)); }, to_);
  }

  void deliver(caf::error err) {
    std::visit([&](auto& to) { to.deliver(std::move(err)); }, to_);
  }

private:
  std::variant<caf::typed_response_promise<T>, direct_reply<T>> to_;
};

} // namespace fencelock

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::lock_call)
