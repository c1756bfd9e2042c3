#include "actors/store/embedded/embedded_store.hpp"

#include <atomic>
#include <chrono>

#include "actors/event_hub.hpp"
#include "actors/fence_issuer.hpp"
#include "actors/store/embedded/lock_record.hpp"
#include "fencelock/errc.hpp"

namespace fencelock {

namespace {

using env_ptr = std::shared_ptr<const embedded_store::environment>;
using time_point = caf::actor_clock::time_point;

/// The embedded store's event source: lock actors announce each change once it is durable; it
/// goes to the event hub, and the held gauge follows it.
class local_announcer : public change_announcer {
public:
  local_announcer(std::shared_ptr<event_hub> events, std::shared_ptr<store_reporter> reporter,
                  int64_t held)
    : events_(std::move(events)), reporter_(std::move(reporter)), held_(held) {
    if (reporter_)
      reporter_->locks_held(held);
  }

  void announce(const lock_event& ev) override {
    if (events_)
      events_->publish(ev);
    int64_t delta = ev.kind == lock_event_kind::acquired ? 1 : ev.ends_lease() ? -1 : 0;
    if (delta != 0 && reporter_)
      reporter_->locks_held(held_ += delta);
  }

private:
  std::shared_ptr<event_hub> events_;
  std::shared_ptr<store_reporter> reporter_;
  std::atomic<int64_t> held_;
};

/// One lock's backend: its record, changed only once the store made the change durable.
class embedded_backend : public lock_backend {
public:
  embedded_backend(env_ptr env, std::string name) : env_(std::move(env)), name_(std::move(name)) {
  }

  void load(lock_self, reply<lock_view> done) override {
    // The table has every durable record: no trip to the store (and its disk).
    rec_ = lock_record::from_stored(env_->table->find(name_), env_->clock);
    // The lease as stored, even past its deadline: the lock actor arms its expiry, which then
    // fires at once.
    done(lock_view{rec_.holder, rec_.last_token});
  }

  void acquire(lock_self self, const acquire_request& req, reply<store_answer> done) override {
    auto now = self->clock().now();
    if (rec_.alive(now, stalls())) {
      if (rec_.holder->owner == req.owner)
        return extend(self, req.ttl_ms, lease_start(req.received_ns, now), std::move(done));
      return done(store_answer{verdict::held, *rec_.holder, std::nullopt});
    }
    // Free, or the lease ran out and its expiry is not written yet: end it with this grant.
    auto settled = rec_.holder;
    grant(self, req, lease_start(req.received_ns, now), false,
          [settled = std::move(settled),
           done = std::move(done)](caf::expected<lease_record> next) mutable {
            if (!next)
              return done(std::move(next.error()));
            auto replaced = settled ? settled->token : 0;
            store_answer out{verdict::granted, std::move(*next), std::move(settled)};
            out.replaced = replaced;
            done(std::move(out));
          });
  }

  void renew(lock_self self, const renew_request& req, reply<store_answer> done) override {
    auto now = self->clock().now();
    if (!rec_.is_current(req.owner, req.token, now, stalls()))
      return done(store_answer{});
    extend(self, req.ttl_ms > 0 ? req.ttl_ms : rec_.holder->ttl_ms,
           lease_start(req.received_ns, now), std::move(done));
  }

  void release(lock_self self, const release_request& req, lease_end_cause,
               reply<store_answer> done) override {
    if (!rec_.is_current(req.owner, req.token, self->clock().now(), stalls()))
      return done(store_answer{});
    end(self, std::move(done));
  }

  void hand_over(lock_self self, const release_request& req, lease_end_cause,
                 const acquire_request& next, reply<hand_over_answer> done) override {
    if (!rec_.is_current(req.owner, req.token, self->clock().now(), stalls()))
      return done(hand_over_answer{});
    replace_holder(self, next, std::move(done));
  }

  void hand_over_expired(lock_self self, const lease_record& known, const acquire_request& next,
                         reply<hand_over_answer> done) override {
    bool ends_now = rec_.holder && rec_.holder->token == known.token
                    && !rec_.alive(self->clock().now(), stalls());
    if (!ends_now) // it lives on, or ended already: as expire() tells, then the acquire
      return lock_backend::hand_over_expired(self, known, next, std::move(done));
    replace_holder(self, next, std::move(done));
  }

  void expire(lock_self self, const lease_record& known, reply<store_answer> done) override {
    if (!rec_.holder || rec_.holder->token != known.token)
      return done(store_answer{});
    auto now = self->clock().now();
    if (rec_.alive(now, stalls())) {
      auto lives = *rec_.holder;
      if (lives.deadline <= now) {
        // Its deadline fell into a stall of ours: the holder gets the grace to renew first.
        lives.deadline = env_->stalls->grace_until(now);
        if (env_->reporter)
          env_->reporter->expiry_deferred();
      }
      return done(store_answer{verdict::held, lives, std::nullopt});
    }
    end(self, std::move(done));
  }

