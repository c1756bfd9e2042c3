// In-process acquire+release cycles per second through the registry, over the durable SQLite
// store and over the memory store, run side by side (alternating) so that the machine's noise
// hits both. The ratio sqlite/memory is what durability costs with group commit.
//
//   build/bench/inprocess_bench [seconds-per-trial=2] [rounds=3]

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actors/store/embedded/embedded_store.hpp"
#include "actors/store/embedded/sqlite_store.hpp"
#include "actors/wiring.hpp"
#include "support/memory_store.hpp"
#include "bench/side_by_side.hpp"
#include "fencelock/messages.hpp"

using namespace fencelock;

namespace {

struct shared_counters {
  std::atomic<uint64_t> cycles{0};
  std::atomic<bool> stop{false};
  std::atomic<int> live{0};
  std::atomic<uint64_t> next_id{1};
};

// One client: acquire its own lock, release it, repeat until told to stop.
void cycle(caf::event_based_actor* self, registry_actor reg, std::string name,
           std::shared_ptr<shared_counters> c) {
  if (c->stop.load()) {
    --c->live;
    self->quit();
    return;
  }
  acquire_request req{name, "bench", 10'000, 0, c->next_id++};
  self->request(reg, caf::infinite, acquire_atom_v, req).then([=](lease& l) {
    self->request(reg, caf::infinite, release_atom_v, release_request{name, "bench", l.token})
      .then([=](bool) {
        ++c->cycles;
        cycle(self, reg, name, c);
      });
  });
}

double trial(bool durable, int clients, double seconds) {
  caf::actor_system_config cfg;
  add_message_types(cfg);
  cfg.set("logger.verbosity", caf::atom("quiet"));
  caf::actor_system sys{cfg};
  std::filesystem::path dir;
  std::shared_ptr<lease_store> store;
  if (durable) {
    char tmpl[] = "/tmp/fencelock-bench-XXXXXX";
    dir = mkdtemp(tmpl);
    store = std::move(*sqlite_store::open(dir.string(), current_boot_id(), 0));
  } else {
    store = std::make_shared<memory_store>();
  }
  embedded_settings settings;
  settings.detached = durable; // SQLite blocks on fsync; the memory store does not
  auto runtime = embedded_store::make(sys, store, settings, nullptr, nullptr);
  auto actors = spawn_service_actors(sys, std::move(*runtime), config{}, settings.clock);
  auto c = std::make_shared<shared_counters>();
  c->live = clients;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < clients; ++i)
    sys.spawn(cycle, actors.registry, "bench:" + std::to_string(i), c);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  auto cycles = c->cycles.load();
  auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  c->stop = true;
  while (c->live.load() > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  for (auto& a : actors.stop_order())
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  sys.await_all_actors_done();
  actors.store->close();
  store.reset();
  if (durable)
    std::filesystem::remove_all(dir);
  return cycles / elapsed;
}

} // namespace

int main(int argc, char** argv) {
  auto [seconds, rounds] = fencelock::bench::parse_plan(argc, argv);
  using fencelock::bench::median;
  std::printf("in-process acquire+release cycles/s (median of %d alternating rounds, %.1f s each)\n",
              rounds, seconds);
  std::printf("%8s %14s %14s %10s\n", "clients", "memory", "sqlite", "ratio");
  for (int clients : {1, 16, 64, 256}) {
    std::vector<double> mem, sql;
    for (int r = 0; r < rounds; ++r) {
      mem.push_back(trial(false, clients, seconds));
      sql.push_back(trial(true, clients, seconds));
    }
    auto m = median(mem);
    auto s = median(sql);
    std::printf("%8d %14.0f %14.0f %10.3f\n", clients, m, s, s / m);
    std::fflush(stdout);
  }
}
