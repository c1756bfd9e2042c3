// The driver of the fault suite (issue 12): real servers on one store, a fenced store, N chaos
// clients (chaos_client.cpp) looping on a few shared locks, and random bounded faults on a
// seeded schedule, one at a time with quiet gaps between them. Every fault goes into the
// history as a window of monotonic times; at the end the checker (checker.hpp) reads the whole
// history and the run fails on any violation.
//
//   fencelock_chaos_driver --store embedded|redis [--duration S] [--seed N] [--clients N]
//                          [--locks K] [--library-clients N] [--history DIR] [--keep]
//                          [--spare-instance]
//
// --duration defaults to $FENCELOCK_CHAOS_SECONDS, else 60. Of the --clients (6) clients, the
// last --library-clients (2) hold their leases through the C++ client library, the others over
// plain HTTP. --seed defaults to one drawn from the clock and is printed; the same seed gives the
// same schedule of faults and the same client choices (the timing of a real run still differs).
// --history is where the history goes (by default a fresh /tmp/fencelock-chaos-<store>-XXXXXX):
// removed after a passing run unless --keep, kept and printed after a failing one.
// --spare-instance never kills instance 0 (the soak script measures that process over the whole
// run).
//
// Stores and faults:
//   embedded: one instance on a data dir. Faults: a client frozen past its lease (at a random
//     moment, or right before a write: its stale write must be rejected), the instance frozen
//     (SIGSTOP for 1-4 s), kill -9 and restart of the instance on the same port and data dir,
//     and a full disk: the server runs with the LD_PRELOAD shim disk_full_shim.cpp, which fails
//     every write to a regular file with ENOSPC while a flag file exists (its name is in
//     CHAOS_DISK_FULL_FLAG, not a FENCELOCK_ variable: the server refuses unknown ones).
//   redis: two instances on one redis-server with AOF and appendfsync always (docs/redis.md).
//     Faults: frozen clients and instances as above, kill -9 and restart of an instance, kill -9
//     of redis-server and a restart from its AOF, kill -9 and a restart with its files deleted
//     (empty: leases are lost by design, tokens must still rise), and a redis-server frozen
//     with SIGSTOP for a few seconds.
//   Around every crash the driver holds a lease of its own and releases another; after the
//   restart it probes the status of those and of every client lock, then renews its lease.
//
// SIGINT or SIGTERM ends the run early: the children are stopped, the history is checked and
// kept. Exit: 0 pass (or "SKIPPED:" without redis-server), 1 violations, a broken or interrupted
// run, 2 bad flags.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "chaos/checker.hpp"
#include "chaos/clock_watch.hpp"
#include "chaos/history.hpp"
#include "support/child_process.hpp"
#include "support/free_port.hpp"
#include "support/http_client.hpp"
#include "support/lock_api.hpp"
#include "support/poll.hpp"
#include "support/redis_server.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"

