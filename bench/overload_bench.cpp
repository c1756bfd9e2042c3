// Renewals under a shedding flood (docs/overload.md): what a flood of new acquires costs the
// holders that keep renewing, with the server's shedding as configured by default, with lowered
// thresholds, and with shedding effectively off. Each configuration gets a fresh
// `fencelock serve` child on loopback, and within it the flood phases alternate with baseline
// phases (no flood), so that the machine's noise hits both alike; the ratios flood / baseline are
// the result, the absolute numbers move with the machine.
//
//   holders:   8 WebSockets, each renewing its own 5 s lease back to back (one renew in flight);
//              every renewal's round trip is a sample of the phase it was sent and answered in.
//   flooders:  (flood phases only) 8 more WebSockets, each keeping 256 acquires in flight
//              (ws-max-pending): three in four on a fresh name (a 10 min lease, never released),
//              one in four on the hot name `hot` with waitMs 200 (a 500 ms lease, so it changes
//              hands). A flooder sends the next acquire as soon as one is answered and ignores
//              retry hints: a flood, not a polite client.
//
//   build/bench/overload_bench [seconds-per-phase=3] [rounds=2] [fencelock-binary]
//
// A round is one baseline phase and one flood phase; latencies are pooled over the rounds. Any
// renewal that is not answered `reply`, is answered after its lease's TTL, or meets a `lease_lost`
// push is a failure: each is printed with its frame, and the exit status is then 2. The servers
// run with `--log-level warn` and are stopped here (SIGTERM, then SIGKILL), which removes their
// temp dirs; they die with this program too (a bench killed by a signal leaves its
// /tmp/fencelock-overload-* dir behind). Clients and servers share the machine's cores.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "bench/load_clients.hpp"
#include "bench/servers.hpp"
#include "bench/side_by_side.hpp"
#include "support/proc_stats.hpp"


namespace json = boost::json;
using fencelock::bench::http_client;
using fencelock::bench::is_type;
using fencelock::bench::ms_since;
using fencelock::bench::bench_server;
using fencelock::bench::ws_client;
using steady = std::chrono::steady_clock;

