#pragma once

// What both lock actors (the embedded store's and the Redis store's) share: their errors, the
// service-wide waiter count, and the bookkeeping of a routed request.

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/actor_clock.hpp>
#include <caf/error.hpp>

#include "actors/lock_actor.hpp"
#include "actors/metrics.hpp"
#include "fencelock/errc.hpp"

namespace fencelock {

/// The answer to a renew or release whose token is not the owner's current lease.
caf::error lease_lost_error();

/// A store failure as callers see it: fencelock errors pass, anything else (a timeout, a dead
/// store actor) becomes store_unavailable.
caf::error store_error(const caf::error& err);

/// Returns `ms` as a duration of the actor clock.
inline caf::actor_clock::duration_type millis(int64_t ms) {
  return std::chrono::duration_cast<caf::actor_clock::duration_type>(std::chrono::milliseconds{ms});
}

/// Counts waiters entering (+) or leaving (-) a lock's queue into the service-wide total.
inline void count_waiters(const lock_context& ctx, int64_t delta) {
  if (ctx.waiting)
    *ctx.waiting += delta;
}

/// Returns whether the service-wide waiter bound leaves room for one more.
inline bool room_for_waiter(const lock_context& ctx) {
  return !ctx.waiting || ctx.waiting->load() < static_cast<int64_t>(ctx.max_waiters_total);
}

/// Returns the error that refuses a waiting acquire while the service drains, or none.
inline caf::error refuse_waiter_if_draining(const lock_context& ctx) {
  if (ctx.draining && ctx.draining->load())
    return caf::make_error(errc::shutting_down, std::string{"the service is stopping"});
  return caf::none;
}

/// Counts a request the registry routed to lock actor `self` (its `seen`, which retirement
/// compares with the registry's count), and how deep the mailbox was behind it
/// (fencelock_lock_mailbox_depth).
template <class Self>
void took_request(Self* self) {
  auto& st = self->state;
  ++st.seen;
  if (auto* m = st.ctx.metrics.get())
    m->record_mailbox_depth(self->mailbox().size());
}

} // namespace fencelock
