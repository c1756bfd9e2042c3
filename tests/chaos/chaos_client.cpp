// A client of the fault suite, run as one of several child processes by the driver
// (chaos_driver.cpp). It loops over a few shared lock names until told to quit:
//
//   acquire (HTTP, a short TTL, sometimes waiting) -> fenced write(s) through the fenced store
//   -> maybe renew between writes -> release (or, sometimes, let the lease run out)
//
// and appends every operation to its history file (history.hpp) with its monotonic start (t0,
// when the request was sent) and end (t1, when the answer arrived) and its outcome. It keeps the
// rule of docs/client.md: the lease counts until the local deadline = the send time of the
// acquire or of the last confirmed renew + TTL, and nothing is written once it passed; after a
// release is sent the lease is not used either. A fresh owner per attempt makes every grant a
// new lease, so two grants with one token are always a fault of the service.
//
//   fencelock_chaos_client --id N --seed S --servers P0[,P1...] --store-port P --locks K
//                          --history FILE [--library 1]
//
// With --library 1 it holds its leases through the C++ client library (include/fencelock/
// client.hpp, over WebSocket) instead of plain HTTP: the library renews in the background and
// keeps the local deadline itself, so the client samples held_lease::local_deadline() before
// each write and records it as a "deadline" line, and records a loss the library reports as a
// "lost" line (cause, and when it was declared).
//
// stdin takes commands, one a line: "pause" arms a pause point: after its next grant the client
// checks its deadline, prints {"pause_point":true,"lock":..,"token":..} on stdout and waits for
// any line on stdin before it sends the write. The driver freezes it (SIGSTOP) there until the
// lease ran out and a newer holder wrote, so the write that follows is the stale holder's write
// that fencing exists for. "quit" (or EOF) ends the loop; exit 0. Exit 2: bad arguments.

#include <poll.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "chaos/history.hpp"
#include "fencelock/client.hpp"
#include "support/http_client.hpp"
#include "support/lock_api.hpp"

namespace {

using fencelock::chaos::parse_u64;

namespace json = boost::json;
using fencelock::chaos::mono_ns;
using fencelock::chaos::ms_to_ns;
using fencelock::test::http_client;
using fencelock::test::http_options;
using fencelock::test::http_result;
using namespace std::chrono_literals;

struct options {
  int id = -1;
  uint64_t seed = 1;
  std::vector<uint16_t> servers;
  uint16_t store_port = 0;
  int locks = 3;
  std::string history;
  bool library = false;
};

bool parse_args(int argc, char** argv, options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string_view k = argv[i];
    std::string v = argv[i + 1];
    if (k == "--id") {
      o.id = static_cast<int>(parse_u64(v).value_or(0));
    } else if (k == "--seed") {
      o.seed = parse_u64(v).value_or(1);
    } else if (k == "--servers") {
      std::istringstream is{v};
      for (std::string p; std::getline(is, p, ',');)
        if (auto n = parse_u64(p); n && *n > 0 && *n < 65536)
          o.servers.push_back(static_cast<uint16_t>(*n));
    } else if (k == "--store-port") {
      o.store_port = static_cast<uint16_t>(parse_u64(v).value_or(0));
    } else if (k == "--locks") {
      o.locks = static_cast<int>(parse_u64(v).value_or(3));
    } else if (k == "--history") {
      o.history = v;
    } else if (k == "--library") {
      o.library = v == "1";
    } else {
      return false;
    }
  }
  return o.id >= 0 && !o.servers.empty() && o.store_port != 0 && o.locks > 0
         && !o.history.empty();
}

/// Lines from stdin, read without blocking the loop (poll), or blocking when asked.
class command_reader {
public:
  /// Returns the next complete line if one is there (waiting up to `wait_ms`), or nothing. Sets
  /// `eof` when stdin closed.
  std::optional<std::string> next(int wait_ms) {
    for (;;) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        auto line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      if (eof)
        return std::nullopt;
      pollfd p{0, POLLIN, 0};
      int r = ::poll(&p, 1, wait_ms);
      if (r < 0 && errno == EINTR)
        continue; // SIGSTOP/SIGCONT may interrupt the wait
      if (r <= 0)
        return std::nullopt;
      char tmp[256];
      auto n = ::read(0, tmp, sizeof(tmp));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        eof = true;
        continue;
      }
      buf_.append(tmp, static_cast<size_t>(n));
    }
  }

  bool eof = false;

private:
  std::string buf_;
};