namespace {

constexpr int holder_count = 8;
/// TTL of the holders' leases; a renewal answered later than this counts as failed.
constexpr int64_t holder_ttl_ms = 5'000;
constexpr int flooder_count = 8;
/// Acquires each flooder keeps in flight: the server's default ws-max-pending.
constexpr int flood_window = 256;
/// Every n-th acquire of a flooder goes to the hot name.
constexpr int64_t hot_every = 4;
constexpr int64_t hot_wait_ms = 200;
constexpr int64_t hot_ttl_ms = 500;
/// TTL of the leases on fresh names: longer than any run, so none expires during one.
constexpr int64_t flood_ttl_ms = 600'000;
/// Pause after the holders start and after each flood drains, before the next phase.
constexpr auto settle = std::chrono::milliseconds{500};
/// How often the main thread reads /metrics and the server's memory during a phase.
constexpr auto poll_interval = std::chrono::milliseconds{200};
/// Time the sockets have, after a phase, to get the answers to what they have in flight; past it
/// the server counts as stuck and the bench ends.
constexpr auto drain_timeout = std::chrono::seconds{30};

/// One server configuration to measure.
struct configuration {
  const char* name;
  std::vector<std::string> args; // appended to `serve --port 0 --data-dir <tmp> --log-level warn`
};

/// Returns whether phase `phase` of a configuration floods: baseline, flood, baseline, flood, ...
bool is_flood(int phase) {
  return phase % 2 == 1;
}

// --- holders ------------------------------------------------------------------------------------

/// What the holders and the main thread share in one configuration.
struct holder_state {
  std::atomic<int> ready{0}; // holders that hold their lease (or failed to)
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
  std::atomic<int> finished{0};
  /// The phase now measured, or -1 between phases (samples then count nowhere).
  std::atomic<int> phase{-1};
};

/// What one holder records; read by the main thread only after the holder finished.
struct holder_log {
  std::vector<std::vector<double>> rtt_ms; // per phase
  std::vector<std::pair<int, std::string>> failures; // (phase at send, what happened)
};

std::string renew_frame(int64_t id, const std::string& lock, const std::string& owner,
                        int64_t token) {
  return json::serialize(json::object{{"id", id},
                                      {"op", "renew"},
                                      {"lock", lock},
                                      {"owner", owner},
                                      {"token", token},
                                      {"ttlMs", holder_ttl_ms}});
}

/*
 * Acquires `lock` for `owner` on `c` until it is granted or `stop` is set (an acquire can be shed
 * under a flood; it is retried after 50 ms). `id` is the next request id; it is advanced. Returns
 * the token, or 0 when stopped first.
 */
int64_t acquire_holder_lease(ws_client& c, const std::string& lock, const std::string& owner,
                             int64_t& id, const std::atomic<bool>& stop) {
  while (!stop.load()) {
    auto my_id = id++;
    c.send(json::serialize(json::object{{"id", my_id},
                                        {"op", "acquire"},
                                        {"lock", lock},
                                        {"owner", owner},
                                        {"ttlMs", holder_ttl_ms}}));
    auto frame = c.answer(my_id);
    if (is_type(frame, "granted"))
      return frame.at("result").at("token").as_int64();
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  return 0;
}

/*
 * Renews the lease on `holder:<index>` back to back over its own socket until `s.stop`, then
 * releases it. A renewal's round trip goes to `out.rtt_ms[p]` when phase p was measured both when
 * it was sent and when it was answered. A failed renewal (see the file comment) is logged with the
 * phase it was sent in, and the lease is acquired again, so that the holder goes on.
 */
void holder(uint16_t port, int index, holder_state& s, holder_log& out, bool& ready) {
  ws_client c{port};
  auto lock = "holder:" + std::to_string(index);
  auto owner = "holder-" + std::to_string(index);
  int64_t id = 1;
  auto token = acquire_holder_lease(c, lock, owner, id, s.stop);
  ready = true;
  ++s.ready;
  s.go.wait(false);
  while (!s.stop.load() && token != 0) {
    auto phase = s.phase.load();
    auto my_id = id++;
    auto t0 = steady::now();
    c.send(renew_frame(my_id, lock, owner, token));
    json::object answer;
    for (;;) {
      auto frame = c.read();
      const auto* got = frame.if_contains("id");
      if (got != nullptr && got->is_int64() && got->get_int64() == my_id) {
        answer = std::move(frame);
        break;
      }
      if (is_type(frame, "lease_lost"))
        out.failures.emplace_back(phase, "push " + json::serialize(frame));
    }
    auto rtt = ms_since(t0);
    if (!is_type(answer, "reply")) {
      out.failures.emplace_back(phase, "renew " + std::to_string(my_id) + " after "
                                         + std::to_string(rtt) + " ms: " + json::serialize(answer));
      token = acquire_holder_lease(c, lock, owner, id, s.stop);
      continue;
    }
    if (rtt > static_cast<double>(holder_ttl_ms))
      out.failures.emplace_back(phase, "renew " + std::to_string(my_id) + " answered after "
                                         + std::to_string(rtt) + " ms, past the lease's TTL: "
                                         + json::serialize(answer));
    if (phase >= 0 && s.phase.load() == phase)
      out.rtt_ms[static_cast<std::size_t>(phase)].push_back(rtt);
  }
  if (token != 0) {
    auto my_id = id++;
    c.send(json::serialize(json::object{
      {"id", my_id}, {"op", "release"}, {"lock", lock}, {"owner", owner}, {"token", token}}));
    c.answer(my_id);
  }
}

// --- flooders -----------------------------------------------------------------------------------

/// What the flooders of one flood phase share; counts cover the answers received before `stop`.
struct flood_state {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
  std::atomic<int> finished{0};
  std::atomic<uint64_t> granted{0};
  std::atomic<uint64_t> overloaded{0};
  std::atomic<uint64_t> overloaded_without_hint{0};
  std::atomic<uint64_t> lock_held{0};        // a hot-name wait that ran out: expected
  std::atomic<uint64_t> too_many_waiters{0};
  std::atomic<uint64_t> other{0};
  std::mutex mtx;
  std::string first_other;

  void fail(std::string why) {
    ++other;
    std::lock_guard<std::mutex> guard{mtx};
    if (first_other.empty())
      first_other = std::move(why);
  }
};

/*
 * Keeps flood_window acquires in flight on one socket until `s.stop`, then waits for the answers
 * to those still open. `prefix` makes the fresh names unique to this phase and flooder.
 */
void flooder(uint16_t port, const std::string& prefix, flood_state& s, bool& ready) {
  ws_client c{port};
  ready = true;
  ++s.ready;
  s.go.wait(false);
  int64_t id = 0;
  int open = 0;
  auto send_one = [&] {
    ++id;
    json::object req{{"id", id}, {"op", "acquire"}};
    if (id % hot_every == 0) {
      // Distinct owners, so that each queues behind the holder rather than renewing as it.
      req["lock"] = "hot";
      req["owner"] = prefix + ":" + std::to_string(id);
      req["ttlMs"] = hot_ttl_ms;
      req["waitMs"] = hot_wait_ms;
    } else {
      req["lock"] = prefix + ":" + std::to_string(id);
      req["owner"] = prefix;
      req["ttlMs"] = flood_ttl_ms;
    }
    c.send(json::serialize(req));
    ++open;
  };
  for (int i = 0; i < flood_window; ++i)
    send_one();
  while (open > 0) {
    auto frame = c.read();
    if (frame.if_contains("id") == nullptr) {
      if (is_type(frame, "error"))
        s.fail("error frame without id: " + json::serialize(frame));
      continue; // lease_lost of an expired hot lease
    }
    --open;
    bool counted = !s.stop.load();
    if (!counted) {
      continue;
    }
    if (is_type(frame, "granted")) {
      ++s.granted;
    } else {
      const auto* error = frame.if_contains("error");
      std::string_view code = error != nullptr && error->is_string() ? error->get_string()
                                                                      : std::string_view{};
      if (code == "overloaded") {
        ++s.overloaded;
        const auto* hint = frame.if_contains("retryAfterMs");
        if (hint == nullptr || !hint->is_int64() || hint->get_int64() <= 0)
          ++s.overloaded_without_hint;
      } else if (code == "lock_held") {
        ++s.lock_held;
      } else if (code == "too_many_waiters") {
        ++s.too_many_waiters;
      } else {
        s.fail(json::serialize(frame));
      }
    }
    send_one();
  }
}

// --- the server's load --------------------------------------------------------------------------

/// Peaks read from the server while a phase ran.
struct load_peaks {
  int64_t busy = 0;    // fencelock_requests_in_progress - fencelock_waiters: what sheds
  int64_t waiters = 0; // fencelock_waiters
  long rss_kib = 0;
};

/// Reads /metrics and the server's memory into `peaks`. Reconnects `http` when it broke.
void poll_load(bench_server& server, std::unique_ptr<http_client>& http, load_peaks& peaks) {
  peaks.rss_kib = std::max(peaks.rss_kib, fencelock::test::process_rss_kib(server.pid()));
  try {
    if (!http)
      http = std::make_unique<http_client>(server.port());
    auto res = http->get("/metrics");
    std::istringstream in{res.body()};
    std::string line;
    double in_progress = 0;
    double waiters = 0;
    while (std::getline(in, line)) {
      if (line.rfind("fencelock_requests_in_progress ", 0) == 0)
        in_progress = std::stod(line.substr(line.find(' ') + 1));
      else if (line.rfind("fencelock_waiters ", 0) == 0)
        waiters = std::stod(line.substr(line.find(' ') + 1));
    }
    peaks.busy = std::max(peaks.busy, static_cast<int64_t>(in_progress - waiters));
    peaks.waiters = std::max(peaks.waiters, static_cast<int64_t>(waiters));
  } catch (const std::exception&) {
    http.reset(); // read again next time; a missed reading only lowers a peak
  }
}

/// Sleeps until `until`, reading the server's load every poll_interval.
void watch_until(steady::time_point until, bench_server& server,
                 std::unique_ptr<http_client>& http, load_peaks& peaks) {
  while (steady::now() < until) {
    poll_load(server, http, peaks);
    auto next = std::min(until, steady::now() + poll_interval);
    std::this_thread::sleep_until(next);
  }
}

// --- one configuration --------------------------------------------------------------------------

/// What one configuration measured, per phase.
struct phase_result {
  double seconds = 0;
  std::vector<double> rtt_ms;
  load_peaks peaks;
  // Flood phases only.
  uint64_t granted = 0;
  uint64_t overloaded = 0;
  uint64_t overloaded_without_hint = 0;
  uint64_t lock_held = 0;
  uint64_t too_many_waiters = 0;
  uint64_t other = 0;
  std::string first_other;
};

struct config_result {
  std::vector<phase_result> phases;
  std::vector<std::string> failures; // renewal failures, with their phase
};

/*
 * Starts `n` threads running `body(i, ready)`, each counting itself in `s.ready` once connected
 * (or failed), and in `s.finished` at its end; an exception goes to `on_error(i, what)`. Returns
 * once all are ready.
 */
template <class State, class Body, class OnError>
std::vector<std::thread> start_threads(int n, const std::shared_ptr<State>& s, Body body,
                                       OnError on_error) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([=] {
      bool ready = false;
      try {
        body(i, ready);
      } catch (const std::exception& e) {
        on_error(i, e.what());
      }
      if (!ready)
        ++s->ready;
      ++s->finished;
    });
  }
  while (s->ready.load() < n)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  return threads;
}

