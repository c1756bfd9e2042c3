// Several instances on one Redis (the Redis store, docs/redis.md), against a real redis-server
// started by each test on a free loopback port: the guarantees of one instance hold across
// instances (one holder, tokens in order, hand-off and lease_lost across instances), and Redis
// faults fail closed and heal by themselves, with tokens that never go back.

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include <atomic>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "integration/checks.hpp"
#include "integration/tokens.hpp"
#include "support/lock_api.hpp"
#include "support/poll.hpp"
#include "support/prom_text.hpp"
#include "support/redis_server.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"
#include "support/ws_client.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

/// One fencelock instance on the shared Redis.
struct instance {
  temp_dir dir;
  server_process server;

  instance(const redis_server& redis, std::vector<std::string> extra = {})
    : server(dir.str(), with_store(redis, std::move(extra))) {
  }

  static std::vector<std::string> with_store(const redis_server& redis,
                                             std::vector<std::string> extra) {
    std::vector<std::string> args{"--store", redis.url()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  uint16_t port() const {
    return server.port();
  }
};

int readyz(uint16_t port) {
  http_client c{port};
  return c.get("/readyz").status;
}

std::string type_of(const json::object& f) {
  return std::string{f.at("type").as_string()};
}

} // namespace

TEST_CASE("redis_another_principal_gets_403_for_a_lease_taken_through_another_instance",
          "[integration][redis][auth]") {
  redis_server redis{require_redis_server()};
  temp_dir conf;
  auto file = conf.path() / "tokens";
  const std::string billing = "billing-7e1d", billing2 = "billing2-c40a";
  std::ofstream{file} << "billing  " << sha256_hex(billing) << "  lock:billing:\n"
                      << "billing2 " << sha256_hex(billing2) << "  lock:billing:\n";
  instance a{redis, {"--auth-file", file.string()}};
  instance b{redis, {"--auth-file", file.string()}};
  http_client via_a{a.port()};
  http_client via_b{b.port()};
  auto held =
    require_lease(via_a.post("/v1/locks/billing:r/acquire",
                             json::object{{"owner", "w"}, {"ttlMs", 30'000}}, bearer(billing)));
  // B never saw this lease granted; the store tells it whose it is.
  json::object same_label{{"owner", "w"}, {"token", static_cast<int64_t>(held.token)}};
  auto renew = via_b.post("/v1/locks/billing:r/renew", same_label, bearer(billing2));
  CHECK(renew.status == 403);
  CHECK(renew.error() == "forbidden");
  auto release = via_b.post("/v1/locks/billing:r/release", same_label, bearer(billing2));
  CHECK(release.status == 403);
  // A token that is no lease is still lease_lost, and the holder's own renewal through B works.
  json::object stale{{"owner", "w"}, {"token", static_cast<int64_t>(held.token + 1)}};
  CHECK(via_b.post("/v1/locks/billing:r/renew", stale, bearer(billing2)).status == 409);
  CHECK(via_b.post("/v1/locks/billing:r/renew", same_label, bearer(billing)).status == 200);
}

TEST_CASE("redis_instances_share_holders_and_hand_off_to_each_others_waiters",
          "[integration][redis]") {
  redis_server redis{require_redis_server()};
  instance a{redis};
  instance b{redis};
  lock_client api_a{a.port()};
  lock_client api_b{b.port()};
  const std::string lock = "shared:report";

  auto held = require_lease(api_a.acquire(lock, "w1", 30'000, 0));

  // The other instance sees the holder and refuses another owner.
  {
    auto res = api_b.acquire(lock, "w2", 30'000, 0);
    INFO(res.describe());
    CHECK(res.status == 409);
    CHECK(res.error() == "lock_held");
    auto st = api_b.status_of(lock);
    CHECK(st.held);
    CHECK(st.owner == "w1");
    CHECK(st.token == held.token);
  }

  // The same owner re-acquires through either instance: the same token (idempotent).
  auto again = require_lease(api_b.acquire(lock, "w1", 30'000, 0));
  CHECK(again.token == held.token);

  // A waiter on B is handed the lock as soon as A releases it: not at the lease's deadline,
  // 30 s away.
  http_result waited;
  std::chrono::steady_clock::duration waited_for{};
  std::jthread waiter{[&] {
    lock_client c{b.port()};
    auto started = std::chrono::steady_clock::now();
    waited = c.try_acquire(lock, "w2", 30'000, 25'000);
    waited_for = std::chrono::steady_clock::now() - started;
  }};
  REQUIRE(eventually([&] { return api_b.status_of(lock).waiters == 1u; }, 10s));
  auto released_at = std::chrono::steady_clock::now();
  REQUIRE(api_a.release(lock, "w1", held.token).status == 200);
  waiter.join();
  INFO("waiter: " << (waited ? waited.response.describe() : waited.what));
  REQUIRE(waited);
  auto handed = require_lease(waited.response);
  CHECK(handed.owner == "w2");
  CHECK(handed.token > held.token);
  // Generous for a loaded machine, yet far below the 30 s the lease had left.
  CHECK(std::chrono::steady_clock::now() - released_at < 10s);
  CHECK(waited_for < 25s);
  CHECK(api_a.status_of(lock).owner == "w2");

  // Renew and release work through the instance that did not grant.
  auto renewed = require_lease(api_a.renew(lock, "w2", handed.token, 40'000));
  CHECK(renewed.token == handed.token);
  CHECK(renewed.ttl_ms == 40'000);
  CHECK(api_a.release(lock, "w2", handed.token).status == 200);
  CHECK_FALSE(api_b.status_of(lock).held);
  CHECK(api_b.release(lock, "w2", handed.token).error() == "lease_lost");
}

TEST_CASE("redis_instances_keep_one_holder_at_a_time_and_tokens_in_order",
          "[integration][redis]") {
  redis_server redis{require_redis_server()};
  instance a{redis};
  instance b{redis};
  const std::string lock = "contended";
  constexpr int clients_per_instance = 4;
  constexpr int rounds = 15;

  // The shared resource: who is inside, and the tokens in the order they entered.
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::mutex mu;
  std::vector<uint64_t> entered;
  std::vector<std::string> failures;

  auto client = [&](uint16_t port, std::string owner) {
    lock_client c{port};
    for (int i = 0; i < rounds; ++i) {
      auto r = c.try_acquire(lock, owner, 10'000, 60'000);
      if (!r || r.response.status != 200) {
        std::lock_guard g{mu};
        failures.push_back(owner + " acquire: " + (r ? r.response.describe() : r.what));
        return;
      }
      auto lease = lease_view::from(r.response);
      if (!lease) {
        std::lock_guard g{mu};
        failures.push_back(owner + ": unreadable lease " + r.response.describe());
        return;
      }
      if (inside.fetch_add(1) != 0)
        ++overlaps;
      {
        std::lock_guard g{mu};
        entered.push_back(lease->token);
      }
      std::this_thread::sleep_for(1ms);
      inside.fetch_sub(1);
      auto rel = c.try_release(lock, owner, lease->token);
      if (!rel || rel.response.status != 200) {
        std::lock_guard g{mu};
        failures.push_back(owner + " release: " + (rel ? rel.response.describe() : rel.what));
        return;
      }
    }
  };
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < clients_per_instance; ++i) {
      threads.emplace_back(client, a.port(), "a-" + std::to_string(i));
      threads.emplace_back(client, b.port(), "b-" + std::to_string(i));
    }
  }
  for (auto& f : failures)
    UNSCOPED_INFO(f);
  CHECK(failures.empty());
  CHECK(overlaps.load() == 0);
  REQUIRE(entered.size() == static_cast<size_t>(2 * clients_per_instance * rounds));
  for (size_t i = 1; i < entered.size(); ++i) {
    INFO("grant " << i);
    CHECK(entered[i] > entered[i - 1]);
  }
}

TEST_CASE("redis_lease_lost_reaches_the_holder_on_its_instance_and_events_reach_every_instance",
          "[integration][redis][websocket]") {
  redis_server redis{require_redis_server()};
  instance a{redis};
  instance b{redis};
  const std::string lock = "pushed";

  // A subscriber on B, a holder on A's WebSocket.
  ws_client watcher{b.port()};
  REQUIRE(watcher.send({{"id", "s"}, {"op", "subscribe"}, {"lock", lock}}));
  REQUIRE(watcher.answer_to(json::value("s"), 30s));
  ws_client holder{a.port()};
  REQUIRE(holder.send(
    {{"id", "a"}, {"op", "acquire"}, {"lock", lock}, {"owner", "ws-holder"}, {"ttlMs", 1500}}));
  auto granted = holder.answer_to(json::value("a"), 30s);
  REQUIRE(granted);
  REQUIRE(type_of(*granted) == "granted");
  auto token = json::value_to<uint64_t>(granted->at("result").at("token"));

  // Renewed once through B's HTTP API: A must not report the lease lost at the old deadline.
  lock_client api_b{b.port()};
  auto renewed_at = std::chrono::steady_clock::now();
  require_lease(api_b.renew(lock, "ws-holder", token, 1500));

  auto lost = holder.receive_until(
    [](const json::object& f) { return type_of(f) == "lease_lost"; }, 30s);
  REQUIRE(lost);
  CHECK(std::chrono::steady_clock::now() - renewed_at >= 1500ms);
  CHECK(lost->at("lock").as_string() == lock);
  CHECK(json::value_to<uint64_t>(lost->at("token")) == token);
  CHECK(lost->at("cause") == "expired");

  // B's subscriber saw the whole life of the lease, from A and from B, in order.
  std::vector<std::string> kinds;
  for (;;) {
    auto ev = watcher.receive_until(
      [](const json::object& f) { return type_of(f) == "lock_event"; }, 10s);
    REQUIRE(ev);
    if (json::value_to<uint64_t>(ev->at("token")) != token)
      continue;
    kinds.emplace_back(ev->at("event").as_string());
    if (kinds.back() == "expired")
      break;
  }
  CHECK(kinds == std::vector<std::string>{"acquired", "renewed", "expired"});
}

TEST_CASE("redis_outage_fails_closed_and_tokens_keep_rising_after_an_empty_restart",
          "[integration][redis]") {
  // No persistence: the restarted Redis knows nothing, not even the token counter.
  redis_server redis{require_redis_server()};
  instance a{redis, {"--redis-timeout-ms", "500"}};
  instance b{redis, {"--redis-timeout-ms", "500"}};
  lock_client api_a{a.port()};
  lock_client api_b{b.port()};

  auto before = require_lease(api_a.acquire("outage", "w1", 60'000, 0));

  redis.sigkill();
  // Nothing is granted or confirmed while Redis is down, and neither instance says ready.
  REQUIRE(eventually([&] { return readyz(a.port()) == 503 && readyz(b.port()) == 503; }, 10s));
  for (auto* api : {&api_a, &api_b}) {
    auto res = api->acquire("outage-2", "w2", 60'000, 0);
    INFO(res.describe());
    CHECK(res.status == 503);
    CHECK(res.error() == "store_unavailable");
    CHECK(res.has_header("retry-after"));
    res = api->renew("outage", "w1", before.token);
    INFO(res.describe());
    CHECK(res.status == 503);
    CHECK(res.error() == "store_unavailable");
    CHECK(api->status("outage").status == 503);
  }

  // Back, empty: both instances heal by themselves.
  redis.restart();
  REQUIRE(eventually([&] { return readyz(a.port()) == 200 && readyz(b.port()) == 200; }, 20s));
  // Redis forgot the lease, so another owner gets the lock: the fencing token is what still
  // protects the resource, and it is higher than every token handed out before.
  auto after_b = require_lease(api_b.acquire("outage", "w2", 60'000, 0));
  CHECK(after_b.token > before.token);
  auto after_a = require_lease(api_a.acquire("outage-3", "w3", 60'000, 0));
  CHECK(after_a.token > after_b.token);
  // The old holder's renewal is refused, not revived.
  CHECK(api_a.renew("outage", "w1", before.token).error() == "lease_lost");
}

TEST_CASE("redis_with_appendfsync_always_keeps_leases_through_a_crash", "[integration][redis]") {
  redis_server redis{require_redis_server(), {.aof = true, .password = ""}};
  instance a{redis};
  lock_client api{a.port()};

  auto held = require_lease(api.acquire("durable", "w1", 60'000, 0));
  redis.sigkill();
  redis.restart();
  REQUIRE(eventually([&] { return readyz(a.port()) == 200; }, 20s));

  // The lease survived: still held, renewable, and refused to others.
  auto st = api.status_of("durable");
  CHECK(st.held);
  CHECK(st.owner == "w1");
  CHECK(st.token == held.token);
  require_lease(api.renew("durable", "w1", held.token));
  CHECK(api.acquire("durable", "w2", 60'000, 0).error() == "lock_held");
  CHECK(api.release("durable", "w1", held.token).status == 200);
  auto next = require_lease(api.acquire("durable", "w2", 60'000, 0));
  CHECK(next.token > held.token);
}

TEST_CASE("redis_that_stops_answering_times_out_closed_and_recovers", "[integration][redis]") {
  redis_server redis{require_redis_server()};
  instance a{redis, {"--redis-timeout-ms", "300"}};
  lock_client api{a.port()};
  auto held = require_lease(api.acquire("frozen", "w1", 60'000, 0));

  REQUIRE(redis.process().stop());
  {
    auto started = std::chrono::steady_clock::now();
    auto res = api.renew("frozen", "w1", held.token);
    INFO(res.describe());
    CHECK(res.status == 503);
    CHECK(res.error() == "store_unavailable");
    // Bounded by the configured timeout, not by a client's patience (loosely: a busy machine).
    CHECK(std::chrono::steady_clock::now() - started < 10s);
  }
  CHECK(eventually([&] { return readyz(a.port()) == 503; }, 10s));
  redis.process().resume();
  REQUIRE(eventually([&] { return readyz(a.port()) == 200; }, 20s));
  // Nothing changed while Redis was frozen: the lease is still w1's.
  require_lease(api.renew("frozen", "w1", held.token));
}

TEST_CASE("redis_scripts_are_loaded_again_after_a_script_flush", "[integration][redis]") {
  redis_server redis{require_redis_server()};
  instance a{redis};
  lock_client api{a.port()};
  auto first = require_lease(api.acquire("flushed", "w1", 60'000, 0));
  {
    redis_connection conn{redis.port()};
    auto r = conn.call({"SCRIPT", "FLUSH"});
    REQUIRE(r->type == REDIS_REPLY_STATUS);
  }
  // EVALSHA gets NOSCRIPT; the store sends the script itself, and Redis caches it again.
  require_lease(api.renew("flushed", "w1", first.token));
  CHECK(api.release("flushed", "w1", first.token).status == 200);
}

TEST_CASE("redis_passwords_work_and_never_reach_the_log", "[integration][redis]") {
  const std::string secret = "s3cr3t-pw-4711";
  redis_server redis{require_redis_server(), {.aof = false, .password = secret}};
  instance a{redis};
  lock_client api{a.port()};
  auto held = require_lease(api.acquire("guarded", "w1", 60'000, 0));
  CHECK(api.release("guarded", "w1", held.token).status == 200);
  for (auto& line : a.server.lines()) {
    INFO(line);
    CHECK(line.find(secret) == std::string::npos);
  }

  // A wrong password: the service starts, fails closed, and says why without the password.
  temp_dir dir;
  auto wrong = "redis://:not-the-" + secret + "@127.0.0.1:" + std::to_string(redis.port()) + "/0";
  child_process bad{server_binary(),
                    {"serve", "--port", "0", "--data-dir", dir.str(), "--store", wrong}};
  auto listening = bad.wait_for_line(
    [](std::string_view l) { return parse_listening_port(l).has_value(); }, 30s);
  INFO(bad.diagnostics());
  REQUIRE(listening);
  auto port = *parse_listening_port(*listening);
  auto refused = bad.wait_for_line(
    [](std::string_view l) { return l.find("redis_unreachable") != std::string_view::npos; }, 30s);
  REQUIRE(refused);
  CHECK(refused->find("AUTH") != std::string::npos);
  CHECK(readyz(port) == 503);
  lock_client bad_api{port};
  CHECK(bad_api.acquire("guarded", "w1", 60'000, 0).error() == "store_unavailable");
  for (auto& line : bad.lines()) {
    INFO(line);
    CHECK(line.find(secret) == std::string::npos);
  }
}

TEST_CASE("redis_subscribers_hear_an_expiry_after_the_granting_instance_died",
          "[integration][redis][websocket]") {
  redis_server redis{require_redis_server()};
  instance a{redis};
  instance b{redis};
  ws_client watcher{b.port()};
  REQUIRE(watcher.send({{"id", "s"}, {"op", "subscribe"}, {"lock", "orphan"}}));
  REQUIRE(watcher.answer_to(json::value("s"), 30s));

  lock_client api_a{a.port()};
  auto held = require_lease(api_a.acquire("orphan", "w1", 1'000, 0));
  a.server.sigkill(); // the instance that granted, and would have reported the expiry, is gone

  auto expired = watcher.receive_until(
    [&](const json::object& f) {
      return type_of(f) == "lock_event" && f.at("event") == "expired"
             && json::value_to<uint64_t>(f.at("token")) == held.token;
    },
    30s);
  REQUIRE(expired);
  CHECK(expired->at("cause") == "expired");
  lock_client api_b{b.port()};
  CHECK_FALSE(api_b.status_of("orphan").held);
}

TEST_CASE("redis_metrics_show_the_store_wide_held_count_and_script_round_trips",
          "[integration][redis]") {
  redis_server redis{require_redis_server()};
  instance a{redis};
  instance b{redis};
  lock_client api_a{a.port()};
  auto scrape = [](uint16_t port) { return http_client{port}.get("/metrics").body; };

  auto one = require_lease(api_a.acquire("m:1", "w1", 60'000, 0));
  auto two = require_lease(api_a.acquire("m:2", "w1", 60'000, 0));
  // Both instances hear both grants on the store's channel, whichever made them.
  for (auto port : {a.port(), b.port()}) {
    INFO("instance on port " << port);
    CHECK(eventually([&] { return sample(scrape(port), "fencelock_locks_held") == 2.0; }, 10s));
  }
  // Ended through B: B counts the end, both gauges go down.
  lock_client api_b{b.port()};
  CHECK(api_b.release("m:1", "w1", one.token).status == 200);
  for (auto port : {a.port(), b.port()}) {
    INFO("instance on port " << port);
    CHECK(eventually([&] { return sample(scrape(port), "fencelock_locks_held") == 1.0; }, 10s));
  }
  auto text_a = scrape(a.port());
  auto text_b = scrape(b.port());
  CHECK(sample(text_b, R"(fencelock_lease_ends_total{cause="released"})") == 1.0);
  CHECK(sample(text_a, R"(fencelock_lease_ends_total{cause="released"})") == 0.0);
  // Two acquire scripts on A, one release script on B.
  CHECK(sample(text_a, "fencelock_store_write_seconds_count") == 2.0);
  CHECK(sample(text_b, "fencelock_store_write_seconds_count") == 1.0);
  CHECK(api_a.release("m:2", "w1", two.token).status == 200);
}

TEST_CASE("redis_that_turns_slow_sheds_new_acquires_while_renewals_go_through",
          "[integration][redis][overload]") {
  redis_server redis{require_redis_server()};
  instance a{redis, {"--shed-store-latency-ms", "300", "--redis-timeout-ms", "10000"}};
  lock_client api{a.port()};
  auto held = require_lease(api.acquire("slow", "w1", 60'000, 0));
  std::vector<uint64_t> others;
  for (int i = 0; i < 6; ++i)
    others.push_back(require_lease(api.acquire("slow:" + std::to_string(i), "w1", 60'000, 0)).token);

  // Redis stands still for a second while six renewals wait for it: six writes of ~1 s, a
  // store that is slow, not one slow write among fast ones (the average weighs each by 1/5).
  REQUIRE(redis.process().stop());
  std::vector<http_result> renewals(others.size());
  {
    std::vector<std::jthread> renewers;
    for (size_t i = 0; i < others.size(); ++i)
      renewers.emplace_back([&, i] {
        lock_client c{a.port()};
        renewals[i] = c.http().try_request(
          "POST", "/v1/locks/slow:" + std::to_string(i) + "/renew",
          std::string{R"({"owner":"w1","token":)"} + std::to_string(others[i]) + "}");
      });
    std::this_thread::sleep_for(1s);
    redis.process().resume();
  }
  for (auto& renewal : renewals) {
    INFO((renewal ? renewal.response.describe() : renewal.what));
    REQUIRE(renewal);
    CHECK(renewal.response.status == 200);
  }

  // The slow store sheds new acquires and says so on /readyz; renewals are still served.
  auto shed = api.acquire("slow-2", "w2", 60'000, 0);
  INFO(shed.describe());
  CHECK(shed.status == 503);
  CHECK(shed.error() == "overloaded");
  CHECK(readyz(a.port()) == 503);
  // Fast renewals bring the average down; new acquires are taken again.
  CHECK(eventually(
    [&] {
      require_lease(api.renew("slow", "w1", held.token));
      return readyz(a.port()) == 200;
    },
    10s));
  require_lease(api.acquire("slow-2", "w2", 60'000, 0));
}

TEST_CASE("redis_tokens_stay_above_a_counter_that_went_back", "[integration][redis]") {
  // What a replica promoted with older data looks like to fencelock: the lease it had not
  // received is gone, and the token counter reads lower than tokens already handed out.
  redis_server redis{require_redis_server()};
  instance a{redis};
  lock_client api{a.port()};
  auto before = require_lease(api.acquire("promoted", "w1", 60'000, 0));
  {
    redis_connection conn{redis.port()};
    REQUIRE(conn.call({"DEL", "fencelock:lock:promoted", "fencelock:held"})->type
            == REDIS_REPLY_INTEGER);
    REQUIRE(conn.call({"SET", "fencelock:token", "5"})->type == REDIS_REPLY_STATUS);
  }
  // A second instance that never saw the earlier token (no floor of its own) still issues a
  // higher one: the counter is floored by Redis's clock.
  instance b{redis};
  lock_client api_b{b.port()};
  auto after = require_lease(api_b.acquire("promoted", "w2", 60'000, 0));
  CHECK(after.token > before.token);
  // And the instance that did see it keeps above it too.
  auto again = require_lease(api.acquire("promoted-2", "w3", 60'000, 0));
  CHECK(again.token > after.token);
}

TEST_CASE("redis_that_comes_back_empty_tells_the_holder_its_lease_was_lost",
          "[integration][redis][websocket]") {
  // No persistence: the restart loses the lease. The instance that watches it finds it missing
  // when its event channel is back, and pushes lease_lost (store_lost) long before the 30 s
  // deadline, instead of leaving the holder to learn of it at its next renewal.
  redis_server redis{require_redis_server()};
  instance a{redis};
  ws_client holder{a.port()};
  REQUIRE(holder.send(
    {{"id", "a"}, {"op", "acquire"}, {"lock", "forgotten"}, {"owner", "w1"}, {"ttlMs", 30'000}}));
  auto granted = holder.answer_to(json::value("a"), 30s);
  REQUIRE(granted);
  REQUIRE(type_of(*granted) == "granted");
  auto token = json::value_to<uint64_t>(granted->at("result").at("token"));

  auto lost_at = std::chrono::steady_clock::now();
  redis.sigkill();
  redis.restart();
  auto lost = holder.receive_until(
    [](const json::object& f) { return type_of(f) == "lease_lost"; }, 20s);
  REQUIRE(lost);
  CHECK(std::chrono::steady_clock::now() - lost_at < 20s); // loosely: well before 30 s
  CHECK(json::value_to<uint64_t>(lost->at("token")) == token);
  CHECK(lost->at("cause") == "store_lost");
  auto text = http_client{a.port()}.get("/metrics").body;
  CHECK(sample(text, R"(fencelock_lease_ends_total{cause="store_lost"})") == 1.0);
}
