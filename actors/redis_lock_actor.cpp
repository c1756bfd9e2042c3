#include "actors/redis_lock_actor.hpp"

#include <algorithm>
#include <functional>

#include "actors/event_hub.hpp"
#include "actors/lock_common.hpp"
#include "actors/metrics.hpp"
#include "fencelock/errc.hpp"

// Every operation is one script call, awaited: the answer decides, never local state.
//
//  acquire ──► script ──► granted / refreshed: answered, and the lease watched here
//                    └──► held: 409, or queued; the first waiter tries again when the lock is
//                         released or expires on any instance (the store's event channel), or
//                         at the holder's deadline (a timer), whichever comes first
//  renew, release ──► script ──► ok / lost (lease_lost)
//  watched lease's deadline ──► expire script ──► alive (renewed elsewhere: watch on) / ended
//
// A script that fails or does not answer in time changes nothing here: the caller gets
// store_unavailable, and whatever Redis did is what holds (an acquire the caller never heard of
// is re-acquired idempotently, or its lease runs out).

namespace fencelock {

namespace {

using self_ptr = lock_actor::stateful_pointer<redis_lock_actor_state>;
using redis::script_lease;

void maybe_report_idle(self_ptr self) {
  auto& st = self->state;
  if (st.in_flight > 0 || st.watched || !st.waiters.empty() || st.idle_reported == st.seen)
    return;
  st.idle_reported = st.seen;
  self->send(st.ctx.registry, idle_atom_v, st.lock_name, st.seen);
}

struct idle_check {
  self_ptr self;
  ~idle_check() {
    maybe_report_idle(self);
  }
};

caf::error lock_held_error(self_ptr self) {
  auto& st = self->state;
  return caf::make_error(errc::lock_held, st.last_owner, st.last_expires_at_ms);
}

// Watches lease `x` (granted or renewed here): the watchdog calls back just after its deadline
// as Redis reported it, and the expire script then decides.
void watch(self_ptr self, const script_lease& x, uint64_t grant_id) {
  auto& st = self->state;
  // One millisecond past the deadline: the remaining time was rounded up already, this covers
  // the trip of the answer.
  auto deadline = self->clock().now() + millis(x.remaining_ms + 1);
  if (!st.watched || st.watched->token != x.token)
    st.watched = redis_lock_actor_state::watched_lease{x.owner, x.token, grant_id, x.revision,
                                                        deadline};
  st.watched->revision = std::max(st.watched->revision, x.revision);
  st.watched->deadline = deadline;
  self->send(st.ctx.watchdog, arm_atom_v, caf::actor_cast<lock_actor>(self), x.token,
             to_ns(deadline));
}

void unwatch(self_ptr self, uint64_t token) {
  auto& st = self->state;
  if (st.watched && st.watched->token == token)
    st.watched.reset();
}

// Deadlines are reported as Redis's clock has them, so that every instance tells the same.
lease to_lease(self_ptr self, const script_lease& x) {
  return {self->state.lock_name, x.owner, x.token, x.ttl_ms, x.deadline_ms};
}

void note_holder(self_ptr self, const script_lease& x) {
  self->state.last_owner = x.owner;
  self->state.last_expires_at_ms = x.deadline_ms;
}

// Arms the waiters' retry for when the holder's lease runs out, unless a release or expiry
// event wakes them first.
void retry_at_deadline(self_ptr self, int64_t remaining_ms) {
  auto gen = ++self->state.retry_generation;
  self->delayed_send(self, millis(remaining_ms + 1), wake_atom_v, gen);
}

void try_first_waiter(self_ptr self);

// Answers every waiter with `err`: the store cannot grant anything now (fail closed).
void fail_waiters(self_ptr self, const caf::error& err) {
  auto& st = self->state;
  for (auto& w : st.waiters)
    w.promise.deliver(err);
  count_waiters(self->state.ctx, -static_cast<int64_t>(st.waiters.size()));
  st.waiters.clear();
}

void try_first_waiter(self_ptr self) {
  auto& st = self->state;
  if (st.waiters.empty())
    return;
  ++st.in_flight;
  auto req = st.waiters.front().req;
  self->request(st.ctx.redis, st.ctx.store_timeout, acquire_atom_v, req)
    .await(
      [=](script_lease& x) {
        auto& s = self->state;
        --s.in_flight;
        if (x.status == "held") {
          note_holder(self, x);
          retry_at_deadline(self, x.remaining_ms);
          return;
        }
        // Nothing else ran meanwhile (await): the front is still this waiter.
        auto w = std::move(s.waiters.front());
        s.waiters.pop_front();
        count_waiters(self->state.ctx, -1);
        watch(self, x, req.request_id);
        if (auto* m = s.ctx.metrics.get())
          m->record_wait(std::chrono::steady_clock::now() - w.since);
        w.promise.deliver(to_lease(self, x));
        try_first_waiter(self); // the next one learns who holds it now and when to try again
      },
      [=](caf::error& err) {
        --self->state.in_flight;
        fail_waiters(self, store_error(err));
        maybe_report_idle(self);
      });
}

// The watched lease has no record in Redis although its deadline (plus the time an ended record
// is kept) has not passed: Redis lost it. No script will publish its end, so this instance
// tells its own subscribers and the holder's lease watch (lease_lost, cause store_lost).
void report_store_lost(self_ptr self) {
  auto& st = self->state;
  auto& w = *st.watched;
  if (auto* m = st.ctx.metrics.get())
    m->count_lease_end(lease_end_cause::store_lost);
  if (st.ctx.events)
    st.ctx.events->publish(lock_event{
      .kind = lock_event_kind::expired,
      .name = st.lock_name,
      .owner = w.owner,
      .token = w.token,
      .revision = w.revision + 1,
      .expires_at_ms = 0,
      .at_ms = st.ctx.clock.to_wall_ms(to_ns(self->clock().now())),
      .cause = lease_end_cause::store_lost,
    });
}

void expire_if_ended(self_ptr self, uint64_t token) {
  auto& st = self->state;
  if (!st.watched || st.watched->token != token)
    return; // released or replaced meanwhile
  ++st.in_flight;
  auto name = st.lock_name;
  self->request(st.ctx.redis, st.ctx.store_timeout, expire_atom_v, name, token)
    .await(
      [=](script_lease& x) {
        --self->state.in_flight;
        if (x.status == "alive") {
          watch(self, x, self->state.watched->grant_id); // renewed, maybe through another instance
          return;
        }
        // An ended record stays 60 s (docs/redis.md): well within that, a missing one was lost.
        if (x.status == "missing"
            && self->clock().now() < self->state.watched->deadline + std::chrono::seconds{30})
          report_store_lost(self);
        unwatch(self, token);
        if (x.status == "ended") {
          if (auto* m = self->state.ctx.metrics.get())
            m->count_lease_end(lease_end_cause::expired);
        }
        if (x.status != "gone")
          try_first_waiter(self);
        maybe_report_idle(self);
      },
      [=](caf::error&) {
        // Fail closed: the lease stands in Redis until a script ends it; look again shortly.
        --self->state.in_flight;
        self->delayed_send(self, std::chrono::seconds{1}, expire_atom_v, token);
      });
}

// Ends lease (owner, token) with `cause`; `done` gets whether it was current.
void end_lease(self_ptr self, release_request req, lease_end_cause cause,
               std::function<void(caf::expected<bool>)> done) {
  auto& st = self->state;
  ++st.in_flight;
  auto token = req.token;
  self->request<caf::message_priority::high>(st.ctx.redis, st.ctx.store_timeout, release_atom_v,
                                             std::move(req), std::string{to_string(cause)})
    .await(
      [=](script_lease& x) {
        --self->state.in_flight;
        if (x.status != "ok") {
          unwatch(self, token); // whatever we watched is not current either
          done(lease_lost_error());
          maybe_report_idle(self);
          return;
        }
        unwatch(self, token);
        if (auto* m = self->state.ctx.metrics.get())
          m->count_lease_end(cause);
        done(true);
        try_first_waiter(self); // ours first; other instances hear the event
        maybe_report_idle(self);
      },
      [=](caf::error& err) {
        --self->state.in_flight;
        done(store_error(err));
        maybe_report_idle(self);
      });
}

} // namespace

lock_actor::behavior_type redis_lock_actor_impl(self_ptr self, std::string name,
                                                lock_context ctx) {
  auto& st = self->state;
  st.lock_name = std::move(name);
  st.ctx = std::move(ctx);
  self->set_exit_handler([=](caf::exit_msg& msg) {
    fail_waiters(self, caf::make_error(errc::shutting_down, std::string{"the service is stopping"}));
    self->quit(msg.reason);
  });
  return {
    [=](acquire_atom, acquire_request& req) -> caf::result<lease> {
      idle_check check{self};
      auto& s = self->state;
      took_request(self);
      auto rp = self->make_response_promise<lease>();
      ++s.in_flight;
      self->request(s.ctx.redis, s.ctx.store_timeout, acquire_atom_v, req)
        .await(
          [=](script_lease& x) mutable {
            auto& s2 = self->state;
            --s2.in_flight;
            if (x.status != "held") {
              watch(self, x, x.status == "granted" ? req.request_id : 0);
              rp.deliver(to_lease(self, x));
              return;
            }
            note_holder(self, x);
            caf::error refused;
            if (req.wait_ms == 0)
              refused = lock_held_error(self);
            else if (auto draining = refuse_waiter_if_draining(s2.ctx))
              refused = std::move(draining);
            else if (s2.waiters.size() >= s2.ctx.max_waiters)
              refused = caf::make_error(errc::too_many_waiters,
                                        "lock " + s2.lock_name + " has too many waiters");
            else if (!room_for_waiter(self->state.ctx))
              refused = caf::make_error(errc::too_many_waiters,
                                        std::string{"the service has too many waiting acquires"});
            if (refused) {
              rp.deliver(std::move(refused));
              return;
            }
            auto id = req.request_id;
            auto wait = millis(req.wait_ms);
            bool first = s2.waiters.empty();
            s2.waiters.push_back(waiter_info{std::move(req), self->clock().now() + wait, rp,
                                             std::chrono::steady_clock::now()});
            count_waiters(self->state.ctx, 1);
            self->delayed_send(self, wait, wait_timeout_atom_v, id);
            if (first)
              retry_at_deadline(self, x.remaining_ms);
          },
          [=](caf::error& err) mutable {
            --self->state.in_flight;
            rp.deliver(store_error(err));
            maybe_report_idle(self);
          });
      return rp;
    },
    [=](renew_atom, renew_request& req) -> caf::result<lease> {
      idle_check check{self};
      auto& s = self->state;
      took_request(self);
      auto rp = self->make_response_promise<lease>();
      ++s.in_flight;
      auto token = req.token;
      self->request<caf::message_priority::high>(s.ctx.redis, s.ctx.store_timeout, renew_atom_v,
                                                 std::move(req))
        .await(
          [=](script_lease& x) mutable {
            --self->state.in_flight;
            if (x.status != "ok") {
              unwatch(self, token);
              rp.deliver(lease_lost_error());
              return;
            }
            auto& w = self->state.watched;
            watch(self, x, w && w->token == x.token ? w->grant_id : 0);
            rp.deliver(to_lease(self, x));
          },
          [=](caf::error& err) mutable {
            // Unconfirmed: the holder keeps counting down its own deadline.
            --self->state.in_flight;
            rp.deliver(store_error(err));
          });
      return rp;
    },
    [=](release_atom, release_request& req) -> caf::result<bool> {
      idle_check check{self};
      took_request(self);
      auto rp = self->make_response_promise<bool>();
      auto cause = req.session_closed ? lease_end_cause::session_closed : lease_end_cause::released;
      end_lease(self, std::move(req), cause, [rp](caf::expected<bool> x) mutable {
        if (x)
          rp.deliver(*x);
        else
          rp.deliver(x.error());
      });
      return rp;
    },
    [=](status_atom, std::string& lock) -> caf::result<lock_status> {
      idle_check check{self};
      auto& s = self->state;
      took_request(self);
      auto rp = self->make_response_promise<lock_status>();
      ++s.in_flight;
      self->request(s.ctx.redis, s.ctx.store_timeout, status_atom_v, std::move(lock))
        .await(
          [=](script_lease& x) mutable {
            auto& s2 = self->state;
            --s2.in_flight;
            lock_status out;
            out.name = s2.lock_name;
            out.waiters = s2.waiters.size(); // this instance's waiters
            out.last_token = x.token;
            if (x.status == "held") {
              out.held = true;
              out.owner = x.owner;
              out.token = x.token;
              out.expires_at_ms = x.deadline_ms;
              out.revision = x.revision;
            }
            rp.deliver(std::move(out));
          },
          [=](caf::error& err) mutable {
            --self->state.in_flight;
            rp.deliver(store_error(err));
          });
      return rp;
    },
    [=](check_atom, check_request& req) -> caf::result<check_result> {
      idle_check check{self};
      auto& s = self->state;
      took_request(self);
      auto rp = self->make_response_promise<check_result>();
      ++s.in_flight;
      auto token = req.token;
      self->request(s.ctx.redis, s.ctx.store_timeout, status_atom_v, s.lock_name)
        .await(
          [=](script_lease& x) mutable {
            --self->state.in_flight;
            check_result out;
            if (x.status == "held") {
              out.current = x.token == token;
              out.token = x.token;
              out.expires_at_ms = x.deadline_ms;
            }
            rp.deliver(out);
          },
          [=](caf::error& err) mutable {
            --self->state.in_flight;
            rp.deliver(store_error(err));
          });
      return rp;
    },
    [=](cancel_atom, const std::string&, uint64_t request_id) {
      idle_check check{self};
      auto& s = self->state;
      ++s.seen;
      auto i = std::find_if(s.waiters.begin(), s.waiters.end(),
                            [&](const waiter_info& w) { return w.req.request_id == request_id; });
      if (i != s.waiters.end()) {
        i->promise.deliver(
          caf::make_error(errc::unavailable, std::string{"cancelled: the client went away"}));
        s.waiters.erase(i);
        count_waiters(self->state.ctx, -1);
        return;
      }
      // The grant went out but never reached its client: nobody will use or release it.
      if (request_id != 0 && s.watched && s.watched->grant_id == request_id) {
        release_request req{s.lock_name, s.watched->owner, s.watched->token, false};
        end_lease(self, std::move(req), lease_end_cause::undelivered,
                  [](caf::expected<bool>) {});
      }
    },
    [=](expire_atom, uint64_t token) {
      idle_check check{self};
      expire_if_ended(self, token);
    },
    [=](wait_timeout_atom, uint64_t request_id) {
      idle_check check{self};
      auto& s = self->state;
      auto i = std::find_if(s.waiters.begin(), s.waiters.end(),
                            [&](const waiter_info& w) { return w.req.request_id == request_id; });
      if (i == s.waiters.end())
        return;
      i->promise.deliver(lock_held_error(self));
      s.waiters.erase(i);
      count_waiters(self->state.ctx, -1);
    },
    [=](wake_atom, uint64_t generation) {
      idle_check check{self};
      auto& s = self->state;
      if (generation == redis_lock_actor_state::resync && s.watched) {
        // Whatever happened while the channel was down, the expire script tells: alive (watch
        // on), ended or gone (an event was published), missing (Redis lost the lease).
        expire_if_ended(self, s.watched->token);
        return;
      }
      if (generation != 0 && generation != redis_lock_actor_state::resync
          && generation != s.retry_generation)
        return; // a newer timer is armed
      try_first_waiter(self);
    },
    [=](retire_atom) { self->quit(); },
    [=](watch_atom, std::string& owner, uint64_t token, int64_t expires_at_ms) {
      idle_check check{self};
      auto& s = self->state;
      ++s.seen;
      if (s.watched && s.watched->token == token)
        return; // watched already, with the deadline of our own answer
      // Redis's wall clock against ours: a check that comes early finds the lease alive and
      // waits for the rest; one that comes late reports the expiry that much later.
      auto now_ms = s.ctx.clock.to_wall_ms(to_ns(self->clock().now()));
      script_lease x;
      x.owner = std::move(owner);
      x.token = token;
      x.remaining_ms = std::max<int64_t>(0, expires_at_ms - now_ms);
      watch(self, x, 0);
    },
    [=](drain_atom) {
      idle_check check{self};
      fail_waiters(self,
                   caf::make_error(errc::shutting_down, std::string{"the service is stopping"}));
    },
  };
}

} // namespace fencelock
