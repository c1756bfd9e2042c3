#pragma once

// Direct calls: the service's front end sends a call for a lock whose actor runs straight to
// that actor, with the caller's callback, and the lock actor runs the callback with its answer.
// The bridge and the registry (two actors each way) stay out of the path; they still carry the
// calls for locks without a running actor, which the registry spawns (actors/lock_directory.hpp
// tells the front end which actors run).

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <variant>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/error.hpp>
#include <caf/typed_response_promise.hpp>

#include "fencelock/service.hpp"

namespace fencelock {

/// Returns what a caller hears of a call that was dropped unanswered (its lock actor ended):
/// shutting_down once the service stops (`running` false), else unavailable.
caf::error dropped_call_error(const std::atomic<bool>& running);

/// A caller's callback carried to a lock actor. It runs at most once: with the answer, or, when
/// the call is dropped unanswered (the actor ended with it in its mailbox or its queue of
/// waiters), with dropped_call_error() as the last copy goes. Copies share the one callback.
template <class T>
class direct_reply {
public:
  direct_reply() = default;

  direct_reply(callback<T> fn, std::shared_ptr<const std::atomic<bool>> running)
    : st_(std::make_shared<state>(std::move(fn), std::move(running))) {
  }

  /// Answers the caller, unless it was answered already.
  void deliver(caf::expected<T> x) const {
    if (st_ && !std::exchange(st_->answered, true))
      st_->fn(std::move(x));
  }

private:
  struct state {
    state(callback<T> f, std::shared_ptr<const std::atomic<bool>> r)
      : fn(std::move(f)), running(std::move(r)) {
    }
    state(const state&) = delete;
    state& operator=(const state&) = delete;
    ~state() {
      if (!answered)
        fn(dropped_call_error(*running));
    }
    callback<T> fn;
    std::shared_ptr<const std::atomic<bool>> running;
    // Only the actor holding the call delivers; the last copy's end comes after that.
    bool answered = false;
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
