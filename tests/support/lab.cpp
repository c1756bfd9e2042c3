#include "support/lab.hpp"

#include <stdexcept>

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actors/store/redis/redis_store.hpp"
#include "actors/store_reports.hpp"

namespace fencelock::test {

using namespace std::chrono_literals;

caf::actor_system_config& testing_config(caf::actor_system_config& cfg) {
  add_message_types(cfg);
  cfg.set("scheduler.policy", caf::atom("testing"));
  cfg.set("logger.verbosity", caf::atom("quiet"));
  return cfg;
}

void run_until_idle(caf::scheduler::test_coordinator& sched) {
  do {
    sched.run();
  } while (sched.clock().advance_time(caf::timespan{0}) > 0);
}

void advance_clock(caf::scheduler::test_coordinator& sched, int64_t ms) {
  sched.clock().advance_time(std::chrono::milliseconds{ms});
  run_until_idle(sched);
}

config lab_config(const lab_options& opts) {
  config c;
  c.max_waiters_per_lock = opts.max_waiters;
  c.max_locks = opts.max_locks;
  c.idle_lock_actors = opts.idle_kept;
  c.fence_block = static_cast<uint32_t>(opts.fence_block);
  c.fence_floor = static_cast<int64_t>(opts.fence_floor);
  c.stall_threshold_ms = opts.watch_stalls ? 2'000 : 0;
  c.stall_grace_ms = 5'000;
  return c;
}

// -- pumped_runner ------------------------------------------------------------------------------

pumped_runner::pumped_runner(redis::endpoint where, std::string prefix,
                             std::shared_ptr<redis_fanout> fanout, uint64_t fence_floor) {
  redis_settings s;
  s.where = std::move(where);
  s.key_prefix = std::move(prefix);
  s.timeout = 5s;
  s.fence_floor = fence_floor;
  store_ = std::make_unique<redis_store>(
    std::move(s),
    [this, fanout](const lock_event& ev) { enqueue([fanout, ev] { fanout->on_event(ev); }); },
    [this, fanout] { enqueue([fanout] { fanout->on_resync(); }); });
  store_->start();
}

pumped_runner::~pumped_runner() {
  store_->stop(); // nothing arrives from here on; what is queued is dropped
}

void pumped_runner::run(redis::script_id id, std::vector<std::string> keys,
                        std::vector<std::string> args, redis::reply_handler done) {
  {
    std::lock_guard guard{mtx_};
    ++in_flight_;
  }
  store_->run(id, std::move(keys), std::move(args), [this, done](redis::outcome o) {
    std::lock_guard guard{mtx_};
    --in_flight_;
    queue_.push_back([done, o = std::move(o)]() mutable { done(std::move(o)); });
    cv_.notify_all();
  });
}

void pumped_runner::post(std::function<void()> f) {
  enqueue(std::move(f));
}

const redis_settings& pumped_runner::settings() const noexcept {
  return store_->settings();
}

bool pumped_runner::ready() const noexcept {
  return store_->ready();
}

bool pumped_runner::busy() const {
  std::lock_guard guard{mtx_};
  return in_flight_ > 0 || !queue_.empty();
}

bool pumped_runner::pump(std::chrono::milliseconds wait) {
  std::deque<std::function<void()>> ready_now;
  {
    std::unique_lock guard{mtx_};
    cv_.wait_for(guard, wait, [this] { return !queue_.empty(); });
    ready_now.swap(queue_);
  }
  for (auto& f : ready_now)
    f();
  return !ready_now.empty();
}

void pumped_runner::enqueue(std::function<void()> f) {
  std::lock_guard guard{mtx_};
  queue_.push_back(std::move(f));
  cv_.notify_all();
}

// -- lab ----------------------------------------------------------------------------------------

lab::lab(const lab_options& opts)
  : sys(testing_config(cfg)),
    sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())),
    service_cfg(lab_config(opts)) {
}

lab::~lab() = default;

registry_actor lab::start(std::shared_ptr<store_runtime> store,
                          std::shared_ptr<std::atomic<bool>> draining_flag) {
  auto inst =
    spawn_service_actors(sys, store, service_cfg, clock,
                         service_links{stats, waiting, draining_flag ? draining_flag : draining});
  if (instances.empty()) {
    runtime = std::move(store);
    actors = inst;
    registry = inst.registry;
  }
  instances.push_back(inst);
  run();
  return inst.registry;
}

void lab::stop(int64_t grace_ms) {
  if (stopped_)
    return;
  stopped_ = true;
  // A lock actor awaiting a store that never answers handles nothing else, its exit included,
  // until its request times out.
  if (grace_ms > 0)
    advance(grace_ms);
  // One actor at a time, as service::stop() waits for each: the fence issuer settles its
  // ceiling with the store actor, which must still be there.
  for (auto& inst : instances)
    for (auto& a : inst.stop_order()) {
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
      run();
    }
  for (auto& inst : instances)
    if (inst.store)
      inst.store->close();
}

void lab::run() {
  run_until_idle(sched);
}

void lab::advance(int64_t ms) {
  sched.clock().advance_time(std::chrono::milliseconds{ms});
  run();
}