/// Detaches the threads still joinable when it goes: on the way out of an exception, the holders
/// may still run (they end when the server is stopped), and a joinable std::thread must not be
/// destroyed.
struct detach_on_unwind {
  std::vector<std::thread>& threads;
  ~detach_on_unwind() {
    for (auto& t : threads)
      if (t.joinable())
        t.detach();
  }
};

/// Waits drain_timeout for `threads` to finish and joins them; throws std::runtime_error when
/// they do not (they are detached then: blocked on a server that stopped answering).
template <class State>
void join_or_throw(std::vector<std::thread>& threads, const State& s, const char* who) {
  auto deadline = steady::now() + drain_timeout;
  while (s.finished.load() < static_cast<int>(threads.size()) && steady::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  if (s.finished.load() < static_cast<int>(threads.size())) {
    for (auto& t : threads)
      t.detach();
    throw std::runtime_error(std::string{who} + " still waiting for answers 30 s after the phase");
  }
  for (auto& t : threads)
    t.join();
}

config_result run_config(const configuration& cfg, int index,
                         double seconds, int rounds) {
  bench_server server{"overload", cfg.args};
  auto port = server.port();
  auto phases = 2 * rounds;
  config_result result;
  result.phases.resize(static_cast<std::size_t>(phases));

  // Shared, not on this stack: threads left blocked by a stuck server outlive this call.
  auto hs = std::make_shared<holder_state>();
  auto logs = std::make_shared<std::vector<holder_log>>(holder_count);
  for (auto& record : *logs)
    record.rtt_ms.resize(static_cast<std::size_t>(phases));
  auto holders = start_threads(
    holder_count, hs,
    [=](int i, bool& ready) { holder(port, i, *hs, (*logs)[static_cast<std::size_t>(i)], ready); },
    [=](int i, const char* what) {
      (*logs)[static_cast<std::size_t>(i)].failures.emplace_back(hs->phase.load(),
                                                                 std::string{"socket: "} + what);
    });
  detach_on_unwind holders_guard{holders};
  hs->go = true;
  hs->go.notify_all();
  std::unique_ptr<http_client> http;
  load_peaks between;
  watch_until(steady::now() + settle, server, http, between);

  for (int p = 0; p < phases; ++p) {
    auto& out = result.phases[static_cast<std::size_t>(p)];
    std::shared_ptr<flood_state> fs;
    std::vector<std::thread> flooders;
    if (is_flood(p)) {
      fs = std::make_shared<flood_state>();
      flooders = start_threads(
        flooder_count, fs,
        [=](int i, bool& ready) {
          flooder(port, "flood:" + std::to_string(index) + ":" + std::to_string(p) + ":"
                          + std::to_string(i),
                  *fs, ready);
        },
        [=](int i, const char* what) {
          fs->fail("flooder " + std::to_string(i) + ": " + what);
        });
      fs->go = true;
      fs->go.notify_all();
    }
    auto start = steady::now();
    hs->phase = p;
    watch_until(start + std::chrono::duration_cast<steady::duration>(
                          std::chrono::duration<double>(seconds)),
                server, http, out.peaks);
    hs->phase = -1;
    if (fs)
      fs->stop = true;
    out.seconds = std::chrono::duration<double>(steady::now() - start).count();
    if (fs) {
      join_or_throw(flooders, *fs, "flooders");
      out.granted = fs->granted;
      out.overloaded = fs->overloaded;
      out.overloaded_without_hint = fs->overloaded_without_hint;
      out.lock_held = fs->lock_held;
      out.too_many_waiters = fs->too_many_waiters;
      out.other = fs->other;
      out.first_other = fs->first_other;
    }
    if (!server.running())
      throw std::runtime_error("the server exited during phase " + std::to_string(p) + ":\n"
                               + server.output());
    watch_until(steady::now() + settle, server, http, between);
  }
  hs->stop = true;
  join_or_throw(holders, *hs, "holders");
  for (auto& record : *logs) {
    for (std::size_t p = 0; p < record.rtt_ms.size(); ++p) {
      auto& into = result.phases[p].rtt_ms;
      into.insert(into.end(), record.rtt_ms[p].begin(), record.rtt_ms[p].end());
    }
    for (auto& [phase, what] : record.failures) {
      auto when = phase < 0          ? std::string{"between phases"}
                  : is_flood(phase) ? "flood phase " + std::to_string(phase)
                                    : "baseline phase " + std::to_string(phase);
      result.failures.push_back(when + ": " + what);
    }
  }
  return result;
}

// --- report -------------------------------------------------------------------------------------

/// The samples of one kind (baseline or flood) pooled over a configuration's rounds.
struct pooled {
  std::vector<double> rtt_ms;
  double seconds = 0;
  uint64_t granted = 0, overloaded = 0, overloaded_without_hint = 0, lock_held = 0,
           too_many_waiters = 0, other = 0;
  load_peaks peaks;
};

pooled pool(const config_result& r, bool flood) {
  pooled out;
  for (std::size_t p = 0; p < r.phases.size(); ++p) {
    if (is_flood(static_cast<int>(p)) != flood)
      continue;
    const auto& ph = r.phases[p];
    out.rtt_ms.insert(out.rtt_ms.end(), ph.rtt_ms.begin(), ph.rtt_ms.end());
    out.seconds += ph.seconds;
    out.granted += ph.granted;
    out.overloaded += ph.overloaded;
    out.overloaded_without_hint += ph.overloaded_without_hint;
    out.lock_held += ph.lock_held;
    out.too_many_waiters += ph.too_many_waiters;
    out.other += ph.other;
    out.peaks.busy = std::max(out.peaks.busy, ph.peaks.busy);
    out.peaks.waiters = std::max(out.peaks.waiters, ph.peaks.waiters);
    out.peaks.rss_kib = std::max(out.peaks.rss_kib, ph.peaks.rss_kib);
  }
  return out;
}

double p50(const std::vector<double>& xs) {
  return xs.empty() ? 0.0 : fencelock::bench::percentile(xs, 50);
}

double p99(const std::vector<double>& xs) {
  return xs.empty() ? 0.0 : fencelock::bench::percentile(xs, 99);
}

double max_of(const std::vector<double>& xs) {
  return xs.empty() ? 0.0 : *std::max_element(xs.begin(), xs.end());
}

std::string joined(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args)
    out += (out.empty() ? "" : " ") + a;
  return out.empty() ? "(defaults)" : out;
}

