// Bad input, table-driven: every malformed or out-of-range request gets a 4xx with the right
// status and error code (invalid_request names the field), never a 5xx, and changes nothing.
// Boundary values that are valid are accepted.

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "integration/checks.hpp"
#include "support/lock_api.hpp"
#include "support/poll.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

namespace {

struct bad_case {
  const char* what;
  std::string method;
  std::string target;
  std::optional<std::string> body;
  int status;
  std::string code;   // empty: any non-empty code
  std::string field;  // empty: the message need not name a field
};

// Checks the shape every error answer shares.
void check_error_shape(const http_response& res) {
  CHECK(res.status >= 400);
  CHECK(res.status < 500);
  CHECK_FALSE(res.header("x-request-id").empty());
  REQUIRE(res.json.has_value());
  REQUIRE(res.json->is_object());
  CHECK_FALSE(res.error().empty());
  CHECK(json_str(*res.json, "message").has_value());
}

std::string acquire_body(const std::string& owner_json, const std::string& ttl_json) {
  return R"({"owner":)" + owner_json + R"(,"ttlMs":)" + ttl_json + "}";
}

std::vector<bad_case> bad_cases() {
  const std::string acq = "/v1/locks/victim/acquire";
  const std::string renew = "/v1/locks/bad-check/renew";
  const std::string rel = "/v1/locks/bad-check/release";
  const std::string long_owner(129, 'o');
  const std::string long_name(201, 'n');
  auto inv = [](const char* what, std::string method, std::string target,
                std::optional<std::string> body, std::string field) {
    return bad_case{what, std::move(method), std::move(target), std::move(body), 400,
                    "invalid_request", std::move(field)};
  };
  return {
    // malformed bodies
    inv("malformed JSON", "POST", acq, R"({"owner":)", ""),
    inv("empty body", "POST", acq, std::string{}, ""),
    inv("body is an array", "POST", acq, "[]", ""),
    inv("body is a string", "POST", acq, R"("owner")", ""),
    inv("body is null", "POST", acq, "null", ""),
    inv("trailing garbage", "POST", acq, R"({"owner":"a","ttlMs":1000} x)", ""),
    inv("a field given twice", "POST", acq, R"({"owner":"a","ttlMs":1000,"ttlMs":2000})",
        "ttlMs"),
    // owner
    inv("missing owner", "POST", acq, R"({"ttlMs":1000})", "owner"),
    inv("owner is a number", "POST", acq, acquire_body("5", "1000"), "owner"),
    inv("owner is null", "POST", acq, acquire_body("null", "1000"), "owner"),
    inv("owner is an object", "POST", acq, acquire_body("{}", "1000"), "owner"),
    inv("owner is empty", "POST", acq, acquire_body(R"("")", "1000"), "owner"),
    inv("owner too long (129)", "POST", acq, acquire_body('"' + long_owner + '"', "1000"),
        "owner"),
    inv("owner with a control char", "POST", acq, acquire_body(R"("a\u0001b")", "1000"),
        "owner"),
    inv("owner with a newline", "POST", acq, acquire_body(R"("a\nb")", "1000"), "owner"),
    inv("owner with DEL", "POST", acq, acquire_body(R"("a\u007fb")", "1000"), "owner"),
    inv("owner not ASCII", "POST", acq, acquire_body(R"("caf\u00e9")", "1000"), "owner"),
    // ttlMs
    inv("missing ttlMs", "POST", acq, R"({"owner":"a"})", "ttlMs"),
    inv("ttlMs as string", "POST", acq, acquire_body(R"("a")", R"("100")"), "ttlMs"),
    inv("ttlMs 1.5", "POST", acq, acquire_body(R"("a")", "1.5"), "ttlMs"),
    inv("ttlMs 1e3", "POST", acq, acquire_body(R"("a")", "1e3"), "ttlMs"),
    inv("ttlMs 1000.0", "POST", acq, acquire_body(R"("a")", "1000.0"), "ttlMs"),
    inv("ttlMs negative", "POST", acq, acquire_body(R"("a")", "-1"), "ttlMs"),
    inv("ttlMs zero", "POST", acq, acquire_body(R"("a")", "0"), "ttlMs"),
    inv("ttlMs below min (99)", "POST", acq, acquire_body(R"("a")", "99"), "ttlMs"),
    inv("ttlMs above max", "POST", acq, acquire_body(R"("a")", "3600001"), "ttlMs"),
    inv("ttlMs 2^63", "POST", acq, acquire_body(R"("a")", "9223372036854775808"), "ttlMs"),
    inv("ttlMs 2^64", "POST", acq, acquire_body(R"("a")", "18446744073709551616"), "ttlMs"),
    inv("ttlMs bool", "POST", acq, acquire_body(R"("a")", "true"), "ttlMs"),
    inv("ttlMs null", "POST", acq, acquire_body(R"("a")", "null"), "ttlMs"),
    // waitMs
    inv("waitMs negative", "POST", acq, R"({"owner":"a","ttlMs":1000,"waitMs":-1})", "waitMs"),
    inv("waitMs above max", "POST", acq, R"({"owner":"a","ttlMs":1000,"waitMs":300001})",
        "waitMs"),
    inv("waitMs 2.5", "POST", acq, R"({"owner":"a","ttlMs":1000,"waitMs":2.5})", "waitMs"),
    inv("waitMs as string", "POST", acq, R"({"owner":"a","ttlMs":1000,"waitMs":"0"})",
        "waitMs"),
    // unknown fields
    inv("unknown field", "POST", acq, R"({"owner":"a","ttlMs":1000,"foo":1})", "foo"),
    inv("token in acquire", "POST", acq, R"({"owner":"a","ttlMs":1000,"token":1})", "token"),
    // names in the path
    inv("name with $", "POST", "/v1/locks/bad$name/acquire", R"({"owner":"a","ttlMs":1000})",
        "name"),
    inv("name with %20", "POST", "/v1/locks/bad%20name/acquire",
        R"({"owner":"a","ttlMs":1000})", "name"),
    inv("name too long (201)", "POST", "/v1/locks/" + long_name + "/acquire",
        R"({"owner":"a","ttlMs":1000})", "name"),
    inv("status of a bad name", "GET", "/v1/locks/bad$name", std::nullopt, "name"),
    inv("release of a bad name", "POST", "/v1/locks/bad!name/release",
        R"({"owner":"a","token":1})", "name"),
    // renew
    inv("renew token 0", "POST", renew, R"({"owner":"keeper","token":0})", "token"),
    inv("renew token 2^53", "POST", renew, R"({"owner":"keeper","token":9007199254740992})",
        "token"),
    inv("renew token negative", "POST", renew, R"({"owner":"keeper","token":-1})", "token"),
    inv("renew token as string", "POST", renew, R"({"owner":"keeper","token":"1"})", "token"),
    inv("renew token 1.0", "POST", renew, R"({"owner":"keeper","token":1.0})", "token"),
    inv("renew missing token", "POST", renew, R"({"owner":"keeper"})", "token"),
    inv("renew missing owner", "POST", renew, R"({"token":1})", "owner"),
    inv("renew ttlMs below min", "POST", renew, R"({"owner":"keeper","token":1,"ttlMs":50})",
        "ttlMs"),
    inv("renew unknown field", "POST", renew, R"({"owner":"keeper","token":1,"waitMs":0})",
        "waitMs"),
    // release
    inv("release token 0", "POST", rel, R"({"owner":"keeper","token":0})", "token"),
    inv("release missing token", "POST", rel, R"({"owner":"keeper"})", "token"),
    inv("release unknown field", "POST", rel, R"({"owner":"keeper","token":1,"ttlMs":1000})",
        "ttlMs"),
    inv("release owner too long", "POST", rel,
        R"({"owner":")" + long_owner + R"(","token":1})", "owner"),
    // listing
    inv("list limit not a number", "GET", "/v1/locks?limit=abc", std::nullopt, "limit"),
    inv("list limit negative", "GET", "/v1/locks?limit=-1", std::nullopt, "limit"),
    inv("list limit 1.5", "GET", "/v1/locks?limit=1.5", std::nullopt, "limit"),
    inv("list limit above max", "GET", "/v1/locks?limit=1001", std::nullopt, "limit"),
    // well-formed but not the current lease: 409, not 400
    {"renew with max token, not the lease", "POST", renew,
     R"({"owner":"keeper","token":9007199254740991})", 409, "lease_lost", ""},
    {"release by another owner", "POST", rel, R"({"owner":"mallory","token":1})", 409,
     "lease_lost", ""},
    // routes and methods
    {"unknown route /v2", "GET", "/v2/locks", std::nullopt, 404, "", ""},
    // "/" is the dashboard page (dashboard_test.cpp); "/dashboard/<unknown>" is still a 404.
    {"unknown dashboard file", "GET", "/dashboard/nope.js", std::nullopt, 404, "not_found", ""},
    {"too deep a path", "GET", "/v1/locks/a/b/c", std::nullopt, 404, "", ""},
    {"unknown operation", "POST", "/v1/locks/a/steal", R"({"owner":"a","token":1})", 404, "",
     ""},
    {"GET on acquire", "GET", "/v1/locks/a/acquire", std::nullopt, 405, "", ""},
    {"DELETE on a lock", "DELETE", "/v1/locks/a", std::nullopt, 405, "", ""},
    {"POST on a lock", "POST", "/v1/locks/a", R"({})", 405, "", ""},
    {"PUT on the listing", "PUT", "/v1/locks", R"({})", 405, "", ""},
    {"POST on healthz", "POST", "/healthz", R"({})", 405, "", ""},
  };
}


} // namespace

