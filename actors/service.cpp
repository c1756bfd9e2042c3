#include "fencelock/service.hpp"

#include <atomic>
#include <unordered_map>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/event_hub.hpp"
#include "actors/metrics.hpp"
#include "actors/oplog.hpp"
#include "actors/store/redis/redis_store.hpp"
#include "common/redis_url.hpp"
#include "actors/store/sqlite_store.hpp"
#include "actors/wiring.hpp"
#include "fencelock/validate.hpp"

namespace fencelock {

namespace {

/// Carries a caller's callback through the bridge actor. Callbacks never leave the process.
template <class T>
struct reply_to {
  callback<T> fn;
};

} // namespace
} // namespace fencelock

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::reply_to<fencelock::lease>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::reply_to<bool>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::reply_to<fencelock::lock_status>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::reply_to<fencelock::lock_list>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::reply_to<fencelock::check_result>)

namespace fencelock {

namespace {

using running_flag = std::shared_ptr<std::atomic<bool>>;

// Requests that are not acquires finish within a few store round trips; an acquire may wait.
constexpr auto call_timeout = std::chrono::seconds{30};

// Callers see fencelock codes only: anything else (an actor gone, a timeout) is `unavailable`,
// or `shutting_down` once stop() began.
caf::error normalize(caf::error err, const running_flag& running) {
  errc code;
  if (as_errc(err, code))
    return err;
  if (!running->load())
    return caf::make_error(errc::shutting_down, std::string{"the service is stopping"});
  return caf::make_error(errc::unavailable, "internal: " + to_string(err));
}

template <class T, caf::message_priority Priority = caf::message_priority::normal, class... Ts>
void forward(caf::event_based_actor* self, const registry_actor& registry, caf::timespan timeout,
             const running_flag& running, reply_to<T> cb, Ts&&... xs) {
  self->request<Priority>(registry, timeout, std::forward<Ts>(xs)...)
    .then([cb](T& x) { cb.fn(std::move(x)); },
          [cb, running](caf::error& err) { cb.fn(normalize(std::move(err), running)); });
}

// Turns callback calls into requests to the registry without blocking anybody: the reply
// handler runs the callback on this actor's worker thread.
caf::behavior bridge_impl(caf::event_based_actor* self, registry_actor registry,
                          running_flag running) {
  return {
    [=](acquire_atom, acquire_request& req, reply_to<lease>& cb) {
      auto timeout = std::chrono::milliseconds{req.wait_ms} + call_timeout;
      forward(self, registry, timeout, running, std::move(cb), acquire_atom_v, std::move(req));
    },
    // Renewals and releases overtake queued acquires and reads in every mailbox on their way
    // (the registry's delegate keeps the priority): under load a holder keeps its lease.
    [=](renew_atom, renew_request& req, reply_to<lease>& cb) {
      forward<lease, caf::message_priority::high>(self, registry, call_timeout, running,
                                                  std::move(cb), renew_atom_v, std::move(req));
    },
    [=](release_atom, release_request& req, reply_to<bool>& cb) {
      forward<bool, caf::message_priority::high>(self, registry, call_timeout, running,
                                                 std::move(cb), release_atom_v, std::move(req));
    },
    [=](status_atom, std::string& name, reply_to<lock_status>& cb) {
      forward(self, registry, call_timeout, running, std::move(cb), status_atom_v,
              std::move(name));
    },
    [=](check_atom, check_request& req, reply_to<check_result>& cb) {
      forward(self, registry, call_timeout, running, std::move(cb), check_atom_v, std::move(req));
    },
    [=](list_atom, list_request& req, reply_to<lock_list>& cb) {
      forward(self, registry, call_timeout, running, std::move(cb), list_atom_v, std::move(req));
    },
  };
}

uint64_t token_of(const lease& x) {
  return x.token;
}

template <class T>
uint64_t token_of(const T&) {
  return 0;
}

} // namespace

/// Which shedding threshold a call answers to (docs/overload.md).
enum class admission {
  acquire, // shed first: new work
  read,    // status, check, list, subscribe
  lease,   // renew, release: refused only at max-in-flight
};

struct service::impl {
  caf::actor_system& sys;
  fencelock::config cfg;
  std::shared_ptr<lease_store> store;
  /// The Redis store, when configured (then `store` is unset).
  std::shared_ptr<redis_store> redis;
  service_actors actors;
  caf::actor bridge;
  running_flag running = std::make_shared<std::atomic<bool>>(false);
  std::atomic<uint64_t> next_id{1};
  // Outlives stop(): the counts of a stopped service can still be scraped.
  std::shared_ptr<metrics> stats = std::make_shared<metrics>();
  std::shared_ptr<event_hub> events = std::make_shared<event_hub>();
  /// Calls in progress (from validation to answer), and how many of them are waiting acquires.
  std::atomic<int64_t> in_flight{0};
  std::shared_ptr<std::atomic<int64_t>> waiting = std::make_shared<std::atomic<int64_t>>(0);
  /// Set by drain(): waiters were answered and no new ones queue.
  std::shared_ptr<std::atomic<bool>> draining = std::make_shared<std::atomic<bool>>(false);
  /// The network I/O loop's latest lag, as its front end reports it.
  std::atomic<int64_t> io_lag_us{0};

