#include "actors/registry.hpp"

#include <caf/exit_reason.hpp>

#include "actors/lock_directory.hpp"
#include "actors/lock_errors.hpp"
#include "actors/metrics.hpp"
#include "fencelock/errc.hpp"

namespace fencelock {

namespace {

using self_ptr = registry_actor::stateful_pointer<registry_state>;

void count_actors(self_ptr self) {
  if (auto* m = self->state.ctx->metrics.get())
    m->set_lock_actors(self->state.ctx->locks->size());
}

/// Spawns the actor of `name`, with `routed` messages about to be sent to it.
lock_actor spawn_lock(self_ptr self, const std::string& name, uint64_t routed) {
  auto& st = self->state;
  auto handle = self->spawn(lock_actor_impl, name, st.ctx);
  self->monitor(handle);
  st.ctx->locks->add(name, handle, routed);
  count_actors(self);
  return handle;
}

/// Retires the actor of `report` if the report still holds; returns whether it did.
bool retire_if_idle(self_ptr self, const registry_state::idle_report& report) {
  auto handle = self->state.ctx->locks->take_if_idle(report.name, report.actor, report.seen);
  if (!handle)
    return false; // used again since, or retired already
  self->demonitor(report.actor);
  self->send(handle, retire_atom_v);
  count_actors(self);
  return true;
}

/// Retires the longest idle actor that is still idle; returns whether there was one.
bool evict_idle(self_ptr self) {
  auto& idle = self->state.idle;
  while (!idle.empty()) {
    auto report = std::move(idle.front());
    idle.pop_front();
    if (retire_if_idle(self, report))
      return true;
  }
  return false;
}

/// Stops every lock actor: with a message those waiting (they have answers to give) and those
/// that something else still holds on to (a call on its way, a store request's timer), and by
/// dropping the last handle the others, most of a server holding many leases. (A message to each
/// of a million quiet actors kept a stopping server busy for minutes.)
void stop_lock_actors(self_ptr self, const caf::error& reason) {
  auto& locks = *self->state.ctx->locks;
  auto waiting = locks.waiting(); // handles held here: each waiting actor counts as held below
  for (auto& handle : locks.take_all()) {
    auto* block = caf::actor_cast<caf::actor_control_block*>(handle);
    if (block->strong_refs.load() > 1)
      self->send_exit(handle, reason);
  }
}

caf::error too_many_locks(self_ptr self) {
  return caf::make_error(errc::overloaded,
                         "overloaded: " + std::to_string(self->state.ctx->max_locks)
                           + " locks are in use (max-locks)");
}

/// How a request finds its lock actor.
enum class route_kind {
  /// Spawn the actor if there is none (and max-locks allows one).
  spawn,
  /// Spawn one only where the lease may be held without an actor here (a shared store);
  /// otherwise no actor means no lease.
  spawn_if_shared,
  /// Only an existing actor: what the request is about lives in it or nowhere.
  existing,
};

/// Returns the actor of `name` (counting one more message routed to it), or null when there is
/// none to route to. `capped` is set when one was needed but max-locks actors exist already:
/// a flood of new names cannot grow memory without bound, whatever the request.
lock_actor route(self_ptr self, const std::string& name, route_kind kind, bool& capped) {
  auto& st = self->state;
  capped = false;
  if (auto handle = st.ctx->locks->route(name))
    return handle;
  if (kind == route_kind::existing
      || (kind == route_kind::spawn_if_shared && !st.ctx->store->shared()))
    return {};
  if (st.ctx->locks->size() >= st.ctx->max_locks && !evict_idle(self)) {
    capped = true;
    return {};
  }
  return spawn_lock(self, name, 1);
}

} // namespace

registry_actor::behavior_type registry_impl(self_ptr self, lock_context ctx, lister_actor lister,
                                            std::vector<std::string> held) {
  auto& st = self->state;
  ctx.registry = caf::actor_cast<registry_actor>(self);
  st.ctx = std::make_shared<const lock_context>(std::move(ctx));
  st.lister = std::move(lister);
  for (auto& name : held)
    spawn_lock(self, name, 0); // held locks always have an actor, max-locks or not
  // A lock actor that dies (its record could not be loaded) is forgotten; the next request for
  // its name spawns a fresh one.
  self->set_down_handler([=](caf::down_msg& dm) {
    if (self->state.ctx->locks->forget(dm.source))
      count_actors(self);
  });
  // Lock actors are not linked (one failing must not take the others down), so stopping the
  // registry stops them explicitly.
  self->set_exit_handler([=](caf::exit_msg& msg) {
    stop_lock_actors(self, msg.reason);
    count_actors(self);
    self->quit(msg.reason);
  });
  return {
    [=](acquire_atom, acquire_request& req) -> caf::result<lease> {
      bool capped;
      if (auto handle = route(self, req.name, route_kind::spawn, capped))
        return self->delegate(handle, acquire_atom_v, std::move(req));
      return too_many_locks(self);
    },
    [=](renew_atom, renew_request& req) -> caf::result<lease> {
      bool capped;
      if (auto handle = route(self, req.name, route_kind::spawn_if_shared, capped))
        return self->delegate(handle, renew_atom_v, std::move(req));
      return capped ? too_many_locks(self) : lease_lost_error();
    },
    [=](release_atom, release_request& req) -> caf::result<bool> {
      bool capped;
      if (auto handle = route(self, req.name, route_kind::spawn_if_shared, capped))
        return self->delegate(handle, release_atom_v, std::move(req));
      return capped ? too_many_locks(self) : lease_lost_error();
    },
    [=](status_atom, std::string& name) -> caf::result<lock_status> {
      bool capped;
      if (auto handle = route(self, name, route_kind::spawn, capped))
        return self->delegate(handle, status_atom_v, std::move(name));
      return too_many_locks(self);
    },
    [=](check_atom, check_request& req) -> caf::result<check_result> {
      bool capped;
      if (auto handle = route(self, req.name, route_kind::spawn_if_shared, capped))
        return self->delegate(handle, check_atom_v, std::move(req));
      if (capped)
        return too_many_locks(self);
      return check_result{}; // no actor and no shared store: nothing is current
    },
    [=](list_atom, list_request& req) -> caf::result<lock_list> {
      return self->delegate(self->state.lister, list_atom_v, std::move(req));
    },
    [=](cancel_atom, std::string& name, uint64_t request_id) {
      // Waiters and undeliverable grants live in this instance's actors, or nowhere.
      bool capped;
      if (auto handle = route(self, name, route_kind::existing, capped))
        self->send(handle, cancel_atom_v, std::move(name), request_id);
    },
    [=](heard_atom, const std::string& name, uint64_t token, bool ended) {
      // Only an existing actor can have waiters or a watched lease here.
      if (auto handle = self->state.ctx->locks->find(name)) // not counted: not a routed request
        self->send(handle, heard_atom_v, token, ended);
    },
    [=](resync_atom) {
      for (auto& handle : self->state.ctx->locks->all())
        self->send(handle, resync_atom_v);
    },
    [=](watch_atom, std::string& name, std::string& owner, uint64_t token, int64_t expires_at_ms,
        int64_t remaining_ms) {
      bool capped;
      if (auto handle = route(self, name, route_kind::spawn, capped))
        self->send(handle, watch_atom_v, std::move(owner), token, expires_at_ms, remaining_ms);
    },
    [=](drain_atom) {
      // Only waiters are drained; an actor that queues one after this looks sees the draining
      // flag (lock_actor.cpp, queue_or_refuse).
      for (auto& handle : self->state.ctx->locks->waiting())
        self->send<caf::message_priority::high>(handle, drain_atom_v);
    },
    [=](idle_atom, std::string& name, uint64_t seen) {
      auto& reg = self->state;
      registry_state::idle_report report{
        std::move(name), caf::actor_cast<caf::actor_addr>(self->current_sender()), seen};
      if (!reg.ctx->locks->idle(report.name, report.actor, report.seen))
        return; // something is still on its way to that actor
      if (reg.ctx->idle_kept == 0) {
        retire_if_idle(self, report);
        return;
      }
      // Kept for its next request; the oldest reports beyond the bound are retired (or skipped
      // as stale). A stale report counts until then: the bound holds either way.
      reg.idle.push_back(std::move(report));
      while (reg.idle.size() > reg.ctx->idle_kept) {
        auto oldest = std::move(reg.idle.front());
        reg.idle.pop_front();
        retire_if_idle(self, oldest);
      }
    },
  };
}

} // namespace fencelock