TEST_CASE("bad_requests_are_rejected_and_change_nothing", "[integration]") {
  temp_dir dir;
  server_process server{dir.str()};
  lock_client api{server.port()};

  auto kept = require_lease(api.acquire("bad-check", "keeper", 600'000, 0));
  auto before = api.status_of("bad-check");

  for (const auto& c : bad_cases()) {
    INFO("case: " << c.what << " -- " << c.method << " " << c.target << " "
                  << c.body.value_or("<no body>"));
    auto res = api.http().request(c.method, c.target, c.body);
    INFO("got: " << res.describe());
    CHECK(res.status == c.status);
    check_error_shape(res);
    if (!c.code.empty())
      CHECK(res.error() == c.code);
    if (!c.field.empty())
      CHECK(res.message().find(c.field) != std::string::npos);
  }

  { // malformed HTTP and oversized bodies, over raw sockets
    struct raw_case {
      const char* what;
      std::string bytes;
      int status;
    };
    const std::vector<raw_case> raw_cases{
      {"not HTTP at all", "HELLO THERE\r\n\r\n", 400},
      {"binary garbage", std::string{"\x01\x02\x03\xff\xfe GET\r\n\r\n"}, 400},
      {"header without colon", "GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n",
       400},
      {"bad Content-Length",
       "POST /v1/locks/victim/acquire HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n", 400},
      {"declared body over 16 KiB",
       "POST /v1/locks/victim/acquire HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       "Content-Length: 20000\r\n\r\n",
       413},
    };
    for (const auto& c : raw_cases) {
      INFO("raw case: " << c.what);
      raw_connection conn{server.port(), 15s};
      auto ec = conn.send(c.bytes);
      INFO("send: " << ec.message());
      boost::system::error_code read_ec;
      auto res = conn.read_response(&read_ec);
      INFO("read: " << read_ec.message());
      REQUIRE(res.has_value());
      INFO("got: " << res->describe());
      CHECK(res->status == c.status);
      CHECK(res->status < 500);
    }

    // A body over the limit sent in full: 413 when the answer arrives. The server may close
    // before reading it all, and the kernel may then reset the connection and drop the answer,
    // so a transport error is tolerated here (the declared-length case above is strict).
    std::string big = R"({"owner":"a","ttlMs":1000,"pad":")" + std::string(17 * 1024, 'x') + "\"}";
    auto res = api.http().try_request("POST", "/v1/locks/victim/acquire", big);
    if (res) {
      INFO("got: " << res.response.describe());
      CHECK(res.response.status == 413);
    } else {
      WARN("oversized body: no answer (" << res.what << ")");
    }
  }

  // Still healthy, and nothing changed.
  CHECK(api.http().get("/healthz").status == 200);
  CHECK(api.http().get("/readyz").status == 200);
  auto after = api.status_of("bad-check");
  CHECK(after.held);
  CHECK(after.owner == before.owner);
  CHECK(after.token == kept.token);
  CHECK(after.expires_at == before.expires_at);
  CHECK(after.last_token == before.last_token);
  auto victim = api.status_of("victim");
  CHECK_FALSE(victim.held);
  CHECK(victim.last_token.value_or(0) == 0u);
  auto listing = api.list(std::nullopt);
  REQUIRE(listing.status == 200);
  const auto& locks = listing.json->as_object().at("locks").as_array();
  CHECK(locks.size() == 1u);
  // The keeper's lease is intact: it renews with its token.
  CHECK(api.renew("bad-check", "keeper", kept.token).status == 200);
}

TEST_CASE("validation_accepts_boundary_values", "[integration]") {
  temp_dir dir;
  server_process server{dir.str()};
  lock_client api{server.port()};

  auto round_trip = [&](const std::string& name, const std::string& owner, int64_t ttl,
                        std::optional<int64_t> wait) {
    INFO("name " << name.size() << " chars, owner '" << owner << "', ttl " << ttl);
    auto l = require_lease(api.acquire(name, owner, ttl, wait));
    CHECK(l.name == name);
    CHECK(l.owner == owner);
    auto res = api.release(name, owner, l.token);
    INFO(res.describe());
    CHECK(res.status == 200);
  };

  std::string name200;
  const std::string alphabet = "ABCxyz019._:-";
  for (size_t i = 0; i < 200; ++i)
    name200.push_back(alphabet[i % alphabet.size()]);
  std::string owner128;
  for (int i = 0; i < 128; ++i)
    owner128.push_back(static_cast<char>(0x20 + i % 95)); // every printable ASCII char
  round_trip(name200, "o", 1000, 0);
  round_trip("n", owner128, 1000, 0);
  round_trip("a.b_c:d-E9", "worker 7 (eu-west)", 100, std::nullopt);
  round_trip("ttl-max", "o", 3'600'000, 300'000); // a free lock: the long wait ends at once

  // A body of exactly 16 KiB is within the limit.
  std::string body = R"({"owner":"pad","ttlMs":1000})";
  body.insert(body.size() - 1, std::string(16 * 1024 - body.size(), ' '));
  REQUIRE(body.size() == 16u * 1024u);
  auto res = api.http().request("POST", "/v1/locks/body-limit/acquire", body);
  INFO(res.describe());
  CHECK(res.status == 200);
}

TEST_CASE("slow_client_is_dropped_without_blocking_others", "[integration]") {
  temp_dir dir;
  server_process server{dir.str(), {"--header-timeout-ms", "1000"}};
  lock_client api{server.port()};

  raw_connection slow{server.port(), 30s};
  REQUIRE_FALSE(slow.send("POST /v1/locks/slow/acquire HTTP/1.1\r\nHost: x\r\n"));
  // Others are served while it dawdles.
  CHECK(api.http().get("/healthz").status == 200);
  CHECK(api.acquire("fast", "f", 1000, 0).status == 200);
  // The server gives up on it after its header timeout (1 s; generous margin).
  CHECK(slow.wait_closed(20s));
  CHECK(api.http().get("/healthz").status == 200);
}

TEST_CASE("configured_bounds_apply", "[integration]") {
  temp_dir dir;
  server_process server{dir.str(),
                        {"--ttl-min-ms", "500", "--ttl-max-ms", "5000", "--wait-max-ms", "2000"}};
  lock_client api{server.port()};

  auto check_invalid = [&](const http_response& res, const char* field) {
    INFO(res.describe());
    CHECK(res.status == 400);
    CHECK(res.error() == "invalid_request");
    CHECK(res.message().find(field) != std::string::npos);
  };
  check_invalid(api.acquire("b", "o", 499, 0), "ttlMs");
  check_invalid(api.acquire("b", "o", 5001, 0), "ttlMs");
  check_invalid(api.acquire("b", "o", 1000, 2001), "waitMs");

  auto l = require_lease(api.acquire("b", "o", 500, 2000));
  check_invalid(api.renew("b", "o", l.token, 5001), "ttlMs");
  auto r = require_lease(api.renew("b", "o", l.token, 5000));
  CHECK(r.ttl_ms == 5000);
}

namespace {

/// Sends `request` raw and returns the response; fails the test when there is none.
http_response raw_exchange(uint16_t port, const std::string& request) {
  raw_connection conn{port, std::chrono::seconds{10}};
  REQUIRE_FALSE(conn.send(request));
  auto res = conn.read_response();
  REQUIRE(res);
  return *res;
}

std::string upgrade_request(std::string_view key, std::string_view version) {
  std::string out = "GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n"
                    "Upgrade: websocket\r\n";
  if (!key.empty())
    out += "Sec-WebSocket-Key: " + std::string{key} + "\r\n";
  out += "Sec-WebSocket-Version: " + std::string{version} + "\r\n\r\n";
  return out;
}

} // namespace

TEST_CASE("websocket_handshake_errors_speak_json_like_every_other_error", "[integration]") {
  temp_dir dir;
  server_process server{dir.str()};
  SECTION("no key") {
    auto res = raw_exchange(server.port(), upgrade_request("", "13"));
    CHECK(res.status == 400);
    CHECK(res.json->at("error").as_string() == "invalid_request");
    CHECK(res.header("content-type") == "application/json");
  }
  SECTION("another protocol version") {
    auto res = raw_exchange(server.port(), upgrade_request("dGhlIHNhbXBsZSBub25jZQ==", "8"));
    CHECK(res.status == 426);
    CHECK(res.json->at("error").as_string() == "invalid_request");
    CHECK(res.header("sec-websocket-version") == "13");
  }
  SECTION("no upgrade at all") {
    auto res = raw_exchange(server.port(), raw_request("GET", "/v1/ws"));
    CHECK(res.status == 426);
    CHECK(res.json->at("error").as_string() == "invalid_request");
    CHECK(res.header("upgrade") == "websocket");
  }
  SECTION("another method") {
    auto res = raw_exchange(server.port(), raw_request("POST", "/v1/ws", std::string{"{}"}));
    CHECK(res.status == 405);
    CHECK(res.header("allow") == "GET");
    CHECK(res.json->at("error").as_string() == "method_not_allowed");
  }
}
