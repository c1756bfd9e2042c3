// Authentication and permissions end to end (docs/security.md): the real server with an auth
// file, over HTTP and WebSocket; a SIGHUP that revokes a token; a bad auth file at boot.

#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <string>

#include "integration/checks.hpp"
#include "integration/tokens.hpp"
#include "support/child_process.hpp"
#include "support/http_client.hpp"
#include "support/lock_api.hpp"
#include "support/poll.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"
#include "support/ws_client.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

const std::string billing = "billing-0f3a9c1e7d";
const std::string billing2 = "billing2-5b8e2d4a61";
const std::string dashboard = "dashboard-c4d19e8b02";
const std::string ops = "ops-7a2f6c0e93";

void write_auth_file(const std::filesystem::path& path, bool with_billing = true) {
  std::ofstream out{path};
  out << "# principal  sha256(token)  permissions\n";
  if (with_billing)
    out << "billing   " << sha256_hex(billing) << "  lock:billing:\n";
  out << "billing2  " << sha256_hex(billing2) << "  lock:billing:\n"
      << "dashboard " << sha256_hex(dashboard) << "  read:*\n"
      << "ops       " << sha256_hex(ops) << "  admin:*\n";
}

struct auth_server {
  temp_dir dir;
  std::filesystem::path auth_file = dir.path() / "tokens";
  std::unique_ptr<server_process> server;

  auth_server() {
    write_auth_file(auth_file);
    server = std::make_unique<server_process>(
      (dir.path() / "data").string(), std::vector<std::string>{"--auth-file", auth_file.string()});
  }
};