  impl(caf::actor_system& s, fencelock::config c) : sys(s), cfg(std::move(c)) {
  }

  /// Returns the requests in progress that are not waiting acquires: the work the service holds.
  int64_t busy() const noexcept {
    return in_flight.load() - waiting->load();
  }

  /// Returns the overloaded error that sheds a call of class `cls` now, or none.
  caf::error shed(admission cls) const {
    auto limit = cls == admission::acquire ? cfg.shed_acquires_at
                 : cls == admission::read  ? cfg.shed_reads_at
                                           : cfg.max_in_flight;
    auto now = busy();
    if (now >= static_cast<int64_t>(limit))
      return caf::make_error(errc::overloaded,
                             "overloaded: " + std::to_string(now)
                               + " requests in progress; new acquires are shed first, renewals "
                                 "and releases last");
    if (cls != admission::acquire)
      return caf::none;
    auto lag_ms = io_lag_us.load() / 1000;
    if (cfg.shed_io_lag_ms > 0 && lag_ms >= cfg.shed_io_lag_ms)
      return caf::make_error(errc::overloaded, "overloaded: the network loop lags "
                                                 + std::to_string(lag_ms) + " ms");
    auto store_ms = stats->store_write_average_ms();
    if (cfg.shed_store_latency_ms > 0 && store_ms >= cfg.shed_store_latency_ms)
      return caf::make_error(errc::overloaded,
                             "overloaded: lease store writes take "
                               + std::to_string(static_cast<int64_t>(store_ms))
                               + " ms on average; new acquires are shed until they are faster");
    return caf::none;
  }

  // Validates, admits, logs and sends one call through the bridge.
  template <class T, class Req, class Atom>
  void call(Atom atom, std::string_view op, Req req, const std::string& lock,
            const std::string& owner, uint64_t token, callback<T> done, call_context ctx,
            caf::error invalid, admission cls) {
    auto started = std::chrono::steady_clock::now();
    auto finish = [=, stats = stats, ctx = std::move(ctx), done = std::move(done)](caf::expected<T> x) {
      caf::error err = x ? caf::error{} : x.error();
      auto granted = x ? token_of(*x) : 0; // the token answered, else the one presented
      log_operation({op, ctx.request_id, lock, owner, granted != 0 ? granted : token, started}, err);
      errc code;
      auto outcome = !err ? std::string{"ok"}
                          : as_errc(err, code) ? std::string{to_string(code)}
                                               : std::string{"unavailable"};
      stats->record_operation(op, outcome, std::chrono::steady_clock::now() - started);
      done(std::move(x));
    };
    if (invalid)
      return finish(std::move(invalid));
    if (!running->load())
      return finish(caf::make_error(errc::shutting_down, std::string{"the service is stopped"}));
    if (auto overloaded = shed(cls)) {
      stats->record_shed(op);
      return finish(std::move(overloaded));
    }
    ++in_flight;
    auto counted = [this, finish = std::move(finish)](caf::expected<T> x) {
      --in_flight;
      finish(std::move(x));
    };
    // Renewals and releases overtake queued calls from the first mailbox on (the bridge's).
    if (cls == admission::lease)
      caf::anon_send<caf::message_priority::high>(bridge, atom, std::move(req),
                                                  reply_to<T>{std::move(counted)});
    else
      caf::anon_send(bridge, atom, std::move(req), reply_to<T>{std::move(counted)});
  }
};

service::service(caf::actor_system& sys, fencelock::config cfg)
  : impl_(std::make_unique<impl>(sys, std::move(cfg))) {
}

service::~service() {
  stop();
}

caf::error service::start() {
  auto& d = *impl_;
  if (d.running->load())
    return caf::none;
  if (redis::is_redis_url(d.cfg.store))
    return start_redis();
  if (d.cfg.store != "embedded")
    return caf::make_error(errc::store_unavailable,
                           "store: unknown store " + redis::redacted_text(d.cfg.store));
  auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::steady_clock::now().time_since_epoch())
                  .count();
  auto opened = sqlite_store::open(d.cfg.data_dir, current_boot_id(), now_ns);
  if (!opened)
    return std::move(opened.error());
  d.store = std::move(*opened);
  // SQLite blocks on fsync: its actor gets a thread of its own, off the scheduler.
  auto actors = spawn_service_actors(d.sys, d.store, d.cfg, true, d.stats, d.events, d.waiting,
                                     d.draining);
  if (!actors)
    return std::move(actors.error());
  d.actors = std::move(*actors);
  d.bridge = d.sys.spawn(bridge_impl, d.actors.registry, d.running);
  d.running->store(true);
  return caf::none;
}

