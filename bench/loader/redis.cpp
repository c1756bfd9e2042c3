// The Redis store: two `fencelock serve` instances on one redis-server (AOF, appendfsync always,
// as docs/redis.md asks), the load spread over both, alternating round by round with
// redis-benchmark running EVALSHA of the real acquire script (actors/store/redis/scripts.cpp)
// on the same redis-server. Its keys are random (-r), so each call grants a fresh lock, bumps
// the shared token counter, indexes the lock and publishes its event, as fencelock's acquire
// does; two subscribers drain the channel, as the two instances drain theirs.

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "actors/store/redis/scripts.hpp"
#include "bench/loader/scenarios.hpp"
#include "support/child_process.hpp"
#include "support/proc_stats.hpp"
#include "support/redis_server.hpp"

namespace fencelock::bench {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

/// Connections subscribed to a channel that read and drop whatever it carries.
class channel_drain {
public:
  channel_drain(uint16_t port, const std::string& channel, int subscribers) {
    for (int i = 0; i < subscribers; ++i) {
      auto s = std::make_unique<sub>(ioc_);
      s->socket.connect(tcp::endpoint{asio::ip::make_address("127.0.0.1"), port});
      asio::write(s->socket, asio::buffer("SUBSCRIBE " + channel + "\r\n"));
      read(*s);
      subs_.push_back(std::move(s));
    }
    thread_ = std::thread{[this] { ioc_.run(); }};
  }

  ~channel_drain() {
    ioc_.stop();
    thread_.join();
  }

  channel_drain(const channel_drain&) = delete;
  channel_drain& operator=(const channel_drain&) = delete;

private:
  struct sub {
    explicit sub(asio::io_context& ioc) : socket(ioc) {
    }
    tcp::socket socket;
    std::array<char, 64 * 1024> buf{};
  };

  void read(sub& s) {
    s.socket.async_read_some(asio::buffer(s.buf), [this, &s](const auto& ec, std::size_t) {
      if (!ec)
        read(s);
    });
  }

  asio::io_context ioc_;
  std::vector<std::unique_ptr<sub>> subs_;
  std::thread thread_;
};

std::string find_on_path(const std::string& program) {
  std::string dirs = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  dirs += ":/usr/bin:/usr/local/bin";
  std::istringstream is{dirs};
  for (std::string dir; std::getline(is, dir, ':');)
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0)
      return dir + "/" + program;
  return {};
}

/// What one redis-benchmark run measured.
struct bench_run {
  double rps = 0;
  double p50_ms = 0;
  double p99_ms = 0;
};

/*
 * Runs redis-benchmark with `n` EVALSHA calls of the acquire script `sha` from `clients`
 * connections and returns its figures; throws when it fails or prints no CSV line.
 */
bench_run redis_benchmark(const std::string& binary, uint16_t port, const std::string& sha,
                          int64_t n, int clients) {
  // KEYS: lock, token counter, held index. ARGV: name, owner, ttl_ms, floor, keep_ms, channel.
  test::child_process p{binary,
                        {"-h", "127.0.0.1", "-p", std::to_string(port), "-c",
                         std::to_string(clients), "-n", std::to_string(n), "-r", "100000000",
                         "--csv", "EVALSHA", sha, "3", "bench:lock:__rand_int__", "bench:token",
                         "bench:held", "__rand_int__", "bench", "10000", "1", "60000",
                         "bench:events"}};
  auto st = p.wait(std::chrono::seconds{120});
  if (!st || !st->clean())
    throw std::runtime_error("redis-benchmark failed:\n" + p.diagnostics());
  for (const auto& line : p.lines()) {
    // "EVALSHA ...","12345.67","avg","min","p50","p95","p99","max"
    if (line.rfind("\"EVALSHA", 0) != 0 && line.rfind("\"evalsha", 0) != 0)
      continue;
    std::vector<std::string> fields;
    std::istringstream is{line};
    for (std::string f; std::getline(is, f, ',');) {
      if (f.size() >= 2 && f.front() == '"' && f.back() == '"')
        f = f.substr(1, f.size() - 2);
      fields.push_back(f);
    }
    bench_run out;
    out.rps = std::stod(fields.at(fields.size() - 7));
    out.p50_ms = std::stod(fields.at(fields.size() - 4));
    out.p99_ms = std::stod(fields.at(fields.size() - 2));
    return out;
  }
  throw std::runtime_error("redis-benchmark printed no CSV result:\n" + p.diagnostics());
}

} // namespace

