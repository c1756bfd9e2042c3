#include "actors/watchdog.hpp"

#include <algorithm>

#include <caf/message_priority.hpp>

#include "actors/clock.hpp"
#include "actors/metrics.hpp"

namespace fencelock {

expiry_pacing expiry_pacing::per_second(uint32_t per_second) {
  expiry_pacing result;
  if (per_second == 0) {
    result.batch = UINT32_MAX;
    return result;
  }
  // Ten slices a second at most, and never less than one expiry per slice.
  result.interval = std::chrono::milliseconds{10};
  result.batch = std::max<uint32_t>(1, per_second / 100);
  return result;
}

namespace {

using self_ptr = watchdog_actor::stateful_pointer<watchdog_state>;

void schedule_tick(self_ptr self, caf::actor_clock::time_point earliest) {
  auto& st = self->state;
  earliest = std::max(earliest, st.paced_until); // a backlog drains one slice at a time
  if (st.next_tick && *st.next_tick <= earliest)
    return;
  st.next_tick = earliest;
  auto delay = earliest - self->clock().now();
  if (delay < caf::actor_clock::duration_type::zero())
    delay = caf::actor_clock::duration_type::zero();
  self->delayed_send(self, delay, tick_atom_v);
}

void schedule_next(self_ptr self) {
  auto& st = self->state;
  if (!st.timers.empty())
    schedule_tick(self, st.timers.begin()->first);
}

void remove_timer(self_ptr self, std::string_view name) {
  auto& st = self->state;
  if (auto i = st.by_lock.find(name); i != st.by_lock.end()) {
    auto pos = i->second;
    st.by_lock.erase(i); // first: its key views the timer's name
    st.timers.erase(pos);
  }
}

// Notes a stall if the actor was not scheduled for longer than a stall takes, and opens the
// grace window of a store that judges leases on this process's clock: called before anything
// is judged after a wake-up.
void observe_stall(self_ptr self, caf::actor_clock::time_point now) {
  auto& st = self->state;
  auto gap = now - st.last_beat;
  if (st.stalls.threshold > caf::timespan::zero()
      && gap > st.stalls.heartbeat + st.stalls.threshold) {
    if (st.window)
      st.window->open(st.last_beat, now, now + st.stalls.grace);
    if (st.metrics)
      st.metrics->stall_detected(st.last_beat, now);
  }
  st.last_beat = now;
}

} // namespace

watchdog_actor::behavior_type watchdog_impl(self_ptr self, std::shared_ptr<stall_window> window,
                                            stall_settings settings, std::shared_ptr<metrics> stats,
                                            expiry_pacing pacing) {
  auto& init = self->state;
  init.window = std::move(window);
  init.stalls = settings;
  init.metrics = std::move(stats);
  init.pacing = pacing;
  init.last_beat = self->clock().now();
  // Stalls are watched with every store: the embedded one needs the grace, and with any store a
  // stall must not read as a slow store.
  if (init.stalls.threshold > caf::timespan::zero())
    self->delayed_send(self, init.stalls.heartbeat, heartbeat_atom_v);
  return {
    [=](heartbeat_atom) {
      observe_stall(self, self->clock().now());
      self->delayed_send(self, self->state.stalls.heartbeat, heartbeat_atom_v);
    },
    [=](route_atom, registry_actor& registry) { self->state.registry = std::move(registry); },
    [=](arm_atom, std::string& name, uint64_t token, int64_t deadline_ns) {
      auto& st = self->state;
      remove_timer(self, name);
      auto pos = st.timers.emplace(from_ns(deadline_ns), watchdog_state::timer{std::move(name), token});
      st.by_lock.emplace(pos->second.name, pos);
      schedule_next(self);
    },
    [=](disarm_atom, const std::string& name, uint64_t token) {
      auto& st = self->state;
      auto i = st.by_lock.find(name);
      if (i != st.by_lock.end() && i->second->second.token == token)
        remove_timer(self, name);
    },
    [=](tick_atom) {
      auto& st = self->state;
      auto now = self->clock().now();
      observe_stall(self, now); // a stall must be known before expiries go out after it
      if (st.next_tick && *st.next_tick <= now)
        st.next_tick.reset();
      uint32_t sent = 0;
      while (!st.timers.empty() && st.timers.begin()->first <= now) {
        if (sent == st.pacing.batch) {
          // The rest goes out in the next slice: renewals get their turn in between.
          st.paced_until = now + st.pacing.interval;
          schedule_next(self);
          return;
        }
        auto& t = st.timers.begin()->second;
        st.by_lock.erase(t.name);
        // Expiry goes ahead of ordinary requests, at the registry and in the lock's mailbox.
        if (st.registry)
          self->send<caf::message_priority::high>(st.registry, expire_atom_v, std::move(t.name),
                                                  t.token);
        st.timers.erase(st.timers.begin());
        ++sent;
      }
      schedule_next(self);
    },
  };
}

} // namespace fencelock
