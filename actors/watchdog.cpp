#include "actors/watchdog.hpp"

#include <algorithm>
#include <chrono>

#include <caf/message_priority.hpp>

#include "actors/clock.hpp"
#include "actors/metrics.hpp"
#include "common/log.hpp"

namespace fencelock {

expiry_pacing expiry_pacing::per_second(uint32_t per_second) {
  expiry_pacing result;
  if (per_second == 0) {
    result.batch = UINT32_MAX;
    return result;
  }
  // A slice every 10 ms (a hundred a second), and never less than one expiry per slice.
  result.interval = std::chrono::milliseconds{10};
  result.batch = std::max<uint32_t>(1, per_second / 100);
  return result;
}

namespace {

using self_ptr = watchdog_actor::stateful_pointer<watchdog_state>;

// Sends the tick claimed for `at` (expiry_schedule::arm or next_tick).
void tick_at(self_ptr self, caf::actor_clock::time_point at) {
  auto delay = at - self->clock().now();
  if (delay < caf::actor_clock::duration_type::zero())
    delay = caf::actor_clock::duration_type::zero();
  self->delayed_send(self, delay, tick_atom_v);
}

void schedule_next(self_ptr self) {
  if (auto at = self->state.schedule->next_tick())
    tick_at(self, *at);
}

// Notes a stall if the actor was not scheduled for longer than a stall takes, opens the grace
// window of a store that judges leases on this process's clock, and says so in the log and the
// metrics: called before anything is judged after a wake-up.
void observe_stall(self_ptr self, caf::actor_clock::time_point now) {
  auto& st = self->state;
  auto gap = now - st.last_beat;
  if (st.stalls.threshold > caf::timespan::zero() && gap > st.stalls.overdue()) {
    boost::json::object fields{
      {"stalled_ms", std::chrono::duration_cast<std::chrono::milliseconds>(gap).count()}};
    if (st.window) {
      st.window->open(st.last_beat, now, now + st.stalls.grace);
      fields["grace_ms"] =
        std::chrono::duration_cast<std::chrono::milliseconds>(st.stalls.grace).count();
    }
    if (st.metrics)
      st.metrics->stall_detected(st.last_beat, now);
    log_event(log_level::warn, "process_stalled", fields);
  }
  st.last_beat = now;
  if (st.stalls.threshold <= caf::timespan::zero())
    return;
  // After open(): until the beat, readers find the stall under way; after it, in the window.
  if (st.window)
    st.window->beat(now);
  if (st.metrics)
    st.metrics->heartbeat(st.stalls.overdue());
}

} // namespace

watchdog_actor::behavior_type watchdog_impl(self_ptr self,
                                            std::shared_ptr<expiry_schedule> schedule,
                                            std::shared_ptr<stall_window> window,
                                            stall_settings settings, std::shared_ptr<metrics> stats,
                                            expiry_pacing pacing) {
  auto& init = self->state;
  init.schedule = std::move(schedule);
  init.window = std::move(window);
  init.stalls = settings;
  init.metrics = std::move(stats);
  init.pacing = pacing;
  init.last_beat = self->clock().now();
  // Stalls are watched with every store: the embedded one needs the grace, and with any store a
  // stall must not read as a slow store.
  if (init.stalls.threshold > caf::timespan::zero()) {
    if (init.window)
      init.window->watch(init.stalls, init.last_beat);
    self->delayed_send(self, init.stalls.heartbeat, heartbeat_atom_v);
  }
  return {
    [=](heartbeat_atom) {
      observe_stall(self, self->clock().now());
      self->delayed_send(self, self->state.stalls.heartbeat, heartbeat_atom_v);
    },
    [=](route_atom, registry_actor& registry) { self->state.registry = std::move(registry); },
    [=](arm_atom, int64_t tick_ns) { tick_at(self, from_ns(tick_ns)); },
    [=](tick_atom) {
      auto& st = self->state;
      auto now = self->clock().now();
      observe_stall(self, now); // a stall must be known before expiries go out after it
      st.schedule->ticked(now);
      bool more = false;
      for (auto& t : st.schedule->take_due(now, st.pacing.batch, more))
        // Expiry goes ahead of ordinary requests, at the registry and in the lock's mailbox.
        if (st.registry)
          self->send<caf::message_priority::high>(st.registry, expire_atom_v, std::move(t.name),
                                                  t.token);
      if (more) // the rest goes out in the next slice: renewals get their turn in between
        st.schedule->pace_until(now + st.pacing.interval);
      schedule_next(self);
    },
  };
}

} // namespace fencelock