int run_redis(const options& o) {
  auto settings = trial_options(o);
  auto rounds = o.integer("rounds", 1);
  std::vector<workload> workloads;
  for (const auto& text : o.list("workloads", {"http:64x1"}))
    workloads.push_back(parse_workload(text));
  auto bench_clients = static_cast<int>(o.integer("redis-benchmark-clients", 50));

  auto redis_bin = test::find_redis_server();
  if (!redis_bin) {
    note("SKIPPED: redis-server not found");
    emit({{"scenario", "redis"}, {"skipped", "redis-server not found"}});
    return 0;
  }
  test::redis_server redis{*redis_bin, test::redis_server::options{true, ""}};
  auto server_args = o.all("server-arg");
  server_args.push_back("--store");
  server_args.push_back(redis.url());
  auto a = start_fencelock(server_args);
  auto b = start_fencelock(server_args);
  target pair;
  pair.name = "fencelock-redis-x2";
  pair.store = "redis";
  for (auto* t : {&a, &b}) {
    pair.endpoints.push_back(t->endpoints.at(0));
    pair.pids.push_back(t->pids.at(0));
  }
  auto redis_pid = redis.process().pid();

  auto rb = find_on_path("redis-benchmark");
  std::string sha;
  std::unique_ptr<channel_drain> drain;
  if (rb.empty()) {
    note("SKIPPED: redis-benchmark not found (install redis-tools)");
    emit({{"scenario", "redis"}, {"target", "redis-benchmark"},
          {"skipped", "redis-benchmark not found"}});
  } else {
    test::redis_connection conn{redis.port()};
    const auto& script = redis::script_for(redis::script_id::acquire);
    auto loaded = conn.call({"SCRIPT", "LOAD", script.body});
    if (loaded->type != REDIS_REPLY_STRING)
      throw std::runtime_error("SCRIPT LOAD of the acquire script failed");
    sha.assign(loaded->str, loaded->len);
    // One call by hand: the arguments must make the script grant, not fail.
    auto check = conn.call({"EVALSHA", sha, "3", "bench:lock:check", "bench:token", "bench:held",
                            "check", "bench", "10000", "1", "60000", "bench:events"});
    if (check->type != REDIS_REPLY_ARRAY || check->elements < 1
        || std::string_view{check->element[0]->str, check->element[0]->len} != "granted")
      throw std::runtime_error("the acquire script did not grant with the benchmark's arguments");
    drain = std::make_unique<channel_drain>(redis.port(), "bench:events", 2);
  }

  double estimate = 10'000; // EVALSHA/s, refined by each run: a run lasts about --duration
  int trial_no = 0;
  for (const auto& w : workloads) {
    for (int64_t r = 0; r < rounds; ++r) {
      auto redis_cpu0 = test::process_cpu_seconds(redis_pid);
      auto res = uncontended_trial(pair, w, settings, "r" + std::to_string(trial_no++));
      auto redis_cpu1 = test::process_cpu_seconds(redis_pid);
      auto line = trial_fields(res);
      line["scenario"] = "redis";
      line["target"] = pair.name;
      line["store"] = "redis";
      line["instances"] = 2;
      line["transport"] = w.transport;
      line["connections"] = w.connections;
      line["pipeline"] = w.pipeline;
      line["round"] = r;
      line["redis_cpu"] = (redis_cpu1 - redis_cpu0) / res.seconds;
      emit(std::move(line));
      note("redis pair " + w.describe() + " round " + std::to_string(r) + ": "
           + std::to_string(static_cast<long long>(res.per_second())) + " cycles/s");
      if (sha.empty())
        continue;
      auto n = static_cast<int64_t>(estimate * settings.duration_s);
      n = std::max<int64_t>(n, 1'000);
      auto rcpu0 = test::process_cpu_seconds(redis_pid);
      auto t0 = steady::now();
      auto run = redis_benchmark(rb, redis.port(), sha, n, bench_clients);
      auto secs = std::chrono::duration<double>(steady::now() - t0).count();
      auto rcpu1 = test::process_cpu_seconds(redis_pid);
      estimate = run.rps;
      emit({{"scenario", "redis"},
            {"target", "redis-benchmark"},
            {"store", "redis"},
            {"transport", w.transport},
            {"connections", w.connections},
            {"pipeline", w.pipeline},
            {"round", r},
            {"evalsha_per_s", run.rps},
            {"per_s", run.rps},
            {"calls", n},
            {"clients", bench_clients},
            {"p50_ms", run.p50_ms},
            {"p99_ms", run.p99_ms},
            {"redis_cpu", (rcpu1 - rcpu0) / secs}});
      note("redis-benchmark EVALSHA acquire: " + std::to_string(static_cast<long long>(run.rps))
           + "/s");
    }
  }
  return 0;
}

} // namespace fencelock::bench
