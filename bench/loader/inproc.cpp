// In process: acquire+release cycles through the embedding API (fencelock::service) in this
// process, each client a chain of calls on a lock of its own (the next call is made from the
// previous one's callback, on a CAF worker thread). The store is "memory" (not durable) by
// default; while the server refuses that store, the scenario falls back to "embedded" in a temp
// dir and says so in every line it prints ("store_fallback"). `--store embedded --clients 1` is
// the durable single client.

#include <atomic>
#include <memory>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "bench/loader/scenarios.hpp"
#include "fencelock/actor_settings.hpp"
#include "fencelock/service.hpp"
#include "support/proc_stats.hpp"
#include "support/temp_dir.hpp"

namespace fencelock::bench {

namespace {

struct chain_shared {
  std::atomic<int> now{static_cast<int>(phase::warmup)};
  std::atomic<int> live{0};

  bool measuring() const noexcept {
    return now.load(std::memory_order_relaxed) == static_cast<int>(phase::measure);
  }
};

/// One client: acquire its lock, release it, again, until the phase is stop. Its calls run one
/// after the other, so its tally needs no lock.
class chain : public std::enable_shared_from_this<chain> {
public:
  chain(service& svc, chain_shared& shared, std::string name)
    : svc_(svc), shared_(shared), name_(std::move(name)) {
  }

  void acquire() {
    sent_ = steady::now();
    svc_.acquire(acquire_request{name_, name_, 10'000, 0, 0},
                 [self = shared_from_this()](caf::expected<lease> l) {
                   self->on_acquired(std::move(l));
                 });
  }

  tally counts;

private:
  void on_acquired(caf::expected<lease> l) {
    auto now = steady::now();
    if (shared_.measuring())
      counts.latency.record((now - sent_).count());
    if (!l) {
      counts.error(caf::to_string(l.error()));
      next();
      return;
    }
    sent_ = now;
    svc_.release(release_request{name_, name_, l->token, false},
                 [self = shared_from_this()](caf::expected<bool> r) { self->on_released(r); });
  }

  void on_released(const caf::expected<bool>& r) {
    bool measuring = shared_.measuring();
    if (measuring)
      counts.latency.record((steady::now() - sent_).count());
    if (!r)
      counts.error(caf::to_string(r.error()));
    else if (measuring)
      ++counts.cycles;
    next();
  }

  void next() {
    if (shared_.now.load() == static_cast<int>(phase::stop)) {
      --shared_.live;
      return;
    }
    acquire();
  }

  service& svc_;
  chain_shared& shared_;
  std::string name_;
  steady::time_point sent_;
};

trial_result run_chains(service& svc, int clients, const trial_settings& s,
                        const std::string& tag) {
  chain_shared shared;
  std::vector<std::shared_ptr<chain>> chains;
  for (int i = 0; i < clients; ++i)
    chains.push_back(std::make_shared<chain>(svc, shared, tag + "-" + std::to_string(i)));
  shared.live = clients;
  for (auto& c : chains)
    c->acquire();
  std::this_thread::sleep_for(std::chrono::duration<double>(s.warmup_s));
  trial_result out;
  out.connections = clients;
  auto cpu0 = test::self_cpu_seconds();
  auto t0 = steady::now();
  shared.now = static_cast<int>(phase::measure);
  std::this_thread::sleep_for(std::chrono::duration<double>(s.duration_s));
  shared.now = static_cast<int>(phase::stop);
  out.seconds = std::chrono::duration<double>(steady::now() - t0).count();
  out.loader_cpu = (test::self_cpu_seconds() - cpu0) / out.seconds;
  auto deadline = steady::now() + s.patience;
  while (shared.live.load() > 0 && steady::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  out.stuck = shared.live.load() > 0;
  if (out.stuck) // callbacks may still come: leave the chains to them
    throw std::runtime_error("in-process calls unanswered 30 s after the window");
  for (auto& c : chains)
    out.counts.merge(c->counts);
  return out;
}

} // namespace

int run_inproc(const options& o) {
  // The service logs through spdlog's default logger: keep stdout for the JSON lines, and drop
  // the per-operation lines, as the servers of the other scenarios do (--log-level warn).
  auto log = spdlog::stderr_logger_mt("fencelock");
  log->set_level(spdlog::level::warn);
  spdlog::set_default_logger(log);

  auto settings = trial_options(o);
  auto rounds = o.integer("rounds", 1);
  auto client_counts = o.integers("clients", {1, 16, 64, 256});
  auto wanted = o.text("store", "memory");

  caf::actor_system_config cfg;
  apply_actor_settings(cfg); // as `fencelock serve` runs CAF
  caf::actor_system sys{cfg};
  test::temp_dir dir{"fencelock-inproc-"};
  config c;
  c.store = wanted;
  c.data_dir = dir.str();
  c.log_level = "warn";
  auto svc = std::make_unique<service>(sys, c);
  std::string fallback;
  if (auto err = svc->start()) {
    if (wanted != "memory")
      throw std::runtime_error("the service did not start: " + caf::to_string(err));
    fallback = "store \"memory\" refused (" + caf::to_string(err) + "): embedded in a temp dir";
    note(fallback);
    svc.reset();
    c.store = "embedded";
    svc = std::make_unique<service>(sys, c);
    if (auto err2 = svc->start())
      throw std::runtime_error("the service did not start: " + caf::to_string(err2));
  }
  int trial_no = 0;
  for (int64_t r = 0; r < rounds; ++r) {
    for (auto clients : client_counts) {
      auto res = run_chains(*svc, static_cast<int>(clients), settings,
                            "i" + std::to_string(trial_no++));
      auto line = trial_fields(res);
      line["scenario"] = "inproc";
      line["target"] = "fencelock::service";
      line["store"] = c.store;
      line["store_wanted"] = wanted;
      if (!fallback.empty())
        line["store_fallback"] = fallback;
      line["clients"] = clients;
      line["round"] = r;
      emit(std::move(line));
      note("inproc " + c.store + " " + std::to_string(clients) + " clients: "
           + std::to_string(static_cast<long long>(res.per_second())) + " cycles/s");
    }
  }
  svc->stop();
  return 0;
}

} // namespace fencelock::bench