void print_phases(const config_result& r) {
  std::printf("  %-10s %6s %9s %9s %9s %9s %10s %10s %10s %7s %9s %8s\n", "phase", "s",
              "renew/s", "p50 ms", "p99 ms", "max ms", "granted/s", "shed/s", "held/s",
              "other", "peak busy", "RSS MiB");
  for (std::size_t p = 0; p < r.phases.size(); ++p) {
    const auto& ph = r.phases[p];
    auto flood = is_flood(static_cast<int>(p));
    auto rate = [&](uint64_t n) { return static_cast<double>(n) / ph.seconds; };
    std::printf("  %-10s %6.2f %9.0f %9.3f %9.3f %9.3f", flood ? "flood" : "baseline", ph.seconds,
                rate(ph.rtt_ms.size()), p50(ph.rtt_ms), p99(ph.rtt_ms), max_of(ph.rtt_ms));
    if (flood)
      std::printf(" %10.0f %10.0f %10.0f %7llu", rate(ph.granted), rate(ph.overloaded),
                  rate(ph.lock_held), static_cast<unsigned long long>(ph.other));
    else
      std::printf(" %10s %10s %10s %7s", "-", "-", "-", "-");
    std::printf(" %9lld %8.1f\n", static_cast<long long>(ph.peaks.busy),
                static_cast<double>(ph.peaks.rss_kib) / 1024.0);
  }
}