namespace {

using fencelock::chaos::parse_u64;

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using fencelock::chaos::history_writer;
using fencelock::chaos::mono_ns;
using fencelock::test::child_process;
using fencelock::test::http_client;
using fencelock::test::http_options;

// Set by SIGINT or SIGTERM: the run ends early, cleanly (children reaped, temp dirs removed),
// and its history is checked and kept.
std::atomic<bool> interrupted{false};

extern "C" void on_stop_signal(int) {
  interrupted = true;
}

struct options {
  std::string store = "embedded";
  int64_t duration_s = 60;
  uint64_t seed = 0;
  bool seed_given = false;
  int clients = 6;
  int locks = 3;
  int library_clients = 2;
  std::string history;
  bool keep = false;
  bool spare_instance = false;
};

bool parse_args(int argc, char** argv, options& o) {
  if (const char* env = std::getenv("FENCELOCK_CHAOS_SECONDS"))
    if (auto v = parse_u64(env); v && *v > 0)
      o.duration_s = static_cast<int64_t>(*v);
  for (int i = 1; i < argc; ++i) {
    std::string_view k = argv[i];
    if (k == "--keep") {
      o.keep = true;
      continue;
    }
    if (k == "--spare-instance") {
      o.spare_instance = true;
      continue;
    }
    if (i + 1 >= argc)
      return false;
    std::string v = argv[++i];
    auto n = parse_u64(v);
    if (k == "--store" && (v == "embedded" || v == "redis"))
      o.store = v;
    else if (k == "--duration" && n && *n > 0)
      o.duration_s = static_cast<int64_t>(*n);
    else if (k == "--seed" && n)
      o.seed = *n, o.seed_given = true;
    else if (k == "--clients" && n && *n > 0 && *n <= 64)
      o.clients = static_cast<int>(*n);
    else if (k == "--library-clients" && n && *n <= 64)
      o.library_clients = static_cast<int>(*n);
    else if (k == "--locks" && n && *n > 0 && *n <= 100)
      o.locks = static_cast<int>(*n);
    else if (k == "--history")
      o.history = v;
    else
      return false;
  }
  return true;
}

std::string lock_name(int i) {
  return "lock-" + std::to_string(i);
}

/// One fencelock instance: a child process we can kill and start again on the same port.
struct instance {
  int index = 0;
  uint16_t port = 0;
  std::string data_dir;
  std::vector<std::string> extra; // --store and friends
  std::vector<std::string> env;   // NAME=VALUE for the child only (the disk-full shim)
  std::unique_ptr<child_process> proc;

  /* Starts the server on `port` and waits up to 30 s for /readyz 200. Returns false (with the
   * reason in `why`) when it exits or does not get ready. */
  bool launch(std::string& why) {
    std::vector<std::string> args{"serve",      "--port",  std::to_string(port),
                                  "--data-dir", data_dir,  "--log-level",
                                  "warn"};
    args.insert(args.end(), extra.begin(), extra.end());
    if (env.empty()) {
      proc = std::make_unique<child_process>(fencelock::test::server_binary(), args);
    } else {
      // env(1) sets the variables and execs the server in the same process (same pid).
      std::vector<std::string> with_env = env;
      with_env.push_back(fencelock::test::server_binary());
      with_env.insert(with_env.end(), args.begin(), args.end());
      proc = std::make_unique<child_process>("/usr/bin/env", with_env);
    }
    http_client probe{port, http_options{2s, false}};
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!proc->running()) {
        why = "the server exited\n" + proc->diagnostics();
        proc.reset();
        return false;
      }
      auto r = probe.try_request("GET", "/readyz");
      if (r && r.response.status == 200)
        return true;
      std::this_thread::sleep_for(20ms);
    }
    why = "the server did not get ready within 30 s\n" + proc->diagnostics();
    return false;
  }
};

/// The fenced store (examples/fenced_store) on a free port.
struct fenced_store {
  std::unique_ptr<child_process> proc;
  uint16_t port = 0;

  explicit fenced_store(const std::string& dir) {
    proc = std::make_unique<child_process>(FENCELOCK_FENCED_STORE,
                                           std::vector<std::string>{"--port", "0", "--data-dir",
                                                                    dir});
    auto line = proc->wait_for_line(
      [](std::string_view l) { return fencelock::test::parse_listening_port(l).has_value(); },
      30s);
    if (!line)
      throw std::runtime_error("the fenced store did not start\n" + proc->diagnostics());
    port = *fencelock::test::parse_listening_port(*line);
  }

  // Returns the token of the value last written to `key`, 0 when none or unreachable.
  uint64_t token_of(const std::string& key) {
    http_client c{port, http_options{2s, false}};
    auto r = c.try_request("GET", "/kv/" + key);
    if (!r || r.response.status != 200 || !r.response.json)
      return 0;
    return fencelock::test::json_u64(*r.response.json, "token").value_or(0);
  }
};

