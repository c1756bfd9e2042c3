#include "actors/registry.hpp"

#include <optional>

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
    m->set_lock_actors(self->state.ctx->locks->actors());
}

/// Spawns the actor of `name`, with `routed` messages about to be sent to it; `grant_id` is
/// the request its kept lease was granted to here (0 = none).
lock_actor spawn_lock(self_ptr self, const std::string& name, uint64_t routed,
                      uint64_t grant_id = 0) {
  auto& st = self->state;
  auto handle = self->spawn(lock_actor_impl, name, st.ctx, grant_id);
  self->monitor(handle);
  st.ctx->locks->add(name, handle, routed);
  count_actors(self);
  return handle;
}

/// Retires the actor of `report` if the report still holds (a held lease stays as a kept
/// lease); returns whether it did.
bool retire_if_idle(self_ptr self, const lock_directory::idle_report& report) {
  auto handle = self->state.ctx->locks->take_if_idle(report.name, report.actor, report.seen,
                                                     report.held, report.grant_id);
  if (!handle)
    return false; // used again since, or retired already
  self->demonitor(report.actor);
  self->send(handle, retire_atom_v, report.held);
  count_actors(self);
  return true;
}

/// Retires idle actors, longest idle first, until one gave its place up; returns whether one
/// did. (Actors of held leases retire on the way, but keep their places.)
bool evict_idle(self_ptr self) {
  while (auto report = self->state.ctx->locks->pop_idle())
    if (retire_if_idle(self, *report) && !report->held)
      return true;
  return false;
}

/// Retires the longest idle actors beyond the ctx->idle_kept kept for their next request.
void trim_idle(self_ptr self) {
  auto& locks = *self->state.ctx->locks;
  while (locks.idle_actors() > self->state.ctx->idle_kept)
    if (auto oldest = locks.pop_idle())
      retire_if_idle(self, *oldest);
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
/// none to route to. A kept lease always gets its actor back: what the request is about is
/// there. `capped` is set when one was needed but max-locks places are taken already: a flood
/// of new names cannot grow memory without bound, whatever the request.
lock_actor route(self_ptr self, const std::string& name, route_kind kind, bool& capped) {
  auto& st = self->state;
  capped = false;
  if (auto handle = st.ctx->locks->route(name))
    return handle;
  if (auto grant_id = st.ctx->locks->kept(name))
    return spawn_lock(self, name, 1, *grant_id); // its place is counted already
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
  if (ctx.watchdog) // before any lock actor arms an expiry
    self->send(ctx.watchdog, route_atom_v, ctx.registry);
  st.ctx = std::make_shared<const lock_context>(std::move(ctx));
  st.lister = std::move(lister);
  for (auto& name : held)
    spawn_lock(self, name, 0); // each arms its lease's expiry, max-locks or not, then retires
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
    [=](expire_atom, std::string& name, uint64_t token) {
      // Not counted as routed, as the lock actor does not count expiries: it is no request.
      auto& locks = *self->state.ctx->locks;
      auto handle = locks.find(name);
      if (!handle) {
        auto grant_id = locks.kept(name);
        if (!grant_id)
          return; // the lock has no lease here any more: a stale timer
        handle = spawn_lock(self, name, 0, *grant_id);
      }
      self->send<caf::message_priority::high>(handle, expire_atom_v, token);
    },
    [=](retire_atom, const std::string& name) {
      if (self->state.ctx->locks->forget_kept(name))
        count_actors(self);
    },
    [=](idle_atom) { trim_idle(self); },
  };
}

} // namespace fencelock
