// The embedding API (fencelock/service.hpp): validation, admission, the operation log and the
// metrics of each call, then the bridge to the actors. Admission lives in admission.cpp, the
// bridge in bridge.cpp, subscription snapshots in snapshot.cpp, and the store is chosen once,
// by make_store() (actors/store/factory.cpp).

#include "fencelock/service.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/admission.hpp"
#include "actors/bridge.hpp"
#include "actors/clock.hpp"
#include "actors/oplog.hpp"
#include "actors/service_core.hpp"
#include "actors/snapshot.hpp"
#include "actors/store/factory.hpp"
#include "actors/store_reports.hpp"
#include "actors/wiring.hpp"
#include "fencelock/validate.hpp"

namespace fencelock {

namespace {

using core_ptr = std::shared_ptr<service_core>;

uint64_t token_of(const lease& x) {
  return x.token;
}

template <class T>
uint64_t token_of(const T&) {
  return 0;
}

/// How a finished call leaves the counts of calls in progress.
enum class counted { no, call, read };

/// Wraps `done` so that the finished call is logged, counted and timed, and leaves the counts
/// of calls in progress it was in. Holds the core, never the service.
template <class T>
callback<T> finishing(core_ptr core, std::string_view op, std::string lock, std::string owner,
                      uint64_t token, callback<T> done, call_context ctx, counted in) {
  auto started = std::chrono::steady_clock::now();
  return [=, done = std::move(done), ctx = std::move(ctx)](caf::expected<T> x) {
    if (in != counted::no)
      --core->in_flight;
    if (in == counted::read)
      --core->reads_in_flight;
    caf::error err = x ? caf::error{} : x.error();
    auto answered = x ? token_of(*x) : 0; // the token answered, else the one presented
    log_operation(
      {op, ctx.request_id, lock, owner, ctx.principal, answered != 0 ? answered : token, started},
      err);
    core->stats->record_operation(op, outcome_of(err), std::chrono::steady_clock::now() - started);
    core->deliver([&] { done(std::move(x)); });
  };
}

} // namespace

struct service::impl {
  caf::actor_system& sys;
  core_ptr core;
  service_actors actors;
  caf::actor bridge;

  impl(caf::actor_system& s, fencelock::config c)
    : sys(s), core(std::make_shared<service_core>(std::move(c))) {
  }