class driver {
public:
  driver(options o, fs::path history, std::optional<std::string> redis_bin)
    : opts_(std::move(o)), history_(std::move(history)), rng_(opts_.seed),
      log_(history_ / "driver.jsonl") {
    disk_flag_ = (work_.path() / "disk-full").string();
    if (redis_bin)
      redis_.emplace(*redis_bin, fencelock::test::redis_server::options{.aof = true,
                                                                       .password = ""});
    int n = redis_ ? 2 : 1;
    for (int i = 0; i < n; ++i) {
      instance inst;
      inst.index = i;
      inst.data_dir = (work_.path() / ("instance-" + std::to_string(i))).string();
      if (redis_) {
        inst.extra = {"--store", redis_->url(), "--redis-timeout-ms", "1000"};
      } else {
        inst.env = {"LD_PRELOAD=" FENCELOCK_CHAOS_DISK_FULL_SHIM,
                    "CHAOS_DISK_FULL_FLAG=" + disk_flag_};
      }
      std::string why;
      bool up = false;
      for (int attempt = 0; attempt < 5 && !up; ++attempt) {
        inst.port = fencelock::test::pick_free_port();
        up = inst.launch(why);
      }
      if (!up)
        throw std::runtime_error("instance " + std::to_string(i) + " did not start: " + why);
      instances_.push_back(std::move(inst));
    }
    store_.emplace((work_.path() / "fenced-store").string());
    write_pids();
  }

  /// Runs the schedule; returns after the clients quit and the final recovery check.
  void run() {
    clock_.emplace((history_ / "clock.jsonl").string());
    auto start = mono_ns();
    log_.append({{"op", "run"},
                 {"store", opts_.store},
                 {"seed", opts_.seed},
                 {"clients", opts_.clients},
                 {"locks", opts_.locks},
                 {"duration", opts_.duration_s},
                 {"t0", start}});
    std::string servers;
    for (const auto& i : instances_)
      servers += (servers.empty() ? "" : ",") + std::to_string(i.port);
    for (int c = 0; c < opts_.clients; ++c)
      clients_.push_back(std::make_unique<child_process>(
        FENCELOCK_CHAOS_CLIENT,
        std::vector<std::string>{"--id", std::to_string(c), "--seed", std::to_string(opts_.seed),
                                 "--servers", servers, "--store-port",
                                 std::to_string(store_->port), "--locks",
                                 std::to_string(opts_.locks), "--history",
                                 (history_ / ("client-" + std::to_string(c) + ".jsonl"))
                                   .string(),
                                 "--library",
                                 c >= opts_.clients - opts_.library_clients ? "1" : "0"}));

    auto end = start + opts_.duration_s * 1'000'000'000;
    sleep_ms(uniform(1500, 2500)); // warm-up
    std::vector<std::string> bag;
    // Leave a quiet tail of about 4 s, so that the last fault's effects play out.
    while (mono_ns() + 4'000'000'000 < end && !interrupted) {
      if (bag.empty()) {
        bag = fault_kinds();
        std::shuffle(bag.begin(), bag.end(), rng_);
      }
      auto kind = bag.back();
      bag.pop_back();
      std::cout << "chaos: +" << (mono_ns() - start) / 1'000'000 << " ms " << kind << std::endl;
      inject(kind);
      sleep_ms(uniform(800, 2500));
    }
    while (mono_ns() < end && !interrupted)
      sleep_ms(100);
    for (auto& c : clients_)
      c->write_stdin("quit\n");
    for (auto& c : clients_)
      if (!c->wait(20s))
        std::cout << "chaos: a client did not quit within 20 s; killed\n" << c->diagnostics();
    for (auto& inst : instances_)
      check_recovered(inst);
  }

