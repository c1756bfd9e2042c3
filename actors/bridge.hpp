#pragma once

// The bridge: turns the service's callback calls into requests to the registry without
// blocking anybody. Each call arrives with its callback; the reply handler runs the callback on
// the bridge's worker thread.

#include <atomic>
#include <memory>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>

#include "fencelock/interfaces.hpp"
#include "fencelock/service.hpp"

namespace fencelock {

/// Carries a caller's callback through the bridge. Callbacks never leave the process.
template <class T>
struct reply_to {
  callback<T> fn;
};

/// Forwards each call to `registry` and runs its callback with the answer. Errors other than
/// fencelock codes (an actor gone, a timeout) reach callbacks as `unavailable`, or as
/// `shutting_down` once `running` is false.
caf::behavior bridge_impl(caf::event_based_actor* self, registry_actor registry,
                          std::shared_ptr<std::atomic<bool>> running);

} // namespace fencelock

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::reply_to<fencelock::lease>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::reply_to<bool>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::reply_to<fencelock::lock_status>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::reply_to<fencelock::lock_list>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::reply_to<fencelock::check_result>)
