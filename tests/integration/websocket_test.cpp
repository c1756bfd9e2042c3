// The WebSocket API (docs/websocket-api.md) over real sockets against the server binary:
// pipelining and out-of-order answers, error frames, the granted hand-off, lease_lost on expiry,
// subscriptions without gaps, session-bound leases, and the limits that protect the server from
// its clients. Times are generous bounds on lateness, never speed requirements.

#include <catch2/catch.hpp>

#include <atomic>
#include <set>
#include <string>
#include <thread>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_to.hpp>

#include "support/http_client.hpp"
#include "support/lock_api.hpp"
#include "support/poll.hpp"
#include "support/server_process.hpp"
#include "support/store_under_test.hpp"
#include "support/temp_dir.hpp"
#include "support/ws_client.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

uint64_t u64(const json::value& v) {
  return json::value_to<uint64_t>(v);
}

int64_t i64(const json::value& v) {
  return json::value_to<int64_t>(v);
}

/// Sends `frame` and returns the answer to its id; fails the test when none comes.
json::object call(ws_client& ws, const json::object& frame) {
  REQUIRE(ws.send(frame));
  auto answer = ws.answer_to(frame.at("id"), 30s);
  REQUIRE(answer);
  return *answer;
}

json::object acquire_frame(json::value id, const std::string& lock, const std::string& owner,
                           int64_t ttl_ms, int64_t wait_ms = 0, bool session = false) {
  json::object f{{"id", id}, {"op", "acquire"}, {"lock", lock}, {"owner", owner},
                 {"ttlMs", ttl_ms}};
  if (wait_ms > 0)
    f["waitMs"] = wait_ms;
  if (session)
    f["session"] = true;
  return f;
}

/// Acquires `lock` and returns its token; fails the test unless granted.
uint64_t acquire(ws_client& ws, const std::string& lock, const std::string& owner,
                 int64_t ttl_ms = 60'000, bool session = false) {
  static int next_id = 0;
  auto id = json::string("acquire-" + std::to_string(++next_id));
  auto answer = call(ws, acquire_frame(id, lock, owner, ttl_ms, 0, session));
  INFO(json::serialize(answer));
  REQUIRE(answer.at("type") == "granted");
  return u64(answer.at("result").at("token"));
}

std::string type_of(const json::object& f) {
  return std::string{f.at("type").as_string()};
}

std::string error_of(const json::object& f) {
  return f.contains("error") ? std::string{f.at("error").as_string()} : std::string{};
}

} // namespace

