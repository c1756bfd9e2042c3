#include "actors/store/redis/redis_runtime.hpp"

#include <algorithm>
#include <chrono>

#include <caf/send.hpp>

#include "actors/caf_workarounds.hpp"
#include "actors/event_hub.hpp"

namespace fencelock {

namespace {

using env_ptr = std::shared_ptr<const redis_runtime::environment>;
using redis::script_lease;

/// Held locks read per page while the gauge is reconciled.
constexpr uint32_t reconcile_page = 1000;

/// An ended record stays this long in Redis (docs/redis.md); well within it, a lease whose
/// record is missing before its deadline was lost by the store.
constexpr auto lost_window = std::chrono::seconds{30};

int64_t wall_now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

/// The Redis store's announcer: every script publishes its own change on the channel, which
/// reaches every instance, so the lock actors' announcements are dropped, except the end of a
/// lease that the store lost: no script published that one.
class lost_lease_announcer : public change_announcer {
public:
  explicit lost_lease_announcer(std::shared_ptr<redis_fanout> fanout) : fanout_(std::move(fanout)) {
  }

  void announce(const lock_event& ev) override {
    if (ev.ends_lease() && ev.cause == lease_end_cause::store_lost)
      fanout_->lost(ev);
  }

private:
  std::shared_ptr<redis_fanout> fanout_;
};

/// One lock's backend: each operation is one script, awaited; Redis's answer decides.
class redis_backend : public lock_backend {
public:
  redis_backend(env_ptr env, std::string name) : env_(std::move(env)), name_(std::move(name)) {
  }

  void load(lock_self, reply<lock_view> done) override {
    done(lock_view{}); // nothing to load: every operation asks Redis
  }

  void acquire(lock_self self, const acquire_request& req, reply<store_answer> done) override {
    self->request(env_->store, env_->timeout, acquire_atom_v, req)
      .await(
        [self, done](script_lease& x) {
          auto v = x.status == "granted"     ? verdict::granted
                   : x.status == "refreshed" ? verdict::ok
                                             : verdict::held;
          store_answer out{v, to_record(self, x), std::nullopt};
          out.replaced = x.replaced;
          done(std::move(out));
        },
        [done](caf::error& err) { done(std::move(err)); });
  }

  void renew(lock_self self, const renew_request& req, reply<store_answer> done) override {
    self
      ->request<caf::message_priority::high>(env_->store, priority_timeout(env_->timeout),
                                             renew_atom_v, req)
      .await([self, done](script_lease& x) { done(ok_or_lost(self, x)); },
             [done](caf::error& err) { done(std::move(err)); });
  }

  void release(lock_self self, const release_request& req, lease_end_cause cause,
               reply<store_answer> done) override {
    self
      ->request<caf::message_priority::high>(env_->store, priority_timeout(env_->timeout),
                                             release_atom_v, req, std::string{to_string(cause)})
      .await([self, done](script_lease& x) { done(ok_or_lost(self, x)); },
             [done](caf::error& err) { done(std::move(err)); });
  }

  void expire(lock_self self, const lease_record& known, reply<store_answer> done) override {
    self->request(env_->store, env_->timeout, expire_atom_v, name_, known.token)
      .await(
        [self, known, done](script_lease& x) {
          store_answer out;
          if (x.status == "alive") {
            out.v = verdict::held; // renewed, maybe through another instance
            out.lease = to_record(self, x);
          } else if (x.status == "ended") {
            out.v = verdict::ok;
            out.lease = known;
          } else {
            // "gone": ended by a script, whose event says so. "missing": no record at all,
            // which before the deadline (and the time an ended record is kept) means Redis
            // lost it.
            out.v = verdict::lost;
            out.store_lost =
              x.status == "missing" && self->clock().now() < known.deadline + lost_window;
          }
          done(std::move(out));
        },
        [done](caf::error& err) { done(std::move(err)); });
  }

  void read(lock_self self, reply<lock_view> done) override {
    self->request(env_->store, env_->timeout, status_atom_v, name_)
      .await(
        [self, done](script_lease& x) {
          lock_view view;
          view.last_token = x.token;
          if (x.status == "held")
            view.lease = to_record(self, x);
          done(std::move(view));
        },
        [done](caf::error& err) { done(std::move(err)); });
  }

private:
  /// Returns the lease of a script's answer. Its deadline on this instance's clock is one
  /// millisecond past the remaining time Redis reported (rounded up already): that covers the
  /// trip of the answer. Clients are told Redis's own deadline, the same on every instance.
  static lease_record to_record(lock_self self, const script_lease& x) {
    lease_record out;
    out.owner = x.owner;
    out.token = x.token;
    out.ttl_ms = x.ttl_ms;
    out.deadline = self->clock().now()
                   + std::chrono::duration_cast<caf::actor_clock::duration_type>(
                     std::chrono::milliseconds{x.remaining_ms + 1});
    out.expires_at_ms = x.deadline_ms;
    out.revision = x.revision;
    return out;
  }

  static store_answer ok_or_lost(lock_self self, const script_lease& x) {
    if (x.status != "ok")
      return store_answer{};
    return store_answer{verdict::ok, to_record(self, x), std::nullopt};
  }