caf::error service::start_redis() {
  auto& d = *impl_;
  std::string why;
  auto where = redis::parse_url(d.cfg.store, why);
  if (!where)
    return caf::make_error(errc::store_unavailable, "store: " + why);
  redis_settings settings;
  settings.where = std::move(*where);
  settings.key_prefix = d.cfg.redis_key_prefix;
  settings.timeout = std::chrono::milliseconds{d.cfg.redis_timeout_ms};
  // The event channel feeds this instance's subscribers and lease watches with the changes of
  // every instance, and wakes the waiters of a lock that another instance freed. Both sinks run
  // on the store's I/O thread, after the actors below exist.
  auto events = d.events;
  auto stats = d.stats;
  auto registry = std::make_shared<registry_actor>();
  // Leases held in the store as heard on the channel (name -> token), for the held gauge; only
  // the store's I/O thread touches it. Leases that began before this instance are not counted.
  auto held = std::make_shared<std::unordered_map<std::string, uint64_t>>();
  d.redis = std::make_shared<redis_store>(
    std::move(settings),
    [events, stats, registry, held](const lock_event& ev) {
      events->publish(ev);
      if (ev.ends_lease()) {
        if (auto i = held->find(ev.name); i != held->end() && i->second == ev.token)
          held->erase(i);
        caf::anon_send(*registry, wake_atom_v, ev.name);
      } else {
        if (ev.kind == lock_event_kind::acquired)
          (*held)[ev.name] = ev.token;
        // Subscribers here hear of this lease's expiry even when the instance that granted it
        // is gone: this instance watches it too.
        if (events->subscribed_to(ev.name))
          caf::anon_send(*registry, watch_atom_v, ev.name, ev.owner, ev.token, ev.expires_at_ms);
      }
      stats->set_locks_held(static_cast<int64_t>(held->size()));
    },
    [registry] {
      // Events may have been missed while the subscription was down: every waiter looks again.
      caf::anon_send(*registry, wake_atom_v, std::string{});
    });
  d.actors = spawn_redis_service_actors(d.sys, d.redis, d.cfg, d.stats, d.events, d.waiting,
                                        d.draining);
  *registry = d.actors.registry;
  // Connecting happens in the background: until Redis answers, requests fail closed with
  // store_unavailable and /readyz says no.
  d.redis->start();
  d.bridge = d.sys.spawn(bridge_impl, d.actors.registry, d.running);
  d.running->store(true);
  return caf::none;
}

bool service::stop(std::chrono::milliseconds grace) {
  auto& d = *impl_;
  if (!d.running->exchange(false))
    return true;
  caf::scoped_actor self{d.sys};
  // The registry first (it stops the lock actors, which answer their waiters), the bridge last,
  // so that those answers still reach their callbacks.
  auto order = d.actors.stop_order();
  order.push_back(d.bridge);
  auto deadline = std::chrono::steady_clock::now() + grace;
  bool all_down = true;
  for (auto& a : order) {
    self->monitor(a);
    self->send_exit(a, caf::exit_reason::user_shutdown);
    auto left = deadline - std::chrono::steady_clock::now();
    if (left <= decltype(left)::zero()) {
      all_down = false;
      continue;
    }
    self->receive([](caf::down_msg&) {},
                  caf::after(std::chrono::duration_cast<std::chrono::milliseconds>(left)) >>
                    [&] { all_down = false; });
  }
  d.store.reset(); // closes SQLite once its actor let go too
  if (d.redis) {
    d.redis->stop();
    d.redis.reset();
  }
  return all_down;
}

