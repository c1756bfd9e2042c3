// docs/openapi.json against the real server: every route and every error the HTTP API can give is
// provoked for real, and each answer is checked against the document (status listed for that
// operation, content type, required headers, body valid for its schema), so that the document
// cannot drift from the server. tests/support/openapi_check.hpp is the validator.

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include <cctype>
#include <csignal>
#include <set>

#include "integration/client_support.hpp"
#include "support/http_client.hpp"
#include "support/openapi_check.hpp"
#include "support/poll.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

namespace {

const std::string doc_path = FENCELOCK_SOURCE_DIR "/docs/openapi.json";

/// Collects which (method, path template, status) and components were seen, and every problem.
struct conformance {
  openapi_check spec = openapi_check::from_file(doc_path);
  std::set<std::string> seen;

  /// Checks `res`, the answer to `method target`, against its operation.
  void operation(const std::string& method, const std::string& target, const http_response& res,
                 int expected) {
    INFO(method << " " << target << " -> " << res.describe());
    CHECK(res.status == expected);
    for (const auto& problem : spec.check(method, target, res))
      FAIL_CHECK(problem);
    seen.insert(method + " " + spec.match(target.substr(0, target.find('?'))).value_or("?") + " "
                + std::to_string(res.status));
  }

  /// Checks `res` against components/responses/`name`.
  void component(const std::string& name, const http_response& res, int expected) {
    INFO(name << " -> " << res.describe());
    CHECK(res.status == expected);
    for (const auto& problem : spec.check_component(name, res))
      FAIL_CHECK(problem);
    seen.insert(name);
  }
};

http_response send(uint16_t port, const std::string& method, const std::string& target,
                   const std::optional<std::string>& body = std::nullopt,
                   const header_list& headers = {}) {
  http_client c{port}; // a connection per request: the rate limit is per connection
  return c.request(method, target, body, headers);
}

} // namespace