TEST_CASE("ws_hello_describes_the_session_and_its_limits", "[integration][websocket]") {
  temp_dir dir;
  server_process server{dir.str(), {"--ws-max-frame", "4096"}};
  ws_client ws{server.port()};
  CHECK(ws.hello().at("type") == "hello");
  CHECK(ws.hello().at("session").as_string().size() == 16);
  CHECK(ws.hello().at("limits").at("maxFrame") == 4096);
  CHECK(ws.hello().at("limits").at("idleTimeoutMs") == 30'000);
}

TEST_CASE("ws_pipelined_requests_are_answered_out_of_order_and_the_waiter_is_handed_the_lock",
          "[integration][websocket]") {
  temp_dir dir;
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args()};
  ws_client holder{server.port()};
  ws_client client{server.port()};
  auto first = acquire(holder, "hot", "holder");

  // Pipelined: a waiting acquire first, then twenty quick requests behind it.
  REQUIRE(client.send(acquire_frame("wait", "hot", "waiter", 60'000, 60'000)));
  for (int i = 1; i <= 20; ++i) {
    auto frame = i % 2 == 0 ? json::object{{"id", i}, {"op", "status"}, {"lock", "hot"}}
                            : acquire_frame(i, "cold:" + std::to_string(i), "w", 60'000);
    REQUIRE(client.send(frame));
  }
  std::set<int64_t> answered;
  while (answered.size() < 20) {
    auto f = client.receive(30s);
    REQUIRE(f);
    INFO(json::serialize(*f));
    REQUIRE(f->contains("id"));
    REQUIRE_FALSE(f->at("id") == "wait"); // the waiter is still waiting: answered later
    auto id = f->at("id").as_int64();
    CHECK(type_of(*f) == (id % 2 == 0 ? "reply" : "granted"));
    answered.insert(id);
  }
  CHECK(*answered.begin() == 1);
  CHECK(*answered.rbegin() == 20);

  // The holder releases: the waiter's acquire is answered with no request from it.
  auto released = call(holder, {{"id", "r"}, {"op", "release"}, {"lock", "hot"},
                                {"owner", "holder"}, {"token", first}});
  CHECK(released.at("result").at("released") == true);
  auto granted = client.answer_to("wait", 10s);
  REQUIRE(granted);
  CHECK(type_of(*granted) == "granted");
  CHECK(granted->at("result").at("owner") == "waiter");
  CHECK(u64(granted->at("result").at("token")) > first);
}

TEST_CASE("ws_bad_frames_get_error_frames_and_the_socket_stays_open", "[integration][websocket]") {
  temp_dir dir;
  server_process server{dir.str()};
  ws_client ws{server.port()};
  ws_client other{server.port()};
  auto token = acquire(other, "taken", "owner-1");

  SECTION("not a request: an error frame without id") {
    for (std::string text : {"{not json", "[1]", R"({"op":"status","lock":"l"})"}) {
      REQUIRE(ws.send_raw(text));
      auto f = ws.receive(10s);
      REQUIRE(f);
      CHECK(type_of(*f) == "error");
      CHECK(error_of(*f) == "invalid_request");
      CHECK_FALSE(f->contains("id"));
    }
    REQUIRE(ws.send_raw(R"({"id":1,"op":"status","lock":"l"})", true)); // binary
    auto f = ws.receive(10s);
    REQUIRE(f);
    CHECK(error_of(*f) == "invalid_request");
    CHECK_FALSE(f->contains("id"));
  }
  SECTION("a bad request: an error frame with its id, naming the field") {
    auto unknown = call(ws, {{"id", 5}, {"op", "steal"}, {"lock", "l"}});
    CHECK(error_of(unknown) == "invalid_request");
    auto no_ttl = call(ws, {{"id", 6}, {"op", "acquire"}, {"lock", "l"}, {"owner", "o"}});
    CHECK(error_of(no_ttl) == "invalid_request");
    CHECK(std::string{no_ttl.at("message").as_string()}.starts_with("ttlMs:"));
    auto bad_name = call(ws, acquire_frame(7, "no spaces", "o", 1000));
    CHECK(std::string{bad_name.at("message").as_string()}.starts_with("lock:"));
    auto not_mine = call(ws, {{"id", 8}, {"op", "unsubscribe"}, {"subscription", 99}});
    CHECK(error_of(not_mine) == "invalid_request");
  }
  SECTION("service errors carry the HTTP API's codes") {
    auto held = call(ws, acquire_frame("h", "taken", "owner-2", 1000));
    CHECK(error_of(held) == "lock_held");
    CHECK(held.at("holder").at("owner") == "owner-1");
    auto lost = call(ws, {{"id", "l"}, {"op", "renew"}, {"lock", "taken"}, {"owner", "owner-2"},
                          {"token", token}});
    CHECK(error_of(lost) == "lease_lost");
  }
  // After any of these the socket still serves requests.
  auto status = call(ws, {{"id", "s"}, {"op", "status"}, {"lock", "taken"}});
  CHECK(type_of(status) == "reply");
  CHECK(u64(status.at("result").at("token")) == token);
  auto check = call(ws, {{"id", "c"}, {"op", "check"}, {"lock", "taken"}, {"token", token}});
  CHECK(check.at("result").at("current") == true);
}

TEST_CASE("ws_a_frame_over_the_limit_closes_the_socket_with_1009", "[integration][websocket]") {
  temp_dir dir;
  server_process server{dir.str(), {"--ws-max-frame", "4096"}};
  ws_client ws{server.port()};
  std::string big = R"({"id":1,"op":"status","lock":"l","pad":")" + std::string(8000, 'x') + "\"}";
  ws.send_raw(big);
  CHECK_FALSE(ws.receive(10s)); // closed, not answered
  uint16_t code = 0;
  REQUIRE(ws.closed(code));
  CHECK(code == 1009);
  ws_client again{server.port()}; // the server itself is fine
  CHECK(again.hello().at("type") == "hello");
}