  env_ptr env_;
  std::string name_;
};

} // namespace

// -- the event source ---------------------------------------------------------------------------

redis_fanout::redis_fanout(std::shared_ptr<event_hub> events,
                           std::shared_ptr<store_reporter> reporter)
  : events_(std::move(events)), reporter_(std::move(reporter)) {
}

void redis_fanout::attach(script_runner* store, registry_actor registry) {
  store_ = store;
  registry_ = std::move(registry);
}

void redis_fanout::publish(const lock_event& ev) {
  if (events_)
    events_->publish(ev);
  auto track = [&ev](std::unordered_map<std::string, uint64_t>& held) {
    if (ev.kind == lock_event_kind::acquired) {
      held[ev.name] = ev.token;
    } else if (ev.ends_lease()) {
      if (auto i = held.find(ev.name); i != held.end() && i->second == ev.token)
        held.erase(i);
    }
  };
  track(held_);
  if (fresh_)
    track(*fresh_);
  if (reporter_)
    reporter_->locks_held(static_cast<int64_t>(held_.size()));
}

void redis_fanout::on_event(const lock_event& ev) {
  publish(ev);
  if (!registry_)
    return;
  if (ev.kind != lock_event_kind::renewed)
    caf::anon_send(registry_, heard_atom_v, ev.name, ev.token, ev.ends_lease());
  if (!ev.ends_lease() && events_ && events_->subscribed_to(ev.name)) {
    // Subscribers here hear of this lease's end even when the instance that granted it is
    // gone: this instance watches it too.
    caf::anon_send(registry_, watch_atom_v, ev.name, ev.owner, ev.token, ev.expires_at_ms,
                   ev.expires_at_ms - wall_now_ms());
  }
}

void redis_fanout::on_resync() {
  if (registry_)
    caf::anon_send(registry_, resync_atom_v);
  if (store_) {
    fresh_ = std::make_shared<std::unordered_map<std::string, uint64_t>>();
    reconcile({}, fresh_, ++round_);
  }
}

void redis_fanout::reconcile(std::string cursor,
                             std::shared_ptr<std::unordered_map<std::string, uint64_t>> fresh,
                             uint64_t round) {
  auto self = shared_from_this();
  store_->run(redis::script_id::list, {store_->held_key()},
              {store_->lock_key(""), "", std::move(cursor), std::to_string(reconcile_page)},
              [self, fresh, round](redis::outcome o) {
                if (round != self->round_)
                  return; // a newer resync started over
                std::string why;
                auto page = o ? redis::decode_list(*o.reply, why) : std::nullopt;
                if (!page) {
                  self->fresh_.reset(); // the next resync counts again
                  return;
                }
                for (auto& x : *page)
                  fresh->emplace(x.name, x.token);
                if (page->size() == reconcile_page)
                  return self->reconcile(page->back().name, fresh, round);
                self->held_ = std::move(*fresh);
                self->fresh_.reset();
                if (self->reporter_)
                  self->reporter_->locks_held(static_cast<int64_t>(self->held_.size()));
              });
}

void redis_fanout::lost(const lock_event& ev) {
  // Every other event reaches the hub on the I/O thread: this one goes the same way, so that a
  // lock's events keep their order.
  if (store_)
    store_->post([self = shared_from_this(), ev] { self->publish(ev); });
  else
    publish(ev);
}

// -- the runtime --------------------------------------------------------------------------------

std::shared_ptr<redis_runtime> redis_runtime::make(caf::actor_system& sys, redis_settings settings,
                                                   clock_mapping clock,
                                                   std::shared_ptr<event_hub> events,
                                                   std::shared_ptr<store_reporter> reporter) {
  auto timeout = std::chrono::duration_cast<caf::timespan>(settings.timeout);
  auto fanout = std::make_shared<redis_fanout>(std::move(events), reporter);
  auto io = std::make_shared<redis_store>(
    std::move(settings), [fanout](const lock_event& ev) { fanout->on_event(ev); },
    [fanout] { fanout->on_resync(); }, reporter);
  auto actor =
    sys.spawn(redis_store_actor_impl, std::shared_ptr<script_runner>{io}, std::move(reporter));
  // The store fails a call itself after redis-timeout-ms; this is the outer bound.
  auto result = assemble(io, std::move(fanout), std::move(actor), timeout * 2, clock);
  result->io_ = std::move(io);
  return result;
}

std::shared_ptr<redis_runtime> redis_runtime::assemble(std::shared_ptr<script_runner> runner,
                                                       std::shared_ptr<redis_fanout> fanout,
                                                       redis_store_actor actor,
                                                       caf::timespan timeout, clock_mapping clock) {
  std::shared_ptr<redis_runtime> result{new redis_runtime};
  result->runner_ = std::move(runner);
  result->fanout_ = std::move(fanout);
  result->env_ = std::make_shared<environment>(environment{std::move(actor), timeout, clock});
  result->announcer_ = std::make_shared<lost_lease_announcer>(result->fanout_);
  return result;
}

std::unique_ptr<lock_backend> redis_runtime::make_backend(const std::string& name) {
  return std::make_unique<redis_backend>(env_, name);
}

bool redis_runtime::shared() const noexcept {
  return true; // several instances grant leases in one Redis
}

std::shared_ptr<change_announcer> redis_runtime::announcer() const {
  return announcer_;
}

std::shared_ptr<stall_window> redis_runtime::stalls() const {
  // Redis judges every deadline on its own clock: a stall of this process cannot end a lease
  // early here.
  return nullptr;
}

std::vector<std::string> redis_runtime::held_at_start() {
  return {}; // leases outlive instances in Redis; expiry is Redis's, watched where needed
}

lister_actor redis_runtime::lister() const {
  return caf::actor_cast<lister_actor>(env_->store);
}

void redis_runtime::start(registry_actor registry) {
  fanout_->attach(runner_.get(), std::move(registry));
  if (io_)
    io_->start();
}

bool redis_runtime::ready() const noexcept {
  return !io_ || io_->ready();
}

std::vector<caf::actor> redis_runtime::actors() const {
  return {caf::actor_cast<caf::actor>(env_->store)};
}

void redis_runtime::close() {
  if (io_)
    io_->stop();
}

} // namespace fencelock
