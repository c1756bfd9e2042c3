// The pure parts of the Redis store: the URL of --store (and that its password never shows),
// RESP encoding, the decoding of script answers, and the events the scripts publish.

#include <catch2/catch.hpp>

#include "actors/store/redis/connection.hpp"
#include "actors/store/redis/redis_store.hpp"
#include "actors/store/redis/scripts.hpp"
#include "common/redis_url.hpp"

using namespace fencelock;
using namespace fencelock::redis;

namespace {

value str(std::string s) {
  value v;
  v.type = value::kind::string;
  v.str = std::move(s);
  return v;
}

value array(std::vector<value> xs) {
  value v;
  v.type = value::kind::array;
  v.elements = std::move(xs);
  return v;
}

} // namespace

TEST_CASE("redis_urls_parse_with_defaults_credentials_and_database", "[unit][redis]") {
  std::string why;
  auto a = parse_url("redis://localhost", why);
  REQUIRE(a);
  CHECK(a->host == "localhost");
  CHECK(a->port == 6379);
  CHECK(a->db == 0u);
  CHECK(a->password.empty());

  auto b = parse_url("redis://:s3cret@10.0.0.5:6380/2", why);
  REQUIRE(b);
  CHECK(b->host == "10.0.0.5");
  CHECK(b->port == 6380);
  CHECK(b->db == 2u);
  CHECK(b->user.empty());
  CHECK(b->password == "s3cret");

  auto c = parse_url("redis://app:p%40ss%3Aword@[::1]:7000/1", why);
  REQUIRE(c);
  CHECK(c->host == "::1");
  CHECK(c->port == 7000);
  CHECK(c->user == "app");
  CHECK(c->password == "p@ss:word");

  auto d = parse_url("redis://justapassword@host", why);
  REQUIRE(d);
  CHECK(d->user.empty());
  CHECK(d->password == "justapassword");
}

TEST_CASE("bad_redis_urls_are_refused_with_a_reason", "[unit][redis]") {
  for (const char* bad : {"http://host", "redis://", "redis://:pw@", "redis://host:", "redis://host:0",
                          "redis://host:70000", "redis://host:12ab", "redis://host/x",
                          "redis://[::1", "redis://u:%zz@host"}) {
    INFO(bad);
    std::string why;
    CHECK_FALSE(parse_url(bad, why));
    CHECK_FALSE(why.empty());
  }
}

TEST_CASE("redis_passwords_never_appear_in_what_is_logged", "[unit][redis]") {
  std::string why;
  auto ep = parse_url("redis://app:hunter2@cache:6380/3", why);
  REQUIRE(ep);
  auto shown = redacted(*ep);
  CHECK(shown == "redis://app:***@cache:6380/3");
  CHECK(redacted_text("redis://app:hunter2@cache:6380/3") == "redis://***@cache:6380/3");
  // Also a value that does not parse: a typo must not print the secret either.
  CHECK(redacted_text("redis://:hunter2@@cache:x") == "redis://***@cache:x");
  CHECK(redacted_text("embedded") == "embedded");
}