json::object acquire_body(const std::string& owner) {
  return {{"owner", owner}, {"ttlMs", 60'000}};
}

json::object token_body(const std::string& owner, int64_t token) {
  return {{"owner", owner}, {"token", token}};
}

std::optional<json::object> ask(ws_client& ws, json::object frame) {
  auto id = frame.at("id");
  if (!ws.send(frame))
    return std::nullopt;
  return ws.answer_to(id, 10s);
}

std::string error_of(const std::optional<json::object>& frame) {
  if (!frame || !frame->contains("error"))
    return {};
  return std::string{frame->at("error").as_string()};
}

} // namespace

TEST_CASE("auth_http_requests_need_a_valid_bearer_token_and_the_permission",
          "[integration][auth]") {
  auth_server s;
  http_client c{s.server->port()};
  // No token, a wrong one, another scheme: 401 with a challenge, and nothing done.
  for (const auto& headers :
       {header_list{}, bearer("wrong"), header_list{{"Authorization", "Basic eDp5"}}}) {
    auto res = c.post("/v1/locks/billing:a/acquire", acquire_body("w1"), headers);
    CHECK(res.status == 401);
    CHECK(res.error() == "unauthenticated");
    CHECK(res.header("www-authenticate").starts_with("Bearer"));
  }
  CHECK(c.get("/v1/locks/billing:a", bearer(ops)).json->at("held").as_bool() == false);
  // Probes and the API document stay open; /metrics needs an admin.
  CHECK(c.get("/healthz").status == 200);
  CHECK(c.get("/readyz").status == 200);
  CHECK(c.get("/v1/openapi.json").status == 200);
  CHECK(c.get("/metrics").status == 401);
  CHECK(c.get("/metrics", bearer(billing)).status == 403);
  CHECK(c.get("/metrics", bearer(ops)).status == 200);
  // Permissions per prefix.
  auto granted = c.post("/v1/locks/billing:a/acquire", acquire_body("w1"), bearer(billing));
  REQUIRE(granted.status == 200);
  CHECK(json_str(*granted.json, "owner") == "w1");
  CHECK(json_str(*granted.json, "principal") == "billing");
  auto other = c.post("/v1/locks/hr:a/acquire", acquire_body("w1"), bearer(billing));
  CHECK(other.status == 403);
  CHECK(other.error() == "forbidden");
  CHECK(c.post("/v1/locks/billing:b/acquire", acquire_body("d"), bearer(dashboard)).status == 403);
  CHECK(c.get("/v1/locks?prefix=billing:", bearer(billing)).status == 200);
  CHECK(c.get("/v1/locks", bearer(billing)).status == 403);
  CHECK(c.get("/v1/locks", bearer(dashboard)).status == 200);
}

TEST_CASE("auth_a_lease_is_its_principals_whatever_others_read_or_send", "[integration][auth]") {
  auth_server s;
  http_client c{s.server->port()};
  auto granted = c.post("/v1/locks/billing:a/acquire", acquire_body("w1"), bearer(billing));
  REQUIRE(granted.status == 200);
  auto token = granted.json->at("token").as_int64();
  // A reader sees who holds it and the token (the hidden-owner rule: seeing is not acting).
  auto seen = c.get("/v1/locks/billing:a", bearer(dashboard));
  REQUIRE(seen.status == 200);
  CHECK(json_str(*seen.json, "owner") == "w1");
  CHECK(json_str(*seen.json, "principal") == "billing");
  CHECK(seen.json->at("token").as_int64() == token);
  // ...but cannot act on them: not the reader, not another principal allowed to lock there.
  for (const auto& who : {dashboard, billing2}) {
    INFO(who);
    auto renewed = c.post("/v1/locks/billing:a/renew", token_body("w1", token), bearer(who));
    CHECK(renewed.status == 403);
    auto released = c.post("/v1/locks/billing:a/release", token_body("w1", token), bearer(who));
    CHECK(released.status == 403);
  }
  // Another principal's acquire under the same label waits like anyone's.
  auto taken = c.post("/v1/locks/billing:a/acquire", acquire_body("w1"), bearer(billing2));
  CHECK(taken.status == 409);
  CHECK(taken.error() == "lock_held");
  // Over WebSocket too.
  ws_client ws{s.server->port(), 0, billing2};
  auto renewed =
    ask(ws, {{"id", 1}, {"op", "renew"}, {"lock", "billing:a"}, {"owner", "w1"}, {"token", token}});
  CHECK(error_of(renewed) == "forbidden");
  auto released = ask(
    ws, {{"id", 2}, {"op", "release"}, {"lock", "billing:a"}, {"owner", "w1"}, {"token", token}});
  CHECK(error_of(released) == "forbidden");
  // The lease stands, and its principal still renews and releases it.
  CHECK(c.post("/v1/locks/billing:a/renew", token_body("w1", token), bearer(billing)).status
        == 200);
  CHECK(c.post("/v1/locks/billing:a/release", token_body("w1", token), bearer(billing)).status
        == 200);
}

TEST_CASE("auth_an_admin_force_releases_any_lease_and_its_holder_is_told", "[integration][auth]") {
  auth_server s;
  http_client c{s.server->port()};
  // billing holds a lease through its socket, which hears what becomes of it.
  ws_client holder{s.server->port(), 0, billing};
  auto granted = ask(
    holder,
    {{"id", 1}, {"op", "acquire"}, {"lock", "billing:job"}, {"owner", "w1"}, {"ttlMs", 60'000}});
  REQUIRE(granted);
  REQUIRE(granted->at("type").as_string() == "granted");
  auto token = granted->at("result").at("token").as_int64();

  // Only an admin may: not the lock's own principal, not a reader.
  json::object force{{"force", true}};
  for (const auto& who : {billing, billing2, dashboard}) {
    auto refused = c.post("/v1/locks/billing:job/release", force, bearer(who));
    CHECK(refused.status == 403);
    CHECK(refused.error() == "forbidden");
  }
  CHECK(c.post("/v1/locks/billing:job/release", force).status == 401);
  // A token that is not the current lease's ends nothing.
  auto stale = c.post("/v1/locks/billing:job/release",
                      json::object{{"force", true}, {"token", token + 1}}, bearer(ops));
  CHECK(stale.status == 409);
  CHECK(c.get("/v1/locks/billing:job", bearer(ops)).json->at("held").as_bool());

  auto forced = c.post("/v1/locks/billing:job/release",
                       json::object{{"force", true}, {"token", token}}, bearer(ops));
  INFO(forced.describe());
  CHECK(forced.status == 200);
  CHECK_FALSE(c.get("/v1/locks/billing:job", bearer(ops)).json->at("held").as_bool());
  auto lost = holder.receive_until(
    [](const json::object& f) { return f.at("type").as_string() == "lease_lost"; }, 20s);
  REQUIRE(lost);
  CHECK(lost->at("cause").as_string() == "revoked");
  CHECK(lost->at("token").as_int64() == token);
  // The holder's own release now finds no lease.
  CHECK(c.post("/v1/locks/billing:job/release", token_body("w1", token), bearer(billing)).status
        == 409);
  // Logged as such: a force_release by ops, apart from ordinary releases.
  CHECK(s.server->wait_for_line(
    [](std::string_view l) {
      return l.find("\"op\":\"force_release\"") != std::string_view::npos
             && l.find("\"principal\":\"ops\"") != std::string_view::npos
             && l.find("\"outcome\":\"ok\"") != std::string_view::npos;
    },
    20s));

  // Over WebSocket too; a free lock has nothing to end.
  ws_client admin{s.server->port(), 0, ops};
  auto none = ask(admin, {{"id", 2}, {"op", "release"}, {"lock", "billing:job"}, {"force", true}});
  CHECK(error_of(none) == "lease_lost");
  auto again = ask(
    holder,
    {{"id", 3}, {"op", "acquire"}, {"lock", "billing:job"}, {"owner", "w1"}, {"ttlMs", 60'000}});
  REQUIRE(again);
  CHECK(again->at("type").as_string() == "granted");
  auto by_ws = ask(admin, {{"id", 4}, {"op", "release"}, {"lock", "billing:job"}, {"force", true}});
  REQUIRE(by_ws);
  CHECK(by_ws->at("type").as_string() == "reply");
  CHECK_FALSE(c.get("/v1/locks/billing:job", bearer(ops)).json->at("held").as_bool());

  // And with the CLI: `release --force`, an admin's token from the environment.
  require_lease(c.post("/v1/locks/billing:job/acquire", acquire_body("w2"), bearer(billing)));
  auto url = "http://127.0.0.1:" + std::to_string(s.server->port());
  auto [refused, why] = run_fencelock({"release", "billing:job", "--force", "--url", url},
                                      {"FENCELOCK_AUTH_TOKEN=" + billing});
  INFO(why);
  CHECK(refused == 77);
  auto [code, out] =
    run_fencelock({"release", "billing:job", "--force", "--url", url, "-o", "json"},
                  {"FENCELOCK_AUTH_TOKEN=" + ops});
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("\"released\":true") != std::string::npos);
  CHECK_FALSE(c.get("/v1/locks/billing:job", bearer(ops)).json->at("held").as_bool());
}

TEST_CASE("auth_one_tenant_over_its_limits_does_not_starve_another", "[integration][auth]") {
  temp_dir dir;
  auto file = dir.path() / "tokens";
  const std::string chatty = "chatty-31c9e0", patient = "patient-8d02b7", calm = "calm-4a6f11";
  std::ofstream{file} << "chatty  " << sha256_hex(chatty) << "  lock:t: rate:2\n"
                      << "patient " << sha256_hex(patient) << "  lock:t: waiters:2\n"
                      << "calm    " << sha256_hex(calm) << "  lock:t:\n";
  server_process server{(dir.path() / "data").string(), {"--auth-file", file.string()}};

  SECTION("a rate over all of a principal's connections, renewals aside") {
    http_client a{server.port(), http_options{30s, true}};
    http_client b{server.port(), http_options{30s, true}};
    auto lease =
      require_lease(a.post("/v1/locks/t:held/acquire", acquire_body("w"), bearer(chatty)));
    // 20 reads over two connections at once: a burst of 2 and 2 more per second, whatever
    // the connection; one connection alone would never be limited (no max-request-rate).
    int limited = 0;
    for (int i = 0; i < 20; ++i) {
      auto& c = i % 2 == 0 ? a : b;
      auto res = c.get("/v1/locks/t:x", bearer(chatty));
      if (res.status == 429) {
        CHECK(res.error() == "rate_limited");
        CHECK(res.header("retry-after") == "1");
        ++limited;
      } else {
        CHECK(res.status == 200);
      }
    }
    CHECK(limited > 0);
    // Renewals of what it holds still go through, and another principal is not slowed.
    CHECK(a.post("/v1/locks/t:held/renew", token_body("w", static_cast<int64_t>(lease.token)),
                 bearer(chatty))
            .status
          == 200);
    for (int i = 0; i < 20; ++i)
      CHECK(b.get("/v1/locks/t:x", bearer(calm)).status == 200);
  }
  SECTION("waiting acquires per principal over all locks, over HTTP and WS") {
    http_client c{server.port()};
    for (auto lock : {"t:a", "t:b", "t:c"})
      require_lease(
        c.post(std::string{"/v1/locks/"} + lock + "/acquire", acquire_body("h"), bearer(calm)));
    // A waiting acquire as a frame, and the waiters a lock has.
    auto waiting = [](int id, const char* lock, const char* owner) {
      return json::object{{"id", id},       {"op", "acquire"}, {"lock", lock},
                          {"owner", owner}, {"ttlMs", 60'000}, {"waitMs", 60'000}};
    };
    auto waiters_on = [&](const std::string& lock, int64_t n) {
      return eventually(
        [&] {
          return c.get("/v1/locks/" + lock, bearer(calm)).json->at("waiters").as_int64() == n;
        },
        20s);
    };
    ws_client ws{server.port(), 0, patient};
    for (int id : {1, 2})
      ws.send(waiting(id, id == 1 ? "t:a" : "t:b", "p"));
    // Both wait (no answer yet); the third, on yet another lock, is over the cap.
    CHECK(waiters_on("t:b", 1));
    auto third = ask(ws, waiting(3, "t:c", "p"));
    CHECK(error_of(third) == "too_many_waiters");
    auto over_http =
      c.post("/v1/locks/t:c/acquire",
             json::object{{"owner", "p"}, {"ttlMs", 60'000}, {"waitMs", 1000}}, bearer(patient));
    CHECK(over_http.status == 429);
    CHECK(over_http.error() == "too_many_waiters");
    // Another principal still queues there, and an acquire without waiting is not counted.
    ws_client other{server.port(), 0, calm};
    other.send(waiting(9, "t:c", "q"));
    CHECK(waiters_on("t:c", 1));
    CHECK(c.post("/v1/locks/t:d/acquire", acquire_body("p"), bearer(patient)).status == 200);
    // A waiter answered gives its place back: t:a's holder releases, patient's first is granted.
    auto held_a = c.get("/v1/locks/t:a", bearer(calm));
    REQUIRE(c.post("/v1/locks/t:a/release", token_body("h", held_a.json->at("token").as_int64()),
                   bearer(calm))
              .status
            == 200);
    auto first = ws.answer_to(1, 20s);
    REQUIRE(first);
    CHECK(first->at("type").as_string() == "granted");
    ws.send(waiting(4, "t:c", "p"));
    CHECK(waiters_on("t:c", 2)); // queued behind calm's waiter, not refused
  }
}

TEST_CASE("auth_websocket_by_header_or_by_auth_frame", "[integration][auth]") {
  auth_server s;
  // A wrong token on the upgrade is refused before the upgrade.
  CHECK_THROWS(ws_client{s.server->port(), 0, "wrong"});
  // By header.
  ws_client by_header{s.server->port(), 0, billing};
  auto granted =
    ask(by_header,
        {{"id", 1}, {"op", "acquire"}, {"lock", "billing:ws"}, {"owner", "w"}, {"ttlMs", 60'000}});
  REQUIRE(granted);
  CHECK(granted->at("type").as_string() == "granted");
  // Without one, nothing but auth is served until an auth frame succeeds.
  ws_client browser{s.server->port()};
  auto before = ask(browser, {{"id", 1}, {"op", "status"}, {"lock", "billing:ws"}});
  CHECK(error_of(before) == "unauthenticated");
  CHECK(error_of(ask(browser, {{"id", 2}, {"op", "auth"}, {"token", "wrong"}}))
        == "unauthenticated");
  auto login = ask(browser, {{"id", 3}, {"op", "auth"}, {"token", dashboard}});
  REQUIRE(login);
  CHECK(login->at("type").as_string() == "reply");
  CHECK(login->at("result").at("principal").as_string() == "dashboard");
  auto status = ask(browser, {{"id", 4}, {"op", "status"}, {"lock", "billing:ws"}});
  REQUIRE(status);
  CHECK(status->at("result").at("owner").as_string() == "w");
  CHECK(status->at("result").at("principal").as_string() == "billing");
  auto sub = ask(browser, {{"id", 5}, {"op", "subscribe"}, {"prefix", ""}});
  REQUIRE(sub);
  CHECK(sub->at("type").as_string() == "reply");
  // Read-only: no acquire.
  auto acquire =
    ask(browser,
        {{"id", 6}, {"op", "acquire"}, {"lock", "billing:x"}, {"owner", "d"}, {"ttlMs", 1000}});
  CHECK(error_of(acquire) == "forbidden");
}

TEST_CASE("auth_sighup_reloads_the_file_and_revokes_removed_tokens", "[integration][auth]") {
  auth_server s;
  http_client c{s.server->port()};
  CHECK(c.get("/v1/locks/billing:a", bearer(billing)).status == 200);
  ws_client ws{s.server->port(), 0, billing};
  CHECK(ask(ws, {{"id", 1}, {"op", "status"}, {"lock", "billing:a"}})->at("type").as_string()
        == "reply");

  // A broken file is refused and the one in force stays.
  std::ofstream{s.auth_file} << "billing nothex lock:billing:\n";
  s.server->process().send_signal(SIGHUP);
  CHECK(s.server->wait_for_line(
    [](std::string_view l) { return l.find("\"auth_reload_failed\"") != std::string_view::npos; },
    20s));
  CHECK(c.get("/v1/locks/billing:a", bearer(billing)).status == 200);

  // Billing's token removed: refused from the next request on, on open sockets too.
  write_auth_file(s.auth_file, false);
  s.server->process().send_signal(SIGHUP);
  CHECK(s.server->wait_for_line(
    [](std::string_view l) { return l.find("\"auth_reloaded\"") != std::string_view::npos; }, 20s));
  CHECK(c.get("/v1/locks/billing:a", bearer(billing)).status == 401);
  CHECK(c.get("/v1/locks/billing:a", bearer(billing2)).status == 200);
  CHECK(error_of(ask(ws, {{"id", 2}, {"op", "status"}, {"lock", "billing:a"}}))
        == "unauthenticated");
  CHECK(s.server->running());
}

TEST_CASE("auth_a_bad_auth_file_stops_the_boot_naming_the_key", "[integration][auth][cli]") {
  temp_dir dir;
  auto file = dir.path() / "tokens";
  std::ofstream{file} << "ops " << sha256_hex(ops) << " superuser:*\n";
  for (const auto& path : {file.string(), (dir.path() / "missing").string()}) {
    child_process p{
      server_binary(),
      {"serve", "--data-dir", (dir.path() / "data").string(), "--port", "0", "--auth-file", path}};
    auto st = p.wait(60s);
    REQUIRE(st.has_value());
    CHECK(st->exited);
    CHECK(st->code == 78);
    eventually([&] { return p.output_closed(); }, 5s);
    std::string err;
    for (const auto& l : p.stderr_lines())
      err += l + "\n";
    INFO(err);
    CHECK(err.find("config error: auth-file: " + path) != std::string::npos);
  }
}

TEST_CASE("auth_the_cli_sends_the_token_of_its_file_or_environment", "[integration][auth][cli]") {
  auth_server s;
  auto token_file = s.dir.path() / "client-token";
  std::ofstream{token_file} << billing << "\n";
  auto url = "http://127.0.0.1:" + std::to_string(s.server->port());
  auto run = [&](std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.end(), {"--url", url, "-o", "json"});
    return run_fencelock(args, env);
  };
  auto [granted, out] =
    run({"acquire", "billing:cli", "-O", "w1", "--auth-token-file", token_file.string()});
  INFO(out);
  CHECK(granted == 0);
  http_client c{s.server->port()};
  auto held = c.get("/v1/locks/billing:cli", bearer(ops));
  CHECK(json_str(*held.json, "principal") == "billing");
  CHECK(json_str(*held.json, "owner") == "w1");
  // Another prefix: refused, exit 77.
  auto [refused, why] = run({"acquire", "hr:cli", "--auth-token-file", token_file.string()});
  INFO(why);
  CHECK(refused == 77);
  CHECK(why.find("forbidden") != std::string::npos);
  // The environment's token works the same.
  CHECK(run({"status", "billing:cli"}, {"FENCELOCK_AUTH_TOKEN=" + dashboard}).first == 0);
  // Without one the request is refused (77); a wrong one is refused at the upgrade, which is
  // as final: 77 too, not a connection failure to retry (69).
  auto [without, unauthenticated] = run({"status", "billing:cli"});
  INFO(unauthenticated);
  CHECK(without == 77);
  CHECK(unauthenticated.find("unauthenticated") != std::string::npos);
  auto [wrong, refused_upgrade] = run({"status", "billing:cli"}, {"FENCELOCK_AUTH_TOKEN=wrong"});
  INFO(refused_upgrade);
  CHECK(wrong == 77);
  CHECK(refused_upgrade.find("401 unauthenticated") != std::string::npos);
}