  void read(lock_self self, reply<lock_view> done) override {
    bool alive = rec_.alive(self->clock().now(), stalls());
    if (rec_.holder && !alive && !env_->health->ok.load()) {
      // The lease ran out but its end cannot be written: it is neither held nor free on
      // record. Fail closed, as the acquire that would end it does.
      return done(caf::make_error(errc::store_unavailable,
                                  std::string{"the store cannot record the end of this lease"}));
    }
    lock_view view;
    view.last_token = rec_.last_token;
    if (alive)
      view.lease = rec_.holder;
    done(std::move(view));
  }

private:
  /// When a lease for a request the service took at `received_ns` starts, judged at `now`: at
  /// that moment, so that the time the request spent inside the server (an actor to spawn, a
  /// write queued ahead of it) does not lengthen the lease beyond what its client asked for.
  /// The client counts its lease from when it sent the request, earlier still, so the server's
  /// deadline stays the later one (docs/fencing.md). Now for a request without a stamp (a
  /// waiter's: its lease runs from its grant).
  static caf::actor_clock::time_point lease_start(int64_t received_ns,
                                                  caf::actor_clock::time_point now) {
    if (received_ns <= 0)
      return now;
    return std::min(from_ns(received_ns), now);
  }

  const stall_window* stalls() const noexcept {
    return env_->stalls.get();
  }

  /// Calls `then` with a new fencing token: taken from the issuer's window while it has plenty,
  /// else asked of the issuer (awaited, without a timeout: it answers every request).
  template <class Then>
  void with_token(lock_self self, Then then) {
    if (auto token = env_->tokens->take())
      return then(*token);
    // Both handlers need `then`; share it rather than copy what it captured.
    auto shared = std::make_shared<Then>(std::move(then));
    self->request(env_->fence, caf::infinite, next_token_atom_v)
      .await([shared](uint64_t token) { (*shared)(token); },
             [shared](caf::error& err) { (*shared)(std::move(err)); });
  }

  /*
   * Ends the holder's lease and grants the lock to `next` in one write: one record per lock,
   * so the new holder replaces the old one, and the end and the grant become durable together,
   * or neither does. Answers the end as ok and the grant as granted.
   */
  void replace_holder(lock_self self, const acquire_request& next, reply<hand_over_answer> done) {
    auto ended = *rec_.holder;
    grant(self, next, self->clock().now(), true,
          [ended = std::move(ended),
           done = std::move(done)](caf::expected<lease_record> granted) mutable {
            if (!granted)
              return done(std::move(granted.error()));
            hand_over_answer out;
            auto replaced = ended.token;
            out.released = store_answer{verdict::ok, std::move(ended), std::nullopt};
            out.granted = store_answer{verdict::granted, std::move(*granted), std::nullopt};
            out.granted.replaced = replaced;
            done(std::move(out));
          });
  }

  /// Makes `req.owner` the holder with a new token and a lease from `start`, in one write that
  /// replaces whatever lease the record held (`urgent` as for commit()); `then` gets the new
  /// lease, or the error.
  template <class Then>
  void grant(lock_self self, const acquire_request& req, caf::actor_clock::time_point start,
             bool urgent, Then then) {
    with_token(self, [this, owner = req.owner, ttl_ms = req.ttl_ms, start, self, urgent,
                      then = std::move(then)](caf::expected<uint64_t> token) mutable {
      if (!token)
        return then(caf::expected<lease_record>{std::move(token.error())});
      auto next = make_lease(std::move(owner), *token, ttl_ms, start, env_->clock);
      commit(self, next, urgent,
             [next, then = std::move(then)](caf::error err) mutable {
               if (err)
                 return then(caf::expected<lease_record>{std::move(err)});
               then(caf::expected<lease_record>{std::move(next)});
             });
    });
  }

  /// Gives the lease a new deadline `ttl_ms` from `start`.
  void extend(lock_self self, int64_t ttl_ms, caf::actor_clock::time_point start,
              reply<store_answer> done) {
    auto next = make_lease(rec_.holder->owner, rec_.holder->token, ttl_ms, start, env_->clock);
    next.revision = rec_.holder->revision + 1;
    commit(self, next, true, [next, done = std::move(done)](caf::error err) mutable {
      if (err)
        return done(std::move(err));
      done(store_answer{verdict::ok, std::move(next), std::nullopt});
    });
  }

  /// Frees the lock; answers with the lease as it ended.
  void end(lock_self self, reply<store_answer> done) {
    auto ended = *rec_.holder;
    commit(self, std::nullopt, true,
           [ended = std::move(ended), done = std::move(done)](caf::error err) mutable {
             if (err)
               return done(std::move(err));
             done(store_answer{verdict::ok, std::move(ended), std::nullopt});
           });
  }

