// The client's reading of URLs and server frames (docs/websocket-api.md), without a socket.

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include <boost/json/parse.hpp>

#include "client/endpoint.hpp"
#include "client/wire.hpp"
// Every public header in one translation unit: a host program may embed the service and use the
// client at once, so no two of them may define the same name. (They once both defined
// fencelock::lock_event; the fencelock binary, which links both, crashed in its destructor.)
#include "fencelock/client.hpp"
#include "fencelock/config.hpp"
#include "fencelock/events.hpp"
#include "fencelock/fence_guard.hpp"
#include "fencelock/service.hpp"
#include "fencelock/types.hpp"
#include "fencelock/validate.hpp"

using namespace fencelock;
using namespace fencelock::detail;

namespace {

boost::json::object frame(std::string_view text) {
  return boost::json::parse(text).as_object();
}

std::optional<endpoint> parse(std::string_view url) {
  std::string why;
  auto ep = parse_endpoint(url, why);
  INFO(url << ": " << why);
  CHECK(ep.has_value() == why.empty());
  return ep;
}

} // namespace

TEST_CASE("client urls", "[client][wire]") {
  auto ep = parse("http://127.0.0.1:7070");
  REQUIRE(ep);
  CHECK(ep->host == "127.0.0.1");
  CHECK(ep->port == "7070");
  CHECK(ep->target == "/v1/ws");
  CHECK(ep->host_header() == "127.0.0.1:7070");

  ep = parse("ws://locks.internal:80/");
  REQUIRE(ep);
  CHECK(ep->host == "locks.internal");
  CHECK(ep->target == "/v1/ws");

  ep = parse("ws://h:1/v1/ws");
  REQUIRE(ep);
  CHECK(ep->target == "/v1/ws");

  ep = parse("http://gw:8080/locks/"); // a proxy's prefix is kept
  REQUIRE(ep);
  CHECK(ep->target == "/locks/v1/ws");

  ep = parse("http://h"); // default port
  REQUIRE(ep);
  CHECK(ep->port == "80");

  ep = parse("http://[::1]:7070");
  REQUIRE(ep);
  CHECK(ep->host == "::1");
  CHECK(ep->host_header() == "[::1]:7070");

  ep = parse("https://locks.example.com"); // TLS, default port 443
  REQUIRE(ep);
  CHECK(ep->tls);
  CHECK(ep->port == "443");
  ep = parse("wss://h:8443/gw");
  REQUIRE(ep);
  CHECK(ep->tls);
  CHECK(ep->target == "/gw/v1/ws");
  CHECK_FALSE(parse("ws://h:1")->tls);

  for (auto bad : {"127.0.0.1:7070", "ftp://h:1", "httpss://h:1", "http://:7070", "http://h:0",
                   "http://h:70000", "http://h:x", "http://::1:7070", "http://[::1", "",
                   "http://h:1/a?b"}) {
    std::string why;
    INFO(bad);
    CHECK_FALSE(parse_endpoint(bad, why).has_value());
    CHECK_FALSE(why.empty());
  }
}

TEST_CASE("answers: reply, granted, error", "[client][wire]") {
  auto a = decode_answer(frame(R"({"type":"reply","id":7,"op":"renew","result":{"name":"a",
    "owner":"w1","token":42,"ttlMs":30000,"expiresAt":1795000000000}})"));
  REQUIRE(a.ok());
  auto l = decode_lease(*a.result);
  REQUIRE(l);
  CHECK(l->name == "a");
  CHECK(l->owner == "w1");
  CHECK(l->token == 42u);
  CHECK(l->ttl_ms == 30000);
  CHECK(l->expires_at_ms == 1795000000000);

  a = decode_answer(frame(R"({"type":"granted","id":"a1","result":{"released":true}})"));
  CHECK(a.ok());
  CHECK_FALSE(decode_lease(*a.result)); // not a lease

  a = decode_answer(frame(R"({"type":"error","id":"a1","error":"lock_held","message":"held",
    "holder":{"owner":"w2","expiresAt":1795000000000},"retryAfterMs":250})"));
  REQUIRE_FALSE(a.ok());
  CHECK(a.error->code() == "lock_held");
  CHECK(std::string{a.error->what()} == "held");
  REQUIRE(a.error->holder());
  CHECK(a.error->holder()->owner == "w2");
  CHECK(a.error->retry_after() == std::chrono::milliseconds{250});

  a = decode_answer(frame(R"({"type":"reply","id":1})"));
  REQUIRE_FALSE(a.ok());
  CHECK(a.error->code() == "protocol_error");
}