void service::drain() {
  auto& d = *impl_;
  if (!d.running->load() || d.draining->exchange(true))
    return;
  caf::anon_send<caf::message_priority::high>(d.actors.registry, drain_atom_v);
}

bool service::running() const noexcept {
  return impl_->running->load();
}

bool service::ready() const noexcept {
  auto& d = *impl_;
  return running() && !d.draining->load() && !d.shed(admission::acquire)
         && (!d.redis || d.redis->ready());
}

registry_actor service::registry() const {
  return impl_->actors.registry;
}

const fencelock::config& service::cfg() const noexcept {
  return impl_->cfg;
}

std::string service::metrics_text() const {
  auto& d = *impl_;
  d.stats->set_load(d.in_flight.load(), d.waiting->load(), d.events->subscriptions(),
                    static_cast<bool>(d.shed(admission::acquire)));
  return d.stats->scrape();
}

void service::report_io_lag(std::chrono::microseconds lag) {
  impl_->io_lag_us.store(lag.count());
  impl_->stats->set_io_lag(lag);
}

void service::set_websocket_sessions(std::size_t n) {
  impl_->stats->set_websocket_sessions(n);
}

uint64_t service::next_request_id() noexcept {
  return impl_->next_id.fetch_add(1, std::memory_order_relaxed);
}

void service::acquire(acquire_request req, callback<lease> done, call_context ctx) {
  if (req.request_id == 0)
    req.request_id = next_request_id();
  auto invalid = validate(req, impl_->cfg);
  auto name = req.name;
  auto owner = req.owner;
  impl_->call<lease>(acquire_atom_v, "acquire", std::move(req), name, owner, 0, std::move(done),
                     std::move(ctx), std::move(invalid), admission::acquire);
}

void service::renew(renew_request req, callback<lease> done, call_context ctx) {
  auto invalid = validate(req, impl_->cfg);
  auto name = req.name;
  auto owner = req.owner;
  auto token = req.token;
  impl_->call<lease>(renew_atom_v, "renew", std::move(req), name, owner, token, std::move(done),
                     std::move(ctx), std::move(invalid), admission::lease);
}

void service::release(release_request req, callback<bool> done, call_context ctx) {
  auto invalid = validate(req, impl_->cfg);
  auto name = req.name;
  auto owner = req.owner;
  auto token = req.token;
  impl_->call<bool>(release_atom_v, "release", std::move(req), name, owner, token,
                    std::move(done), std::move(ctx), std::move(invalid), admission::lease);
}

void service::status(std::string name, callback<lock_status> done, call_context ctx) {
  caf::error invalid;
  if (!valid_lock_name(name))
    invalid = invalid_field("name", "must be 1..200 characters of [A-Za-z0-9._:-]");
  auto lock = name;
  impl_->call<lock_status>(status_atom_v, "status", std::move(name), lock, std::string{}, 0,
                           std::move(done), std::move(ctx), std::move(invalid), admission::read);
}

void service::check(check_request req, callback<check_result> done, call_context ctx) {
  auto invalid = validate(req, impl_->cfg);
  auto name = req.name;
  auto token = req.token;
  impl_->call<check_result>(check_atom_v, "check", std::move(req), name, std::string{}, token,
                            std::move(done), std::move(ctx), std::move(invalid), admission::read);
}

void service::list(list_request req, callback<lock_list> done, call_context ctx) {
  auto invalid = validate(req, impl_->cfg);
  impl_->call<lock_list>(list_atom_v, "list", std::move(req), std::string{}, std::string{}, 0,
                         std::move(done), std::move(ctx), std::move(invalid), admission::read);
}

namespace {

/// Gathers a subscription's snapshot: one lock's status, or every page of held locks.
struct snapshot_collector : std::enable_shared_from_this<snapshot_collector> {
  caf::actor bridge;
  list_request page;
  lock_list all;
  callback<lock_list> done;