TEST_CASE("openapi_every_route_and_error_conforms", "[integration][openapi]") {
  conformance api;
  temp_dir dir;
  server_process server{dir.str(), {"--max-waiters-per-lock", "1", "--body-limit", "1024"}};
  auto port = server.port();
  auto op = [&](const std::string& method, const std::string& target,
                const std::optional<std::string>& body, int expected,
                const header_list& headers = {}) {
    auto res = send(port, method, target, body, headers);
    api.operation(method, target, res, expected);
    return res;
  };

  // --- locks ----------------------------------------------------------------------------------
  auto granted = op("POST", "/v1/locks/oa/acquire", R"({"owner":"o1","ttlMs":60000})", 200);
  auto token = std::to_string(granted.json->at("token").as_int64());
  op("POST", "/v1/locks/oa/acquire", R"({"owner":"o2","ttlMs":60000})", 409);       // lock_held
  op("POST", "/v1/locks/oa/acquire", R"({"owner":"o2","ttlMs":1})", 400);           // range
  op("POST", "/v1/locks/oa/acquire", R"({"owner":"o2","ttlMs":1,"ttlMs":2})", 400); // twice
  op("POST", "/v1/locks/a%20b/acquire", R"({"owner":"o2","ttlMs":1000})", 400);     // name
  op("POST", "/v1/locks/oa/renew", R"({"owner":"o1","token":)" + token + "}", 200);
  op("POST", "/v1/locks/oa/renew", R"({"owner":"o1","token":)" + token + R"(,"ttlMs":5000})", 200);
  op("POST", "/v1/locks/oa/renew", R"({"owner":"o2","token":)" + token + "}", 409); // lease_lost
  op("POST", "/v1/locks/oa/renew", R"({"owner":"o1"})", 400);
  op("POST", "/v1/locks/oa/check", R"({"token":)" + token + "}", 200); // current
  op("POST", "/v1/locks/oa/check", R"({"token":0})", 400);
  op("GET", "/v1/locks/oa", std::nullopt, 200);         // held
  op("GET", "/v1/locks/never-used", std::nullopt, 200); // free
  op("GET", "/v1/locks/%zz", std::nullopt, 400);
  op("POST", "/v1/locks/ob/acquire", R"({"owner":"o1","ttlMs":60000})", 200);
  auto page = op("GET", "/v1/locks?prefix=o&limit=1", std::nullopt, 200); // a cursor
  CHECK(page.json->at("nextCursor").is_string());
  auto last = op("GET", "/v1/locks?prefix=o&limit=10", std::nullopt, 200); // null
  CHECK(last.json->at("nextCursor").is_null());
  op("GET", "/v1/locks?bogus=1", std::nullopt, 400);

  // A waiter fills the queue of one (max-waiters-per-lock 1): the next gets too_many_waiters.
  raw_connection waiter{port};
  REQUIRE_FALSE(waiter.send(
    raw_request("POST", "/v1/locks/oa/acquire", R"({"owner":"w1","ttlMs":60000,"waitMs":60000})")));
  REQUIRE(eventually(
    [&] { return send(port, "GET", "/v1/locks/oa").json->at("waiters").as_int64() == 1; }, 30s));
  op("POST", "/v1/locks/oa/acquire", R"({"owner":"w2","ttlMs":60000,"waitMs":60000})", 429);
  op("POST", "/v1/locks/oa/release", R"({"owner":"o1","token":)" + token + "}", 200);
  op("POST", "/v1/locks/oa/release", R"({"owner":"o1","token":)" + token + "}", 409);
  op("POST", "/v1/locks/oa/release", R"({"owner":"o1","token":"x"})", 400);
  auto handed = waiter.read_response(); // the waiter was handed the lock with a new token
  REQUIRE(handed.has_value());
  api.operation("POST", "/v1/locks/oa/acquire", *handed, 200);
  op("POST", "/v1/locks/oa/check", R"({"token":)" + token + "}", 200); // stale
  op("POST", "/v1/locks/free/check", R"({"token":1})", 200);           // token null

  // --- operations, the document, the dashboard, the WebSocket door ----------------------------
  op("GET", "/healthz", std::nullopt, 200);
  op("GET", "/readyz", std::nullopt, 200);
  auto metrics = op("GET", "/metrics", std::nullopt, 200);
  CHECK(metrics.body.find("fencelock_build_info{") != std::string::npos);
  auto doc = op("GET", "/v1/openapi.json", std::nullopt, 200);
  CHECK(doc.body == read_file(doc_path));
  auto page_res = op("GET", "/", std::nullopt, 200);
  op("HEAD", "/", std::nullopt, 200);
  op("GET", "/", std::nullopt, 304, {{"If-None-Match", page_res.header("etag")}});
  auto script = op("GET", "/dashboard/app.js", std::nullopt, 200);
  op("HEAD", "/dashboard/style.css", std::nullopt, 200);
  op("GET", "/dashboard/app.js", std::nullopt, 304, {{"If-None-Match", script.header("etag")}});
  op("GET", "/dashboard/nope.js", std::nullopt, 404);
  op("GET", "/v1/ws", std::nullopt, 426); // not an upgrade
  {
    raw_connection ws{port};
    REQUIRE_FALSE(ws.send(raw_request("GET", "/v1/ws", std::nullopt,
                                      {{"Upgrade", "websocket"},
                                       {"Connection", "Upgrade"},
                                       {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                                       {"Sec-WebSocket-Version", "13"}})));
    auto upgraded = ws.read_response();
    REQUIRE(upgraded.has_value());
    api.operation("GET", "/v1/ws", *upgraded, 101);
  }

  // --- answers outside any operation ----------------------------------------------------------
  api.component("NotFound", send(port, "GET", "/nope"), 404);
  auto wrong = send(port, "GET", "/v1/locks/oa/acquire");
  api.component("MethodNotAllowed", wrong, 405);
  CHECK(wrong.header("allow") == "POST");
  api.component("MethodNotAllowed", send(port, "POST", "/healthz", "{}"), 405);
  api.component("MethodNotAllowed", send(port, "DELETE", "/"), 405);
  {
    raw_connection raw{port};
    REQUIRE_FALSE(raw.send("NOT HTTP AT ALL\r\n\r\n"));
    auto res = raw.read_response();
    REQUIRE(res.has_value());
    api.component("BadRequest", *res, 400);
  }
  // Errors every operation lists: a body over body-limit (declared, so that the answer comes
  // before the body is sent), headers over 8 KiB.
  auto raw_answer = [&](const std::string& bytes) {
    raw_connection raw{port};
    raw.send(bytes);
    auto res = raw.read_response();
    REQUIRE(res.has_value());
    return *res;
  };
  api.operation("POST", "/v1/locks/oa/acquire",
                raw_answer("POST /v1/locks/oa/acquire HTTP/1.1\r\nHost: x\r\nContent-Type: "
                           "application/json\r\nContent-Length: 5000\r\n\r\n"),
                413);
  for (std::string target : {"/v1/locks/oa", "/healthz"})
    api.operation("GET", target,
                  raw_answer("GET " + target + " HTTP/1.1\r\nHost: x\r\nX-Big: "
                             + std::string(9000, 'x') + "\r\n\r\n"),
                  431);

  // --- shutting_down: a waiter when the server drains -----------------------------------------
  raw_connection drained{port};
  REQUIRE_FALSE(drained.send(
    raw_request("POST", "/v1/locks/oa/acquire", R"({"owner":"w3","ttlMs":60000,"waitMs":60000})")));
  REQUIRE(eventually(
    [&] { return send(port, "GET", "/v1/locks/oa").json->at("waiters").as_int64() == 1; }, 30s));
  server.process().send_signal(SIGTERM);
  auto refused = drained.read_response();
  REQUIRE(refused.has_value());
  api.operation("POST", "/v1/locks/oa/acquire", *refused, 503);
  CHECK(refused->error() == "shutting_down");
  REQUIRE(server.process().wait(30s).has_value());

  // --- rate_limited and max-connections -------------------------------------------------------
  {
    temp_dir dir2;
    server_process limited{dir2.str(), {"--max-request-rate", "1", "--max-connections", "1"}};
    http_client one{limited.port(), http_options{30s, true}}; // one connection, kept alive
    http_response res;
    REQUIRE(eventually([&] { return (res = one.get("/v1/locks/x")).status == 429; }, 30s));
    api.operation("GET", "/v1/locks/x", res, 429);
    REQUIRE(eventually([&] { return (res = one.get("/readyz")).status == 429; }, 30s));
    api.operation("GET", "/readyz", res, 429);
    REQUIRE(eventually(
      [&] {
        return (res = one.request("POST", "/v1/locks/x/acquire", R"({"owner":"o","ttlMs":1000})"))
                 .status
               == 429;
      },
      30s));
    api.operation("POST", "/v1/locks/x/acquire", res, 429);
    // A second connection while the first is open: turned away before any request is read.
    raw_connection second{limited.port()};
    REQUIRE_FALSE(second.send(raw_request("GET", "/healthz")));
    auto turned = second.read_response();
    REQUIRE(turned.has_value());
    api.component("TooManyConnections", *turned, 503);
  }

  // --- store_unavailable and not ready: a Redis store nobody listens for -----------------------
  {
    temp_dir dir3;
    child_process down{server_binary(),
                       {"serve", "--port", "0", "--data-dir", dir3.str(), "--store",
                        "redis://127.0.0.1:" + std::to_string(closed_port()) + "/0",
                        "--redis-timeout-ms", "200"}};
    auto line = down.wait_for_line(
      [](std::string_view l) { return parse_listening_port(l).has_value(); }, 30s);
    INFO(down.diagnostics());
    REQUIRE(line.has_value());
    auto p = *parse_listening_port(*line);
    auto op3 = [&](const std::string& method, const std::string& target,
                   const std::optional<std::string>& body, int expected) {
      api.operation(method, target, send(p, method, target, body), expected);
    };
    op3("GET", "/readyz", std::nullopt, 503);
    op3("POST", "/v1/locks/r/acquire", R"({"owner":"o","ttlMs":1000})", 503);
    op3("POST", "/v1/locks/r/renew", R"({"owner":"o","token":1})", 503);
    op3("POST", "/v1/locks/r/release", R"({"owner":"o","token":1})", 503);
    op3("POST", "/v1/locks/r/check", R"({"token":1})", 503);
    op3("GET", "/v1/locks/r", std::nullopt, 503);
    op3("GET", "/v1/locks", std::nullopt, 503);
  }

  // Every operation of the document was answered at least once with 200 (101, 304).
  for (const auto& [path, item] : api.spec.document().at("paths").as_object())
    for (const auto& [method, _] : item.as_object()) {
      std::string m{method};
      for (auto& c : m)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      auto ok = path == "/v1/ws" ? "101" : "200";
      INFO(m << " " << path);
      CHECK(api.seen.contains(m + " " + std::string{path} + " " + ok));
    }
  INFO("seen: " << api.seen.size());
}
