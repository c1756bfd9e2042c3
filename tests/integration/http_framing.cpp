// HTTP on the wire, over raw sockets so that the bytes are exactly these. A request body is read
// however it arrives: with its header in one segment (parsed from the buffer at once), after it,
// chunked, behind Expect: 100-continue, or pipelined with the next request. A response is
// written whole whether it fits in the socket's buffers (sent at once) or not (the rest is sent
// as the client reads).

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include <cstdio>
#include <optional>
#include <string>

#include "support/http_client.hpp"
#include "support/lock_api.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

namespace {

std::string acquire_head(const std::string& name, std::string_view extra_fields) {
  return "POST /v1/locks/" + name + "/acquire HTTP/1.1\r\nHost: x\r\n"
         + "Content-Type: application/json\r\n" + std::string{extra_fields} + "\r\n";
}

std::string body_for(const std::string& owner) {
  return R"({"owner":")" + owner + R"(","ttlMs":60000})";
}

std::string length_field(const std::string& body) {
  return "Content-Length: " + std::to_string(body.size()) + "\r\n";
}

/// Checks that `res` grants `name` to `owner`.
void check_granted(const std::optional<http_response>& res, const std::string& name,
                   const std::string& owner) {
  REQUIRE(res.has_value());
  INFO("got: " << res->describe());
  REQUIRE(res->status == 200);
  REQUIRE(res->json.has_value());
  const auto& lease = res->json->as_object();
  CHECK(lease.at("name").as_string() == name);
  CHECK(lease.at("owner").as_string() == owner);
  CHECK(lease.at("token").to_number<uint64_t>() > 0);
}

} // namespace

TEST_CASE("request_bodies_are_read_however_they_arrive", "[integration]") {
  temp_dir dir;
  server_process server{dir.str()};
  lock_client api{server.port()};

  SECTION("header and body in one write") {
    raw_connection conn{server.port(), 15s};
    auto body = body_for("one");
    REQUIRE_FALSE(conn.send(acquire_head("together", length_field(body)) + body));
    check_granted(conn.read_response(), "together", "one");
  }

  SECTION("the body after the header, in a second write") {
    raw_connection conn{server.port(), 15s};
    auto body = body_for("two");
    REQUIRE_FALSE(conn.send(acquire_head("apart", length_field(body))));
    // Half a body is no request: the server waits for the rest and answers nothing yet.
    REQUIRE_FALSE(conn.send(body.substr(0, 10)));
    CHECK_FALSE(conn.readable(300ms));
    REQUIRE_FALSE(conn.send(body.substr(10)));
    check_granted(conn.read_response(), "apart", "two");
  }

  SECTION("a chunked body") {
    raw_connection conn{server.port(), 15s};
    auto body = body_for("three");
    auto half = body.size() / 2;
    auto chunk = [](std::string_view part) {
      char size[16];
      std::snprintf(size, sizeof size, "%zx\r\n", part.size());
      return std::string{size} + std::string{part} + "\r\n";
    };
    REQUIRE_FALSE(conn.send(acquire_head("chunked", "Transfer-Encoding: chunked\r\n")
                            + chunk(std::string_view{body}.substr(0, half))
                            + chunk(std::string_view{body}.substr(half)) + "0\r\n\r\n"));
    check_granted(conn.read_response(), "chunked", "three");
  }

  SECTION("a body sent after 100 Continue") {
    raw_connection conn{server.port(), 15s};
    auto body = body_for("four");
    REQUIRE_FALSE(
      conn.send(acquire_head("continued", length_field(body) + "Expect: 100-continue\r\n")));
    auto interim = conn.read_response();
    REQUIRE(interim.has_value());
    CHECK(interim->status == 100);
    REQUIRE_FALSE(conn.send(body));
    check_granted(conn.read_response(), "continued", "four");
  }

  SECTION("two requests with bodies in one write, answered in order") {
    raw_connection conn{server.port(), 15s};
    auto first = body_for("five");
    auto second = body_for("six");
    REQUIRE_FALSE(conn.send(acquire_head("pipelined-1", length_field(first)) + first
                            + acquire_head("pipelined-2", length_field(second)) + second));
    check_granted(conn.read_response(), "pipelined-1", "five");
    check_granted(conn.read_response(), "pipelined-2", "six");
  }

  SECTION("a malformed chunk in the buffered body is a 400 and grants nothing") {
    raw_connection conn{server.port(), 15s};
    REQUIRE_FALSE(conn.send(acquire_head("bad-chunk", "Transfer-Encoding: chunked\r\n")
                            + "zz\r\n{}\r\n0\r\n\r\n"));
    auto res = conn.read_response();
    REQUIRE(res.has_value());
    CHECK(res->status == 400);
    CHECK_FALSE(api.status_of("bad-chunk").held);
  }
}

TEST_CASE("responses_reach_a_client_that_reads_late_whole_and_in_order", "[integration]") {
  temp_dir dir;
  server_process server{dir.str()};
  http_client client{server.port()};
  auto script = client.get("/dashboard/app.js");
  REQUIRE(script.status == 200);
  REQUIRE(script.body.size() > 4096);

  // Far more response bytes than loopback buffers hold, asked for in one write and not read
  // yet: the server's writes stop fitting and continue as the client reads.
  constexpr int requests = 1000;
  std::string pipelined;
  for (int i = 0; i < requests; ++i)
    pipelined += "GET /dashboard/app.js HTTP/1.1\r\nHost: x\r\n\r\n";
  pipelined += "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  raw_connection conn{server.port(), 60s};
  REQUIRE_FALSE(conn.send(pipelined));
  int whole = 0;
  for (int i = 0; i < requests; ++i) {
    auto res = conn.read_response();
    if (!res || res->status != 200 || res->body != script.body)
      break;
    ++whole;
  }
  CHECK(whole == requests);
  auto last = conn.read_response();
  REQUIRE(last.has_value());
  CHECK(last->status == 200);
  CHECK(last->header("connection") == "close");
  CHECK(conn.wait_closed(30s));
}
