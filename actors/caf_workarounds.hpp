#pragma once

// Three defects of CAF 0.17.6 (the version Debian 12 ships) that decide whether a message is
// answered at all, and the one place each is worked around. CAF 0.18 replaced these mechanisms.

#include <caf/duration.hpp>
#include <caf/error.hpp>
#include <caf/timespan.hpp>

namespace fencelock {

/// `request<P>(dest, std::chrono::duration, ...)` forwards to the caf::duration overload without
/// P: the request goes out with normal priority, and so does its answer. A request with a
/// priority passes its timeout through this.
inline caf::duration priority_timeout(caf::timespan timeout) {
  return caf::duration{timeout};
}

/// While an actor awaits a response (`.await`) it skips every other message into a cache per
/// priority, and a cache is put back into the mailbox only when a message of that priority is
/// consumed. So an urgent request that arrived during a normal-priority await (or the reverse)
/// waits for the next message of its own priority, which may never come. Call this when an
/// await ends: what was skipped meanwhile is taken up, in order, or skipped again by the next
/// await.
template <class Self>
void resume_skipped(Self* self) {
  self->get_urgent_queue().flush_cache();
  self->get_normal_queue().flush_cache();
}

/// An actor that ends with a response promise undelivered drops it: CAF 0.17 sends no
/// `broken_promise`, and a request without a timeout then waits forever. The actors whose
/// requests carry no timeout (the store actor, the fence issuer: their answers are awaited on
/// every grant, where a CAF timeout would cost the clock thread two wake-ups) call this on the
/// promises they still hold as their state is destroyed, however the actor ends.
template <class Promises>
void break_promises(Promises& promises, const caf::error& why) {
  for (auto& rp : promises)
    if (rp.pending())
      rp.deliver(why);
  promises.clear();
}

} // namespace fencelock