reply<lease> lab::acquire(const std::string& name, const std::string& owner, int64_t ttl_ms,
                          int64_t wait_ms, uint64_t request_id) {
  static uint64_t next_id = 1000;
  auto r = ask<lease>(
    registry, acquire_atom_v,
    acquire_request{name, owner, ttl_ms, wait_ms, request_id != 0 ? request_id : next_id++});
  run();
  return r;
}

reply<lease> lab::renew(const std::string& name, const std::string& owner, uint64_t token,
                        int64_t ttl_ms) {
  auto r = ask<lease, caf::message_priority::high>(registry, renew_atom_v, renew_request{name, owner, token, ttl_ms});
  run();
  return r;
}

reply<bool> lab::release(const std::string& name, const std::string& owner, uint64_t token) {
  auto r = ask<bool, caf::message_priority::high>(registry, release_atom_v, release_request{name, owner, token});
  run();
  return r;
}

bool lab::run_until(const std::function<bool()>& done, std::chrono::milliseconds wait) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  run();
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    take_store_events(std::chrono::milliseconds{20});
    run();
  }
  return done();
}

reply<bool> lab::force_release(const std::string& name, uint64_t token) {
  release_request req{name, "", token};
  req.force = true;
  auto r = ask<bool, caf::message_priority::high>(registry, release_atom_v, req);
  run();
  return r;
}

reply<lock_status> lab::status_of(const std::string& name) {
  auto r = ask<lock_status>(registry, status_atom_v, name);
  run();
  return r;
}

reply<check_result> lab::check(const std::string& name, uint64_t token) {
  auto r = ask<check_result>(registry, check_atom_v, check_request{name, token});
  run();
  return r;
}

void lab::cancel(const std::string& name, uint64_t request_id) {
  caf::anon_send(registry, cancel_atom_v, name, request_id);
  run();
}

lock_status lab::status(const std::string& name) {
  auto r = status_of(name);
  if (!r->has_value() || !r->value())
    throw std::runtime_error("no status of " + name);
  return *r->value();
}

std::size_t lab::lock_actors() {
  // The registry publishes its count to the gauge; the scrape is the one way to read it.
  auto text = stats->scrape();
  auto at = text.find("\nfencelock_lock_actors ");
  if (at == std::string::npos)
    throw std::runtime_error("no fencelock_lock_actors in the metrics");
  return static_cast<std::size_t>(std::stod(text.substr(at + 23)));
}

lock_context_ptr lab::lock_ctx() const {
  auto ctx = std::make_shared<lock_context>();
  ctx->store = runtime;
  ctx->announcer = runtime->announcer();
  ctx->watchdog = actors.watchdog;
  ctx->expiries = actors.expiries;
  ctx->registry = registry;
  ctx->clock = clock;
  ctx->max_waiters = service_cfg.max_waiters_per_lock;
  ctx->metrics = stats;
  ctx->waiting = waiting;
  ctx->draining = draining;
  return ctx;
}

// -- embedded_lab -------------------------------------------------------------------------------

embedded_lab::embedded_lab(std::shared_ptr<lease_store> shared, lab_options opts)
  : lab(opts), store(shared ? std::move(shared) : std::make_shared<memory_store>()) {
  embedded_settings s;
  s.clock = clock;
  s.fence_block = opts.fence_block;
  s.fence_floor = opts.fence_floor;
  s.detached = false; // the test coordinator runs everything on the test thread
  s.watch_stalls = opts.watch_stalls;
  auto made = embedded_store::make(sys, store, s, events, make_store_reporter(stats));
  if (!made)
    throw std::runtime_error("embedded store: " + to_string(made.error()));
  start(std::move(*made));
}

embedded_lab::~embedded_lab() {
  stop();
}

store_actor embedded_lab::store_handle() const {
  return std::static_pointer_cast<embedded_store>(runtime)->store_handle();
}

// -- redis_lab ----------------------------------------------------------------------------------

redis_lab::redis_lab(lab_options opts)
  : lab(opts), server(std::make_unique<redis_server>(require_redis_server())) {
  auto fanout = std::make_shared<redis_fanout>(events, nullptr);
  redis::endpoint where;
  where.port = server->port();
  runner = std::make_shared<pumped_runner>(where, "lab:", fanout, opts.fence_floor);
  for (int i = 0; i < 500 && !runner->ready(); ++i)
    runner->pump(20ms);
  if (!runner->ready())
    throw std::runtime_error("the lab's Redis store did not connect");
  auto actor = sys.spawn(redis_store_actor_impl, std::shared_ptr<script_runner>{runner},
                         std::shared_ptr<store_reporter>{});
  start(redis_runtime::assemble(runner, fanout, actor, 20s, clock));
}

redis_lab::~redis_lab() {
  stop(30'000);   // lets the wait timeouts of waiters left behind run out
  runner.reset(); // stops the store's I/O before the server goes
}

bool redis_lab::take_store_events(std::chrono::milliseconds wait) {
  return runner->pump(wait);
}

void redis_lab::run() {
  for (;;) {
    run_until_idle(sched);
    if (!runner->busy())
      return;
    if (!runner->pump(10s))
      throw std::runtime_error("the lab's Redis store did not answer within 10 s");
  }
}

} // namespace fencelock::test
