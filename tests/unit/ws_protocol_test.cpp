// net/ws_protocol: every WebSocket request frame is checked as strictly as the HTTP API's
// bodies, bad frames become error frames that carry the request's id when it had a usable one,
// and the frames out have the documented shapes.

#include <catch2/catch.hpp>

#include <string>
#include <variant>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "fencelock/errc.hpp"
#include "net/json.hpp"
#include "net/ws_protocol.hpp"

namespace json = boost::json;
using namespace fencelock;
using namespace fencelock::net;

namespace {

const config cfg{};

ws_request accepted(const std::string& text) {
  auto result = parse_ws_request(text, cfg);
  if (auto* r = std::get_if<ws_rejection>(&result))
    FAIL(text << " was rejected: " << error_message(r->error));
  return std::get<ws_request>(result);
}

ws_rejection rejected(const std::string& text) {
  auto result = parse_ws_request(text, cfg);
  REQUIRE(std::holds_alternative<ws_rejection>(result));
  auto r = std::get<ws_rejection>(result);
  errc code;
  REQUIRE(as_errc(r.error, code));
  CHECK(code == errc::invalid_request);
  return r;
}

json::object frame(const std::string& text) {
  return json::parse(text).as_object();
}

} // namespace

TEST_CASE("every op parses into its request") {
  auto acquire = accepted(
    R"({"id":"a1","op":"acquire","lock":"jobs:r","owner":"w1","ttlMs":30000,"waitMs":50,"session":true})");
  CHECK(acquire.id == json::value("a1"));
  auto& a = std::get<ws_acquire>(acquire.call);
  CHECK(a.req.name == "jobs:r");
  CHECK(a.req.owner == "w1");
  CHECK(a.req.ttl_ms == 30000);
  CHECK(a.req.wait_ms == 50);
  CHECK(a.session);
  auto renew = accepted(R"({"id":7,"op":"renew","lock":"l","owner":"w","token":42})");
  CHECK(std::get<renew_request>(renew.call).token == 42);
  CHECK(std::get<renew_request>(renew.call).ttl_ms == 0);
  auto release = accepted(R"({"id":8,"op":"release","lock":"l","owner":"w","token":42})");
  CHECK_FALSE(std::get<release_request>(release.call).session_closed); // never from the wire
  CHECK_FALSE(std::get<release_request>(release.call).force);
  auto force = accepted(R"({"id":8,"op":"release","lock":"l","force":true})");
  CHECK(std::get<release_request>(force.call).force);
  CHECK(std::get<release_request>(force.call).token == 0);
  CHECK(std::get<ws_status>(accepted(R"({"id":9,"op":"status","lock":"l"})").call).name == "l");
  CHECK(std::get<check_request>(accepted(R"({"id":9,"op":"check","lock":"l","token":3})").call)
          .token
        == 3);
  auto by_name = std::get<ws_subscribe>(accepted(R"({"id":1,"op":"subscribe","lock":"l"})").call);
  CHECK(by_name.req.exact);
  auto by_prefix = std::get<ws_subscribe>(accepted(R"({"id":1,"op":"subscribe","prefix":""})").call);
  CHECK_FALSE(by_prefix.req.exact);
  CHECK(std::get<ws_unsubscribe>(accepted(R"({"id":1,"op":"unsubscribe","subscription":4})").call)
          .subscription
        == 4);
}

TEST_CASE("a frame that is not a request is refused without an id") {
  for (auto text : {"not json", "[1,2]", R"({"op":"status","lock":"l"})",
                    R"({"id":null,"op":"status","lock":"l"})", R"({"id":-1,"op":"status"})",
                    R"({"id":"","op":"status"})", R"({"id":1.5,"op":"status"})"}) {
    CAPTURE(text);
    CHECK(rejected(text).id.is_null());
  }
}

