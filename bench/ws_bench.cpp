// WebSocket lock operations over real loopback connections to a `fencelock serve` child, each run
// side by side with its baselines (alternating rounds, or interleaved samples): the machine is
// shared and noisy, so the ratios are the result and the absolute numbers move with the machine.
//
//   1. Throughput: acquire+release cycles per second with several cycles in flight on each socket
//      (pipelined), over 1, 8 and 32 sockets. Baselines, same rounds: two WS `status` round trips
//      per cycle with the same pipelining (what the lock path costs on top of the WebSocket
//      itself), and acquire+release over HTTP keep-alive on as many connections, one request in
//      flight on each, as http_bench does (what a pipelined socket buys over HTTP/1.1).
//   2. Hand-off latency: the holder on socket A sends release, the waiter on socket B (an acquire
//      with waitMs) receives `granted`; timed from the send to the receipt. Baselines, sample by
//      sample: a `status` round trip, and a release round trip with nobody waiting.
//
//   build/bench/ws_bench [seconds-per-trial=2] [rounds=3] [fencelock-binary]
//
// The server is `fencelock serve --port 0 --data-dir <temp> --log-level warn` (SQLite store, no
// per-operation log lines), started here and stopped here (SIGTERM, then SIGKILL); it dies with
// this program too. Clients and server share the machine's cores.

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <mutex>
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


namespace json = boost::json;
using fencelock::bench::http_client;
using fencelock::bench::is_type;
using fencelock::bench::ms_since;
using fencelock::bench::bench_server;
using fencelock::bench::ws_client;
using steady = std::chrono::steady_clock;

namespace {

/// Time a trial's sockets have, after the trial, to finish the cycles they have open; past it
/// the server counts as stuck and the bench ends.
constexpr auto drain_timeout = std::chrono::seconds{30};

/// TTL of every benchmark lease: long enough never to expire during a cycle.
constexpr int64_t bench_ttl_ms = 10'000;

std::string acquire_frame(int64_t id, const std::string& lock, const std::string& owner,
                          int64_t wait_ms = 0) {
  json::object req{{"id", id},       {"op", "acquire"},         {"lock", lock},
                   {"owner", owner}, {"ttlMs", bench_ttl_ms}};
  if (wait_ms > 0)
    req["waitMs"] = wait_ms;
  return json::serialize(req);
}

std::string release_frame(int64_t id, const std::string& lock, const std::string& owner,
                          int64_t token) {
  return json::serialize(json::object{
    {"id", id}, {"op", "release"}, {"lock", lock}, {"owner", owner}, {"token", token}});
}

std::string status_frame(int64_t id, const std::string& lock) {
  return json::serialize(json::object{{"id", id}, {"op", "status"}, {"lock", lock}});
}

// --- throughput ---------------------------------------------------------------------------------

enum class workload { http_lock, ws_status, ws_lock };

/// What one trial's threads share.
struct trial_state {
  std::atomic<int> ready{0};    // threads connected (or failed to)
  std::atomic<bool> go{false};  // set once every thread is ready: the clock starts
  std::atomic<bool> stop{false};
  std::atomic<int> finished{0};
  std::atomic<uint64_t> cycles{0};
  std::atomic<uint64_t> failures{0};
  std::mutex mtx;
  std::string first_failure;

