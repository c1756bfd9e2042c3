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

class direct_deadlines;

/// A direct call as its deadline sees it: on its deadline second's list while unanswered.
class open_direct_call : public std::enable_shared_from_this<open_direct_call> {
public:
  open_direct_call() = default;
  open_direct_call(const open_direct_call&) = delete;
  open_direct_call& operator=(const open_direct_call&) = delete;
  virtual ~open_direct_call() = default;

  /// Answers the caller with overdue_call_error(), unless it was answered already.
  virtual void expire() = 0;

protected:
  /// Takes the call off its deadline's list: it was answered, or is being dropped.
  void forget_deadline();

private:
  friend class direct_deadlines;
  /// Set once, before the call is sent. Whoever watches calls keeps the table alive as long as
  /// any of them (the service's core, which every call's callback holds).
  direct_deadlines* table_ = nullptr;
  /// Written under the table's mutex, as the last touch of the call there (release); read
  /// without it, so that a call answered and taken off its list already (every call, as its
  /// last owner drops it) need not take the mutex again to find that out.
  std::atomic<bool> linked_{false};
  // Guarded by the table's mutex:
  caf::actor_clock::time_point second_{};
  open_direct_call* prev_ = nullptr;
  open_direct_call* next_ = nullptr;
};

/// Direct calls by deadline: the bridge's once-a-second sweep answers those still open past
/// theirs, as it answers the calls it carries itself. The lock actors await the store without a
/// timeout (a write timed out could still become durable), so a stalled write would otherwise
/// leave its callers waiting as long as it stalls. An intrusive list per deadline second: a call
/// costs no allocation here, and leaves its list when answered. Thread-safe.
class direct_deadlines {
public:
  using time_point = caf::actor_clock::time_point;

  /// Watches `call` until `deadline` (once per call); returns true when no call was watched
  /// before, so that the caller has the sweep started.
  bool add(time_point deadline, open_direct_call& call);

  /// Answers the watched calls whose deadline is `now` or earlier; returns how many calls are
  /// watched after it.
  std::size_t expire(time_point now);

private:
  friend class open_direct_call;
  /// Unlinks `call`; the caller holds the mutex.
  void unlink(open_direct_call& call);

  std::mutex mtx_;
  std::map<time_point, open_direct_call*> heads_; // the first call of each second
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
    : st_(std::make_shared<state>(std::move(fn), std::move(running))) {
  }

  /// Answers the caller, unless it was answered already.
  void deliver(caf::expected<T> x) const {
    if (st_ && !st_->answered.exchange(true)) {
      st_->forget();
      st_->fn(std::move(x));
    }
  }

  /// Has `table` answer the call at `deadline` if nothing did before; call before sending it.
  /// Returns true when the table watched no call before.
  bool watch(direct_deadlines& table, caf::actor_clock::time_point deadline) const {
    return table.add(deadline, *st_);
  }

private:
  struct state : open_direct_call {
    state(callback<T> f, std::shared_ptr<const std::atomic<bool>> r)
      : fn(std::move(f)), running(std::move(r)) {
    }
    state(const state&) = delete;
    state& operator=(const state&) = delete;
    ~state() override {
      forget_deadline(); // first: `fn` may hold the last reference to the table
      if (!answered.load())
        fn(dropped_call_error(*running));
    }
    void expire() override {
      if (!answered.exchange(true))
        fn(overdue_call_error(*running));
    }
    void forget() {
      forget_deadline();
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
