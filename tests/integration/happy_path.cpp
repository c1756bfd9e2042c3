// The lock lifecycle over HTTP against the real server binary: acquire, status, renew,
// idempotent re-acquire, conflict, release, FIFO hand-over to a waiter, listing with pagination,
// request ids, and a clean SIGTERM.

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <thread>

#include "integration/checks.hpp"
#include "support/lock_api.hpp"
#include "support/poll.hpp"
#include "support/proc_stats.hpp"
#include "support/server_process.hpp"
#include "support/store_under_test.hpp"
#include "support/temp_dir.hpp"
#include "support/ws_client.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

TEST_CASE("http_happy_path", "[integration]") {
  temp_dir dir;
  // Declared before the server: if the test fails, the server dies first and the waiter thread
  // returns quickly instead of waiting out its waitMs.
  http_result waited;
  std::jthread waiter;
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args()};
  lock_client api{server.port()};
  const std::string lock = "jobs:report-1";

  // acquire
  auto a1 = require_lease(api.acquire(lock, "alice", 10'000, 0));
  CHECK(a1.name == lock);
  CHECK(a1.owner == "alice");
  CHECK(a1.ttl_ms == 10'000);
  CHECK(a1.token >= 1);
  CHECK(a1.expires_at > 0);

  // status: held by alice
  {
    auto st = api.status_of(lock);
    CHECK(st.held);
    CHECK(st.owner == "alice");
    CHECK(st.token == a1.token);
    CHECK(st.expires_at == a1.expires_at);
    CHECK(st.waiters == 0u);
    CHECK(st.last_token == a1.token);
  }

  // renew: same token, later deadline (twice the TTL, so later by construction)
  auto r1 = require_lease(api.renew(lock, "alice", a1.token, 20'000));
  CHECK(r1.token == a1.token);
  CHECK(r1.ttl_ms == 20'000);
  CHECK(r1.expires_at > a1.expires_at);

  // renew without ttlMs keeps working
  auto r2 = require_lease(api.renew(lock, "alice", a1.token));
  CHECK(r2.token == a1.token);
  CHECK(r2.expires_at >= a1.expires_at);

  // the holder acquiring again gets the same token with its lease refreshed
  auto a1b = require_lease(api.acquire(lock, "alice", 20'000, 0));
  CHECK(a1b.token == a1.token);
  CHECK(a1b.expires_at >= r1.expires_at);

  // another owner: 409 lock_held naming the holder
  {
    auto res = api.acquire(lock, "bob", 10'000, 0);
    INFO(res.describe());
    CHECK(res.status == 409);
    CHECK(res.error() == "lock_held");
    REQUIRE(res.json.has_value());
    auto* holder = res.json->as_object().if_contains("holder");
    REQUIRE(holder != nullptr);
    CHECK(json_str(*holder, "owner") == "alice");
    CHECK(json_i64(*holder, "expiresAt").has_value());
  }

  // renew or release with a wrong owner or token: lease_lost, nothing changes
  {
    auto res = api.renew(lock, "bob", a1.token);
    INFO(res.describe());
    CHECK(res.status == 409);
    CHECK(res.error() == "lease_lost");
    res = api.release(lock, "alice", a1.token + 1000);
    INFO(res.describe());
    CHECK(res.status == 409);
    CHECK(res.error() == "lease_lost");
    CHECK(api.status_of(lock).token == a1.token);
  }

  // release, then releasing again is lease_lost
  {
    auto res = api.release(lock, "alice", a1.token);
    INFO(res.describe());
    REQUIRE(res.status == 200);
    REQUIRE(res.json.has_value());
    CHECK(json_bool(*res.json, "released") == true);
    res = api.release(lock, "alice", a1.token);
    INFO(res.describe());
    CHECK(res.status == 409);
    CHECK(res.error() == "lease_lost");
    res = api.renew(lock, "alice", a1.token);
    INFO(res.describe());
    CHECK(res.status == 409);
    CHECK(res.error() == "lease_lost");
  }

  // status: free, remembers the last token
  {
    auto res = api.status(lock);
    INFO(res.describe());
    REQUIRE(res.status == 200);
    auto st = status_view::from(*res.json);
    REQUIRE(st.has_value());
    CHECK_FALSE(st->held);
    CHECK(st->last_token == a1.token);
    CHECK(json_absent_or_null(*res.json, "owner"));
    CHECK(json_absent_or_null(*res.json, "token"));
    CHECK(json_absent_or_null(*res.json, "expiresAt"));
  }

  // bob now gets a higher token
  auto b1 = require_lease(api.acquire(lock, "bob", 10'000, 0));
  CHECK(b1.owner == "bob");
  CHECK(b1.token > a1.token);

  // a waiter is handed the lock, FIFO, with a new higher token, when bob releases
  waiter = std::jthread{[&] {
    lock_client carol{server.port()};
    waited = carol.try_acquire(lock, "carol", 10'000, 20'000);
  }};
  REQUIRE(eventually([&] { return api.status_of(lock).waiters == 1u; }, 10s));
  {
    auto res = api.release(lock, "bob", b1.token);
    INFO(res.describe());
    CHECK(res.status == 200);
  }
  waiter.join();
  INFO("waiter: " << (waited ? waited.response.describe() : waited.what));
  REQUIRE(waited);
  auto c1 = require_lease(waited.response);
  CHECK(c1.owner == "carol");
  CHECK(c1.token > b1.token);
  {
    auto st = api.status_of(lock);
    CHECK(st.held);
    CHECK(st.owner == "carol");
    CHECK(st.token == c1.token);
    CHECK(st.waiters == 0u);
    CHECK(st.last_token == c1.token);
  }
  CHECK(api.release(lock, "carol", c1.token).status == 200);
}

TEST_CASE("http_waiters_are_served_fifo", "[integration]") {
  temp_dir dir;
  constexpr int n = 3;
  std::vector<http_result> results(n);
  std::vector<std::jthread> threads; // before the server: see http_happy_path
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args()};
  lock_client api{server.port()};
  const std::string lock = "fifo";

  auto holder = require_lease(api.acquire(lock, "holder", 30'000, 0));

  // Queue three waiters one after the other, each only once the previous one is counted.
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      lock_client c{server.port()};
      results[static_cast<size_t>(i)] =
        c.try_acquire(lock, "waiter-" + std::to_string(i), 30'000, 60'000);
    });
    INFO("waiter " << i);
    REQUIRE(eventually(
      [&] { return api.status_of(lock).waiters == static_cast<uint64_t>(i + 1); }, 10s));
  }

  // Release in turn: each release hands the lock to the next waiter in arrival order.
  uint64_t last = holder.token;
  std::string current_owner = "holder";
  for (int i = 0; i < n; ++i) {
    auto res = api.release(lock, current_owner, last);
    INFO(res.describe());
    CHECK(res.status == 200);
    std::string expected = "waiter-" + std::to_string(i);
    bool handed = eventually([&] { return api.status_of(lock).owner == expected; }, 10s);
    CHECK(handed);
    auto st = api.status_of(lock);
    REQUIRE(st.token.has_value());
    CHECK(*st.token > last);
    last = st.token.value_or(0);
    current_owner = expected;
  }
  CHECK(api.release(lock, current_owner, last).status == 200);
  for (auto& t : threads)
    t.join();
  for (int i = 0; i < n; ++i) {
    auto& r = results[static_cast<size_t>(i)];
    INFO("waiter " << i << ": " << (r ? r.response.describe() : r.what));
    REQUIRE(r);
    auto l = lease_view::from(r.response);
    REQUIRE(l.has_value());
    CHECK(l->owner == "waiter-" + std::to_string(i));
  }
}

TEST_CASE("http_listing_paginates_held_locks", "[integration]") {
  temp_dir dir;
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args()};
  lock_client api{server.port()};

  std::set<std::string> expected;
  for (int i = 0; i < 5; ++i) {
    std::string name = "list:a:" + std::to_string(i);
    require_lease(api.acquire(name, "lister", 30'000, 0));
    expected.insert(name);
  }
  require_lease(api.acquire("other:z", "lister", 30'000, 0));
  // A released lock is not listed.
  auto gone = require_lease(api.acquire("list:a:released", "lister", 30'000, 0));
  REQUIRE(api.release("list:a:released", "lister", gone.token).status == 200);

  // Page through with limit 2.
  std::set<std::string> seen;
  std::optional<std::string> cursor;
  int pages = 0;
  for (;; ++pages) {
    REQUIRE(pages < 10);
    auto res = api.list(std::string{"list:"}, 2u, cursor);
    INFO(res.describe());
    REQUIRE(res.status == 200);
    REQUIRE(res.json.has_value());
    REQUIRE(res.json->is_object());
    auto* locks = res.json->as_object().if_contains("locks");
    REQUIRE(locks != nullptr);
    REQUIRE(locks->is_array());
    CHECK(locks->as_array().size() <= 2u);
    for (const auto& entry : locks->as_array()) {
      auto st = status_view::from(entry);
      REQUIRE(st.has_value());
      CHECK(st->held);
      CHECK(st->owner == "lister");
      CHECK(st->token.has_value());
      CHECK(seen.insert(st->name).second); // no duplicates across pages
    }
    REQUIRE(res.json->as_object().contains("nextCursor"));
    const auto& next = res.json->as_object().at("nextCursor");
    if (next.is_null())
      break;
    REQUIRE(next.is_string());
    REQUIRE_FALSE(next.as_string().empty());
    cursor = std::string{next.as_string()};
  }
  CHECK(seen == expected);
  CHECK(pages >= 2); // 5 locks at 2 per page cannot fit on fewer than 3 pages

  // One page when the limit allows; the other prefix is separate.
  {
    auto res = api.list(std::string{"list:"}, 100u);
    INFO(res.describe());
    REQUIRE(res.status == 200);
    CHECK(res.json->as_object().at("locks").as_array().size() == 5u);
    CHECK(res.json->as_object().at("nextCursor").is_null());
    res = api.list(std::string{"other:"});
    INFO(res.describe());
    REQUIRE(res.status == 200);
    CHECK(res.json->as_object().at("locks").as_array().size() == 1u);
    res = api.list(std::nullopt);
    INFO(res.describe());
    REQUIRE(res.status == 200);
    CHECK(res.json->as_object().at("locks").as_array().size() == 6u);
  }
}

TEST_CASE("http_request_ids_are_echoed_or_generated", "[integration]") {
  temp_dir dir;
  server_process server{dir.str()};
  lock_client api{server.port()};

  auto res = api.acquire("rid", "ids", 10'000, 0, {{"x-request-id", "it-req-42"}});
  INFO(res.describe());
  CHECK(res.status == 200);
  CHECK(res.header("x-request-id") == "it-req-42");

  // Echoed on errors too.
  res = api.http().request("GET", "/no/such/route", std::nullopt, {{"X-Request-Id", "it-req-43"}});
  CHECK(res.status == 404);
  CHECK(res.header("x-request-id") == "it-req-43");

  // Generated when absent, and different per request.
  auto a = api.status("rid");
  auto b = api.status("rid");
  CHECK_FALSE(a.header("x-request-id").empty());
  CHECK_FALSE(b.header("x-request-id").empty());
  CHECK(a.header("x-request-id") != b.header("x-request-id"));

  // The operation's log event on stdout carries the request id.
  auto line = server.wait_for_line(
    [](std::string_view l) { return l.find("it-req-42") != std::string_view::npos; }, 10s);
  CHECK(line.has_value());
  if (line)
    CHECK(line->find("request_id") != std::string::npos);
}

TEST_CASE("serve_exits_zero_on_sigterm", "[integration]") {
  temp_dir dir;
  server_process server{dir.str()};
  lock_client api{server.port()};
  require_lease(api.acquire("term", "t", 30'000, 0));
  CHECK(api.http().get("/healthz").status == 200);
  auto st = server.terminate(30s);
  REQUIRE(st.has_value());
  INFO(st->describe());
  CHECK(st->clean());
}

TEST_CASE("serve_runs_its_timers_with_the_least_slack", "[integration]") {
  // Set on the main thread before any other starts, so that the actor system's clock thread,
  // which fires lease expiries, inherits it (fencelock::use_precise_timers).
  temp_dir dir;
  server_process server{dir.str()};
  auto path = proc_file(server.process().pid(), "timerslack_ns");
  std::ifstream file{path};
  unsigned long slack = 0;
  if (!(file >> slack)) {
    std::cout << "SKIPPED: cannot read " << path.string()
              << " (another process's needs CAP_SYS_NICE)\n";
    return;
  }
  CHECK(slack == 1);
}

TEST_CASE("serve_lets_its_threads_sleep_while_idle", "[integration]") {
  // An idle server's threads wake for their timers (the watchdog's heartbeat, the I/O thread's
  // housekeeping) and little else: under a hundred times a second in all. CAF workers that looked
  // for work to steal every millisecond woke over 2,000 times a second on 2 cores, and a thousand
  // more per core (actors/backoff_stealing.hpp).
  temp_dir dir;
  server_process server{dir.str()};
  lock_client api{server.port()};
  auto got = require_lease(api.acquire("idle", "i", 30'000, 0));
  REQUIRE(api.release("idle", "i", got.token).status == 200);
  std::this_thread::sleep_for(500ms); // past the workers' back-off to their longest sleep
  auto pid = server.process().pid();
  auto before = process_context_switches(pid);
  std::this_thread::sleep_for(1s);
  auto after = process_context_switches(pid);
  REQUIRE(before >= 0);
  REQUIRE(after >= before);
  CHECK(after - before < 400);
}

TEST_CASE("serve_allocates_with_the_allocator_it_was_built_with", "[integration]") {
  // jemalloc linked in, not preloaded: the binary as shipped frees across threads without
  // glibc's arena locks (docs/architecture.md, "Memory allocator"); a sanitized build must not
  // have it, since the sanitizer's allocator is the one that checks.
  if (std::getenv("SERVER_UNDER_TEST") != nullptr) {
    std::cout << "SKIPPED: the server under test ($SERVER_UNDER_TEST) is not this build's\n";
    return;
  }
#ifdef FENCELOCK_SERVER_JEMALLOC
  const bool built_with_jemalloc = true;
#else
  const bool built_with_jemalloc = false;
#endif
  temp_dir dir;
  server_process server{dir.str()};
  std::ifstream maps{proc_file(server.process().pid(), "maps")};
  REQUIRE(maps);
  bool mapped = false;
  for (std::string line; std::getline(maps, line);)
    mapped = mapped || line.find("/libjemalloc.so") != std::string::npos;
  CHECK(mapped == built_with_jemalloc);
}

TEST_CASE("http_waiter_gets_the_lock_when_the_lease_expires", "[integration]") {
  temp_dir dir;
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args()};
  lock_client api{server.port()};
  const std::string lock = "expiring";

  // The holder never releases: its short lease runs out and the waiter gets the lock.
  auto holder = require_lease(api.acquire(lock, "sleepy", 500, 0));
  lock_client waiter{server.port()};
  auto res = waiter.acquire(lock, "patient", 10'000, 60'000);
  auto next = require_lease(res);
  CHECK(next.owner == "patient");
  CHECK(next.token > holder.token);
  auto renewed = api.renew(lock, "sleepy", holder.token);
  INFO(renewed.describe());
  CHECK(renewed.status == 409);
  CHECK(renewed.error() == "lease_lost");
}

TEST_CASE("http_full_wait_queue_answers_429", "[integration]") {
  temp_dir dir;
  http_result first_result;
  std::jthread first; // before the server: see http_happy_path
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args({"--max-waiters-per-lock", "1"})};
  lock_client api{server.port()};
  const std::string lock = "crowded";

  auto holder = require_lease(api.acquire(lock, "holder", 30'000, 0));
  first = std::jthread{[&] {
    lock_client c{server.port()};
    first_result = c.try_acquire(lock, "first", 10'000, 60'000);
  }};
  REQUIRE(eventually([&] { return api.status_of(lock).waiters == 1u; }, 10s));

  // The queue is full: a second waiter is turned away with Retry-After.
  auto res = api.acquire(lock, "second", 10'000, 10'000);
  INFO(res.describe());
  CHECK(res.status == 429);
  CHECK(res.error() == "too_many_waiters");
  CHECK_FALSE(res.header("retry-after").empty());
  // Trying once does not queue, so it is a plain conflict.
  res = api.acquire(lock, "third", 10'000, 0);
  INFO(res.describe());
  CHECK(res.status == 409);
  CHECK(res.error() == "lock_held");

  REQUIRE(api.release(lock, "holder", holder.token).status == 200);
  first.join();
  INFO("first waiter: " << (first_result ? first_result.response.describe() : first_result.what));
  REQUIRE(first_result);
  CHECK(require_lease(first_result.response).owner == "first");
}

namespace {

/// Concurrent clients, a waiter over HTTP and a holder over WebSocket on a server started with
/// `args`: every answer arrives, and the hand-off goes to the waiter.
void serve_clients_and_a_handoff(std::vector<std::string> args) {
  temp_dir dir;
  server_process server{dir.str(), std::move(args)};
  constexpr int clients = 4;
  constexpr int cycles = 25;
  std::vector<int> done(clients, 0);
  {
    std::vector<std::jthread> threads;
    for (int c = 0; c < clients; ++c)
      threads.emplace_back([&, c] {
        lock_client api{server.port()};
        auto name = "io:" + std::to_string(c);
        uint64_t last = 0;
        for (int i = 0; i < cycles; ++i) {
          auto lease = lease_view::from(api.acquire(name, "client", 10'000, 0));
          if (!lease || lease->token <= last)
            return;
          last = lease->token;
          if (api.release(name, "client", last).status != 200)
            return;
          ++done[static_cast<size_t>(c)];
        }
      });
  }
  CHECK(done == std::vector<int>(clients, cycles));

  ws_client holder{server.port()};
  REQUIRE(holder.send({{"id", "a"}, {"op", "acquire"}, {"lock", "io:shared"}, {"owner", "ws"},
                       {"ttlMs", 30'000}}));
  auto granted = holder.answer_to("a", 30s);
  REQUIRE(granted);
  REQUIRE(granted->at("type") == "granted");
  auto token = granted->at("result").at("token").to_number<uint64_t>();
  http_result waited;
  std::jthread waiter{[&] {
    lock_client other{server.port()};
    waited = other.try_acquire("io:shared", "http", 30'000, 30'000);
  }};
  lock_client api{server.port()};
  REQUIRE(eventually([&] { return api.status_of("io:shared").waiters == 1u; }, 10s));
  REQUIRE(holder.send({{"id", "r"}, {"op", "release"}, {"lock", "io:shared"}, {"owner", "ws"},
                       {"token", token}}));
  auto released = holder.answer_to("r", 30s);
  REQUIRE(released);
  CHECK(released->at("result").at("released") == true);
  waiter.join();
  REQUIRE(waited);
  auto next = lease_view::from(waited.response);
  REQUIRE(next);
  CHECK(next->owner == "http");
  CHECK(next->token > token);
}

} // namespace

TEST_CASE("http_and_websocket_are_served_over_several_io_threads", "[integration]") {
  // With io-threads above 1 each connection runs on a strand of its own, and only the first
  // thread polls before it sleeps (net/http_server.cpp).
  serve_clients_and_a_handoff({"--io-threads", "3"});
}

TEST_CASE("http_and_websocket_are_served_by_an_io_thread_that_never_polls", "[integration]") {
  // io-poll-us = 0: the I/O thread sleeps in epoll_wait at once (the default polls first).
  serve_clients_and_a_handoff({"--io-poll-us", "0"});
}
