#include "actors/lock_actor.hpp"

#include <algorithm>
#include <utility>

#include "actors/caf_workarounds.hpp"
#include "actors/lock_directory.hpp"
#include "actors/lock_errors.hpp"
#include "actors/metrics.hpp"
#include "fencelock/errc.hpp"
#include "fencelock/owner.hpp"

// One lock on this instance. Every change goes through the store's backend and is awaited:
// while a backend call is in flight the actor handles nothing else, so each operation sees what
// its predecessor left. The backend's answer decides (granted, held, ok, lost); the actor keeps
// the protocol around it.
//
//            spawn
//              │ load (awaited)
//              ▼
//   ┌─────► serving ◄──────────────────────────────────────────────────────────┐
//   │          │ a request or timer: one backend call, awaited ("busy")       │
//   │          ├─ granted / ok ──► watching: the lease granted or renewed here │
//   │          │                   (or watched for subscribers), its expiry    │
//   │          │                   armed at the watchdog ────────────────────►─┤
//   │          ├─ held ──► waiting: FIFO waiters behind the holder; the first  │
//   │          │           tries again when the lease ends here (hand-off),    │
//   │          │           when a shared store says it ended elsewhere (heard),│
//   │          │           or at the holder's deadline ───────────────────────►┤
//   │          ├─ lost / ended ──► the lease is forgotten; waiters are handed  │
//   │          │                   the lock in FIFO order ────────────────────►┘
//   │          ▼
//   │        idle: nothing in flight, nobody waiting, and no lease watched, or one
//   │          │ that nobody waits for ("held": the store keeps it, the watchdog its expiry)
//   │          │ reported to the registry with the count of routed messages handled
//   └── a request already on its way (the counts differ: the report is ignored)
//              │ counts match: retire ──► quit; a held lease keeps the lock's place, and
//              │ its next call or its expiry spawns the lock's next actor, which loads it
//
// Fail closed: a backend call that fails answers its caller store_unavailable and changes
// nothing here; waiters are answered too, since no grant can be made meanwhile. An expiry that
// cannot be written is tried again a second later, and until then the lease stands.

