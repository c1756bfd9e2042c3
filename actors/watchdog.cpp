#include "actors/watchdog.hpp"

#include <caf/message_priority.hpp>

#include "actors/clock.hpp"
#include "actors/metrics.hpp"

namespace fencelock {

namespace {

using self_ptr = watchdog_actor::stateful_pointer<watchdog_state>;

void schedule_tick(self_ptr self) {
  auto& st = self->state;
  if (st.timers.empty())
    return;
  auto earliest = st.timers.begin()->first;
  if (st.next_tick && *st.next_tick <= earliest)
    return;
  st.next_tick = earliest;
  auto delay = earliest - self->clock().now();
  if (delay < caf::actor_clock::duration_type::zero())
    delay = caf::actor_clock::duration_type::zero();
  self->delayed_send(self, delay, tick_atom_v);
}

// Opens a grace window if the actor was not scheduled for longer than a stall takes: called
// before anything is judged after a wake-up.
void observe_stall(self_ptr self, caf::actor_clock::time_point now) {
  auto& st = self->state;
  if (!st.window)
    return;
  auto gap = now - st.last_beat;
  if (st.stalls.threshold > caf::timespan::zero() && gap > st.stalls.heartbeat + st.stalls.threshold) {
    st.window->open(st.last_beat, now + st.stalls.grace);
    if (st.metrics)
      st.metrics->stall_detected();
  }
  st.last_beat = now;
}

} // namespace

watchdog_actor::behavior_type watchdog_impl(self_ptr self, std::shared_ptr<stall_window> window,
                                            stall_settings settings,
                                            std::shared_ptr<metrics> stats) {
  auto& init = self->state;
  init.window = std::move(window);
  init.stalls = settings;
  init.metrics = std::move(stats);
  init.last_beat = self->clock().now();
  if (init.window)
    self->delayed_send(self, init.stalls.heartbeat, heartbeat_atom_v);
  return {
    [=](heartbeat_atom) {
      observe_stall(self, self->clock().now());
      self->delayed_send(self, self->state.stalls.heartbeat, heartbeat_atom_v);
    },
    [=](arm_atom, lock_actor& lock, uint64_t token, int64_t deadline_ns) {
      auto& st = self->state;
      if (auto i = st.by_lock.find(lock.id()); i != st.by_lock.end()) {
        st.timers.erase(i->second);
        st.by_lock.erase(i);
      }
      auto id = lock.id();
      auto pos = st.timers.emplace(from_ns(deadline_ns), watchdog_state::timer{std::move(lock), token});
      st.by_lock.emplace(id, pos);
      schedule_tick(self);
    },
    [=](tick_atom) {
      auto& st = self->state;
      auto now = self->clock().now();
      observe_stall(self, now); // a stall must be known before expiries go out after it
      if (st.next_tick && *st.next_tick <= now)
        st.next_tick.reset();
      while (!st.timers.empty() && st.timers.begin()->first <= now) {
        auto& t = st.timers.begin()->second;
        // Expiry goes ahead of ordinary requests in the lock's mailbox.
        self->send<caf::message_priority::high>(t.lock, expire_atom_v, t.token);
        st.by_lock.erase(t.lock.id());
        st.timers.erase(st.timers.begin());
      }
      schedule_tick(self);
    },
  };
}

} // namespace fencelock
