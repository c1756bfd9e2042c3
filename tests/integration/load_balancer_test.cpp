// The deployment of docs/deployment.md, run for real: Debian's haproxy in front of two
// instances that share a Redis, clients going through it, and one instance drained (SIGTERM)
// mid-run. HTTP workers keep taking one lock in turns while a C++ client holds another lease
// over a WebSocket and renews it in the background. Nothing may be lost: one holder at a time,
// tokens in order, every acknowledged grant released exactly once, and the long lease survives
// the drain (its WebSocket is told 1001 and the client carries on through the other instance).

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include <atomic>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>
#include <vector>

#include "fencelock/client.hpp"
#include "integration/checks.hpp"
#include "integration/client_support.hpp"
#include "support/lock_api.hpp"
#include "support/haproxy_process.hpp"
#include "support/poll.hpp"
#include "support/redis_server.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

namespace {

/// Returns `text` with `from` replaced by `to`; fails the test when `from` is not in it (the
/// shipped configuration and this test must stay in step).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  INFO("config/haproxy.cfg no longer holds " << from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

/// haproxy in the foreground with the shipped configuration (config/haproxy.cfg), its port
/// replaced by a free one and its servers by the two instances'.
struct load_balancer {
  temp_dir dir{"fencelock-haproxy-"};
  haproxy_process haproxy;
  uint16_t port = haproxy.ports()[0];

  load_balancer(uint16_t a, uint16_t b)
      : haproxy{dir.str() + "/haproxy.cfg", 1,
                [&](const std::vector<uint16_t>& ports) {
                  std::ifstream in{std::string{FENCELOCK_SOURCE_DIR} + "/config/haproxy.cfg"};
                  REQUIRE(in);
                  std::string text{std::istreambuf_iterator<char>{in},
                                   std::istreambuf_iterator<char>{}};
                  text = replaced(text, "bind 127.0.0.1:8080",
                                  "bind 127.0.0.1:" + std::to_string(ports[0]));
                  text = replaced(text, "server a 127.0.0.1:7071",
                                  "server a 127.0.0.1:" + std::to_string(a));
                  return replaced(text, "server b 127.0.0.1:7072",
                                  "server b 127.0.0.1:" + std::to_string(b));
                },
                [](const std::vector<uint16_t>& ports) {
                  http_client c{ports[0], http_options{2s, false}};
                  auto r = c.try_request("GET", "/readyz");
                  return r && r.response.status == 200;
                }} {}
};

/// Retries a request through the load balancer while the answer says "try elsewhere": no
/// connection, 502/503 from haproxy, or 503 from a draining instance.
template <class F>
http_response until_answered(F&& call, std::atomic<bool>& give_up) {
  for (;;) {
    http_result r = call();
    if (r && r.response.status != 502 && r.response.status != 503)
      return r.response;
    if (give_up.load())
      return r ? r.response : make_response(0, {}, r.what);
    std::this_thread::sleep_for(50ms);
  }
}

} // namespace

TEST_CASE("haproxy_in_front_of_two_instances_drains_one_without_losing_anything",
          "[integration][redis][deployment]") {
  redis_server redis{require_redis_server()};
  temp_dir dir_a;
  temp_dir dir_b;
  std::vector<std::string> args{"--store", redis.url(), "--drain-timeout-ms", "10000"};
  server_process a{dir_a.str(), args};
  server_process b{dir_b.str(), args};
  load_balancer lb{a.port(), b.port()};

  // Two leases held through the balancer by C++ clients, renewed every TTL/3 over their
  // WebSockets. Round robin puts the two connections on different instances, so one of them is
  // on the instance that will be drained.
  std::vector<std::unique_ptr<fencelock::client>> holders;
  std::vector<fencelock::held_lease> kept;
  std::vector<uint64_t> kept_tokens;
  for (int i = 0; i < 2; ++i) {
    fencelock::client_options opts;
    opts.url = url_of(lb.port);
    opts.owner = "long-holder-" + std::to_string(i);
    holders.push_back(std::make_unique<fencelock::client>(opts));
    kept.push_back(holders.back()->acquire("lb:kept-" + std::to_string(i), 3s));
    kept_tokens.push_back(kept.back().token());
  }
  auto acquired_through_a = [&] {
    for (auto& line : a.lines())
      if (line.find(R"("op":"acquire")") != std::string::npos
          && line.find(R"("owner":"long-holder-)") != std::string::npos)
        return true;
    return false;
  };
  REQUIRE(eventually(acquired_through_a, 5s));

  std::atomic<bool> stop{false};
  std::atomic<bool> give_up{false};
  std::atomic<int> granted{0};
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::mutex mu;
  std::vector<uint64_t> entered;
  std::vector<std::string> problems;
  auto note = [&](std::string what) {
    std::lock_guard g{mu};
    problems.push_back(std::move(what));
  };
  std::vector<std::jthread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&, w] {
      std::string owner = "worker-" + std::to_string(w);
      lock_client c{lb.port, http_options{30s, true}};
      while (!stop.load()) {
        auto res = until_answered([&] { return c.try_acquire("lb:job", owner, 10'000, 5'000); },
                                  give_up);
        if (res.status == 409)
          continue; // waited 5 s in vain: try again
        auto lease = lease_view::from(res);
        if (!lease)
          return note(owner + ": acquire: " + res.describe());
        if (inside.fetch_add(1) != 0)
          ++overlaps;
        {
          std::lock_guard g{mu};
          entered.push_back(lease->token);
        }
        ++granted;
        std::this_thread::sleep_for(2ms);
        inside.fetch_sub(1);
        auto rel = until_answered([&] { return c.try_release("lb:job", owner, lease->token); },
                                  give_up);
        if (rel.status != 200)
          return note(owner + ": release of an acknowledged grant: " + rel.describe());
      }
    });
  }

  REQUIRE(eventually([&] { return granted.load() >= 40; }, 60s));
  auto before_drain = granted.load();
  auto drained = a.terminate(30s);
  REQUIRE(drained.has_value());
  CHECK(drained->clean());
  // Service goes on through the other instance.
  CHECK(eventually([&] { return granted.load() >= before_drain + 40; }, 60s));
  // Longer than the long leases' TTL, all after the drain: a holder whose renewals did not
  // resume through the other instance would have lost its lease by now.
  std::this_thread::sleep_for(4s);
  stop = true;
  give_up = true;
  for (auto& t : workers)
    t.join();

  for (auto& p : problems)
    UNSCOPED_INFO(p);
  CHECK(problems.empty());
  CHECK(overlaps.load() == 0);
  for (size_t i = 1; i < entered.size(); ++i) {
    INFO("grant " << i);
    CHECK(entered[i] > entered[i - 1]);
  }
  lock_client direct_b{b.port()};
  CHECK_FALSE(direct_b.status_of("lb:job").held); // every acknowledged grant was released

  // The long leases lived through the drain: same token, still renewed, still held.
  for (size_t i = 0; i < kept.size(); ++i) {
    auto name = "lb:kept-" + std::to_string(i);
    INFO(name << " loss: " << (kept[i].loss() ? kept[i].loss()->message : std::string{"none"}));
    CHECK_FALSE(kept[i].lost());
    CHECK(kept[i].token() == kept_tokens[i]);
    CHECK(kept[i].local_deadline() > std::chrono::steady_clock::now());
    auto st = direct_b.status_of(name);
    CHECK(st.held);
    CHECK(st.owner == "long-holder-" + std::to_string(i));
    CHECK(st.token == kept_tokens[i]);
    kept[i].release();
    CHECK_FALSE(direct_b.status_of(name).held);
  }
}
