#include "actors/watchdog.hpp"

#include <caf/message_priority.hpp>

#include "actors/clock.hpp"

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

} // namespace

watchdog_actor::behavior_type watchdog_impl(self_ptr self) {
  return {
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
