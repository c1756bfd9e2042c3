// A waiter whose HTTP connection closes is removed from the queue and never granted: when the
// holder releases, the lock ends up free, not held by a client that is gone.

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include <boost/json/serialize.hpp>

#include "integration/checks.hpp"
#include "support/lock_api.hpp"
#include "support/poll.hpp"
#include "support/server_process.hpp"
#include "support/store_under_test.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

namespace {


// Sends a waiting acquire for `lock` as owner "gone" on a raw connection, without reading.
std::unique_ptr<raw_connection> start_waiter(uint16_t port, const std::string& lock) {
  auto conn = std::make_unique<raw_connection>(port, 30s);
  auto body = R"({"owner":"gone","ttlMs":60000,"waitMs":120000})";
  REQUIRE_FALSE(conn->send(raw_request("POST", "/v1/locks/" + lock + "/acquire", body)));
  return conn;
}

} // namespace

TEST_CASE("closed_waiter_is_removed_before_release", "[integration]") {
  temp_dir dir;
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args()};
  lock_client api{server.port()};
  const std::string lock = "queue:1";

  auto holder = require_lease(api.acquire(lock, "holder", 60'000, 0));
  auto waiter = start_waiter(server.port(), lock);
  REQUIRE(eventually([&] { return api.status_of(lock).waiters == 1u; }, 10s));
  CHECK_FALSE(waiter->readable(200ms)); // still waiting: no answer yet

  waiter->close();
  // The server notices the closed connection and withdraws the waiter.
  CHECK(eventually([&] { return api.status_of(lock).waiters == 0u; }, 10s));

  REQUIRE(api.release(lock, "holder", holder.token).status == 200);
  auto st = api.status_of(lock);
  CHECK_FALSE(st.held);
  CHECK(st.waiters == 0u);
  CHECK(st.last_token == holder.token); // nobody was granted after the holder

  // The lock is free for the next client.
  auto next = require_lease(api.acquire(lock, "next", 10'000, 0));
  CHECK(next.token > holder.token);
}

TEST_CASE("closed_waiter_racing_the_release_is_never_granted", "[integration]") {
  // The release follows the close at once, so the server may hand the lock to the dead waiter
  // before it notices: then it must undo the grant. Either way the lock ends up free.
  temp_dir dir;
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args()};
  lock_client api{server.port()};
  const std::string lock = "queue:2";

  auto holder = require_lease(api.acquire(lock, "holder", 60'000, 0));
  auto waiter = start_waiter(server.port(), lock);
  REQUIRE(eventually([&] { return api.status_of(lock).waiters == 1u; }, 10s));

  waiter->close();
  REQUIRE(api.release(lock, "holder", holder.token).status == 200);

  // Not held by "gone" for its 60 s TTL: free well within the deadline.
  bool freed = eventually([&] { return !api.status_of(lock).held; }, 15s);
  auto st = api.status_of(lock);
  INFO("owner now: " << st.owner.value_or("<none>"));
  CHECK(freed);
  CHECK(st.waiters == 0u);
  auto next = require_lease(api.acquire(lock, "next", 10'000, 0));
  CHECK(next.owner == "next");
}

TEST_CASE("closed_waiter_does_not_block_later_waiters", "[integration]") {
  // A dead waiter ahead in the queue is skipped: the live waiter behind it gets the lock.
  temp_dir dir;
  http_result live_result;
  std::jthread live; // before the server: a failed test kills the server first
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args()};
  lock_client api{server.port()};
  const std::string lock = "queue:3";

  auto holder = require_lease(api.acquire(lock, "holder", 60'000, 0));
  auto dead = start_waiter(server.port(), lock);
  REQUIRE(eventually([&] { return api.status_of(lock).waiters == 1u; }, 10s));
  live = std::jthread{[&] {
    lock_client c{server.port()};
    live_result = c.try_acquire(lock, "live", 10'000, 60'000);
  }};
  REQUIRE(eventually([&] { return api.status_of(lock).waiters == 2u; }, 10s));

  dead->close();
  REQUIRE(api.release(lock, "holder", holder.token).status == 200);
  live.join();
  INFO("live waiter: " << (live_result ? live_result.response.describe() : live_result.what));
  REQUIRE(live_result);
  auto l = require_lease(live_result.response);
  CHECK(l.owner == "live");
  auto st = api.status_of(lock);
  CHECK(st.owner == "live");
  CHECK(st.token == l.token);
}

namespace {

/// Sends `request` on a fresh connection and closes it at once: a client that goes away right
/// after asking, before the server can have answered (FIN, then RST when `abortive`). The FIN
/// travels with the request, so the server sees the client gone by the time it could answer,
/// however long this thread is held up between its calls (a loaded machine).
void send_and_vanish(uint16_t port, const std::string& request, bool abortive) {
  raw_connection conn{port, 30s};
  REQUIRE_FALSE(conn.send_and_shutdown(request));
  if (abortive)
    conn.reset();
  else
    conn.close();
}

} // namespace

TEST_CASE("an acquire whose client vanished at once is not left granted", "[integration]") {
  // The server may see the close before the acquire has reached the lock: whichever comes
  // first, the lock must end up free, not held for the ghost's whole TTL.
  temp_dir dir;
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args()};
  lock_client api{server.port()};
  for (int i = 0; i < 40; ++i) {
    auto body = R"({"owner":"ghost","ttlMs":600000})";
    send_and_vanish(server.port(), raw_request("POST", "/v1/locks/ghost:" + std::to_string(i) + "/acquire", body),
                    i % 2 == 1);
  }
  for (int i = 0; i < 40; ++i) {
    auto name = "ghost:" + std::to_string(i);
    INFO(name);
    CHECK(eventually([&] { return !api.status_of(name).held; }, 15s));
  }
}

TEST_CASE("a waiter whose client vanished at once is never handed the lock", "[integration]") {
  temp_dir dir;
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args()};
  lock_client api{server.port()};
  const std::string lock = "queue:ghosts";
  auto holder = require_lease(api.acquire(lock, "holder", 60'000, 0));
  for (int i = 0; i < 10; ++i)
    send_and_vanish(server.port(),
                    raw_request("POST", "/v1/locks/" + lock + "/acquire",
                                R"({"owner":"ghost","ttlMs":600000,"waitMs":120000})"),
                    i % 2 == 1);
  REQUIRE(eventually([&] { return api.status_of(lock).waiters == 0u; }, 15s));
  REQUIRE(api.release(lock, "holder", holder.token).status == 200);
  CHECK(eventually([&] { return !api.status_of(lock).held; }, 15s));
  auto next = require_lease(api.acquire(lock, "next", 10'000, 0));
  CHECK(next.owner == "next");
}
