#pragma once

// The bridge: turns the service's callback calls into requests to the registry without
// blocking anybody. Each call arrives with its callback; the reply handler runs the callback on
// the bridge's worker thread. Calls for a lock whose actor runs skip it (actors/direct_call.hpp).

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/direct_call.hpp"
#include "fencelock/interfaces.hpp"
#include "fencelock/service.hpp"

namespace fencelock {

/// Carries a caller's callback through the bridge. Callbacks never leave the process.
template <class T>
struct reply_to {
  callback<T> fn;
};

/// A call the bridge forwarded and that is not answered yet.
struct open_call {
  bool answered = false;
  /// Answers the caller with an error; runs at most once, and only while unanswered.
  std::function<void(caf::error)> fail;
};

/// The bridge's calls by deadline. One look a second answers the overdue ones: no CAF request
/// timeout per call, each of which would cost a hand-off to CAF's clock thread when set and
/// another when it fires, 30 s later, answered or not (CAF 0.17 never cancels them).
struct bridge_state {
  std::multimap<caf::actor_clock::time_point, std::shared_ptr<open_call>> deadlines;
  std::shared_ptr<direct_deadlines> direct;
  bool sweep_armed = false;
};

using bridge_actor_ptr = caf::stateful_actor<bridge_state>*;

/// How long a call may go unanswered (an acquire: plus its wait), through the bridge or direct.
constexpr auto call_timeout = std::chrono::seconds{30};

/// Forwards each call to `registry` and runs its callback with the answer. Errors other than
/// fencelock codes (an actor gone, a call past its deadline) reach callbacks as `unavailable`,
/// or as `shutting_down` once `running` is false. The sweep also answers the overdue calls of
/// `direct` (null: none), and runs while any is watched; an `arm_atom` from whoever adds the
/// first one starts it.
caf::behavior bridge_impl(bridge_actor_ptr self, registry_actor registry,
                          std::shared_ptr<std::atomic<bool>> running,
                          std::shared_ptr<direct_deadlines> direct);

} // namespace fencelock

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::reply_to<fencelock::lease>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::reply_to<bool>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::reply_to<fencelock::lock_status>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::reply_to<fencelock::lock_list>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::reply_to<fencelock::check_result>)