TEST_CASE("ws_lease_lost_is_pushed_when_a_lease_expires", "[integration][websocket]") {
  temp_dir dir;
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args()};
  ws_client ws{server.port()};
  auto sent = std::chrono::steady_clock::now();
  auto token = acquire(ws, "short", "sleeper", 300);
  auto lost = ws.receive_until([](const json::object& f) { return type_of(f) == "lease_lost"; },
                               20s);
  REQUIRE(lost);
  // Not before the lease could have ended, and (loosely) not long after.
  CHECK(std::chrono::steady_clock::now() - sent >= 300ms);
  CHECK(lost->at("lock") == "short");
  CHECK(lost->at("owner") == "sleeper");
  CHECK(u64(lost->at("token")) == token);
  CHECK(lost->at("cause") == "expired");
}

TEST_CASE("ws_a_released_lease_sends_no_lease_lost", "[integration][websocket]") {
  temp_dir dir;
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args()};
  ws_client ws{server.port()};
  auto token = acquire(ws, "done", "worker", 300);
  call(ws, {{"id", "r"}, {"op", "release"}, {"lock", "done"}, {"owner", "worker"},
            {"token", token}});
  // Well past the TTL: nothing was lost, so nothing is pushed.
  CHECK_FALSE(ws.receive(1500ms));
}

TEST_CASE("ws_a_subscription_gets_its_snapshot_then_every_change_without_a_gap",
          "[integration][websocket]") {
  temp_dir dir;
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args()};
  ws_client holder{server.port()};
  ws_client watcher{server.port()};
  auto token = acquire(holder, "busy", "holder");
  constexpr int renewals = 300;
  std::atomic<int> done{0};
  std::atomic<bool> failed{false};
  // Renewals run on their own socket while the watcher subscribes in the middle of them.
  std::thread renewer{[&] {
    for (int i = 1; i <= renewals; ++i) {
      json::object frame{{"id", i}, {"op", "renew"}, {"lock", "busy"}, {"owner", "holder"},
                         {"token", token}};
      auto answer = holder.send(frame) ? holder.answer_to(i, 30s) : std::nullopt;
      if (!answer || type_of(*answer) != "reply") {
        failed = true;
        return;
      }
      done = i;
    }
  }};
  while (done < renewals / 3 && !failed)
    std::this_thread::sleep_for(1ms);
  auto snapshot = call(watcher, {{"id", "sub"}, {"op", "subscribe"}, {"lock", "busy"}});
  renewer.join();
  REQUIRE_FALSE(failed);
  INFO(json::serialize(snapshot));
  REQUIRE(type_of(snapshot) == "reply");
  auto subscription = snapshot.at("result").at("subscription");
  const auto& state = snapshot.at("result").at("locks").as_array().at(0).as_object();
  REQUIRE(state.at("held") == true);
  auto seen = i64(state.at("revision"));
  CHECK(seen >= renewals / 3);
  // Every renewal after the snapshot arrives, in order: revisions climb by exactly one.
  while (seen < renewals) {
    auto ev = watcher.receive(30s);
    REQUIRE(ev);
    INFO(json::serialize(*ev));
    REQUIRE(type_of(*ev) == "lock_event");
    CHECK(ev->at("subscription") == subscription);
    auto revision = i64(ev->at("revision"));
    if (revision <= seen)
      continue; // raced with the snapshot, which shows it already
    REQUIRE(revision == seen + 1);
    CHECK(ev->at("event") == "renewed");
    seen = revision;
  }
  call(holder, {{"id", "end"}, {"op", "release"}, {"lock", "busy"}, {"owner", "holder"},
                {"token", token}});
  auto released = watcher.receive(30s);
  REQUIRE(released);
  CHECK(released->at("event") == "released");
  CHECK(released->at("cause") == "released");
  CHECK(i64(released->at("revision")) == renewals + 1);
}