  /*
   * Validates (`invalid` is the validation's verdict), admits, logs and sends one call: straight
   * to its lock's actor when one runs, else through the bridge. `lock`, `owner` and `token` label
   * the operation event; `cls` decides when the call is shed. `done` is called exactly once.
   */
  template <class T, class Req, class Atom>
  void call(Atom atom, std::string_view op, Req req, std::string lock, std::string owner,
            uint64_t token, callback<T> done, call_context ctx, caf::error invalid,
            call_class cls) {
    auto refuse = [&](caf::error err) {
      finishing<T>(core, op, std::move(lock), std::move(owner), token, std::move(done),
                   std::move(ctx), counted::no)(std::move(err));
    };
    if (invalid)
      return refuse(std::move(invalid));
    if (!core->running->load())
      return refuse(caf::make_error(errc::shutting_down, std::string{"the service is stopped"}));
    if (auto overloaded = shed(*core, cls)) {
      core->stats->record_shed(op);
      if (cls == call_class::acquire)
        core->last_acquire_shed = std::chrono::steady_clock::now().time_since_epoch().count();
      return refuse(std::move(overloaded));
    }
    // A lease granted without waiting runs from here (acquire_request::received_ns).
    auto now = sys.clock().now();
    if constexpr (std::is_same_v<Req, acquire_request> || std::is_same_v<Req, renew_request>)
      req.received_ns = to_ns(now);
    ++core->in_flight;
    if (cls == call_class::read)
      ++core->reads_in_flight;
    // A lock whose actor runs is called directly; the others take the bridge and the registry,
    // which spawns the actor (actors/direct_call.hpp).
    lock_actor actor;
    if constexpr (!std::is_same_v<Req, list_request>)
      actor = actors.locks->route(lock); // counted as routed to it: it is sent one now
    auto finish =
      finishing<T>(core, op, std::move(lock), std::move(owner), token, std::move(done),
                   std::move(ctx), cls == call_class::read ? counted::read : counted::call);
    // Renewals and releases overtake queued calls from the first mailbox on.
    if constexpr (!std::is_same_v<Req, list_request>) {
      if (actor) {
        direct_reply<T> reply{std::move(finish), core->running};
        caf::timespan timeout = call_timeout;
        if constexpr (std::is_same_v<Req, acquire_request>)
          timeout += std::chrono::milliseconds{req.wait_ms};
        if (reply.watch(*core->deadlines, now + timeout))
          caf::anon_send(bridge, arm_atom_v); // the first one watched: sweep
        lock_call direct{direct_call<Req, T>{std::move(req), std::move(reply)}};
        if (cls == call_class::lease)
          caf::anon_send<caf::message_priority::high>(actor, std::move(direct));
        else
          caf::anon_send(actor, std::move(direct));
        return;
      }
    }
    if (cls == call_class::lease)
      caf::anon_send<caf::message_priority::high>(bridge, atom, std::move(req),
                                                  reply_to<T>{std::move(finish)});
    else
      caf::anon_send(bridge, atom, std::move(req), reply_to<T>{std::move(finish)});
  }
};

service::service(caf::actor_system& sys, fencelock::config cfg)
  : impl_(std::make_unique<impl>(sys, std::move(cfg))) {
}

service::~service() {
  stop();
  // A stop() that gave up after its grace leaves actors running, whose answers would reach the
  // callbacks of a host that is gone by then: from here on, none does.
  impl_->core->retire();
}

caf::error service::start() {
  auto& d = *impl_;
  auto& core = *d.core;
  if (core.running->load())
    return caf::none;
  auto clock = clock_mapping::now();
  auto store = make_store(d.sys, core.cfg, clock, core.events, make_store_reporter(core.stats));
  if (!store)
    return std::move(store.error());
  d.actors = spawn_service_actors(d.sys, std::move(*store), core.cfg, clock,
                                  service_links{core.stats, core.waiting, core.draining});
  d.bridge = d.sys.spawn(bridge_impl, d.actors.registry, core.running, core.deadlines);
  core.running->store(true);
  return caf::none;
}

bool service::stop(std::chrono::milliseconds grace) {
  auto& d = *impl_;
  if (!d.core->running->exchange(false))
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
  if (d.actors.store)
    d.actors.store->close();
  return all_down;
}

void service::drain() {
  auto& d = *impl_;
  if (!d.core->running->load() || d.core->draining->exchange(true))
    return;
  caf::anon_send<caf::message_priority::high>(d.actors.registry, drain_atom_v);
}

bool service::running() const noexcept {
  return impl_->core->running->load();
}

bool service::ready() const noexcept {
  auto& d = *impl_;
  using clock = std::chrono::steady_clock;
  auto last_shed = clock::time_point{clock::duration{d.core->last_acquire_shed.load()}};
  bool shed_lately = d.core->last_acquire_shed.load() != 0
                     && clock::now() - last_shed < service_core::readiness_hold;
  return running() && !d.core->draining->load() && !shed(*d.core, call_class::acquire)
         && !shed_lately && d.actors.store->ready();
}

registry_actor service::registry() const {
  return impl_->actors.registry;
}

const fencelock::config& service::cfg() const noexcept {
  return impl_->core->cfg;
}

std::string service::metrics_text() const {
  auto& core = *impl_->core;
  core.stats->set_load(core.in_flight.load(), core.waiting->load(), core.events->subscriptions(),
                       static_cast<bool>(shed(core, call_class::acquire)));
  return core.stats->scrape();
}

void service::report_io_lag(std::chrono::microseconds lag) {
  impl_->core->io_lag_us.store(lag.count());
  impl_->core->stats->set_io_lag(lag);
}

void service::set_websocket_sessions(std::size_t n) {
  impl_->core->stats->set_websocket_sessions(n);
}

uint64_t service::next_request_id() noexcept {
  return impl_->core->next_id.fetch_add(1, std::memory_order_relaxed);
}

void service::acquire(acquire_request req, callback<lease> done, call_context ctx) {
  if (req.request_id == 0)
    req.request_id = next_request_id();
  auto invalid = validate(req, cfg());
  auto name = req.name;
  auto owner = req.owner;
  impl_->call<lease>(acquire_atom_v, "acquire", std::move(req), std::move(name), std::move(owner),
                     0, std::move(done), std::move(ctx), std::move(invalid), call_class::acquire);
}

void service::renew(renew_request req, callback<lease> done, call_context ctx) {
  auto invalid = validate(req, cfg());
  auto name = req.name;
  auto owner = req.owner;
  auto token = req.token;
  impl_->call<lease>(renew_atom_v, "renew", std::move(req), std::move(name), std::move(owner),
                     token, std::move(done), std::move(ctx), std::move(invalid), call_class::lease);
}

void service::release(release_request req, callback<bool> done, call_context ctx) {
  auto invalid = validate(req, cfg());
  auto name = req.name;
  auto owner = req.owner;
  auto token = req.token;
  auto op = req.force ? "force_release" : "release";
  impl_->call<bool>(release_atom_v, op, std::move(req), std::move(name), std::move(owner), token,
                    std::move(done), std::move(ctx), std::move(invalid), call_class::lease);
}

void service::status(std::string name, callback<lock_status> done, call_context ctx) {
  caf::error invalid;
  if (!valid_lock_name(name))
    invalid = invalid_field("name", "must be 1..200 characters of [A-Za-z0-9._:-]");
  auto lock = name;
  impl_->call<lock_status>(status_atom_v, "status", std::move(name), std::move(lock), std::string{},
                           0, std::move(done), std::move(ctx), std::move(invalid),
                           call_class::read);
}

void service::check(check_request req, callback<check_result> done, call_context ctx) {
  auto invalid = validate(req, cfg());
  auto name = req.name;
  auto token = req.token;
  impl_->call<check_result>(check_atom_v, "check", std::move(req), std::move(name), std::string{},
                            token, std::move(done), std::move(ctx), std::move(invalid),
                            call_class::read);
}

void service::list(list_request req, callback<lock_list> done, call_context ctx) {
  auto invalid = validate(req, cfg());
  impl_->call<lock_list>(list_atom_v, "list", std::move(req), std::string{}, std::string{}, 0,
                         std::move(done), std::move(ctx), std::move(invalid), call_class::read);
}

uint64_t service::subscribe(subscribe_request req, callback<lock_list> snapshot,
                            event_handler on_event, call_context ctx) {
  auto& d = *impl_;
  auto core = d.core;
  // One operation event for the whole subscribe; the snapshot counts as a read in progress.
  auto refuse = [&](caf::error err) -> uint64_t {
    finishing<bool>(
      core, "subscribe", req.exact ? req.prefix : std::string{}, std::string{}, 0,
      [](caf::expected<bool>) {}, ctx, counted::no)(err);
    snapshot(std::move(err));
    return 0;
  };
  if (auto invalid = validate(req, core->cfg))
    return refuse(std::move(invalid));
  if (!core->running->load())
    return refuse(caf::make_error(errc::shutting_down, std::string{"the service is stopped"}));
  if (auto overloaded = shed(*core, call_class::read)) {
    core->stats->record_shed("subscribe");
    return refuse(std::move(overloaded));
  }
  ++core->in_flight;
  ++core->reads_in_flight;
  auto finish = finishing<bool>(
    core, "subscribe", req.exact ? req.prefix : std::string{}, std::string{}, 0,
    [](caf::expected<bool>) {}, std::move(ctx), counted::read);
  // Subscribed before the snapshot is taken: every change from here on is either in the
  // snapshot or held back for delivery after it (event_hub::open).
  auto id = core->events->subscribe(req.prefix, req.exact, std::move(on_event));
  collect_snapshot(
    d.bridge, std::move(req), core->cfg.list_limit_max,
    [core, id, snapshot = std::move(snapshot), finish](caf::expected<lock_list> x) mutable {
      auto& events = *core->events;
      // The snapshot is a caller's callback: it never runs once the service is gone.
      auto answer = [&](caf::expected<lock_list> result) {
        core->deliver([&] { snapshot(std::move(result)); });
      };
      if (!x) {
        events.unsubscribe(id);
        finish(x.error());
        return answer(std::move(x.error()));
      }
      bool opened = false;
      core->deliver([&] { opened = events.open(id, x->locks, [&] { snapshot(*x); }); });
      if (!opened) {
        // Unsubscribed meanwhile (nobody waits for the answer), too many events held back,
        // or the service is gone.
        auto err = caf::make_error(errc::overloaded,
                                   std::string{"too many lock events while taking the snapshot"});
        finish(err);
        return answer(std::move(err));
      }
      finish(true);
    });
  return id;
}

void service::unsubscribe(uint64_t id) {
  impl_->core->events->unsubscribe(id);
}

uint64_t service::watch_lease(const std::string& name, event_handler on_end) {
  if (!running())
    return 0;
  return impl_->core->events->watch_lease(name, std::move(on_end));
}

void service::bind_lease_watch(uint64_t id, uint64_t token) {
  impl_->core->events->bind_lease_watch(id, token);
}

void service::unwatch_lease(uint64_t id) {
  impl_->core->events->unwatch_lease(id);
}

std::size_t service::subscriptions() const {
  return impl_->core->events->subscriptions();
}

void service::cancel(const std::string& name, uint64_t request_id) {
  if (running() && valid_lock_name(name))
    // Through the bridge and the registry: behind its acquire whichever way that went (straight
    // to the lock's actor, or the same way as this).
    caf::anon_send(impl_->bridge, cancel_atom_v, name, request_id);
}

} // namespace fencelock