/// The client: one loop, one history file.
class chaos_client {
public:
  explicit chaos_client(options o)
    : opts_(std::move(o)), rng_(opts_.seed * 1'000'003 + static_cast<uint64_t>(opts_.id)),
      out_(opts_.history) {
    // Short HTTP timeouts: a frozen store must not hold a client past several leases.
    for (auto port : opts_.servers)
      servers_.push_back(std::make_unique<http_client>(port, http_options{5s, true}));
    store_ = std::make_unique<http_client>(opts_.store_port, http_options{5s, true});
  }

  int run() {
    for (uint64_t iter = 0;; ++iter) {
      if (!read_commands(0))
        return 0;
      if (opts_.library)
        one_library_attempt(iter);
      else
        one_attempt(iter);
    }
  }

private:
  // Reads the pending commands; returns false when the client should quit.
  bool read_commands(int wait_ms) {
    while (auto line = cmds_.next(wait_ms)) {
      if (*line == "quit")
        return false;
      if (*line == "pause")
        armed_ = true;
      else if (*line == "disarm")
        armed_ = false;
      wait_ms = 0;
    }
    return !cmds_.eof;
  }

  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>{lo, hi}(rng_);
  }

  bool chance(int percent) {
    return uniform(1, 100) <= percent;
  }

  void nap(int64_t lo_ms, int64_t hi_ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds{uniform(lo_ms, hi_ms)});
  }

  json::object base(std::string_view op, int64_t t0) const {
    json::object o;
    o["op"] = op;
    o["c"] = opts_.id;
    o["lock"] = lock_;
    o["owner"] = owner_;
    o["t0"] = t0;
    return o;
  }

  // Fills "res"/"code" from a lock-service answer: `ok_res` for a 200; "inst", the instance
  // that server() picked for the request.
  void outcome(json::object& o, const http_result& r, std::string_view ok_res) const {
    o["inst"] = server_index_;
    if (!r) {
      o["res"] = "error";
      o["code"] = "transport";
      o["detail"] = r.what;
      return;
    }
    if (r.response.status == 200) {
      o["res"] = ok_res;
      return;
    }
    auto code = r.response.error();
    if (code == "lock_held")
      o["res"] = "held";
    else if (code == "lease_lost")
      o["res"] = "lost";
    else
      o["res"] = "error";
    o["code"] = code.empty() ? "status_" + std::to_string(r.response.status) : code;
  }

  http_client& server() {
    server_index_ = uniform(0, static_cast<int64_t>(servers_.size()) - 1);
    return *servers_[static_cast<size_t>(server_index_)];
  }

  std::string path(std::string_view op) const {
    return "/v1/locks/" + lock_ + "/" + std::string{op};
  }

  void one_attempt(uint64_t iter) {
    lock_ = "lock-" + std::to_string(uniform(0, opts_.locks - 1));
    owner_ = "c" + std::to_string(opts_.id) + "-" + std::to_string(iter);
    ttl_ms_ = uniform(500, 2000);
    int64_t wait_ms = chance(30) ? uniform(100, 1500) : 0;

    json::object body{{"owner", owner_}, {"ttlMs", ttl_ms_}};
    if (wait_ms > 0)
      body["waitMs"] = wait_ms;
    auto t0 = mono_ns();
    auto r = server().try_request("POST", path("acquire"), json::serialize(body), {},
                                  std::chrono::milliseconds{5000 + wait_ms});
    auto t1 = mono_ns();
    auto rec = base("acquire", t0);
    rec["t1"] = t1;
    rec["ttl"] = ttl_ms_;
    rec["wait"] = wait_ms;
    outcome(rec, r, "granted");
    auto lease = r ? fencelock::test::lease_view::from(r.response) : std::nullopt;
    if (lease) {
      token_ = lease->token;
      deadline_ = t0 + ms_to_ns(ttl_ms_);
      rec["token"] = token_;
      rec["deadline"] = deadline_;
    }
    out_.append(rec);
    if (!lease) {
      nap(10, 100);
      return;
    }
    hold();
  }

  // Uses the lease just granted: writes, maybe renewals, then a release or nothing.
  void hold() {
    // A waited grant can come late in its TTL (the server started the lease at the hand-off,
    // after the request was sent): renew first when little is left, as the client library does.
    if (mono_ns() + ms_to_ns(ttl_ms_) / 3 >= deadline_ && !renew())
      return;
    int writes = static_cast<int>(uniform(1, 3));
    for (int w = 0; w < writes; ++w) {
      if (!write())
        return;
      if (w + 1 < writes && chance(50) && !renew())
        return;
      // Work under the lease, never past the deadline.
      auto left_ms = (deadline_ - mono_ns()) / 1'000'000;
      if (left_ms > 2)
        nap(0, std::min<int64_t>(ttl_ms_ / 8, left_ms / 2));
    }
    if (chance(85) && mono_ns() < deadline_)
      release();
    // else: abandon the lease; it runs out at its TTL on the server.
  }

  // One fenced write; returns whether the lease is still usable.
  bool write() {
    auto check = mono_ns();
    if (check >= deadline_) {
      auto rec = base("write", check);
      rec["t1"] = check;
      rec["token"] = token_;
      rec["check"] = check;
      rec["deadline"] = deadline_;
      rec["res"] = "skipped"; // the local deadline passed: the lease is not used any more
      out_.append(rec);
      return false;
    }
    bool paused = pause_point();
    auto t0 = mono_ns();
    auto r = store_->try_request("PUT", "/kv/" + lock_, owner_ + "@" + std::to_string(token_),
                                 {{"Fencing-Lock", lock_},
                                  {"Fencing-Token", std::to_string(token_)}});
    auto t1 = mono_ns();
    auto rec = base("write", t0);
    rec["t1"] = t1;
    rec["token"] = token_;
    rec["check"] = check;
    rec["deadline"] = deadline_;
    rec["paused"] = paused;
    if (!r) {
      rec["res"] = "error";
      rec["code"] = "transport";
    } else if (r.response.status == 200) {
      rec["res"] = "accepted";
    } else if (r.response.status == 409) {
      rec["res"] = "stale";
      if (r.response.json)
        if (auto h = fencelock::test::json_u64(*r.response.json, "highest"))
          rec["highest"] = *h;
    } else {
      rec["res"] = "error";
      rec["code"] = "status_" + std::to_string(r.response.status);
    }
    out_.append(rec);
    // A stale answer means a newer holder wrote: the lease is gone whatever the deadline says.
    return r && r.response.status == 200 && !paused;
  }

  // When armed: announces the pause point on stdout and waits for any line on stdin (the driver
  // freezes the process meanwhile). Returns whether it paused.
  bool pause_point() {
    if (!armed_)
      return false;
    armed_ = false;
    json::object p{{"pause_point", true}, {"lock", lock_}, {"token", token_},
                   {"deadline", deadline_}};
    std::cout << json::serialize(p) << std::endl;
    while (!cmds_.eof && !cmds_.next(1000)) {
    }
    return true;
  }

  // One renewal; returns whether the lease is still usable.
  bool renew() {
    auto t0 = mono_ns();
    if (t0 >= deadline_)
      return false;
    json::object body{{"owner", owner_}, {"token", token_}, {"ttlMs", ttl_ms_}};
    auto r = server().try_request("POST", path("renew"), json::serialize(body));
    auto t1 = mono_ns();
    auto rec = base("renew", t0);
    rec["t1"] = t1;
    rec["token"] = token_;
    rec["ttl"] = ttl_ms_;
    rec["prev_deadline"] = deadline_;
    outcome(rec, r, "ok");
    bool ok = r && r.response.status == 200;
    if (ok)
      deadline_ = t0 + ms_to_ns(ttl_ms_); // confirmed: counted from the send time
    rec["deadline"] = deadline_;
    out_.append(rec);
    if (!r || r.response.status == 409)
      return ok;
    // 503 and friends: not confirmed; the old deadline still counts.
    return ok || mono_ns() < deadline_;
  }

  static int64_t steady_ns(std::chrono::steady_clock::time_point t) {
    // libstdc++'s steady_clock is CLOCK_MONOTONIC: the histories' time axis.
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }

  // The same attempt through the client library: one client per attempt, so that every grant
  // has an owner of its own (the library names one owner per client).
  void one_library_attempt(uint64_t iter) {
    lock_ = "lock-" + std::to_string(uniform(0, opts_.locks - 1));
    owner_ = "c" + std::to_string(opts_.id) + "-" + std::to_string(iter);
    ttl_ms_ = uniform(500, 2000);
    int64_t wait_ms = chance(30) ? uniform(100, 1500) : 0;
    auto port = opts_.servers[static_cast<size_t>(
      uniform(0, static_cast<int64_t>(opts_.servers.size()) - 1))];
    fencelock::client_options co;
    co.url = "http://127.0.0.1:" + std::to_string(port);
    co.owner = owner_;
    co.connect_timeout = 2s;
    co.request_timeout = 5s;
    auto rec = base("acquire", 0);
    rec["ttl"] = ttl_ms_;
    rec["wait"] = wait_ms;
    rec["library"] = true;
    std::optional<fencelock::held_lease> lease;
    auto t0 = mono_ns();
    try {
      fencelock::client cl{co};
      lease.emplace(cl.acquire(lock_, std::chrono::milliseconds{ttl_ms_},
                               std::chrono::milliseconds{wait_ms}));
      token_ = lease->token();
      deadline_ = steady_ns(lease->local_deadline());
      rec["res"] = "granted";
      rec["token"] = token_;
      rec["deadline"] = deadline_;
    } catch (const fencelock::client_error& e) {
      rec["res"] = e.code() == "lock_held" ? "held" : "error";
      rec["code"] = e.code();
    }
    rec["t0"] = t0;
    rec["t1"] = mono_ns();
    out_.append(rec);
    if (!lease) {
      nap(10, 100);
      return;
    }
    hold_library(*lease);
  }

  // Writes while the library says the lease is held, then releases it or lets it run out.
  void hold_library(fencelock::held_lease& lease) {
    int writes = static_cast<int>(uniform(1, 3));
    for (int w = 0; w < writes; ++w) {
      if (!library_alive(lease) || !write())
        return;
      auto left_ms = (deadline_ - mono_ns()) / 1'000'000;
      if (left_ms > 2)
        nap(0, std::min<int64_t>(ttl_ms_ / 2, left_ms / 2)); // long enough for renewals
    }
    if (!library_alive(lease))
      return;
    if (!chance(85)) {
      lease.detach(); // runs out at its TTL on the server
      return;
    }
    auto t0 = mono_ns();
    auto rec = base("release", t0);
    rec["token"] = token_;
    rec["deadline"] = deadline_;
    try {
      lease.release();
      rec["res"] = "ok";
    } catch (const fencelock::client_error& e) {
      rec["res"] = e.code() == "lease_lost" ? "lost" : "error";
      rec["code"] = e.code();
    }
    rec["t1"] = mono_ns();
    out_.append(rec);
  }

  // Samples the library's view of the lease: records a later local deadline, or the loss.
  // Returns whether the lease still counts as held.
  bool library_alive(fencelock::held_lease& lease) {
    auto now = mono_ns();
    if (auto loss = lease.loss()) {
      auto rec = base("lost", steady_ns(loss->at));
      rec["t1"] = now;
      rec["res"] = "lost";
      rec["code"] = fencelock::to_string(loss->cause);
      rec["token"] = token_;
      rec["deadline"] = deadline_;
      out_.append(rec);
      return false;
    }
    auto d = steady_ns(lease.local_deadline());
    if (d > deadline_) {
      deadline_ = d;
      auto rec = base("deadline", now);
      rec["token"] = token_;
      rec["deadline"] = deadline_;
      out_.append(rec);
    }
    return now < deadline_;
  }

  void release() {
    auto t0 = mono_ns();
    json::object body{{"owner", owner_}, {"token", token_}};
    auto r = server().try_request("POST", path("release"), json::serialize(body));
    auto t1 = mono_ns();
    auto rec = base("release", t0);
    rec["t1"] = t1;
    rec["token"] = token_;
    rec["deadline"] = deadline_;
    outcome(rec, r, "ok");
    out_.append(rec);
  }

  options opts_;
  std::mt19937_64 rng_;
  fencelock::chaos::history_writer out_;
  std::vector<std::unique_ptr<http_client>> servers_;
  int64_t server_index_ = 0; // of the last server() picked
  std::unique_ptr<http_client> store_;
  command_reader cmds_;
  bool armed_ = false;

  // The attempt in progress.
  std::string lock_;
  std::string owner_;
  int64_t ttl_ms_ = 0;
  uint64_t token_ = 0;
  int64_t deadline_ = 0;
};

} // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse_args(argc, argv, o)) {
    std::cerr << "usage: fencelock_chaos_client --id N --seed S --servers P0[,P1] "
                 "--store-port P --locks K --history FILE\n";
    return 2;
  }
  try {
    chaos_client c{std::move(o)};
    return c.run();
  } catch (const std::exception& e) {
    std::cerr << "chaos_client: " << e.what() << '\n';
    return 1;
  }
}