TEST_CASE("ws_a_prefix_subscription_sees_held_locks_then_events_and_stops_on_unsubscribe",
          "[integration][websocket]") {
  temp_dir dir;
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args()};
  ws_client actor{server.port()};
  ws_client watcher{server.port()};
  acquire(actor, "jobs:a", "w");
  acquire(actor, "other", "w");
  auto snapshot = call(watcher, {{"id", 1}, {"op", "subscribe"}, {"prefix", "jobs:"}});
  auto locks = snapshot.at("result").at("locks").as_array();
  REQUIRE(locks.size() == 1);
  CHECK(locks[0].at("name") == "jobs:a");
  auto subscription = snapshot.at("result").at("subscription");
  auto b = acquire(actor, "jobs:b", "w");
  acquire(actor, "elsewhere", "w");
  auto ev = watcher.receive(10s);
  REQUIRE(ev);
  CHECK(ev->at("event") == "acquired");
  CHECK(ev->at("lock") == "jobs:b");
  CHECK(u64(ev->at("token")) == b);
  auto off = call(watcher, {{"id", 2}, {"op", "unsubscribe"}, {"subscription", subscription}});
  CHECK(off.at("result").at("unsubscribed") == true);
  acquire(actor, "jobs:c", "w");
  CHECK_FALSE(watcher.receive(500ms));
}

