#include "actors/lock_actor.hpp"

#include <functional>

#include "actors/event_hub.hpp"
#include "actors/lock_common.hpp"
#include "actors/metrics.hpp"
#include "fencelock/errc.hpp"

//          acquire (free, no waiters): new token
//  ┌──────┐ ─────────────────────────────────► ┌──────┐ ◄─┐ renew, or acquire by the
//  │ free │                                    │ held │ ──┘ holder: same token, new deadline
//  └──────┘ ◄───────────────────────────────── └──────┘ ◄─┐
//     │      release / expire / undelivered       │       │ release / expire with waiters:
//     │      grant, and no waiters                └───────┘ the first waiter is granted
//     ▼                                                     with a new token
//  idle: reported to the registry, which retires the actor
//
// Waiters queue FIFO behind the holder and give up at their own deadline (409 lock_held).
// Every change is written to the store first (await: nothing else runs meanwhile) and applied
// and answered only when the write succeeded. A failed write changes nothing: fail closed.

namespace fencelock {

namespace {

using self_ptr = lock_actor::stateful_pointer<lock_actor_state>;
using lease_done = std::function<void(caf::expected<lease>)>;
using write_done = std::function<void(const caf::error&)>;

caf::error lock_held_error(const lock_state& lock, time_point now, const clock_mapping& clock) {
  auto st = lock.status(now, clock);
  return caf::make_error(errc::lock_held, st.owner, st.expires_at_ms);
}

// Returns the time at which leases are judged now: the clock's time, except during the grace
// after a stall of the process, when it is the moment the stall began (actors/stall.hpp).
time_point judged_now(self_ptr self) {
  auto now = self->clock().now();
  auto& stall = self->state.ctx.stall;
  return stall ? stall->judged(now) : now;
}

void maybe_report_idle(self_ptr self) {
  auto& st = self->state;
  if (st.in_flight > 0 || !st.lock.idle() || st.idle_reported == st.seen)
    return;
  st.idle_reported = st.seen;
  self->send(st.ctx.registry, idle_atom_v, st.lock.name, st.seen);
}

// Reports idleness once the handler that created it returns.
struct idle_check {
  self_ptr self;
  ~idle_check() {
    maybe_report_idle(self);
  }
};

void arm_expiry(self_ptr self) {
  auto& st = self->state;
  if (st.lock.holder)
    self->send(st.ctx.watchdog, arm_atom_v, caf::actor_cast<lock_actor>(self),
               st.lock.holder->token, to_ns(st.lock.holder->deadline));
}

// Tells the event hub how the lease changes from the current holder to `next`.
void publish_change(self_ptr self, const std::optional<holder_info>& next,
                    lease_end_cause end_cause) {
  auto& s = self->state;
  if (!s.ctx.events || (!s.lock.holder && !next))
    return;
  lock_event ev;
  ev.name = s.lock.name;
  ev.at_ms = s.ctx.clock.to_wall_ms(to_ns(self->clock().now()));
  if (next) {
    ev.kind = s.lock.holder ? lock_event_kind::renewed : lock_event_kind::acquired;
    ev.owner = next->owner;
    ev.token = next->token;
    ev.revision = next->revision;
    ev.expires_at_ms = s.ctx.clock.to_wall_ms(to_ns(next->deadline));
  } else {
    ev.kind = ended_by_holder(end_cause) || end_cause == lease_end_cause::session_closed
                ? lock_event_kind::released
                : lock_event_kind::expired;
    ev.owner = s.lock.holder->owner;
    ev.token = s.lock.holder->token;
    ev.revision = s.lock.holder->revision + 1;
    ev.cause = end_cause;
  }
  s.ctx.events->publish(ev);
}

// Persists `next` as the lock's holder (nullopt = free), then applies it and calls `then`.
// `end_cause` labels the lease end in the metrics when `next` frees a held lock.
void commit(self_ptr self, std::optional<holder_info> next, write_done then,
            lease_end_cause end_cause = lease_end_cause::released) {
  auto& st = self->state;
  ++st.in_flight;
  auto sent = std::chrono::steady_clock::now();
  auto on_written = [=](bool) {
    auto& s = self->state;
    --s.in_flight;
    if (auto* m = s.ctx.metrics.get())
      m->record_store_write(std::chrono::steady_clock::now() - sent);
    if (next)
      s.lock.last_token = std::max(s.lock.last_token, next->token);
    // Only a change of holder between none and some moves the held gauge; a renewal does
    // not. (A hand-off is two commits: the end, then the grant.)
    if (auto* m = s.ctx.metrics.get()) {
      if (!s.lock.holder && next)
        m->lease_started();
      else if (s.lock.holder && !next)
        m->lease_ended(end_cause);
    }
    publish_change(self, next, end_cause);
    s.lock.holder = next;
    arm_expiry(self);
    then(caf::none);
    maybe_report_idle(self);
  };
  auto on_failed = [=](caf::error& err) {
    --self->state.in_flight;
    then(store_error(err));
    maybe_report_idle(self);
  };
  auto record = st.lock.record(next);
  // The write of a renewal or an end overtakes queued grants at the store, as the request that
  // caused it overtook them on its way here.
  bool keeps_or_ends = !next || (st.lock.holder && st.lock.holder->token == next->token);
  if (keeps_or_ends)
    self->request<caf::message_priority::high>(st.ctx.store, st.ctx.store_timeout, put_atom_v,
                                               std::move(record))
      .await(on_written, on_failed);
  else
    self->request(st.ctx.store, st.ctx.store_timeout, put_atom_v, std::move(record))
      .await(on_written, on_failed);
}

// Grants the free lock to `req` with a new token.
void grant(self_ptr self, acquire_request req, lease_done done) {
  auto& st = self->state;
  ++st.in_flight;
  self->request(st.ctx.fence, st.ctx.store_timeout, next_token_atom_v)
    .await(
      [=](uint64_t token) {
        --self->state.in_flight;
        holder_info next{req.owner,        token, req.ttl_ms,
                         self->clock().now() + millis(req.ttl_ms), req.request_id, 0};
        commit(self, next, [=](const caf::error& err) {
          if (err)
            done(err);
          else
            done(self->state.lock.to_lease(next, self->state.ctx.clock));
        });
      },
      [=](caf::error& err) {
        --self->state.in_flight;
        done(store_error(err));
        maybe_report_idle(self);
      });
}

// Hands the free lock to the first waiter; on failure answers that waiter and tries the next.
void hand_off(self_ptr self) {
  auto& st = self->state;
  if (st.lock.holder || st.lock.waiters.empty())
    return;
  auto w = std::move(st.lock.waiters.front());
  st.lock.waiters.pop_front();
  count_waiters(self->state.ctx, -1);
  grant(self, w.req, [=, promise = w.promise, since = w.since](caf::expected<lease> x) mutable {
    if (x) {
      if (auto* m = self->state.ctx.metrics.get())
        m->record_wait(std::chrono::steady_clock::now() - since);
      promise.deliver(std::move(*x));
    } else {
      promise.deliver(x.error());
      hand_off(self);
    }
  });
}

// Frees the lock (persisted first), counting the end as `cause`, then hands it to the next
// waiter.
void end_lease(self_ptr self, lease_end_cause cause, write_done then) {
  commit(
    self, std::nullopt,
    [=](const caf::error& err) {
      then(err);
      if (!err)
        hand_off(self);
    },
    cause);
}

// Ends the lease `token` if it is still the lease and its deadline has passed.
void expire_if_ended(self_ptr self, uint64_t token) {
  auto& st = self->state;
  if (!st.lock.holder || st.lock.holder->token != token)
    return; // stale timer: released or already replaced
  auto now = self->clock().now();
  if (!st.lock.lease_ended(now))
    return; // stale timer: renewed
  if (!st.lock.lease_ended(judged_now(self))) {
    // The deadline fell into a stall of ours: the holder gets the grace to renew first.
    auto until = st.ctx.stall->grace_until();
    self->delayed_send(self, until - now, expire_atom_v, token);
    if (st.ctx.metrics)
      st.ctx.metrics->expiry_deferred();
    return;
  }
  end_lease(self, lease_end_cause::expired, [=](const caf::error& err) {
    // Fail closed: until the end is on record the lease stands (nobody else gets the lock, and
    // its holder cannot renew it either); try again shortly.
    if (err)
      self->delayed_send(self, std::chrono::seconds{1}, expire_atom_v, token);
  });
}

// Sets a new deadline (and TTL) on the current lease.
void extend(self_ptr self, int64_t ttl_ms, lease_done done) {
  auto next = *self->state.lock.holder;
  next.ttl_ms = ttl_ms;
  next.deadline = self->clock().now() + millis(ttl_ms);
  ++next.revision;
  commit(self, next, [=](const caf::error& err) {
    if (err)
      done(err);
    else
      done(self->state.lock.to_lease(next, self->state.ctx.clock));
  });
}

template <class T>
std::function<void(caf::expected<T>)> deliver_to(caf::typed_response_promise<T> rp) {
  return [rp](caf::expected<T> x) mutable {
    if (x)
      rp.deliver(std::move(*x));
    else
      rp.deliver(x.error());
  };
}

} // namespace

lock_actor::behavior_type lock_actor_impl(self_ptr self, std::string name, lock_context ctx) {
  auto& st = self->state;
  st.lock.name = name;
  st.ctx = std::move(ctx);
  // Nothing is served before the record is loaded: await holds every other message back.
  ++st.in_flight;
  self->request(st.ctx.store, st.ctx.store_timeout, load_atom_v, name)
    .await(
      [=](stored_lock& rec) {
        auto& s = self->state;
        --s.in_flight;
        s.lock = lock_state::from_record(rec);
        s.lock.name = name;
        // A lease recovered from the store is held like a granted one (and will end like one).
        if (s.lock.holder && s.ctx.metrics)
          s.ctx.metrics->lease_started();
        arm_expiry(self); // a deadline that passed while we were down fires at once
        maybe_report_idle(self);
      },
      [=](caf::error& err) {
        // Without its record the lock cannot be judged: refuse to serve it at all.
        self->quit(store_error(err));
      });
  // On shutdown every waiter gets an answer instead of silence.
  auto answer_waiters = [=] {
    for (auto& w : self->state.lock.waiters)
      w.promise.deliver(
        caf::make_error(errc::shutting_down, std::string{"the service is stopping"}));
    count_waiters(self->state.ctx, -static_cast<int64_t>(self->state.lock.waiters.size()));
    self->state.lock.waiters.clear();
  };
  self->set_exit_handler([=](caf::exit_msg& msg) {
    answer_waiters();
    self->quit(msg.reason);
  });
  return {
    [=](acquire_atom, acquire_request& req) -> caf::result<lease> {
      idle_check check{self};
      auto& s = self->state;
      took_request(self);
      auto now = judged_now(self);
      switch (s.lock.decide(req, now, s.ctx.max_waiters)) {
        case acquire_decision::grant: {
          auto rp = self->make_response_promise<lease>();
          grant(self, std::move(req), deliver_to(rp));
          return rp;
        }
        case acquire_decision::refresh: {
          auto rp = self->make_response_promise<lease>();
          extend(self, req.ttl_ms, deliver_to(rp));
          return rp;
        }
        case acquire_decision::reject_held:
          return lock_held_error(s.lock, now, s.ctx.clock);
        case acquire_decision::reject_full:
          return caf::make_error(errc::too_many_waiters,
                                 "lock " + s.lock.name + " has too many waiters");
        case acquire_decision::wait: {
          if (auto refused = refuse_waiter_if_draining(s.ctx))
            return refused;
          if (!room_for_waiter(self->state.ctx))
            return caf::make_error(errc::too_many_waiters,
                                   std::string{"the service has too many waiting acquires"});
          auto rp = self->make_response_promise<lease>();
          auto id = req.request_id;
          auto wait = millis(req.wait_ms);
          s.lock.waiters.push_back(waiter_info{std::move(req), self->clock().now() + wait, rp,
                                               std::chrono::steady_clock::now()});
          count_waiters(self->state.ctx, 1);
          self->delayed_send(self, wait, wait_timeout_atom_v, id);
          if (s.lock.lease_ended(now))
            expire_if_ended(self, s.lock.holder->token);
          else if (!s.lock.holder && s.in_flight == 0)
            hand_off(self);
          return rp;
        }
      }
      return caf::make_error(errc::unavailable, std::string{"unreachable"});
    },
    [=](renew_atom, renew_request& req) -> caf::result<lease> {
      idle_check check{self};
      auto& s = self->state;
      took_request(self);
      if (!s.lock.is_current(req.owner, req.token, judged_now(self)))
        return lease_lost_error();
      auto rp = self->make_response_promise<lease>();
      extend(self, req.ttl_ms > 0 ? req.ttl_ms : s.lock.holder->ttl_ms, deliver_to(rp));
      return rp;
    },
    [=](release_atom, release_request& req) -> caf::result<bool> {
      idle_check check{self};
      auto& s = self->state;
      took_request(self);
      if (!s.lock.is_current(req.owner, req.token, judged_now(self)))
        return lease_lost_error();
      auto rp = self->make_response_promise<bool>();
      auto cause = req.session_closed ? lease_end_cause::session_closed : lease_end_cause::released;
      end_lease(self, cause, [rp](const caf::error& err) mutable {
        if (err)
          rp.deliver(err);
        else
          rp.deliver(true);
      });
      return rp;
    },
    [=](status_atom, const std::string&) -> lock_status {
      idle_check check{self};
      auto& s = self->state;
      took_request(self);
      return s.lock.status(judged_now(self), s.ctx.clock);
    },
    [=](check_atom, const check_request& req) -> check_result {
      idle_check check{self};
      auto& s = self->state;
      took_request(self);
      return s.lock.check(req.token, judged_now(self), s.ctx.clock);
    },
    [=](cancel_atom, const std::string&, uint64_t request_id) {
      idle_check check{self};
      auto& s = self->state;
      ++s.seen;
      if (auto w = s.lock.take_waiter(request_id)) {
        count_waiters(self->state.ctx, -1);
        w->promise.deliver(
          caf::make_error(errc::unavailable, std::string{"cancelled: the client went away"}));
        return;
      }
      // The grant went out but never reached its client: nobody will use or release it.
      if (request_id != 0 && s.lock.holder && s.lock.holder->grant_id == request_id)
        end_lease(self, lease_end_cause::undelivered, [](const caf::error&) {});
    },
    [=](expire_atom, uint64_t token) {
      idle_check check{self};
      expire_if_ended(self, token);
    },
    [=](wait_timeout_atom, uint64_t request_id) {
      idle_check check{self};
      auto& s = self->state;
      if (auto w = s.lock.take_waiter(request_id)) {
        count_waiters(self->state.ctx, -1);
        w->promise.deliver(lock_held_error(s.lock, self->clock().now(), s.ctx.clock));
      }
    },
    [=](retire_atom) { self->quit(); },
    // Only the Redis store's lock actors are woken; here every hand-off is local.
    [=](wake_atom, uint64_t) {},
    // Only the Redis store's lock actors watch leases granted elsewhere.
    [=](watch_atom, const std::string&, uint64_t, int64_t) {
      idle_check check{self};
      ++self->state.seen; // routed by the registry like a request
    },
    [=](drain_atom) {
      idle_check check{self};
      answer_waiters();
    },
  };
}

} // namespace fencelock