  void status(std::string name) {
    caf::anon_send(bridge, status_atom_v, std::move(name),
                   reply_to<lock_status>{[self = shared_from_this()](caf::expected<lock_status> x) {
                     if (!x)
                       return self->done(std::move(x.error()));
                     self->all.locks.push_back(std::move(*x));
                     self->done(std::move(self->all));
                   }});
  }

  void next_page() {
    caf::anon_send(bridge, list_atom_v, page,
                   reply_to<lock_list>{[self = shared_from_this()](caf::expected<lock_list> x) {
                     if (!x)
                       return self->done(std::move(x.error()));
                     for (auto& st : x->locks)
                       self->all.locks.push_back(std::move(st));
                     if (x->next_cursor.empty())
                       return self->done(std::move(self->all));
                     self->page.cursor = std::move(x->next_cursor);
                     self->next_page();
                   }});
  }
};

} // namespace

uint64_t service::subscribe(subscribe_request req, callback<lock_list> snapshot,
                            event_handler on_event, call_context ctx) {
  auto& d = *impl_;
  auto started = std::chrono::steady_clock::now();
  // One operation event for the whole subscribe, snapshot included.
  auto finish = [stats = d.stats, ctx = std::move(ctx), started, prefix = req.prefix,
                 exact = req.exact](const caf::error& err) {
    log_operation({"subscribe", ctx.request_id, exact ? std::string_view{prefix} : "", "", 0,
                   started},
                  err);
    errc code;
    auto outcome = !err                   ? std::string{"ok"}
                   : as_errc(err, code) ? std::string{to_string(code)}
                                          : std::string{"unavailable"};
    stats->record_operation("subscribe", outcome, std::chrono::steady_clock::now() - started);
  };
  auto refuse = [&](caf::error err) -> uint64_t {
    finish(err);
    snapshot(std::move(err));
    return 0;
  };
  if (auto invalid = validate(req, d.cfg))
    return refuse(std::move(invalid));
  if (!d.running->load())
    return refuse(caf::make_error(errc::shutting_down, std::string{"the service is stopped"}));
  if (auto overloaded = d.shed(admission::read)) {
    d.stats->record_shed("subscribe");
    return refuse(std::move(overloaded));
  }
  // Subscribed before the snapshot is taken: every change from here on is either in the
  // snapshot or held back for delivery after it (event_hub::open).
  auto id = d.events->subscribe(req.prefix, req.exact, std::move(on_event));
  auto collector = std::make_shared<snapshot_collector>();
  collector->bridge = d.bridge;
  collector->done = [events = d.events, id, snapshot = std::move(snapshot),
                     finish](caf::expected<lock_list> x) {
    if (!x) {
      events->unsubscribe(id);
      finish(x.error());
      return snapshot(std::move(x.error()));
    }
    bool opened = events->open(id, x->locks, [&] { snapshot(*x); });
    if (!opened) {
      // Unsubscribed meanwhile (nobody waits for the answer), or too many events held back.
      auto err = caf::make_error(errc::overloaded,
                                 std::string{"too many lock events while taking the snapshot"});
      finish(err);
      snapshot(std::move(err));
      return;
    }
    finish(caf::none);
  };
  if (req.exact) {
    collector->status(std::move(req.prefix));
  } else {
    collector->page.prefix = std::move(req.prefix);
    collector->page.limit = d.cfg.list_limit_max;
    collector->next_page();
  }
  return id;
}

void service::unsubscribe(uint64_t id) {
  impl_->events->unsubscribe(id);
}

uint64_t service::watch_lease(const std::string& name, event_handler on_end) {
  if (!impl_->running->load())
    return 0;
  return impl_->events->watch_lease(name, std::move(on_end));
}

void service::bind_lease_watch(uint64_t id, uint64_t token) {
  impl_->events->bind_lease_watch(id, token);
}

void service::unwatch_lease(uint64_t id) {
  impl_->events->unwatch_lease(id);
}

std::size_t service::subscriptions() const {
  return impl_->events->subscriptions();
}

void service::cancel(const std::string& name, uint64_t request_id) {
  if (impl_->running->load() && valid_lock_name(name))
    caf::anon_send(impl_->actors.registry, cancel_atom_v, name, request_id);
}

} // namespace fencelock