  /// Copies the servers' and clients' recent output into the history directory.
  void dump_logs() {
    auto dump = [&](const std::string& name, child_process& p) {
      std::ofstream f{history_ / (name + ".log")};
      f << p.diagnostics(400);
    };
    for (auto& inst : instances_)
      if (inst.proc)
        dump("instance-" + std::to_string(inst.index), *inst.proc);
    for (size_t c = 0; c < clients_.size(); ++c)
      dump("client-" + std::to_string(c) + "-output", *clients_[c]);
    if (store_)
      dump("fenced-store", *store_->proc);
  }

private:
  std::vector<std::string> fault_kinds() const {
    std::vector<std::string> kinds{"client_pause", "client_pause_targeted", "instance_pause"};
    if (redis_) {
      kinds.insert(kinds.end(),
                   {"instance_kill", "redis_kill_aof", "redis_kill_empty", "redis_pause"});
    } else {
      if (!opts_.spare_instance)
        kinds.push_back("instance_kill");
      kinds.push_back("disk_full");
    }
    return kinds;
  }

  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>{lo, hi}(rng_);
  }

  // Sleeps `ms`, or less when the run is interrupted.
  static void sleep_ms(int64_t ms) {
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds{ms};
    while (!interrupted && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(
        50ms, until - std::chrono::steady_clock::now()));
  }

  void inject(const std::string& kind) {
    if (kind == "client_pause")
      pause_client();
    else if (kind == "client_pause_targeted")
      pause_client_before_write();
    else if (kind == "instance_kill")
      kill_instance();
    else if (kind == "instance_pause")
      pause_instance();
    else if (kind == "redis_kill_aof")
      kill_redis(false);
    else if (kind == "redis_kill_empty")
      kill_redis(true);
    else if (kind == "redis_pause")
      pause_redis();
    else if (kind == "disk_full")
      fill_disk();
  }

  // Freezes a client at a random moment for longer than the longest TTL (2 s).
  void pause_client() {
    auto c = static_cast<int>(uniform(0, opts_.clients - 1));
    auto ms = uniform(2100, 3500);
    auto t0 = mono_ns();
    if (!clients_[static_cast<size_t>(c)]->stop())
      throw std::runtime_error("client " + std::to_string(c) + " did not stop");
    sleep_ms(ms);
    clients_[static_cast<size_t>(c)]->resume();
    log_.append({{"op", "fault"}, {"kind", "client_pause"}, {"c", c}, {"t0", t0},
                 {"t1", mono_ns()}});
  }

  // Freezes a client between its deadline check and its write, until its lease ran out and a
  // newer holder wrote (bounded), then lets it send that write: the fenced store must reject it.
  void pause_client_before_write() {
    auto c = static_cast<int>(uniform(0, opts_.clients - 1));
    auto& proc = *clients_[static_cast<size_t>(c)];
    auto from = proc.lines().size();
    proc.write_stdin("pause\n");
    auto line = proc.wait_for_line(
      [](std::string_view l) { return l.find("\"pause_point\"") != std::string_view::npos; },
      15s, from);
    if (!line) {
      proc.write_stdin("disarm\n"); // never got a lease in time; an armed client would wait
      return;
    }
    auto t0 = mono_ns();
    if (!proc.stop())
      throw std::runtime_error("client " + std::to_string(c) + " did not stop");
    boost::system::error_code ec;
    auto v = json::parse(*line, ec);
    std::string lock;
    uint64_t token = 0;
    if (!ec && v.is_object()) {
      lock = fencelock::test::json_str(v, "lock").value_or("");
      token = fencelock::test::json_u64(v, "token").value_or(0);
    }
    bool newer = false;
    auto bound = t0 + 9'000'000'000;
    while (mono_ns() < bound) {
      newer = store_->token_of(lock) > token;
      if (newer && mono_ns() - t0 > 2'100'000'000)
        break;
      sleep_ms(50);
    }
    proc.write_stdin("go\n"); // read the moment it is thawed
    proc.resume();
    log_.append({{"op", "fault"}, {"kind", "client_pause"}, {"targeted", true}, {"c", c},
                 {"lock", lock}, {"token", token}, {"newer_written", newer}, {"t0", t0},
                 {"t1", mono_ns()}});
  }

  // kill -9 of an instance and a restart on the same port (and data dir), then status probes.
  void kill_instance() {
    int lo = opts_.spare_instance ? 1 : 0;
    auto& inst = instances_[static_cast<size_t>(
      uniform(lo, static_cast<int64_t>(instances_.size()) - 1))];
    auto s = before_crash(inst);
    auto t0 = mono_ns();
    inst.proc->kill();
    auto dead = mono_ns();
    sleep_ms(uniform(0, 1000));
    std::string why;
    bool up = false;
    for (int attempt = 0; attempt < 3 && !up; ++attempt)
      up = inst.launch(why);
    if (!up)
      throw std::runtime_error("instance " + std::to_string(inst.index)
                               + " did not come back on port " + std::to_string(inst.port)
                               + ": " + why);
    log_.append({{"op", "fault"}, {"kind", "instance_kill"}, {"inst", inst.index}, {"t0", t0},
                 {"dead", dead}, {"t1", mono_ns()}});
    write_pids();
    after_restart(inst, s);
  }

  // SIGSTOP of an instance, longer than the longest client TTL and sometimes past the stall
  // threshold (2 s; docs/overload.md): the server itself stands still, as in a GC pause or a
  // stopped VM. Its clients' requests wait and come back late, after their local deadlines;
  // the embedded store gives the leases that ran out meanwhile their stall grace.
  void pause_instance() {
    auto& inst = instances_[static_cast<size_t>(
      uniform(0, static_cast<int64_t>(instances_.size()) - 1))];
    auto ms = uniform(1000, 4000);
    if (!inst.proc->stop())
      throw std::runtime_error("instance " + std::to_string(inst.index) + " did not stop");
    auto t0 = mono_ns();
    sleep_ms(ms);
    auto t1 = mono_ns();
    inst.proc->resume();
    log_.append({{"op", "fault"}, {"kind", "instance_pause"}, {"inst", inst.index}, {"t0", t0},
                 {"t1", t1}});
  }

  // kill -9 of redis-server; a restart from its AOF, or with its files deleted (empty).
  void kill_redis(bool empty) {
    auto s = before_crash(instances_[0]);
    auto t0 = mono_ns();
    redis_->sigkill();
    auto dead = mono_ns();
    sleep_ms(uniform(200, 1500));
    auto relaunch = mono_ns();
    if (empty)
      redis_->restart_empty();
    else
      redis_->restart();
    log_.append({{"op", "fault"}, {"kind", "redis_kill"}, {"empty", empty}, {"t0", t0},
                 {"dead", dead}, {"relaunch", relaunch}, {"t1", mono_ns()}});
    write_pids();
    // The instances reconnect with backoff (at most 2 s); go on once instance 0 is ready.
    http_client c{instances_[0].port, http_options{2s, false}};
    fencelock::test::eventually(
      [&] {
        auto r = c.try_request("GET", "/readyz");
        return r && r.response.status == 200;
      },
      30s, 50ms);
    if (!empty) {
      after_restart(instances_[0], s);
    } else if (s.token != 0) {
      // Lost by design: the renewal must say lease_lost (the checker exempts this lease).
      driver_op(instances_[0], "renew", s.held_lock, s.owner, s.token, 20'000, s.deadline);
    }
  }

  // SIGSTOP of redis-server for a few seconds: every request must fail closed meanwhile.
  void pause_redis() {
    auto ms = uniform(1500, 4000);
    if (!redis_->process().stop())
      throw std::runtime_error("redis-server did not stop");
    auto t0 = mono_ns();
    sleep_ms(ms);
    auto t1 = mono_ns();
    redis_->process().resume();
    log_.append({{"op", "fault"}, {"kind", "redis_pause"}, {"t0", t0}, {"t1", t1}});
  }

  // A full disk under the embedded store: every write to a regular file fails with ENOSPC.
  void fill_disk() {
    auto ms = uniform(1500, 4000);
    { std::ofstream{disk_flag_}; }
    auto t0 = mono_ns();
    sleep_ms(ms);
    auto t1 = mono_ns();
    fs::remove(disk_flag_);
    log_.append({{"op", "fault"}, {"kind", "disk_full"}, {"t0", t0}, {"t1", t1}});
  }

  // GET /v1/locks/<lock> of every lock and of `extra` through `inst`, each recorded as a probe.
  void probe_all(instance& inst, const std::vector<std::string>& extra) {
    http_client c{inst.port, http_options{5s, false}};
    std::vector<std::string> names = extra;
    for (int l = 0; l < opts_.locks; ++l)
      names.push_back(lock_name(l));
    for (const auto& name : names) {
      auto t0 = mono_ns();
      auto r = c.try_request("GET", "/v1/locks/" + name);
      auto t1 = mono_ns();
      if (!r || r.response.status != 200 || !r.response.json)
        continue; // no answer: nothing to compare
      auto st = fencelock::test::status_view::from(*r.response.json);
      if (!st)
        continue;
      json::object p{{"op", "probe"}, {"lock", name}, {"inst", inst.index},
                     {"t0", t0},      {"t1", t1},           {"held", st->held}};
      if (st->owner)
        p["owner"] = *st->owner;
      if (st->token)
        p["token"] = *st->token;
      if (st->last_token)
        p["last_token"] = *st->last_token;
      log_.append(p);
    }
  }

  // The driver's own leases around a crash, recorded like a client's (client-driver.jsonl, c =
  // 1000): before the crash one lease is acquired with a long TTL and kept, another is acquired
  // and released; after the restart the probes must show the first held and the second free,
  // and the first must renew. Short client TTLs rarely span a restart; these always do.
  struct sentinels {
    std::string held_lock, released_lock, owner;
    uint64_t token = 0;
    int64_t deadline = 0;
  };

  sentinels before_crash(instance& inst) {
    auto n = std::to_string(++sentinel_seq_);
    sentinels s{"durable-" + n + "-held", "durable-" + n + "-released", "driver-" + n, 0, 0};
    if (auto l = driver_op(inst, "acquire", s.held_lock, s.owner, 0, 20'000)) {
      s.token = l->first;
      s.deadline = l->second;
    }
    if (auto r = driver_op(inst, "acquire", s.released_lock, s.owner + "-r", 0, 20'000))
      driver_op(inst, "release", s.released_lock, s.owner + "-r", r->first, 0);
    return s;
  }

  void after_restart(instance& inst, const sentinels& s) {
    probe_all(inst, {s.held_lock, s.released_lock});
    if (s.token == 0)
      return;
    auto renewed = driver_op(inst, "renew", s.held_lock, s.owner, s.token, 20'000, s.deadline);
    driver_op(inst, "release", s.held_lock, s.owner, s.token, 0,
              renewed ? renewed->second : s.deadline);
  }

  /* One request of the driver's own leases through `inst`, recorded as a client's: `what` is
   * acquire, renew or release; `token` 0 for an acquire; `ttl_ms` 0 for a release; `deadline` the
   * lease's local deadline before a renew or release. Returns (token, new local deadline) when
   * it was granted or renewed. */
  std::optional<std::pair<uint64_t, int64_t>> driver_op(instance& inst, const std::string& what,
                                                        const std::string& lock,
                                                        const std::string& owner, uint64_t token,
                                                        int64_t ttl_ms, int64_t deadline = 0) {
    http_client c{inst.port, http_options{5s, false}};
    json::object body{{"owner", owner}};
    if (token != 0)
      body["token"] = token;
    if (ttl_ms != 0)
      body["ttlMs"] = ttl_ms;
    auto t0 = mono_ns();
    auto r = c.try_request("POST", "/v1/locks/" + lock + "/" + what, json::serialize(body));
    auto t1 = mono_ns();
    json::object rec{{"op", what}, {"c", 1000}, {"lock", lock}, {"owner", owner},
                     {"t0", t0},   {"t1", t1}};
    bool ok = r && r.response.status == 200;
    std::optional<std::pair<uint64_t, int64_t>> res;
    if (ok && what != "release") {
      auto l = fencelock::test::lease_view::from(r.response);
      if (l)
        res = std::make_pair(l->token, t0 + ttl_ms * 1'000'000);
      else
        ok = false;
    }
    if (ok)
      rec["res"] = what == "acquire" ? "granted" : "ok";
    else if (r && r.response.error() == "lease_lost")
      rec["res"] = "lost";
    else if (r && r.response.error() == "lock_held")
      rec["res"] = "held";
    else
      rec["res"] = "error";
    if (!ok)
      rec["code"] = r ? r.response.error() : std::string{"transport"};
    rec["token"] = res ? res->first : token;
    rec["ttl"] = ttl_ms;
    rec["prev_deadline"] = deadline;
    rec["deadline"] = res ? res->second : deadline;
    own_log_.append(rec);
    return res;
  }

  // After the run: a fresh lock must be granted by `inst` within 30 s.
  void check_recovered(instance& inst) {
    http_client c{inst.port, http_options{5s, false}};
    auto owner = "driver-final-" + std::to_string(inst.index);
    std::string last;
    auto t0 = mono_ns();
    bool ok = fencelock::test::eventually(
      [&] {
        json::object body{{"owner", owner}, {"ttlMs", 1000}};
        auto r = c.try_request("POST", "/v1/locks/chaos-final/acquire", json::serialize(body));
        last = r ? r.response.describe() : r.what;
        return r && r.response.status == 200;
      },
      30s, 100ms);
    log_.append({{"op", "recovered"}, {"inst", inst.index}, {"ok", ok}, {"code", last},
                 {"t0", t0}, {"t1", mono_ns()}});
  }

  void write_pids() {
    std::ofstream f{history_ / "pids.tmp"};
    for (auto& inst : instances_)
      if (inst.proc)
        f << "instance-" << inst.index << " " << inst.proc->pid() << "\n";
    if (redis_)
      f << "redis " << redis_->process().pid() << "\n";
    if (store_)
      f << "fenced_store " << store_->proc->pid() << "\n";
    f.close();
    std::error_code ec;
    fs::rename(history_ / "pids.tmp", history_ / "pids", ec);
  }

  options opts_;
  fs::path history_;
  std::mt19937_64 rng_;
  history_writer log_;
  history_writer own_log_{(history_ / "client-driver.jsonl").string()};
  int sentinel_seq_ = 0;
  fencelock::test::temp_dir work_{"fencelock-chaos-work-"};
  std::string disk_flag_;
  std::optional<fencelock::test::redis_server> redis_;
  std::vector<instance> instances_;
  std::optional<fenced_store> store_;
  std::vector<std::unique_ptr<child_process>> clients_;
  std::optional<fencelock::chaos::clock_watch> clock_;
};

int run(options o) {
  std::optional<std::string> redis_bin;
  if (o.store == "redis") {
    redis_bin = fencelock::test::redis_server_or_skip();
    if (!redis_bin)
      return 0;
  }
  if (!o.seed_given)
    o.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count())
             % 1'000'000'007;
  fs::path history;
  if (o.history.empty()) {
    std::string tmpl = "/tmp/fencelock-chaos-" + o.store + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed");
    history = tmpl;
  } else {
    history = o.history;
    fs::create_directories(history);
  }
  std::cout << "chaos: store=" << o.store << " seed=" << o.seed << " duration=" << o.duration_s
            << " s clients=" << o.clients << " locks=" << o.locks << " history=" << history.string()
            << "\nchaos: reproduce the schedule with --seed " << o.seed << std::endl;

  std::string broken;
  {
    try {
      driver d{o, history, redis_bin};
      try {
        d.run();
      } catch (const std::exception& e) {
        broken = e.what();
      }
      d.dump_logs();
    } catch (const std::exception& e) {
      broken = e.what();
    }
  } // every child is killed and reaped here
  auto result = fencelock::chaos::check_history(history);
  std::cout << result.report;
  {
    std::ofstream f{history / "report.txt"};
    f << result.report << (broken.empty() ? "" : "driver error: " + broken + "\n");
  }
  if (!broken.empty())
    std::cout << "chaos: the run broke off: " << broken << "\n";
  if (interrupted)
    std::cout << "chaos: interrupted by a signal before its end\n";
  bool pass = result.violations == 0 && broken.empty() && !interrupted;
  if (pass && !o.keep) {
    std::error_code ec;
    fs::remove_all(history, ec);
  } else {
    std::cout << "chaos: history kept in " << history.string() << " (check it again with "
              << "fencelock_chaos_check " << history.string() << ")\n";
  }
  return pass ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse_args(argc, argv, o)) {
    std::cerr << "usage: fencelock_chaos_driver --store embedded|redis [--duration S] [--seed N] "
                 "[--clients N] [--locks K] [--library-clients N] [--history DIR] [--keep] "
                 "[--spare-instance]\n";
    return 2;
  }
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  try {
    return run(std::move(o));
  } catch (const std::exception& e) {
    std::cerr << "chaos: " << e.what() << '\n';
    return 1;
  }
}