  void fail(std::string why) {
    ++failures;
    std::lock_guard<std::mutex> guard{mtx};
    if (first_failure.empty())
      first_failure = std::move(why);
  }
};

/*
 * Runs acquire+release cycles over HTTP on one connection until `s.stop`. `lock` is this
 * connection's own lock.
 */
void http_connection(uint16_t port, const std::string& lock, trial_state& s, bool& ready) {
  http_client c{port};
  ready = true;
  ++s.ready;
  s.go.wait(false);
  auto target = "/v1/locks/" + lock;
  while (!s.stop.load()) {
    auto acq = c.post(target + "/acquire",
                      R"({"owner":"bench","ttlMs":)" + std::to_string(bench_ttl_ms) + "}");
    if (acq.result_int() != 200) {
      s.fail("acquire: HTTP " + std::to_string(acq.result_int()) + " " + acq.body());
      continue;
    }
    auto token = json::parse(acq.body()).at("token").as_int64();
    auto rel = c.post(target + "/release", R"({"owner":"bench","token":)" + std::to_string(token)
                                             + "}");
    if (rel.result_int() != 200) {
      s.fail("release: HTTP " + std::to_string(rel.result_int()) + " " + rel.body());
      continue;
    }
    ++s.cycles;
  }
}

/*
 * Runs `in_flight` cycles at a time over one WebSocket until `s.stop`, then lets every open cycle
 * finish (so that no lease is left behind). A cycle is acquire+release of the slot's own lock
 * `<prefix>:<slot>` (ws_lock), or two status round trips (ws_status). A slot's index is the id of
 * its requests: it has one open at a time.
 */
void ws_connection(uint16_t port, workload w, int in_flight, const std::string& prefix,
                   trial_state& s, bool& ready) {
  ws_client c{port};
  std::vector<std::string> locks;
  for (int i = 0; i < in_flight; ++i)
    locks.push_back(prefix + ":" + std::to_string(i));
  std::vector<int> answered(in_flight, 0); // answers in the slot's current cycle
  auto begin_cycle = [&](int i) {
    answered[i] = 0;
    c.send(w == workload::ws_lock ? acquire_frame(i, locks[i], "bench")
                                  : status_frame(i, locks[i]));
  };
  ready = true;
  ++s.ready;
  s.go.wait(false);
  for (int i = 0; i < in_flight; ++i)
    begin_cycle(i);
  int open = in_flight;
  while (open > 0) {
    auto frame = c.read();
    const auto& type = frame.at("type").as_string();
    if (type != "reply" && type != "granted" && type != "error")
      continue; // a push: none is expected, none matters here
    auto i = frame.at("id").to_number<int>();
    bool ok = type != "error";
    if (!ok)
      s.fail(json::serialize(frame));
    if (ok && answered[i] == 0) {
      answered[i] = 1;
      if (w == workload::ws_lock)
        c.send(release_frame(i, locks[i], "bench", frame.at("result").at("token").as_int64()));
      else
        c.send(status_frame(i, locks[i]));
      continue;
    }
    if (ok)
      ++s.cycles;
    if (s.stop.load())
      --open;
    else
      begin_cycle(i);
  }
}

/*
 * Returns the cycles per second of workload `w` over `connections` connections, each with
 * `in_flight` cycles open at a time (HTTP: always one), measured for `seconds` after every
 * connection is open. Throws std::runtime_error when the connections do not finish within
 * drain_timeout after the trial (the server is then stopped by the caller's unwinding).
 */
double trial(uint16_t port, workload w, int connections, int in_flight, double seconds) {
  static int run_id = 0;
  auto run = std::to_string(run_id++);
  // Shared, not on this stack: threads left blocked by a stuck server outlive this call.
  auto s = std::make_shared<trial_state>();
  std::vector<std::thread> threads;
  for (int i = 0; i < connections; ++i) {
    threads.emplace_back([=] {
      bool ready = false;
      auto name = "bench:" + run + ":" + std::to_string(i);
      try {
        if (w == workload::http_lock)
          http_connection(port, name, *s, ready);
        else
          ws_connection(port, w, in_flight, name, *s, ready);
      } catch (const std::exception& e) {
        s->fail(e.what());
      }
      if (!ready)
        ++s->ready;
      ++s->finished;
    });
  }
  while (s->ready.load() < connections)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  auto start = steady::now();
  s->go = true;
  s->go.notify_all();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  auto n = s->cycles.load();
  auto elapsed = std::chrono::duration<double>(steady::now() - start).count();
  s->stop = true;
  auto deadline = steady::now() + drain_timeout;
  while (s->finished.load() < connections && steady::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  if (s->finished.load() < connections) {
    for (auto& t : threads)
      t.detach(); // blocked on a server that stopped answering; the bench is about to end
    std::lock_guard<std::mutex> guard{s->mtx};
    throw std::runtime_error("connections still busy 30 s after the trial; first failure: "
                             + (s->first_failure.empty() ? "none" : s->first_failure));
  }
  for (auto& t : threads)
    t.join();
  if (s->failures.load() > 0)
    std::fprintf(stderr, "warning: %llu failures, the first: %s\n",
                 static_cast<unsigned long long>(s->failures.load()), s->first_failure.c_str());
  return static_cast<double>(n) / elapsed;
}

// --- hand-off latency ---------------------------------------------------------------------------

/// Latency samples in milliseconds.
struct latencies {
  std::vector<double> status_rtt;
  std::vector<double> release_rtt;
  std::vector<double> handoff;
};

/// Returns the answer to request `id` on `c`; throws if it is not of type `type`.
json::object expect(ws_client& c, int64_t id, std::string_view type) {
  auto frame = c.answer(id);
  if (!is_type(frame, type))
    throw std::runtime_error("expected " + std::string{type} + ", got " + json::serialize(frame));
  return frame;
}

/*
 * Collects samples for `seconds` on two fresh sockets, interleaving one of each kind:
 *   status:   status round trip on the holder's socket;
 *   release:  acquire a lock nobody waits for, then time its release round trip;
 *   hand-off: the waiter's socket sends acquire with waitMs; once status shows it queued, time
 *             from the holder's release send to the waiter's granted receipt. Holder and waiter
 *             then swap sockets.
 */
void handoff_round(uint16_t port, double seconds, int round, latencies& out) {
  ws_client a{port};
  ws_client b{port};
  auto lock = "handoff:" + std::to_string(round);
  auto solo = "solo:" + std::to_string(round);
  ws_client* holder = &a;
  ws_client* waiter = &b;
  std::string holder_owner = "a";
  std::string waiter_owner = "b";
  int64_t id = 1;
  holder->send(acquire_frame(id, lock, holder_owner));
  auto token = expect(*holder, id++, "granted").at("result").at("token").as_int64();
  auto end = steady::now() + std::chrono::duration_cast<steady::duration>(
                               std::chrono::duration<double>(seconds));
  while (steady::now() < end) {
    auto t0 = steady::now();
    holder->send(status_frame(id, solo));
    expect(*holder, id++, "reply");
    out.status_rtt.push_back(ms_since(t0));

    holder->send(acquire_frame(id, solo, holder_owner));
    auto solo_token = expect(*holder, id++, "granted").at("result").at("token").as_int64();
    t0 = steady::now();
    holder->send(release_frame(id, solo, holder_owner, solo_token));
    expect(*holder, id++, "reply");
    out.release_rtt.push_back(ms_since(t0));

    auto wait_id = id++;
    waiter->send(acquire_frame(wait_id, lock, waiter_owner, bench_ttl_ms));
    for (int queued = 0; queued == 0;) { // the release must find the waiter queued
      holder->send(status_frame(id, lock));
      queued = expect(*holder, id++, "reply").at("result").at("waiters").to_number<int>();
    }
    auto release_id = id++;
    t0 = steady::now();
    holder->send(release_frame(release_id, lock, holder_owner, token));
    auto grant = expect(*waiter, wait_id, "granted");
    out.handoff.push_back(ms_since(t0));
    expect(*holder, release_id, "reply");
    token = grant.at("result").at("token").as_int64();
    std::swap(holder, waiter);
    std::swap(holder_owner, waiter_owner);
  }
  holder->send(release_frame(id, lock, holder_owner, token));
  expect(*holder, id, "reply");
}

int run(double seconds, int rounds) {
  using fencelock::bench::median;
  using fencelock::bench::percentile;
  bench_server server{"wsbench"};
  auto port = server.port();

  std::printf("WebSocket cycles/s over loopback to a fencelock serve child (median of %d "
              "alternating rounds, %.1f s each)\n"
              "a cycle = acquire+release of the slot's own lock; ws-status = two WS status round "
              "trips, same pipelining;\nhttp-lock = acquire+release over HTTP keep-alive on as "
              "many connections, one request in flight on each;\nin-flight = WS cycles open at "
              "once over all sockets\n",
              rounds, seconds);
  std::printf("%6s %9s %12s %12s %12s %12s %10s\n", "conns", "in-flight", "http-lock",
              "ws-status", "ws-lock", "lock/status", "ws/http");
  std::fflush(stdout);
  struct shape {
    int connections;
    int in_flight; // per connection
  };
  for (auto [connections, in_flight] : {shape{1, 1}, shape{1, 64}, shape{8, 8}, shape{32, 2}}) {
    std::vector<double> http_locks, statuses, locks;
    for (int r = 0; r < rounds; ++r) {
      http_locks.push_back(trial(port, workload::http_lock, connections, 1, seconds));
      statuses.push_back(trial(port, workload::ws_status, connections, in_flight, seconds));
      locks.push_back(trial(port, workload::ws_lock, connections, in_flight, seconds));
    }
    auto h = median(http_locks);
    auto st = median(statuses);
    auto l = median(locks);
    std::printf("%6d %9d %12.0f %12.0f %12.0f %12.3f %10.2f\n", connections,
                connections * in_flight, h, st, l, l / st, l / h);
    std::fflush(stdout);
  }

  latencies lat;
  for (int r = 0; r < rounds; ++r)
    handoff_round(port, seconds, r, lat);
  std::printf("\nHand-off latency: holder's release sent on socket A -> granted received on "
              "socket B (waitMs);\n%zu samples of each kind, interleaved, over %d rounds of "
              "%.1f s\n",
              lat.handoff.size(), rounds, seconds);
  std::printf("%-34s %12s %12s\n", "", "median (ms)", "p99 (ms)");
  auto row = [&](const char* what, const std::vector<double>& xs) {
    std::printf("%-34s %12.3f %12.3f\n", what, median(xs), percentile(xs, 99));
  };
  row("status round trip", lat.status_rtt);
  row("release round trip, nobody waits", lat.release_rtt);
  row("hand-off release -> granted", lat.handoff);
  std::printf("%-34s %12.2f %12.2f\n", "hand-off / release round trip",
              median(lat.handoff) / median(lat.release_rtt),
              percentile(lat.handoff, 99) / percentile(lat.release_rtt, 99));
  std::fflush(stdout);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  auto [seconds, rounds] = fencelock::bench::parse_plan(argc, argv);
  if (argc > 3) // measure a server built elsewhere
    ::setenv("FENCELOCK_SERVER_BINARY", argv[3], 1);
  std::signal(SIGPIPE, SIG_IGN); // a write to a server that went away fails, not kills
  try {
    return run(seconds, rounds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ws_bench: %s\n", e.what());
    return 1;
  }
}