TEST_CASE("a bad request is refused with its id and the field named") {
  struct sample {
    const char* text;
    const char* field;
  };
  for (auto [text, field] : {
         sample{R"({"id":1})", "op"},
         sample{R"({"id":1,"op":"steal","lock":"l"})", "op"},
         sample{R"({"id":1,"op":7})", "op"},
         sample{R"({"id":1,"op":"acquire","lock":"l","owner":"w"})", "ttlMs"},
         sample{R"({"id":1,"op":"acquire","lock":"l","owner":"w","ttlMs":1})", "ttlMs"},
         sample{R"({"id":1,"op":"acquire","lock":"l","owner":"w","ttlMs":1000,"session":1})",
                "session"},
         sample{R"({"id":1,"op":"acquire","lock":"a b","owner":"w","ttlMs":1000})", "lock"},
         sample{R"({"id":1,"op":"acquire","lock":"l","owner":"w","ttlMs":1000,"x":1})", "x"},
         sample{R"({"id":1,"op":"renew","lock":"l","owner":"w","token":0})", "token"},
         sample{R"({"id":1,"op":"release","lock":"l","owner":"w"})", "token"},
         sample{R"({"id":1,"op":"status"})", "lock"},
         sample{R"({"id":1,"op":"subscribe"})", "lock"},
         sample{R"({"id":1,"op":"subscribe","lock":"l","prefix":"p"})", "lock"},
         sample{R"({"id":1,"op":"subscribe","prefix":"a b"})", "prefix"},
         sample{R"({"id":1,"op":"unsubscribe"})", "subscription"},
       }) {
    CAPTURE(text);
    auto r = rejected(text);
    CHECK(r.id == json::value(1));
    CHECK(error_message(r.error).starts_with(std::string{field} + ":"));
  }
}

TEST_CASE("a frame that names a field twice is refused, with its id unless the id repeats") {
  auto r = rejected(R"({"id":3,"op":"acquire","lock":"l","owner":"w","ttlMs":1000,"ttlMs":2000})");
  CHECK(r.id == json::value(3));
  CHECK(error_message(r.error) == "ttlMs: given more than once");
  auto twice = rejected(R"({"id":3,"id":4,"op":"status","lock":"l"})");
  CHECK(twice.id.is_null());
  CHECK(error_message(twice.error).starts_with("id:"));
}

TEST_CASE("answers carry the request's id; errors carry the HTTP API's code") {
  lease l{"jobs:r", "w1", 42, 30000, 1700000000000};
  auto granted = frame(granted_frame(json::value("a1"), l));
  CHECK(granted.at("type") == "granted");
  CHECK(granted.at("id") == "a1");
  CHECK(granted.at("result").at("token") == 42);
  auto reply = frame(reply_frame(json::value(7), "release", json::object{{"released", true}}));
  CHECK(reply.at("type") == "reply");
  CHECK(reply.at("id") == 7);
  CHECK(reply.at("op") == "release");
  CHECK(reply.at("result").at("released") == true);
  // Written directly, byte for byte what serializing the frame's object gives.
  json::value id{"a\"1"};
  CHECK(granted_frame(id, l)
        == json::serialize(json::object{
          {"type", "granted"}, {"id", id}, {"result", json::parse(net::lease_json(l))}}));
  CHECK(reply_frame_text(json::value(7), "release", R"({"released":true})")
        == json::serialize(json::object{{"type", "reply"},
                                        {"id", 7},
                                        {"op", "release"},
                                        {"result", {{"released", true}}}}));
  auto held = frame(error_frame(json::value(3), caf::make_error(errc::lock_held, std::string{"w2"},
                                                                int64_t{1700000000000})));
  CHECK(held.at("type") == "error");
  CHECK(held.at("id") == 3);
  CHECK(held.at("error") == "lock_held");
  CHECK(held.at("holder").at("owner") == "w2");
  auto busy = frame(error_frame(nullptr, caf::make_error(errc::overloaded, std::string{"busy"})));
  CHECK_FALSE(busy.contains("id"));
  CHECK(busy.at("retryAfterMs").as_int64() > 0);
}

TEST_CASE("pushes have the documented shapes") {
  lock_event ev{.kind = lock_event_kind::expired,
                .name = "jobs:r",
                .owner = "w1",
                .token = 42,
                .revision = 3,
                .expires_at_ms = 0,
                .at_ms = 1700000000000,
                .cause = lease_end_cause::expired};
  auto lost = frame(lease_lost_frame(ev));
  CHECK(lost.at("type") == "lease_lost");
  CHECK(lost.at("lock") == "jobs:r");
  CHECK(lost.at("token") == 42);
  CHECK(lost.at("cause") == "expired");
  CHECK_FALSE(lost.contains("id"));
  auto ended = frame(lock_event_frame(5, ev));
  CHECK(ended.at("type") == "lock_event");
  CHECK(ended.at("subscription") == 5);
  CHECK(ended.at("event") == "expired");
  CHECK(ended.at("revision") == 3);
  CHECK(ended.at("cause") == "expired");
  CHECK_FALSE(ended.contains("expiresAt"));
  ev.kind = lock_event_kind::renewed;
  ev.expires_at_ms = 1700000030000;
  auto renewed = frame(lock_event_frame(5, ev));
  CHECK(renewed.at("expiresAt") == 1700000030000);
  CHECK_FALSE(renewed.contains("cause"));
}
