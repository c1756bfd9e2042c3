#include "actors/registry.hpp"

#include <caf/exit_reason.hpp>

#include "actors/lock_common.hpp"
#include "actors/redis_lock_actor.hpp"
#include "fencelock/errc.hpp"

namespace fencelock {

namespace {

using self_ptr = registry_actor::stateful_pointer<registry_state>;

registry_state::entry& spawn_lock(self_ptr self, const std::string& name) {
  auto& st = self->state;
  auto handle = st.ctx.redis ? self->spawn(redis_lock_actor_impl, name, st.ctx)
                             : self->spawn(lock_actor_impl, name, st.ctx);
  self->monitor(handle);
  return st.locks.emplace(name, registry_state::entry{std::move(handle), 0}).first->second;
}

// Returns the actor of `name`, spawning it on first use unless max-locks actors exist already
// (then null): a flood of new names cannot grow memory without bound.
registry_state::entry* route(self_ptr self, const std::string& name) {
  auto& st = self->state;
  auto i = st.locks.find(name);
  if (i == st.locks.end() && st.locks.size() >= st.ctx.max_locks)
    return nullptr;
  auto& e = i != st.locks.end() ? i->second : spawn_lock(self, name);
  ++e.routed;
  return &e;
}

caf::error too_many_locks(const lock_context& ctx) {
  return caf::make_error(errc::overloaded, "overloaded: " + std::to_string(ctx.max_locks)
                                             + " locks are in use (max-locks)");
}

// Renew and release need a current lease, and with the embedded store a held lock always has a
// live actor; so for a lock without one the answer is lease_lost, without spawning anything.
// With the Redis store the lease may have been granted by another instance: spawn.
registry_state::entry* route_existing(self_ptr self, const std::string& name) {
  auto& st = self->state;
  auto i = st.locks.find(name);
  if (i == st.locks.end()) {
    if (!st.ctx.redis)
      return nullptr;
    // Held leases are bounded by the acquires that max-locks let through: a renewal, release
    // or check never counts against it.
    auto& e = spawn_lock(self, name);
    ++e.routed;
    return &e;
  }
  ++i->second.routed;
  return &i->second;
}

// Lists held locks from the Redis store, which judges the deadlines itself.
void list_from_redis(self_ptr self, list_request req, caf::typed_response_promise<lock_list> rp) {
  auto& st = self->state;
  auto limit = req.limit;
  self->request(st.ctx.redis, st.ctx.store_timeout, list_atom_v, std::move(req))
    .then(
      [=](std::vector<redis::script_lease>& xs) mutable {
        lock_list result;
        for (auto& x : xs) {
          lock_status entry;
          entry.name = x.name;
          entry.held = true;
          entry.owner = x.owner;
          entry.token = x.token;
          entry.expires_at_ms = x.deadline_ms;
          entry.last_token = x.token;
          entry.revision = x.revision;
          result.locks.push_back(std::move(entry));
        }
        if (!xs.empty() && xs.size() == limit)
          result.next_cursor = xs.back().name;
        rp.deliver(std::move(result));
      },
      [=](caf::error& err) mutable { rp.deliver(store_error(err)); });
}

} // namespace

registry_actor::behavior_type registry_impl(self_ptr self, lock_context ctx,
                                            std::vector<std::string> held) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.ctx.registry = caf::actor_cast<registry_actor>(self);
  for (auto& name : held)
    spawn_lock(self, name); // held locks always have an actor, max-locks or not
  // A lock actor that dies (its record could not be loaded) is forgotten; the next request for
  // its name spawns a fresh one.
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& locks = self->state.locks;
    for (auto i = locks.begin(); i != locks.end(); ++i) {
      if (i->second.handle.address() == dm.source) {
        locks.erase(i);
        return;
      }
    }
  });
  // Lock actors are not linked (one failing must not take the others down), so stopping the
  // registry stops them explicitly.
  self->set_exit_handler([=](caf::exit_msg& msg) {
    for (auto& [name, e] : self->state.locks)
      self->send_exit(e.handle, msg.reason);
    self->state.locks.clear();
    self->quit(msg.reason);
  });
  return {
    [=](acquire_atom, acquire_request& req) -> caf::result<lease> {
      auto* e = route(self, req.name);
      if (!e)
        return too_many_locks(self->state.ctx);
      return self->delegate(e->handle, acquire_atom_v, std::move(req));
    },
    [=](renew_atom, renew_request& req) -> caf::result<lease> {
      auto* e = route_existing(self, req.name);
      if (!e)
        return lease_lost_error();
      return self->delegate(e->handle, renew_atom_v, std::move(req));
    },
    [=](release_atom, release_request& req) -> caf::result<bool> {
      auto* e = route_existing(self, req.name);
      if (!e)
        return lease_lost_error();
      return self->delegate(e->handle, release_atom_v, std::move(req));
    },
    [=](status_atom, std::string& name) -> caf::result<lock_status> {
      auto* e = route(self, name);
      if (!e)
        return too_many_locks(self->state.ctx);
      return self->delegate(e->handle, status_atom_v, std::move(name));
    },
    [=](list_atom, list_request& req) -> caf::result<lock_list> {
      auto rp = self->make_response_promise<lock_list>();
      auto limit = req.limit;
      if (self->state.ctx.redis) {
        list_from_redis(self, std::move(req), rp);
        return rp;
      }
      self->request(self->state.ctx.store, self->state.ctx.store_timeout, list_atom_v, std::move(req))
        .then(
          [=](std::vector<stored_lock>& recs) mutable {
            auto& s = self->state;
            auto now = to_ns(self->clock().now());
            lock_list result;
            for (auto& rec : recs) {
              if (rec.deadline_ns <= now)
                continue; // ended; its actor is cleaning it up
              lock_status x;
              x.name = rec.name;
              x.held = true;
              x.owner = rec.owner;
              x.token = rec.token;
              x.expires_at_ms = s.ctx.clock.to_wall_ms(rec.deadline_ns);
              x.last_token = rec.last_token;
              result.locks.push_back(std::move(x));
            }
            if (!recs.empty() && recs.size() == limit)
              result.next_cursor = recs.back().name;
            rp.deliver(std::move(result));
          },
          [=](caf::error& err) mutable { rp.deliver(store_error(err)); });
      return rp;
    },
    [=](check_atom, check_request& req) -> caf::result<check_result> {
      // A held lock always has a live actor: no actor, nothing is current.
      auto* e = route_existing(self, req.name);
      if (!e)
        return check_result{};
      return self->delegate(e->handle, check_atom_v, std::move(req));
    },
    [=](cancel_atom, std::string& name, uint64_t request_id) {
      if (auto* e = route_existing(self, name))
        self->send(e->handle, cancel_atom_v, std::move(name), request_id);
    },
    [=](wake_atom, const std::string& name) {
      // From the Redis store's event channel: only an existing actor can have waiters.
      auto& locks = self->state.locks;
      if (name.empty()) {
        // The channel was down: every lock looks again, at its waiters and its watched lease.
        for (auto& [n, e] : locks)
          self->send(e.handle, wake_atom_v, redis_lock_actor_state::resync);
        return;
      }
      if (auto i = locks.find(name); i != locks.end())
        self->send(i->second.handle, wake_atom_v, uint64_t{0});
    },
    [=](watch_atom, std::string& name, std::string& owner, uint64_t token, int64_t expires_at_ms) {
      if (auto* e = route(self, name))
        self->send(e->handle, watch_atom_v, std::move(owner), token, expires_at_ms);
    },
    [=](drain_atom) {
      for (auto& [n, e] : self->state.locks)
        self->send<caf::message_priority::high>(e.handle, drain_atom_v);
    },
    [=](idle_atom, const std::string& name, uint64_t seen) {
      auto& locks = self->state.locks;
      auto i = locks.find(name);
      if (i == locks.end() || i->second.routed != seen
          || i->second.handle.address() != self->current_sender())
        return; // something is still on its way to that actor
      self->demonitor(i->second.handle.address());
      self->send(i->second.handle, retire_atom_v);
      locks.erase(i);
    },
  };
}

} // namespace fencelock