TEST_CASE("ws_session_bound_leases_end_with_their_socket_and_others_outlive_it",
          "[integration][websocket]") {
  temp_dir dir;
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args()};
  lock_client api{server.port()};
  auto bound = std::make_unique<ws_client>(server.port());
  auto unbound = std::make_unique<ws_client>(server.port());
  ws_client waiter{server.port()};
  auto bound_token = acquire(*bound, "ephemeral", "owner-1", 60'000, true);
  auto kept_token = acquire(*unbound, "durable", "owner-2", 60'000, false);
  REQUIRE(waiter.send(acquire_frame("next", "ephemeral", "owner-3", 60'000, 60'000)));
  REQUIRE(eventually([&] { return api.status_of("ephemeral").waiters == 1u; }, 10s));

  bound->close(true); // dropped, not even a close frame
  auto granted = waiter.answer_to("next", 10s);
  REQUIRE(granted);
  CHECK(type_of(*granted) == "granted");
  CHECK(u64(granted->at("result").at("token")) > bound_token);

  unbound->close(true);
  std::this_thread::sleep_for(500ms); // a wrong release would have happened by now
  auto st = api.status_of("durable");
  CHECK(st.held);
  CHECK(st.token == kept_token);
}

TEST_CASE("ws_a_subscriber_that_does_not_read_is_closed_with_1008_and_others_go_on",
          "[integration][websocket]") {
  temp_dir dir;
  server_process server{dir.str(), {"--ws-outbound-limit", "65536"}};
  ws_client slow{server.port(), 4096};
  call(slow, {{"id", 1}, {"op", "subscribe"}, {"prefix", ""}});
  ws_client busy{server.port()};
  // Long names and owners make big events, so that the kernel buffers fill sooner.
  const std::string lock = "flood:" + std::string(180, 'x');
  const std::string owner = std::string(120, 'o');
  auto token = acquire(busy, lock, owner);
  auto cut_off = [&] {
    for (const auto& line : server.lines())
      if (line.find("\"ws_slow_consumer\"") != std::string::npos)
        return true;
    return false;
  };
  int64_t id = 0;
  auto give_up = std::chrono::steady_clock::now() + 120s;
  while (!cut_off() && std::chrono::steady_clock::now() < give_up) {
    for (int i = 0; i < 64; ++i)
      REQUIRE(busy.send({{"id", ++id}, {"op", "renew"}, {"lock", lock}, {"owner", owner},
                         {"token", token}}));
    REQUIRE(busy.answer_to(id, 30s));
  }
  REQUIRE(cut_off());
  // Everybody else is served as before.
  ws_client fresh{server.port()};
  auto st = call(fresh, {{"id", "s"}, {"op", "status"}, {"lock", lock}});
  CHECK(st.at("result").at("held") == true);
  auto renewed = call(busy, {{"id", "last"}, {"op", "renew"}, {"lock", lock}, {"owner", owner},
                             {"token", token}});
  CHECK(type_of(renewed) == "reply");
  // The slow socket gets what was already on its way, then the close.
  while (slow.receive(10s)) {
  }
  uint16_t code = 0;
  REQUIRE(slow.closed(code));
  CHECK(code == 1008);
}

TEST_CASE("ws_upgrades_beyond_the_session_limit_get_503_and_other_paths_404",
          "[integration][websocket]") {
  temp_dir dir;
  server_process server{dir.str(), {"--ws-max-sessions", "1"}};
  ws_client first{server.port()};
  auto upgrade = [&](const std::string& target) {
    raw_connection conn{server.port(), 10s};
    REQUIRE_FALSE(conn.send("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                            "Sec-WebSocket-Version: 13\r\n\r\n"));
    auto res = conn.read_response();
    REQUIRE(res);
    return *res;
  };
  auto busy = upgrade("/v1/ws");
  CHECK(busy.status == 503);
  CHECK(busy.error() == "overloaded");
  CHECK(busy.has_header("retry-after"));
  CHECK(upgrade("/v1/elsewhere").status == 404);
  first.close();
  // The slot comes back once the first session is gone.
  CHECK(eventually([&] { return upgrade("/v1/ws").status == 101; }, 10s));
}

TEST_CASE("ws_sockets_are_told_1001_when_the_server_stops", "[integration][websocket]") {
  temp_dir dir;
  server_process server{dir.str()};
  ws_client ws{server.port()};
  acquire(ws, "x", "w");
  auto stopped = server.terminate(30s);
  REQUIRE(stopped);
  CHECK_FALSE(ws.receive(10s));
  uint16_t code = 0;
  REQUIRE(ws.closed(code));
  CHECK(code == 1001);
}

TEST_CASE("ws_pings_keep_a_live_client_open_and_find_a_silent_one", "[integration][websocket]") {
  temp_dir dir;
  server_process server{dir.str(), {"--ws-idle-timeout-ms", "1000"}};
  ws_client live{server.port()};
  ws_client silent{server.port()};
  // A client with a read pending answers pings (Beast does); three idle limits pass quietly.
  CHECK_FALSE(live.receive(3s));
  uint16_t code = 0;
  CHECK_FALSE(live.closed(code));
  CHECK(type_of(call(live, {{"id", 1}, {"op", "status"}, {"lock", "l"}})) == "reply");
  // One that never reads never answers a ping: the server gives up on it.
  std::this_thread::sleep_for(3s);
  CHECK_FALSE(silent.receive(5s));
  REQUIRE(silent.closed(code));
}

TEST_CASE("ws_subscriptions_per_socket_are_bounded", "[integration][websocket]") {
  temp_dir dir;
  server_process server{dir.str(), {"--ws-max-subscriptions", "2"}};
  ws_client ws{server.port()};
  CHECK(type_of(call(ws, {{"id", 1}, {"op", "subscribe"}, {"prefix", "a"}})) == "reply");
  auto second = call(ws, {{"id", 2}, {"op", "subscribe"}, {"lock", "b"}});
  CHECK(type_of(second) == "reply");
  auto third = call(ws, {{"id", 3}, {"op", "subscribe"}, {"prefix", "c"}});
  CHECK(error_of(third) == "invalid_request");
  // Unsubscribing frees a place.
  call(ws, {{"id", 4}, {"op", "unsubscribe"}, {"subscription", second.at("result").at("subscription")}});
  CHECK(type_of(call(ws, {{"id", 5}, {"op", "subscribe"}, {"prefix", "c"}})) == "reply");
}

TEST_CASE("ws_operation_events_carry_the_session_and_request_id", "[integration][websocket]") {
  temp_dir dir;
  server_process server{dir.str()};
  ws_client ws{server.port()};
  auto session = std::string{ws.hello().at("session").as_string()};
  acquire(ws, "logged", "w");
  call(ws, {{"id", "my-status-7"}, {"op", "status"}, {"lock", "logged"}});
  auto want = session + ":my-status-7";
  auto line = server.wait_for_line(
    [&](std::string_view l) { return l.find(want) != std::string_view::npos; }, 10s);
  REQUIRE(line);
  auto event = json::parse(*line).as_object(); // every line is one JSON object
  CHECK(event.at("event") == "op");
  CHECK(event.at("op") == "status");
  CHECK(event.at("request_id").as_string() == want);
  CHECK(event.at("lock") == "logged");
  CHECK(event.at("outcome") == "ok");
}