TEST_CASE("frame ids: only integers this client sends", "[client][wire]") {
  CHECK(frame_id(frame(R"({"id":5})")) == 5u);
  CHECK_FALSE(frame_id(frame(R"({"id":"a1"})")));
  CHECK_FALSE(frame_id(frame(R"({"id":-1})")));
  CHECK_FALSE(frame_id(frame(R"({"type":"error"})")));
}

TEST_CASE("status, events and lease_lost pushes", "[client][wire]") {
  auto st = decode_status(boost::json::parse(
    R"({"name":"a","held":true,"owner":"w","token":3,"expiresAt":9,"waiters":1,"lastToken":3})"));
  REQUIRE(st);
  CHECK(st->held);
  CHECK(st->owner == "w");
  CHECK(st->token == 3u);
  CHECK(st->waiters == 1u);
  CHECK(st->last_token == 3u);
  st = decode_status(boost::json::parse(R"({"name":"a","held":false,"waiters":0,"lastToken":0})"));
  REQUIRE(st);
  CHECK_FALSE(st->held);
  CHECK(st->owner.empty());
  CHECK_FALSE(decode_status(boost::json::parse(R"({"held":false})")));

  auto e = decode_event(frame(R"({"type":"lock_event","subscription":3,"event":"released",
    "lock":"j","owner":"w1","token":42,"revision":2,"at":17,"cause":"session_closed"})"));
  REQUIRE(e);
  CHECK(e->event == "released");
  CHECK(e->token == 42u);
  CHECK(e->revision == 2u);
  CHECK_FALSE(e->expires_at_ms);
  CHECK(e->cause == "session_closed");

  auto p = decode_lease_lost(frame(
    R"({"type":"lease_lost","lock":"j","owner":"w1","token":42,"cause":"undelivered"})"));
  REQUIRE(p);
  CHECK(p->lock == "j");
  CHECK(p->token == 42u);
  CHECK(loss_cause_of_push(p->cause) == loss_cause::undelivered);
  CHECK(loss_cause_of_push("expired") == loss_cause::expired);
  CHECK(loss_cause_of_push("session_closed") == loss_cause::session_closed);
  CHECK(loss_cause_of_push("store_lost") == loss_cause::store_lost);
  CHECK(std::string{to_string(loss_cause::store_lost)} == "store_lost");
  CHECK(std::string{to_string(loss_cause::deadline)} == "deadline");
}

TEST_CASE("the hello's idle timeout is read when it is there and sane", "[client]") {
  using fencelock::detail::hello_idle_timeout;
  auto hello = [](boost::json::value limits) {
    return boost::json::object{{"type", "hello"}, {"limits", std::move(limits)}};
  };
  CHECK(hello_idle_timeout(hello(boost::json::object{{"idleTimeoutMs", 30'000}}))
        == std::chrono::milliseconds{30'000});
  CHECK_FALSE(hello_idle_timeout(boost::json::object{{"type", "hello"}}));
  CHECK_FALSE(hello_idle_timeout(hello(boost::json::object{{"maxFrame", 16384}})));
  CHECK_FALSE(hello_idle_timeout(hello(boost::json::object{{"idleTimeoutMs", 0}})));
  CHECK_FALSE(hello_idle_timeout(hello(boost::json::object{{"idleTimeoutMs", -5}})));
  CHECK_FALSE(hello_idle_timeout(hello(boost::json::object{{"idleTimeoutMs", "30000"}})));
  CHECK_FALSE(hello_idle_timeout(hello("30000")));
}