int run(double seconds, int rounds) {
  const std::vector<configuration> configs{
    {"default", {}},
    {"lowered", {"--shed-acquires-at", "64", "--shed-reads-at", "128"}},
    {"no-shedding",
     {"--shed-acquires-at", "10000000", "--shed-reads-at", "10000000", "--max-in-flight",
      "10000000", "--shed-io-lag-ms", "0"}},
  };
  std::printf("Renewals under a flood of acquires, over loopback to a fencelock serve child per "
              "configuration\n%d holders renew their own %lld ms lease back to back (one renew in "
              "flight each);\nflood phases add %d sockets x %d acquires in flight (1 in %lld on "
              "the hot name, waitMs %lld);\n%d rounds of baseline + flood, %.1f s each phase\n",
              holder_count, static_cast<long long>(holder_ttl_ms), flooder_count, flood_window,
              static_cast<long long>(hot_every), static_cast<long long>(hot_wait_ms), rounds,
              seconds);
  std::fflush(stdout);
  std::vector<config_result> results;
  int index = 0;
  for (const auto& cfg : configs) {
    std::printf("\n%s: serve ... %s\n", cfg.name, joined(cfg.args).c_str());
    std::fflush(stdout);
    results.push_back(run_config(cfg, index++, seconds, rounds));
    print_phases(results.back());
    for (const auto& f : results.back().failures)
      std::printf("  RENEWAL FAILURE %s\n", f.c_str());
    for (const auto& ph : results.back().phases)
      if (!ph.first_other.empty())
        std::printf("  first other error: %s\n", ph.first_other.c_str());
    std::fflush(stdout);
  }

  std::printf("\nPooled over the rounds (renewal latency in ms; rates per second of phase)\n");
  std::printf("%-12s %8s %8s %8s %8s %8s %9s %9s %9s %9s %9s %9s %8s %8s %9s\n", "config",
              "base p50", "base p99", "fl p50", "fl p99", "fl max", "p50 x", "p99 x",
              "renew/s b", "renew/s f", "granted/s", "shed/s", "other", "failed", "peak busy");
  std::size_t failures = 0;
  json::array summary; // the same figures as one JSON line, for bench/report.py
  for (std::size_t c = 0; c < configs.size(); ++c) {
    auto base = pool(results[c], false);
    auto flood = pool(results[c], true);
    failures += results[c].failures.size();
    summary.push_back(json::object{
      {"config", configs[c].name},
      {"base_p50_ms", p50(base.rtt_ms)},
      {"base_p99_ms", p99(base.rtt_ms)},
      {"flood_p50_ms", p50(flood.rtt_ms)},
      {"flood_p99_ms", p99(flood.rtt_ms)},
      {"flood_max_ms", max_of(flood.rtt_ms)},
      {"renewals", base.rtt_ms.size() + flood.rtt_ms.size()},
      {"granted_per_s", static_cast<double>(flood.granted) / flood.seconds},
      {"shed_per_s", static_cast<double>(flood.overloaded) / flood.seconds},
      {"renewal_failures", results[c].failures.size()},
      {"peak_busy", flood.peaks.busy}});
    std::printf("%-12s %8.3f %8.3f %8.3f %8.3f %8.1f %9.2f %9.2f %9.0f %9.0f %9.0f %9.0f %8llu "
                "%8zu %9lld\n",
                configs[c].name, p50(base.rtt_ms), p99(base.rtt_ms), p50(flood.rtt_ms),
                p99(flood.rtt_ms), max_of(flood.rtt_ms), p50(flood.rtt_ms) / p50(base.rtt_ms),
                p99(flood.rtt_ms) / p99(base.rtt_ms),
                static_cast<double>(base.rtt_ms.size()) / base.seconds,
                static_cast<double>(flood.rtt_ms.size()) / flood.seconds,
                static_cast<double>(flood.granted) / flood.seconds,
                static_cast<double>(flood.overloaded) / flood.seconds,
                static_cast<unsigned long long>(flood.other), results[c].failures.size(),
                static_cast<long long>(flood.peaks.busy));
    if (flood.overloaded_without_hint > 0 || flood.too_many_waiters > 0)
      std::printf("  %s: %llu overloaded answers without retryAfterMs, %llu too_many_waiters\n",
                  configs[c].name,
                  static_cast<unsigned long long>(flood.overloaded_without_hint),
                  static_cast<unsigned long long>(flood.too_many_waiters));
  }
  std::printf("p50 x, p99 x = flood / baseline of the same configuration; fl = flood, b/f = "
              "baseline/flood\n");
  std::printf("%s\n", json::serialize(json::object{{"scenario", "overload"},
                                                   {"seconds_per_phase", seconds},
                                                   {"rounds", rounds},
                                                   {"renewal_failures", failures},
                                                   {"configs", std::move(summary)}})
                        .c_str());
  std::fflush(stdout);
  return failures == 0 ? 0 : 2;
}

} // namespace

int main(int argc, char** argv) {
  auto [seconds, rounds] = fencelock::bench::parse_plan(argc, argv);
  if (argc <= 1)
    seconds = 3.0;
  if (argc <= 2)
    rounds = 2;
  if (argc > 3) // measure a server built elsewhere
    ::setenv("SERVER_UNDER_TEST", argv[3], 1);
  std::signal(SIGPIPE, SIG_IGN); // a write to a server that went away fails, not kills
  try {
    return run(seconds, rounds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "overload_bench: %s\n", e.what());
    return 1;
  }
}