namespace fencelock {

namespace {

using self_ptr = lock_actor::stateful_pointer<lock_actor_state>;
using time_point = caf::actor_clock::time_point;

/// How long a failed expiry waits before it is tried again.
constexpr auto expiry_retry = std::chrono::seconds{1};

caf::actor_clock::duration_type millis(int64_t ms) {
  return std::chrono::duration_cast<caf::actor_clock::duration_type>(std::chrono::milliseconds{ms});
}

// -- bookkeeping -------------------------------------------------------------------------------

/// Takes in that `delta` waiters were queued (or left the queue, or a wait timer fired): counts
/// them over all locks, and tells the lock directory when this actor starts or stops waiting.
void waiters_changed(self_ptr self, int64_t delta) {
  auto& st = self->state;
  if (auto& waiting = st.ctx->waiting)
    *waiting += delta;
  // A wait timer pending holds on to the actor until it fires: it is stopped by a message then.
  bool waiting = !st.lock.waiters.empty() || st.wait_armed;
  if (waiting != static_cast<bool>(st.listed_waiting) && st.ctx->locks) {
    st.ctx->locks->note_waiting(self->address(), waiting);
    st.listed_waiting = waiting ? self->address() : caf::actor_addr{};
  }
}

/// Answers `rp` store_unavailable when the backend's answer `x` is a failure (fail closed:
/// nothing is decided on an answer the store did not give); returns whether it answered.
template <class T, class U>
bool answered_store_error(answer<T>& rp, const caf::expected<U>& x) {
  if (x)
    return false;
  rp.deliver(store_error(x.error()));
  return true;
}

/// Counts a request routed here, by the registry or directly (`seen`, compared with the lock
/// directory's count at retirement), and how deep the mailbox was behind it.
void took_request(self_ptr self) {
  auto& st = self->state;
  ++st.seen;
  if (auto* m = st.ctx->metrics.get())
    m->record_mailbox_depth(self->mailbox().size());
}

void count_end(self_ptr self, lease_end_cause cause) {
  if (auto* m = self->state.ctx->metrics.get())
    m->count_lease_end(cause);
}

/// Arms, moves or disarms the expiry in the watchdog's schedule so that it matches the lease the
/// actor keeps: armed while the lease is watched or waited for, at its deadline.
void sync_timer(self_ptr self) {
  auto& st = self->state;
  auto& lk = st.lock;
  bool wanted = lk.lease && (lk.watching || !lk.waiters.empty());
  if (wanted) {
    if (st.armed_token == lk.lease->token && st.armed_deadline == lk.lease->deadline)
      return;
    st.armed_token = lk.lease->token;
    st.armed_deadline = lk.lease->deadline;
    if (auto tick = st.ctx->expiries->arm(lk.name, st.armed_token, st.armed_deadline))
      self->send(st.ctx->watchdog, arm_atom_v, to_ns(*tick));
  } else if (st.armed_token != 0) {
    st.ctx->expiries->disarm(lk.name, st.armed_token);
    st.armed_token = 0;
  }
}

/// Returns whether the actor keeps only a lease, watched, that nobody waits for: retired, it
/// leaves the lease to the store and its expiry to the watchdog (a kept lease). Only where the
/// store alone decides the lock's leases: with a shared store the actor is what notices a lease
/// that another instance or a store restart took away, so it stays.
bool keeps_only_lease(self_ptr self) {
  auto& st = self->state;
  const auto& lk = st.lock;
  return lk.lease && lk.watching && lk.waiters.empty() && !st.ctx->store->shared();
}

/// Runs after every handler and every backend answer: once nothing is in flight, drops a holder
/// that nobody needs any more, brings the timer in line, and reports idleness: nothing to keep,
/// or only a lease nobody waits for (a held lease needs no actor between its calls).
void settle(self_ptr self) {
  auto& st = self->state;
  if (st.in_flight > 0)
    return; // the answer on its way settles
  auto& lk = st.lock;
  if (lk.lease && !lk.watching && lk.waiters.empty())
    lk.forget_lease(); // it was only what waiters waited for
  sync_timer(self);
  bool held = keeps_only_lease(self);
  if (!(lk.idle() || held) || st.idle_reported == st.seen)
    return;
  st.idle_reported = st.seen;
  if (!st.ctx->locks)
    return; // not in a directory (unit tests): nobody retires it
  lock_directory::idle_report report{lk.name, self->address(), st.seen, held,
                                     held ? lk.grant_id : 0};
  if (st.ctx->locks->report_idle(std::move(report), st.ctx->idle_kept))
    self->send(st.ctx->registry, idle_atom_v);
}

/// Settles when a handler returns, unless a backend call is still in flight.
struct settle_on_exit {
  self_ptr self;
  ~settle_on_exit() {
    settle(self);
  }
};

/// Calls the backend through `call`, which gets the callback to pass on; `then` runs with the
/// answer, and the actor settles after it. The backend awaits the store: what arrived meanwhile
/// is taken up once it answered.
template <class T, class Call, class Then>
void ask_backend(self_ptr self, Call call, Then then) {
  ++self->state.in_flight;
  call([self, then = std::move(then)](caf::expected<T> x) mutable {
    --self->state.in_flight;
    resume_skipped(self);
    then(std::move(x));
    settle(self);
  });
}

/// Refuses a renewal or release of the lease kept here by another principal than the one that
/// took it, whatever owner label it sends (fencelock/owner.hpp); nothing when it is not that.
caf::error foreign_principal(self_ptr self, const std::string& owner, uint64_t token) {
  const auto& lease = self->state.lock.lease;
  if (!lease || lease->token != token || owner_principal(lease->owner) == owner_principal(owner))
    return caf::none;
  return caf::make_error(errc::forbidden, std::string{"the lease belongs to another principal"});
}

/// Returns who a force-release must name to end `x` as its holder would: its owner and token.
release_request as_holder(const std::string& name, const lease_record& x) {
  return release_request{name, x.owner, x.token, false, false};
}

/*
 * Answers a renewal or release that the store did not find current: forbidden when the lease
 * with that token is another principal's, else lease_lost. With a shared store the lease may
 * have been taken through another instance, so foreign_principal() did not know it: the store
 * is read to tell. Only with authentication (a qualified owner), and only on this failure path.
 */
template <class T>
void refuse_not_current(self_ptr self, const std::string& owner, uint64_t token, answer<T> rp) {
  if (owner_principal(owner).empty()) {
    rp.deliver(lease_lost_error());
    return;
  }
  ask_backend<lock_view>(
    self, [&](auto done) { self->state.backend->read(self, std::move(done)); },
    [rp, owner, token](caf::expected<lock_view> x) mutable {
      bool foreign = x && x->lease && x->lease->token == token
                     && owner_principal(x->lease->owner) != owner_principal(owner);
      rp.deliver(foreign ? caf::make_error(errc::forbidden,
                                           std::string{"the lease belongs to another principal"})
                         : lease_lost_error());
    });
}

// -- events ------------------------------------------------------------------------------------

lock_event event_of(self_ptr self, lock_event_kind kind, const lease_record& x) {
  auto& st = self->state;
  return lock_event{
    .kind = kind,
    .name = st.lock.name,
    .owner = x.owner,
    .token = x.token,
    .revision = x.revision,
    .expires_at_ms = x.expires_at_ms,
    .at_ms = st.ctx->clock.to_wall_ms(to_ns(self->clock().now())),
  };
}

/// Announces that `x` started (acquired) or got a new deadline (renewed).
void announce_lease(self_ptr self, lock_event_kind kind, const lease_record& x) {
  if (auto* a = self->state.ctx->announcer.get())
    a->announce(event_of(self, kind, x));
}

/// Counts and announces the end of lease `x` (its last state) for `cause`.
void announce_end(self_ptr self, const lease_record& x, lease_end_cause cause) {
  count_end(self, cause);
  auto* a = self->state.ctx->announcer.get();
  if (a == nullptr)
    return;
  auto ev = event_of(self, end_kind(cause), x);
  ev.revision = x.revision + 1;
  ev.expires_at_ms = 0;
  ev.cause = cause;
  a->announce(ev);
}

// -- answers -----------------------------------------------------------------------------------

void hand_off(self_ptr self);

/// Takes in a lease the store granted to `req` (or refreshed for it) and answers `rp`.
void take_grant(self_ptr self, const acquire_request& req, const store_answer& x,
                answer<lease>& rp) {
  auto& lk = self->state.lock;
  bool fresh = x.v == verdict::granted;
  if (x.settled)
    announce_end(self, *x.settled, lease_end_cause::expired);
  // A lease watched here that the grant did not replace had vanished from the store without an
  // end: the store lost it (a Redis that restarted empty), and its holder must hear so.
  if (fresh && lk.lease && lk.watching && lk.lease->token != x.lease.token
      && lk.lease->token != x.replaced)
    announce_end(self, *lk.lease, lease_end_cause::store_lost);
  lk.note_lease(x.lease, true);
  if (fresh)
    lk.grant_id = req.request_id;
  announce_lease(self, fresh ? lock_event_kind::acquired : lock_event_kind::renewed, x.lease);
  rp.deliver(to_lease(lk.name, x.lease));
}

/// Makes sure a wait timer fires by `deadline`: one timer per lock, at its earliest waiter's
/// deadline, rather than one per waiter (each a hand-off to CAF's clock thread, and a stale
/// message later for every waiter granted first).
void arm_wait_timer(self_ptr self, time_point deadline) {
  auto& armed = self->state.wait_armed;
  if (armed && *armed <= deadline)
    return;
  armed = deadline;
  self->delayed_send(self, deadline - self->clock().now(), wait_timeout_atom_v, to_ns(deadline));
}

/// Answers every waiter with `err` (fail closed: nothing can be granted now).
void fail_waiters(self_ptr self, const caf::error& err) {
  auto failed = std::exchange(self->state.lock.waiters, {});
  waiters_changed(self, -static_cast<int64_t>(failed.size()));
  for (auto& w : failed)
    w.promise.deliver(err);
}

/// Queues `req` behind the holder, or answers why not.
void queue_or_refuse(self_ptr self, acquire_request req, answer<lease> rp) {
  auto& st = self->state;
  auto& ctx = *st.ctx;
  auto& lk = st.lock;
  if (req.wait_ms == 0) {
    rp.deliver(lock_held_error(lk.lease));
    return;
  }
  if (lk.waiters.size() >= ctx.max_waiters) {
    rp.deliver(
      caf::make_error(errc::too_many_waiters, "lock " + lk.name + " has too many waiters"));
    return;
  }
  if (ctx.waiting && ctx.waiting->load() >= static_cast<int64_t>(ctx.max_waiters_total)) {
    rp.deliver(caf::make_error(errc::too_many_waiters,
                               std::string{"the service has too many waiting acquires"}));
    return;
  }
  auto deadline = self->clock().now() + millis(req.wait_ms);
  req.received_ns = 0; // a waiter's lease runs from its grant, not from its arrival
  lk.waiters.push_back(
    waiter_info{std::move(req), std::move(rp), std::chrono::steady_clock::now(), deadline});
  arm_wait_timer(self, deadline);
  waiters_changed(self, 1);
  // Draining is checked once the waiter is listed in the lock directory, which a drain reads
  // after setting the flag: either the drain sees this waiter or this sees the flag.
  if (ctx.draining && ctx.draining->load())
    fail_waiters(self, shutting_down_error());
}

/// Takes in the store's answer to the first waiter's acquire `req`: grants it the lock, or
/// notes who holds it now (then the waiters wait for that lease's end).
void front_answered(self_ptr self, const acquire_request& req, caf::expected<store_answer> x) {
  auto& lk = self->state.lock;
  if (!x)
    return fail_waiters(self, store_error(x.error()));
  if (x->v != verdict::granted && x->v != verdict::ok) {
    if (x->v == verdict::held)
      lk.note_lease(x->lease, false); // the waiters wait for this lease's end
    return;
  }
  // Nothing else ran since the backend was asked (await): the front is still this waiter.
  auto w = lk.pop_front();
  waiters_changed(self, -1);
  if (auto* m = self->state.ctx->metrics.get())
    m->record_wait(std::chrono::steady_clock::now() - w.since);
  take_grant(self, req, *x, w.promise);
}

/// Offers the lock to the first waiter.
void hand_off(self_ptr self) {
  auto& lk = self->state.lock;
  if (lk.waiters.empty())
    return;
  auto req = lk.waiters.front().req;
  ask_backend<store_answer>(
    self, [&](auto done) { self->state.backend->acquire(self, req, std::move(done)); },
    [self, req](caf::expected<store_answer> x) { front_answered(self, req, std::move(x)); });
}

/// Takes in the end of lease `x` (as it ended) without handing the lock on.
void forget_ended(self_ptr self, const lease_record& x, lease_end_cause cause) {
  announce_end(self, x, cause);
  auto& lk = self->state.lock;
  if (lk.lease && lk.lease->token == x.token)
    lk.forget_lease();
}

/// Takes in the end of the kept lease (`x` as it ended) and hands the lock on.
void lease_ended(self_ptr self, const lease_record& x, lease_end_cause cause) {
  forget_ended(self, x, cause);
  hand_off(self);
}

/*
 * Ends a lease at its holder's request (`req`, for `cause`) and answers `rp`. With waiters, the
 * release and the first waiter's grant go to the backend together, so that a store recording
 * both in one write makes a hand-off one durable write.
 */
void release_lease(self_ptr self, const release_request& req, lease_end_cause cause,
                   answer<bool> rp) {
  auto& lk = self->state.lock;
  if (lk.waiters.empty()) {
    ask_backend<store_answer>(
      self, [&](auto done) { self->state.backend->release(self, req, cause, std::move(done)); },
      [self, rp, cause, owner = req.owner,
       token = req.token](caf::expected<store_answer> x) mutable {
        if (answered_store_error(rp, x))
          return;
        if (x->v != verdict::ok) {
          refuse_not_current(self, owner, token, rp);
          return;
        }
        rp.deliver(true);
        lease_ended(self, x->lease, cause);
      });
    return;
  }
  auto next = lk.waiters.front().req;
  ask_backend<hand_over_answer>(
    self,
    [&](auto done) { self->state.backend->hand_over(self, req, cause, next, std::move(done)); },
    [self, rp, cause, next, owner = req.owner,
     token = req.token](caf::expected<hand_over_answer> x) mutable {
      if (answered_store_error(rp, x))
        return;
      if (x->released.v != verdict::ok) {
        refuse_not_current(self, owner, token, rp);
        return;
      }
      forget_ended(self, x->released.lease, cause);
      // The next holder hears first: the lock is idle until its grant arrives, while the
      // releaser's answer ends nothing it still waits on.
      if (x->grant_failed)
        front_answered(self, next, std::move(x->grant_failed));
      else
        front_answered(self, next, std::move(x->granted));
      rp.deliver(true);
    });
}

/*
 * An admin's force-release: ends the current lease, whoever holds it (only the one with
 * `wanted` when that is not 0), as its holder's release would, with cause revoked. The store is
 * read first, since with a shared store the lease may have been taken through another instance;
 * a lease that changes between the read and the release is not ended (lease_lost).
 */
void force_release(self_ptr self, uint64_t wanted, answer<bool> rp) {
  ask_backend<lock_view>(
    self, [&](auto done) { self->state.backend->read(self, std::move(done)); },
    [self, rp, wanted](caf::expected<lock_view> x) mutable {
      if (answered_store_error(rp, x))
        return;
      const auto& name = self->state.lock.name;
      if (!x->lease || (wanted != 0 && x->lease->token != wanted)) {
        rp.deliver(caf::make_error(errc::lease_lost,
                                   wanted != 0 ? "token " + std::to_string(wanted)
                                                   + " is not the current lease of lock " + name
                                               : "lock " + name + " is not held"));
        return;
      }
      auto release = as_holder(name, *x->lease);
      ask_backend<store_answer>(
        self,
        [&](auto done) {
          self->state.backend->release(self, release, lease_end_cause::revoked, std::move(done));
        },
        [self, rp](caf::expected<store_answer> y) mutable {
          if (answered_store_error(rp, y))
            return;
          if (y->v != verdict::ok) {
            rp.deliver(lease_lost_error());
            return;
          }
          rp.deliver(true);
          lease_ended(self, y->lease, lease_end_cause::revoked);
        });
    });
}

/// Takes in the store's judgement `x` of lease `known` at its deadline; returns whether the
/// lease is over, so that the lock goes on to the waiters.
bool expiry_judged(self_ptr self, const lease_record& known, const store_answer& x) {
  auto& lk = self->state.lock;
  switch (x.v) {
    case verdict::ok:
      forget_ended(self, x.lease, lease_end_cause::expired);
      return true;
    case verdict::held:
      lk.note_lease(x.lease, false); // lives on: look again at its new deadline
      return false;
    case verdict::lost:
    case verdict::granted:
      // Ended already (and announced so), or lost by the store, which no write announced.
      if (x.store_lost)
        announce_end(self, known, lease_end_cause::store_lost);
      if (lk.lease && lk.lease->token == known.token)
        lk.forget_lease();
      return true;
  }
  return false;
}

/// Fail closed: until the end of lease `known` is on record it stands; look again shortly.
void expiry_failed(self_ptr self, const lease_record& known) {
  auto& lk = self->state.lock;
  if (lk.lease && lk.lease->token == known.token)
    lk.lease->deadline = self->clock().now() + expiry_retry;
}

/// Asks the store whether the kept lease ended (its deadline passed, or a shared store's event
/// source was down meanwhile). With waiters, the end and the first waiter's grant go to the
/// backend together, as a release's do: a takeover is one durable write.
void check_expiry(self_ptr self) {
  auto& lk = self->state.lock;
  auto known = *lk.lease;
  if (lk.waiters.empty()) {
    ask_backend<store_answer>(
      self, [&](auto done) { self->state.backend->expire(self, known, std::move(done)); },
      [self, known](caf::expected<store_answer> x) {
        if (!x)
          return expiry_failed(self, known);
        if (expiry_judged(self, known, *x))
          hand_off(self);
      });
    return;
  }
  auto next = lk.waiters.front().req;
  ask_backend<hand_over_answer>(
    self,
    [&](auto done) { self->state.backend->hand_over_expired(self, known, next, std::move(done)); },
    [self, known, next](caf::expected<hand_over_answer> x) {
      if (!x)
        return expiry_failed(self, known);
      if (!expiry_judged(self, known, x->released))
        return;
      if (x->grant_failed)
        return front_answered(self, next, std::move(x->grant_failed));
      front_answered(self, next, std::move(x->granted));
    });
}

/// Builds the lease record of a lease watched for this instance's subscribers.
lease_record watched_lease(self_ptr self, std::string owner, uint64_t token, int64_t expires_at_ms,
                           int64_t remaining_ms) {
  lease_record x;
  x.owner = std::move(owner);
  x.token = token;
  x.expires_at_ms = expires_at_ms;
  // One millisecond past the end: the store rounded the remaining time up already, this covers
  // the trip of the message.
  x.deadline = self->clock().now() + millis(std::max<int64_t>(0, remaining_ms) + 1);
  return x;
}

// -- the five calls ----------------------------------------------------------------------------
// Each comes as a CAF request (from the registry) or as a direct call (from the front end); the
// answer goes back the way it came.

void serve(self_ptr self, acquire_request req, answer<lease> rp) {
  settle_on_exit on_exit{self};
  auto& s = self->state;
  took_request(self);
  switch (s.lock.decide(req, s.ctx->max_waiters)) {
    case admission::ask_store:
      ask_backend<store_answer>(
        self, [&](auto done) { self->state.backend->acquire(self, req, std::move(done)); },
        [self, req, rp](caf::expected<store_answer> x) mutable {
          if (answered_store_error(rp, x))
            return;
          if (x->v == verdict::granted || x->v == verdict::ok)
            return take_grant(self, req, *x, rp);
          self->state.lock.note_lease(x->lease, false);
          queue_or_refuse(self, std::move(req), std::move(rp));
        });
      break;
    case admission::refresh: {
      // The holder asks again while others wait: renew its lease in place, so that it neither
      // jumps the queue with a new lease nor waits behind its own.
      renew_request renewal{req.name, req.owner, s.lock.lease->token, req.ttl_ms, req.received_ns};
      ask_backend<store_answer>(
        self, [&](auto done) { self->state.backend->renew(self, renewal, std::move(done)); },
        [self, req, rp](caf::expected<store_answer> x) mutable {
          if (answered_store_error(rp, x))
            return;
          if (x->v == verdict::ok)
            return take_grant(self, req, *x, rp);
          queue_or_refuse(self, std::move(req), std::move(rp)); // it ended: queue like anyone
        });
      break;
    }
    case admission::queue:
    case admission::reject_held:
      queue_or_refuse(self, std::move(req), std::move(rp));
      break;
    case admission::reject_full:
      rp.deliver(
        caf::make_error(errc::too_many_waiters, "lock " + s.lock.name + " has too many waiters"));
      break;
  }
}

void serve(self_ptr self, renew_request req, answer<lease> rp) {
  settle_on_exit on_exit{self};
  took_request(self);
  if (auto err = foreign_principal(self, req.owner, req.token)) {
    rp.deliver(std::move(err));
    return;
  }
  ask_backend<store_answer>(
    self, [&](auto done) { self->state.backend->renew(self, req, std::move(done)); },
    [self, rp, owner = req.owner, token = req.token](caf::expected<store_answer> x) mutable {
      if (answered_store_error(rp, x)) // unconfirmed: the holder counts down
        return;
      if (x->v != verdict::ok) {
        refuse_not_current(self, owner, token, rp);
        return;
      }
      self->state.lock.note_lease(x->lease, true);
      announce_lease(self, lock_event_kind::renewed, x->lease);
      rp.deliver(to_lease(self->state.lock.name, x->lease));
    });
}

void serve(self_ptr self, release_request req, answer<bool> rp) {
  settle_on_exit on_exit{self};
  took_request(self);
  if (req.force)
    return force_release(self, req.token, std::move(rp));
  if (auto err = foreign_principal(self, req.owner, req.token)) {
    rp.deliver(std::move(err));
    return;
  }
  auto cause = req.session_closed ? lease_end_cause::session_closed : lease_end_cause::released;
  release_lease(self, req, cause, std::move(rp));
}

void serve(self_ptr self, std::string /* name: the actor's own */, answer<lock_status> rp) {
  settle_on_exit on_exit{self};
  took_request(self);
  ask_backend<lock_view>(
    self, [&](auto done) { self->state.backend->read(self, std::move(done)); },
    [self, rp](caf::expected<lock_view> x) mutable {
      if (answered_store_error(rp, x))
        return;
      rp.deliver(self->state.lock.status(*x));
    });
}

void serve(self_ptr self, check_request req, answer<check_result> rp) {
  settle_on_exit on_exit{self};
  took_request(self);
  ask_backend<lock_view>(
    self, [&](auto done) { self->state.backend->read(self, std::move(done)); },
    [rp, token = req.token](caf::expected<lock_view> x) mutable {
      if (answered_store_error(rp, x))
        return;
      rp.deliver(check(*x, token));
    });
}

} // namespace

lock_actor_state::~lock_actor_state() {
  if (listed_waiting)
    ctx->locks->note_waiting(listed_waiting, false);
}

lock_actor::behavior_type lock_actor_impl(self_ptr self, std::string name, lock_context_ptr ctx,
                                          uint64_t grant_id) {
  auto& st = self->state;
  st.lock.name = std::move(name);
  st.ctx = std::move(ctx);
  st.backend = st.ctx->store->make_backend(st.lock.name);
  // Nothing is served before the lock is loaded: the backend awaits the store, if it asks it.
  ask_backend<lock_view>(
    self, [&](auto done) { self->state.backend->load(self, std::move(done)); },
    [self, grant_id](caf::expected<lock_view> x) {
      if (!x) {
        // Without its record the lock cannot be judged: refuse to serve it at all.
        self->quit(store_error(x.error()));
        return;
      }
      // A lease recovered from the store is watched like one granted here: a deadline that
      // passed while the service was down expires at once. A kept lease was granted here to
      // `grant_id` (a cancel may still undo it).
      if (x->lease) {
        self->state.lock.note_lease(*x->lease, true);
        self->state.lock.grant_id = grant_id;
      }
    });
  // On shutdown every waiter gets an answer instead of silence.
  self->set_exit_handler([=](caf::exit_msg& msg) {
    fail_waiters(self, shutting_down_error());
    self->quit(msg.reason);
  });
  return {
    [=](acquire_atom, acquire_request& req) -> caf::result<lease> {
      auto rp = self->make_response_promise<lease>();
      serve(self, std::move(req), answer<lease>{rp});
      return rp;
    },
    [=](renew_atom, renew_request& req) -> caf::result<lease> {
      auto rp = self->make_response_promise<lease>();
      serve(self, std::move(req), answer<lease>{rp});
      return rp;
    },
    [=](release_atom, release_request& req) -> caf::result<bool> {
      auto rp = self->make_response_promise<bool>();
      serve(self, std::move(req), answer<bool>{rp});
      return rp;
    },
    [=](status_atom, std::string& asked) -> caf::result<lock_status> {
      auto rp = self->make_response_promise<lock_status>();
      serve(self, std::move(asked), answer<lock_status>{rp});
      return rp;
    },
    [=](check_atom, check_request& req) -> caf::result<check_result> {
      auto rp = self->make_response_promise<check_result>();
      serve(self, std::move(req), answer<check_result>{rp});
      return rp;
    },
    [=](cancel_atom, const std::string&, uint64_t request_id) {
      settle_on_exit on_exit{self};
      auto& s = self->state;
      ++s.seen; // routed by the registry like a request
      if (auto w = s.lock.take_waiter(request_id)) {
        waiters_changed(self, -1);
        w->promise.deliver(caf::make_error(errc::cancelled, std::string{"the client went away"}));
        return;
      }
      // The grant went out but never reached its client: nobody will use or release it.
      if (request_id == 0 || !s.lock.lease || s.lock.grant_id != request_id)
        return;
      auto undo = as_holder(s.lock.name, *s.lock.lease);
      ask_backend<store_answer>(
        self,
        [&](auto done) {
          self->state.backend->release(self, undo, lease_end_cause::undelivered, std::move(done));
        },
        [self](caf::expected<store_answer> x) {
          if (x && x->v == verdict::ok)
            lease_ended(self, x->lease, lease_end_cause::undelivered);
        });
    },
    [=](lock_call& call) {
      std::visit([&](auto& c) { serve(self, std::move(c.req), answer{std::move(c.reply)}); },
                 call.op);
    },
    [=](expire_atom, uint64_t token) {
      settle_on_exit on_exit{self};
      auto& s = self->state;
      if (s.armed_token == token && s.armed_deadline <= self->clock().now())
        s.armed_token = 0; // this is that timer firing: the watchdog forgot it
      if (!s.lock.lease || s.lock.lease->token != token)
        return; // stale: released or replaced meanwhile
      if (s.lock.lease->deadline > self->clock().now())
        return; // stale: the deadline moved; the timer was moved with it
      if (s.lock.watching)
        check_expiry(self);
      else
        hand_off(self); // only waiters wait for it: the first tries (the store ends it then)
    },
    [=](wait_timeout_atom, int64_t armed_ns) {
      settle_on_exit on_exit{self};
      auto& s = self->state;
      if (s.wait_armed && to_ns(*s.wait_armed) == armed_ns)
        s.wait_armed.reset(); // this is the armed timer (an earlier one may have replaced it)
      auto overdue = s.lock.take_overdue(self->clock().now());
      waiters_changed(self, -static_cast<int64_t>(overdue.size()));
      for (auto& w : overdue)
        w.promise.deliver(lock_held_error(s.lock.lease));
      if (auto next = s.lock.earliest_deadline())
        arm_wait_timer(self, *next);
    },
    [=](retire_atom, bool kept) {
      auto& s = self->state;
      // A lease kept for later stays armed at the watchdog, by name: its expiry comes through
      // the registry, which spawns the lock's next actor for it.
      if (!(kept && keeps_only_lease(self))) {
        if (s.armed_token != 0)
          s.ctx->expiries->disarm(s.lock.name, s.armed_token);
        if (kept) // the lease ended since the report (an expiry): nothing to keep
          self->send(s.ctx->registry, retire_atom_v, s.lock.name);
      }
      self->quit();
    },
    [=](heard_atom, uint64_t token, bool ended) {
      settle_on_exit on_exit{self};
      auto& lk = self->state.lock;
      // The store's channel delivers a lock's events in order: the end of a lease that a script
      // ended always comes before the start of the next one.
      if (lk.lease && (ended ? lk.lease->token == token : lk.lease->token < token)) {
        if (!ended && lk.watching)
          announce_end(self, *lk.lease, lease_end_cause::store_lost);
        lk.forget_lease();
      }
      if (ended || !lk.lease)
        hand_off(self); // the lock may be free: the first waiter tries
    },
    [=](resync_atom) {
      settle_on_exit on_exit{self};
      if (self->state.lock.lease)
        check_expiry(self); // whatever happened meanwhile, the store tells
      else
        hand_off(self);
    },
    [=](watch_atom, std::string& owner, uint64_t token, int64_t expires_at_ms,
        int64_t remaining_ms) {
      settle_on_exit on_exit{self};
      auto& s = self->state;
      ++s.seen; // routed by the registry like a request
      if (s.lock.lease && s.lock.lease->token == token) {
        s.lock.watching = true; // known already, with the deadline of an answer
        return;
      }
      s.lock.note_lease(watched_lease(self, std::move(owner), token, expires_at_ms, remaining_ms),
                        true);
    },
    [=](drain_atom) {
      settle_on_exit on_exit{self};
      fail_waiters(self, shutting_down_error());
    },
  };
}

} // namespace fencelock