TEST_CASE("commands_are_encoded_as_resp_bulk_strings", "[unit][redis]") {
  CHECK(encode({"GET", "k"}) == "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
  // Binary safe: CR LF inside an argument is counted, not interpreted.
  CHECK(encode({"SET", "a\r\nb", ""}) == "*3\r\n$3\r\nSET\r\n$4\r\na\r\nb\r\n$0\r\n\r\n");
}

TEST_CASE("script_answers_decode_into_leases", "[unit][redis]") {
  std::string why;
  auto granted = decode_lease(
    array({str("granted"), str("w1"), str("1796001630659429"), str("2000"), str("2000"), str("0"),
           str("1796001632659")}),
    why);
  REQUIRE(granted);
  CHECK(granted->status == "granted");
  CHECK(granted->owner == "w1");
  CHECK(granted->token == 1796001630659429u); // 16 digits survive the trip
  CHECK(granted->ttl_ms == 2000);
  CHECK(granted->remaining_ms == 2000);
  CHECK(granted->revision == 0u);
  CHECK(granted->deadline_ms == 1796001632659);

  auto lost = decode_lease(array({str("lost")}), why);
  REQUIRE(lost);
  CHECK(lost->status == "lost");

  value err;
  err.type = value::kind::error;
  err.str = "ERR fencing tokens exhausted";
  CHECK_FALSE(decode_lease(err, why));
  CHECK(why == "ERR fencing tokens exhausted");

  CHECK_FALSE(decode_lease(
    array({str("ok"), str("w1"), str("x"), str("1"), str("1"), str("0"), str("5")}), why));
  CHECK_FALSE(decode_lease(array({str("ok"), str("w1"), str("1"), str("1"), str("1"), str("0")}),
                           why)); // a field short
  CHECK_FALSE(decode_lease(str("ok"), why));
  // Numbers no script answers are malformed rather than a lease: the backend's deadline
  // arithmetic on them would overflow (found by fuzz/fuzz_redis_reply.cpp).
  CHECK_FALSE(decode_lease(array({str("ok"), str("w1"), str("1"), str("1"),
                                  str("9223372036854775807"), str("0"), str("5")}),
                           why));
  CHECK(why == "malformed lease reply");
  CHECK_FALSE(decode_lease(array({str("ok"), str("w1"), str("9007199254740992"), str("1"),
                                  str("1"), str("0"), str("5")}),
                           why));
  CHECK_FALSE(decode_lease(array({array({})}), why));
  value empty_error;
  empty_error.type = value::kind::error;
  why.clear();
  CHECK_FALSE(decode_lease(empty_error, why));
  CHECK_FALSE(why.empty());

  auto listed = decode_list(array({str("a"), str("w1"), str("5"), str("100"), str("90"), str("3"),
                                   str("1000"), str("b"), str("w2"), str("6"), str("100"), str("10"),
                                   str("0"), str("2000")}),
                            why);
  REQUIRE(listed);
  REQUIRE(listed->size() == 2u);
  CHECK((*listed)[0].name == "a");
  CHECK((*listed)[0].status == "held");
  CHECK((*listed)[0].revision == 3u);
  CHECK((*listed)[1].owner == "w2");
  CHECK((*listed)[1].deadline_ms == 2000);
  CHECK_FALSE(decode_list(array({str("a"), str("w1")}), why));
}

TEST_CASE("published_events_parse_into_lock_events", "[unit][redis]") {
  auto acquired = parse_store_event(
    R"({"kind":"acquired","name":"jobs:a","owner":"w1","token":"1796001630659429",)"
    R"("revision":"0","expires_at_ms":"1796001632659","at_ms":"1796001630659"})");
  REQUIRE(acquired);
  CHECK(acquired->kind == lock_event_kind::acquired);
  CHECK(acquired->name == "jobs:a");
  CHECK(acquired->token == 1796001630659429u);
  CHECK(acquired->expires_at_ms == 1796001632659);

  auto expired = parse_store_event(
    R"({"kind":"expired","name":"jobs:a","owner":"w1","token":"7","revision":"4",)"
    R"("expires_at_ms":"1796001632659","at_ms":"1796001632660","cause":"undelivered"})");
  REQUIRE(expired);
  CHECK(expired->kind == lock_event_kind::expired);
  CHECK(expired->cause == lease_end_cause::undelivered);
  CHECK(expired->revision == 4u);
  CHECK(expired->expires_at_ms == 0); // an ended lease has no deadline

  // Anything else on the channel is ignored, never half-read.
  CHECK_FALSE(parse_store_event("not json"));
  CHECK_FALSE(parse_store_event(R"({"kind":"acquired","name":"a","owner":"w","token":7})"));
  CHECK_FALSE(parse_store_event(
    R"({"kind":"stolen","name":"a","owner":"w","token":"7","revision":"0","expires_at_ms":"1","at_ms":"1"})"));
  CHECK_FALSE(parse_store_event(
    R"({"kind":"released","name":"a","owner":"w","token":"7","revision":"1","expires_at_ms":"1","at_ms":"1"})"));
  // A kind and a cause that no script pairs: a holder would miss its lease_lost.
  CHECK_FALSE(parse_store_event(
    R"({"kind":"expired","name":"a","owner":"w","token":"7","revision":"1","expires_at_ms":"1",)"
    R"("at_ms":"1","cause":"released"})"));
  CHECK_FALSE(parse_store_event(
    R"({"kind":"released","name":"a","owner":"w","token":"7","revision":"1","expires_at_ms":"1",)"
    R"("at_ms":"1","cause":"expired"})"));
}