  /*
   * Makes `next` the lock's holder (nothing: free) durable, then applies it and calls `then`
   * (with the error when the write failed: then nothing changed). `urgent` writes (renewals and
   * ends) overtake queued grants at the store, as the requests that caused them overtook them
   * on their way here.
   *
   * No timeout: the store actor answers every write once its commit returned (or when it
   * stops), and only then is the outcome known. A write timed out while its commit still runs
   * could become durable after the lock actor gave up on it, and the record here would no
   * longer be what is on disk. A stalled commit shows instead in the store's readiness
   * (commit_health), and callers are answered at their deadline by the bridge's sweep (direct
   * calls too: actors/direct_call.hpp). It also spares CAF's
   * clock thread two wake-ups per write (one to arm the timeout, one when it fires).
   */
  template <class Then>
  void commit(lock_self self, std::optional<lease_record> next, bool urgent, Then then) {
    auto record = rec_.to_stored(name_, next);
    auto sent = std::chrono::steady_clock::now();
    // What both handlers need, in one place: copying `then` would copy every continuation it
    // carries (the lock actor's, with its request), several times over, on every write.
    struct pending {
      std::optional<lease_record> next;
      Then then;
    };
    auto p = std::make_shared<pending>(pending{std::move(next), std::move(then)});
    auto on_written = [this, p, sent](bool) {
      if (env_->reporter)
        env_->reporter->write_took(std::chrono::steady_clock::now() - sent);
      rec_.apply(p->next);
      p->then(caf::none);
    };
    auto on_failed = [p](caf::error& err) { p->then(std::move(err)); };
    if (urgent)
      self
        ->request<caf::message_priority::high>(env_->store, caf::infinite, put_atom_v,
                                               std::move(record))
        .await(on_written, on_failed);
    else
      self->request(env_->store, caf::infinite, put_atom_v, std::move(record))
        .await(on_written, on_failed);
  }

  env_ptr env_;
  std::string name_;
  lock_record rec_;
};

} // namespace

caf::expected<std::shared_ptr<embedded_store>> embedded_store::make(
  caf::actor_system& sys, std::shared_ptr<lease_store> store, embedded_settings settings,
  std::shared_ptr<event_hub> events, std::shared_ptr<store_reporter> reporter) {
  auto floor = store->fence_floor();
  if (!floor)
    return std::move(floor.error());
  if (settings.fence_floor > *floor) {
    // Tokens of this run start there; the issuer reserves a block above it before the first.
    if (reporter)
      reporter->note(log_level::info, "fence_floor",
                     {{"fence_floor", settings.fence_floor}, {"stored_floor", *floor}});
    *floor = settings.fence_floor;
  }
  auto records = store->load_all();
  if (!records)
    return std::move(records.error());
  auto table = std::make_shared<lease_table>(settings.released_kept);
  table->load(std::move(*records));
  std::shared_ptr<embedded_store> result{new embedded_store};
  result->store_ = store;
  result->held_ = table->held_names();
  result->health_->stall_limit = settings.commit_stall_limit;
  auto env = std::make_shared<environment>();
  env->table = table;
  env->store =
    settings.detached
      ? sys.spawn<caf::detached>(store_actor_impl, store, table, result->health_, reporter)
      : sys.spawn(store_actor_impl, store, table, result->health_, reporter);
  result->lister_ =
    sys.spawn(table_lister_impl, std::shared_ptr<const lease_table>{table}, settings.clock);
  env->tokens = std::make_shared<token_window>(*floor, settings.fence_block);
  env->fence = sys.spawn(fence_issuer_impl, env->store, env->tokens, settings.fence_block);
  env->clock = settings.clock;
  if (settings.watch_stalls)
    env->stalls = std::make_shared<stall_window>();
  env->reporter = reporter;
  env->health = result->health_;
  result->env_ = std::move(env);
  result->announcer_ = std::make_shared<local_announcer>(
    std::move(events), std::move(reporter), static_cast<int64_t>(result->held_.size()));
  return result;
}

std::unique_ptr<lock_backend> embedded_store::make_backend(const std::string& name) {
  return std::make_unique<embedded_backend>(env_, name);
}

bool embedded_store::shared() const noexcept {
  return false; // every lease of this store is granted by this process
}

std::shared_ptr<change_announcer> embedded_store::announcer() const {
  return announcer_;
}

std::shared_ptr<stall_window> embedded_store::stalls() const {
  return env_->stalls;
}

std::vector<std::string> embedded_store::held_at_start() {
  return std::exchange(held_, {});
}

lister_actor embedded_store::lister() const {
  return caf::actor_cast<lister_actor>(lister_);
}

void embedded_store::start(registry_actor) {
  // Nothing runs in the background: the lock actors are the event source.
}

bool embedded_store::ready() const noexcept {
  return health_->ready(std::chrono::steady_clock::now());
}

std::vector<caf::actor> embedded_store::actors() const {
  return {caf::actor_cast<caf::actor>(lister_), caf::actor_cast<caf::actor>(env_->fence),
          caf::actor_cast<caf::actor>(env_->store)};
}

void embedded_store::close() {
  store_.reset(); // closes SQLite once its actor let go too
}

} // namespace fencelock
