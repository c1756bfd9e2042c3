// What the Redis store costs against the embedded one: acquire+release cycles per second over
// HTTP keep-alive, and the latency of one cycle, with `fencelock serve` children on three
// stores measured in alternating rounds (the machine's noise hits all alike):
//
//   embedded      SQLite in WAL mode, synchronous=FULL, group commit (the baseline)
//   redis-aof     one redis-server with appendonly yes, appendfsync always (docs/redis.md)
//   redis-2inst   the same Redis shared by two instances, the clients split between them
//
// Each client thread cycles on a lock of its own; the ratio to the embedded store is the
// figure to read. Servers, Redis and clients share the machine's cores.
//
//   build/bench/store_bench [seconds-per-trial=2] [rounds=3] [fencelock binary]

#include <cstdlib>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench/load_clients.hpp"
#include "bench/servers.hpp"
#include "bench/side_by_side.hpp"
#include "support/redis_server.hpp"

namespace {

using namespace fencelock::bench;


struct result {
  double cycles_per_s = 0;
  std::vector<double> latencies_ms;
};

// `clients` threads, spread round robin over `ports`, each cycling on its own lock.
result trial(const std::vector<uint16_t>& ports, int clients, double seconds) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> cycles{0};
  std::atomic<uint64_t> failures{0};
  std::vector<std::vector<double>> samples(static_cast<size_t>(clients));
  std::vector<std::thread> threads;
  static std::atomic<uint64_t> run_id{0};
  auto run = run_id++;
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      http_client c{ports[static_cast<size_t>(i) % ports.size()]};
      auto name = "bench:" + std::to_string(run) + ":" + std::to_string(i);
      auto& mine = samples[static_cast<size_t>(i)];
      while (!stop.load()) {
        auto t0 = std::chrono::steady_clock::now();
        auto acq = c.post("/v1/locks/" + name + "/acquire", R"({"owner":"bench","ttlMs":10000})");
        if (acq.result_int() != 200) {
          ++failures;
          continue;
        }
        auto token = boost::json::parse(acq.body()).at("token").as_int64();
        auto rel = c.post("/v1/locks/" + name + "/release",
                          R"({"owner":"bench","token":)" + std::to_string(token) + "}");
        if (rel.result_int() != 200) {
          ++failures;
          continue;
        }
        mine.push_back(ms_since(t0));
        ++cycles;
      }
    });
  }
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  auto n = cycles.load();
  auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stop = true;
  for (auto& t : threads)
    t.join();
  if (failures.load() > 0)
    std::fprintf(stderr, "warning: %llu failed cycles\n",
                 static_cast<unsigned long long>(failures.load()));
  result r;
  r.cycles_per_s = static_cast<double>(n) / elapsed;
  for (auto& s : samples)
    r.latencies_ms.insert(r.latencies_ms.end(), s.begin(), s.end());
  return r;
}

} // namespace

int main(int argc, char** argv) {
  auto [seconds, rounds] = parse_plan(argc, argv);
  if (argc > 3) // measure a server built elsewhere
    ::setenv("FENCELOCK_SERVER_BINARY", argv[3], 1);
  // AOF with appendfsync always: what docs/redis.md asks for.
  fencelock::test::redis_server redis{fencelock::test::require_redis_server(),
                                    {.aof = true, .password = {}}};
  bench_server embedded{"storebench-embedded"};
  bench_server redis_a{"storebench-redis-a", {"--store", redis.url()}};
  bench_server redis_b{"storebench-redis-b", {"--store", redis.url()}};
  // A Redis-mode server listens before its store connections are up: wait for /readyz.
  for (auto* server : {&redis_a, &redis_b}) {
    bool ready = false;
    for (int i = 0; i < 500 && !ready; ++i) {
      http_client c{server->port()};
      ready = c.get("/readyz").result_int() == 200;
      if (!ready)
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    if (!ready) {
      std::fprintf(stderr, "a Redis-mode server did not get ready:\n%s\n", server->output().c_str());
      return 1;
    }
  }
  struct subject {
    const char* name;
    std::vector<uint16_t> ports;
  };
  std::vector<subject> subjects{{"embedded", {embedded.port()}},
                                {"redis-aof", {redis_a.port()}},
                                {"redis-2inst", {redis_a.port(), redis_b.port()}}};
  std::printf("acquire+release cycles over HTTP keep-alive, one lock per client\n"
              "(median of %d alternating rounds, %.1f s each; latency percentiles over all rounds)\n",
              rounds, seconds);
  std::printf("%8s %12s %12s %8s %9s %9s\n", "clients", "store", "cycles/s", "ratio", "p50 ms",
              "p99 ms");
  for (int clients : {1, 8, 32}) {
    std::vector<std::vector<double>> rates(subjects.size());
    std::vector<std::vector<double>> lat(subjects.size());
    for (int r = 0; r < rounds; ++r) {
      for (size_t s = 0; s < subjects.size(); ++s) {
        auto res = trial(subjects[s].ports, clients, seconds);
        rates[s].push_back(res.cycles_per_s);
        lat[s].insert(lat[s].end(), res.latencies_ms.begin(), res.latencies_ms.end());
      }
    }
    auto base = median(rates[0]);
    for (size_t s = 0; s < subjects.size(); ++s) {
      auto rate = median(rates[s]);
      std::printf("%8d %12s %12.0f %8.2f %9.2f %9.2f\n", clients, subjects[s].name, rate,
                  rate / base, lat[s].empty() ? 0.0 : percentile(lat[s], 50),
                  lat[s].empty() ? 0.0 : percentile(lat[s], 99));
    }
    std::fflush(stdout);
  }
}
