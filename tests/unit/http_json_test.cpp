// net/routes and net/json: routing, the boundary checks of every request, and the JSON shapes of
// the answers. No sockets: route() is a pure function of method, target, body and config.

#include <catch2/catch.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <variant>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_to.hpp>

#include "common/json_writer.hpp"
#include "fencelock/config.hpp"
#include "fencelock/owner.hpp"
#include "net/json.hpp"
#include "net/json_reader.hpp"
#include "net/routes.hpp"

namespace http = boost::beast::http;
using fencelock::net::reply;
using fencelock::net::route;
using fencelock::net::route_result;
using fencelock::net::service_call;

namespace {

const fencelock::config cfg{};

reply expect_reply(const route_result& result) {
  REQUIRE(std::holds_alternative<reply>(result));
  return std::get<reply>(result);
}

template <class Request>
Request expect_call(const route_result& result) {
  if (const auto* r = std::get_if<reply>(&result))
    FAIL("expected a call, got " << boost::json::serialize(r->body));
  const auto& call = std::get<service_call>(result);
  REQUIRE(std::holds_alternative<Request>(call));
  return std::get<Request>(call);
}

std::string text(const reply& r, const char* key) {
  return boost::json::value_to<std::string>(r.body.at(key));
}

/// Checks that `result` is 400 invalid_request with a message that starts with "<field>:".
void expect_invalid(const route_result& result, const std::string& field) {
  auto r = expect_reply(result);
  CHECK(r.status == http::status::bad_request);
  CHECK(text(r, "error") == "invalid_request");
  auto message = text(r, "message");
  CAPTURE(message);
  CHECK(message.rfind(field + ":", 0) == 0);
}

route_result post(const std::string& target, const std::string& body) {
  return route(http::verb::post, target, body, cfg, true);
}

route_result get(const std::string& target) {
  return route(http::verb::get, target, "", cfg, true);
}

} // namespace

// --- routing -----------------------------------------------------------------------------------

TEST_CASE("routes answer the probes", "[net]") {
  auto health = expect_reply(get("/healthz"));
  CHECK(health.status == http::status::ok);
  CHECK(text(health, "status") == "ok");

  auto ready = expect_reply(route(http::verb::get, "/readyz", "", cfg, true));
  CHECK(ready.status == http::status::ok);
  CHECK(ready.body.at("ready").as_bool());

  auto not_ready = expect_reply(route(http::verb::get, "/readyz", "", cfg, false));
  CHECK(not_ready.status == http::status::service_unavailable);
  CHECK_FALSE(not_ready.body.at("ready").as_bool());
}

TEST_CASE("routes answer unknown paths with 404", "[net]") {
  for (const char* target : {"/", "/v1", "/v1/lockz", "/v1/locks/a/steal", "/v1/locks/a/acquire/x",
                             "/healthz/", "http://host/healthz", "*"}) {
    CAPTURE(target);
    auto r = expect_reply(get(target));
    CHECK(r.status == http::status::not_found);
    CHECK(text(r, "error") == "not_found");
  }
}

TEST_CASE("routes answer a wrong method with 405 and Allow", "[net]") {
  auto on_acquire = expect_reply(get("/v1/locks/a/acquire"));
  CHECK(on_acquire.status == http::status::method_not_allowed);
  CHECK(text(on_acquire, "error") == "method_not_allowed");
  CHECK(on_acquire.allow == "POST");

  auto on_status = expect_reply(post("/v1/locks/a", "{}"));
  CHECK(on_status.status == http::status::method_not_allowed);
  CHECK(on_status.allow == "GET");

  auto on_list = expect_reply(route(http::verb::delete_, "/v1/locks", "", cfg, true));
  CHECK(on_list.allow == "GET");
  auto on_health = expect_reply(route(http::verb::unknown, "/healthz", "", cfg, true));
  CHECK(on_health.status == http::status::method_not_allowed);
}

// --- acquire -----------------------------------------------------------------------------------

TEST_CASE("routes parse an acquire", "[net]") {
  auto req = expect_call<fencelock::acquire_request>(
    post("/v1/locks/jobs:report-1/acquire", R"({"owner":"worker 1","ttlMs":30000,"waitMs":500})"));
  CHECK(req.name == "jobs:report-1");
  CHECK(req.owner == "worker 1");
  CHECK(req.ttl_ms == 30000);
  CHECK(req.wait_ms == 500);
  CHECK(req.request_id == 0); // the session assigns it

  auto no_wait = expect_call<fencelock::acquire_request>(
    post("/v1/locks/a/acquire", R"({"owner":"w","ttlMs":100})"));
  CHECK(no_wait.wait_ms == 0);
}

TEST_CASE("routes refuse bad acquire bodies, naming the field", "[net]") {
  struct bad_case {
    const char* body;
    const char* field;
  };
  const bad_case cases[] = {
    {"", "body"},
    {"not json", "body"},
    {R"({"owner":"w","ttlMs":100)", "body"},
    {R"({"owner":"w","ttlMs":100} x)", "body"},
    {"[]", "body"},
    {"42", "body"},
    {"null", "body"},
    {R"("owner")", "body"},
    {R"({"ttlMs":100})", "owner"},
    {R"({"owner":"w"})", "ttlMs"},
    {R"({"owner":1,"ttlMs":100})", "owner"},
    {R"({"owner":"","ttlMs":100})", "owner"},
    {R"({"owner":"a\nb","ttlMs":100})", "owner"},
    {R"({"owner":"\u00e9","ttlMs":100})", "owner"},
    {R"({"owner":null,"ttlMs":100})", "owner"},
    {R"({"owner":"w","ttlMs":1.5})", "ttlMs"},
    {R"({"owner":"w","ttlMs":1e3})", "ttlMs"},
    {R"({"owner":"w","ttlMs":1000.0})", "ttlMs"},
    {R"({"owner":"w","ttlMs":"1000"})", "ttlMs"},
    {R"({"owner":"w","ttlMs":true})", "ttlMs"},
    {R"({"owner":"w","ttlMs":null})", "ttlMs"},
    {R"({"owner":"w","ttlMs":[1000]})", "ttlMs"},
    {R"({"owner":"w","ttlMs":99})", "ttlMs"},
    {R"({"owner":"w","ttlMs":3600001})", "ttlMs"},
    {R"({"owner":"w","ttlMs":-1000})", "ttlMs"},
    {R"({"owner":"w","ttlMs":18446744073709551615})", "ttlMs"},
    {R"({"owner":"w","ttlMs":99999999999999999999999})", "ttlMs"},
    {R"({"owner":"w","ttlMs":1000,"waitMs":-1})", "waitMs"},
    {R"({"owner":"w","ttlMs":1000,"waitMs":300001})", "waitMs"},
    {R"({"owner":"w","ttlMs":1000,"waitMs":0.5})", "waitMs"},
    {R"({"owner":"w","ttlMs":1000,"token":1})", "token"},
    {R"({"owner":"w","ttlMs":1000,"name":"a"})", "name"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.body);
    expect_invalid(post("/v1/locks/a/acquire", c.body), c.field);
  }
}

TEST_CASE("routes refuse a body that names a field twice, naming it", "[net]") {
  // JSON leaves duplicates undefined and Boost.JSON keeps the last: 2000 must not win quietly.
  expect_invalid(post("/v1/locks/a/acquire", R"({"owner":"w","ttlMs":1000,"ttlMs":2000})"),
                 "ttlMs");
  expect_invalid(post("/v1/locks/a/acquire", R"({"owner":"w","owner":"w","ttlMs":1000})"),
                 "owner");
  expect_invalid(post("/v1/locks/a/renew", R"({"owner":"w","token":1,"token":1})"), "token");
  expect_invalid(post("/v1/locks/a/check", R"({"token":1,"token":2})"), "token");
  auto r = expect_reply(post("/v1/locks/a/acquire", R"({"owner":"w","ttlMs":1000,"ttlMs":2000})"));
  CHECK(text(r, "message") == "ttlMs: given more than once");
  // Equal keys in different objects are not duplicates; neither are keys that differ in case.
  CHECK(fencelock::net::duplicate_key(R"({"a":{"a":1},"b":[{"a":1},{"a":2}],"A":1})")
        == std::nullopt);
  CHECK(fencelock::net::duplicate_key(R"({"a":{"b":1,"b":2}})") == "b");
  CHECK(fencelock::net::duplicate_key(R"({"\u0061":1,"a":2})") == "a"); // escapes decoded
  CHECK(fencelock::net::duplicate_key("not json") == std::nullopt);
  // An object's keys outlive its nested objects, and only theirs go when they close.
  CHECK(fencelock::net::duplicate_key(R"({"x":{"y":1,"z":{"x":1}},"y":2,"z":3})") == std::nullopt);
  CHECK(fencelock::net::duplicate_key(R"({"x":{"y":1},"q":[{"x":1}],"x":2})") == "x");
  CHECK(fencelock::net::duplicate_key(R"({"a\"b":1,"a\u0022b":2})") == "a\"b");
}

TEST_CASE("parse_distinct reads what boost::json::parse reads, unless a key repeats", "[net]") {
  using fencelock::net::parse_distinct;
  // Every kind of value, nesting, escapes, and a string long enough to come in parts.
  const std::string long_text(5000, 'x');
  for (std::string text :
       {std::string{R"({"owner":"a","ttlMs":1000,"waitMs":0})"},
        std::string{R"({"id":"r1","op":"acquire","lock":"db","x":[1,-2,3.5,true,null,{"a":{}}]})"},
        std::string{R"({"k\u0061y":"v\n\"q\"","n":18446744073709551615,"e":[]})"},
        std::string{R"(  [ {"a":1}, {"a":2} ]  )"}, std::string{"\"" + long_text + "\""},
        std::string{R"({")" + long_text + R"(":1,"b":2})"}, std::string{"7"},
        std::string{R"({"ttlMs":0e511013})"}}) { // Boost reads that number as NaN
    auto parsed = parse_distinct(text, {});
    REQUIRE(parsed.has_value());
    // As text, since NaN is unequal to itself as a value.
    CHECK(boost::json::serialize(*parsed) == boost::json::serialize(boost::json::parse(text)));
  }
  // A key given twice at any depth, text that is not JSON, or text after the value: nothing.
  for (std::string text :
       {R"({"a":1,"a":2})", R"({"x":{"b":1,"b":2}})", R"({"\u0061":1,"a":2})",
        R"([{"a":1,"a":1}])", "not json", R"({"a":1)", R"({"a":1} {"b":2})", ""}) {
    CHECK_FALSE(parse_distinct(text, {}).has_value());
  }
}

TEST_CASE("routes refuse an owner longer than 128 characters", "[net]") {
  std::string body = R"({"owner":")" + std::string(129, 'o') + R"(","ttlMs":1000})";
  expect_invalid(post("/v1/locks/a/acquire", body), "owner");
  std::string fits = R"({"owner":")" + std::string(128, 'o') + R"(","ttlMs":1000})";
  expect_call<fencelock::acquire_request>(post("/v1/locks/a/acquire", fits));
}

TEST_CASE("routes quote unknown fields safely", "[net]") {
  auto r = expect_reply(post("/v1/locks/a/acquire", R"({"owner":"w","ttlMs":1000,"a\tb":1})"));
  CHECK(text(r, "message").rfind("a?b:", 0) == 0);
  std::string long_key(500, 'k');
  auto long_r = expect_reply(
    post("/v1/locks/a/acquire", R"({"owner":"w","ttlMs":1000,")" + long_key + R"(":1})"));
  CHECK(text(long_r, "message").size() < 200);
}

// --- lock names --------------------------------------------------------------------------------

TEST_CASE("routes check and decode the lock name of the path", "[net]") {
  const std::string body = R"({"owner":"w","ttlMs":1000})";
  const std::string bad_names[] = {"",    "%2F", "a%20b",     "a%zz", "a%2",
                                   "a%",  "%00", "caf%C3%A9", "a+b",  std::string(201, 'n')};
  for (const auto& bad : bad_names) {
    CAPTURE(bad);
    expect_invalid(post("/v1/locks/" + bad + "/acquire", body), "name");
    expect_invalid(get("/v1/locks/" + bad), "name");
  }
  auto decoded = expect_call<fencelock::acquire_request>(
    post("/v1/locks/jobs%3Areport/acquire", body));
  CHECK(decoded.name == "jobs:report");
  auto longest = expect_call<fencelock::net::status_query>(get("/v1/locks/" + std::string(200, 'n')));
  CHECK(longest.name.size() == 200);
}

TEST_CASE("routes check the name before the body", "[net]") {
  expect_invalid(post("/v1/locks/a%20b/acquire", "not json"), "name");
}

// --- renew and release -------------------------------------------------------------------------

TEST_CASE("routes parse a renew", "[net]") {
  auto req = expect_call<fencelock::renew_request>(
    post("/v1/locks/a/renew", R"({"owner":"w","token":9007199254740991,"ttlMs":500})"));
  CHECK(req.name == "a");
  CHECK(req.owner == "w");
  CHECK(req.token == 9007199254740991u);
  CHECK(req.ttl_ms == 500);

  auto keep_ttl =
    expect_call<fencelock::renew_request>(post("/v1/locks/a/renew", R"({"owner":"w","token":7})"));
  CHECK(keep_ttl.ttl_ms == 0);
}

TEST_CASE("routes refuse bad tokens", "[net]") {
  for (const char* token : {"0", "-1", "9007199254740992", "18446744073709551615", "1.0", "1e2",
                            "\"5\"", "null", "true"}) {
    CAPTURE(token);
    expect_invalid(post("/v1/locks/a/renew",
                        std::string{R"({"owner":"w","token":)"} + token + "}"),
                   "token");
    expect_invalid(post("/v1/locks/a/release",
                        std::string{R"({"owner":"w","token":)"} + token + "}"),
                   "token");
  }
  expect_invalid(post("/v1/locks/a/release", R"({"owner":"w"})"), "token");
  expect_invalid(post("/v1/locks/a/renew", R"({"owner":"w","token":1,"ttlMs":50})"), "ttlMs");
}

TEST_CASE("routes parse a release and refuse its unknown fields", "[net]") {
  auto req = expect_call<fencelock::release_request>(
    post("/v1/locks/a/release", R"({"owner":"w","token":3})"));
  CHECK(req.name == "a");
  CHECK(req.token == 3);
  expect_invalid(post("/v1/locks/a/release", R"({"owner":"w","token":3,"ttlMs":100})"), "ttlMs");
  CHECK_FALSE(req.force);
}

TEST_CASE("routes parse a force-release, which needs neither owner nor token", "[net]") {
  auto any =
    expect_call<fencelock::release_request>(post("/v1/locks/a/release", R"({"force":true})"));
  CHECK(any.force);
  CHECK(any.token == 0);
  auto one = expect_call<fencelock::release_request>(
    post("/v1/locks/a/release", R"({"force":true,"token":9})"));
  CHECK(one.token == 9);
  expect_invalid(post("/v1/locks/a/release", R"({"force":"yes"})"), "force");
  expect_invalid(post("/v1/locks/a/release", R"({"force":true,"token":0})"), "token");
  // force false is a release like any other: owner and token are needed.
  expect_invalid(post("/v1/locks/a/release", R"({"force":false,"token":3})"), "owner");
}

// --- status and list ---------------------------------------------------------------------------

TEST_CASE("routes parse a status query and ignore its query string", "[net]") {
  auto query = expect_call<fencelock::net::status_query>(get("/v1/locks/a.b_c-d?x=1"));
  CHECK(query.name == "a.b_c-d");
}

TEST_CASE("routes parse a list with defaults", "[net]") {
  for (const char* target : {"/v1/locks", "/v1/locks?", "/v1/locks?&&"}) {
    auto req = expect_call<fencelock::list_request>(get(target));
    CHECK(req.prefix.empty());
    CHECK(req.cursor.empty());
    CHECK(req.limit == 100);
  }
}

TEST_CASE("routes parse every list parameter", "[net]") {
  auto req = expect_call<fencelock::list_request>(
    get("/v1/locks?prefix=jobs%3A&limit=5&cursor=jobs:b"));
  CHECK(req.prefix == "jobs:");
  CHECK(req.limit == 5);
  CHECK(req.cursor == "jobs:b");
  auto empty_prefix = expect_call<fencelock::list_request>(get("/v1/locks?prefix="));
  CHECK(empty_prefix.prefix.empty());
}

TEST_CASE("routes refuse bad list parameters", "[net]") {
  expect_invalid(get("/v1/locks?limit=0"), "limit");
  expect_invalid(get("/v1/locks?limit=1001"), "limit");
  expect_invalid(get("/v1/locks?limit=99999999999999999999"), "limit");
  expect_invalid(get("/v1/locks?limit=-1"), "limit");
  expect_invalid(get("/v1/locks?limit=abc"), "limit");
  expect_invalid(get("/v1/locks?limit="), "limit");
  expect_invalid(get("/v1/locks?limit"), "limit");
  expect_invalid(get("/v1/locks?limit=1&limit=2"), "limit");
  expect_invalid(get("/v1/locks?prefix=a+b"), "prefix");
  expect_invalid(get("/v1/locks?prefix=a/b"), "prefix");
  expect_invalid(get("/v1/locks?cursor=a%20b"), "cursor");
  expect_invalid(get("/v1/locks?sort=name"), "sort");
  expect_invalid(get("/v1/locks?prefix=%zz"), "query");
}

TEST_CASE("routes cap the default page at list_limit_max", "[net]") {
  fencelock::config small = cfg;
  small.list_limit_max = 50;
  auto req = expect_call<fencelock::list_request>(route(http::verb::get, "/v1/locks", "", small, true));
  CHECK(req.limit == 50);
}

// --- JSON shapes -------------------------------------------------------------------------------

TEST_CASE("json writes a lease", "[net]") {
  fencelock::lease l{"a", "w", 42, 30000, 1700000000000};
  auto j = boost::json::parse(fencelock::net::lease_json(l)).as_object();
  CHECK(j.at("name").as_string() == "a");
  CHECK(j.at("owner").as_string() == "w");
  CHECK(j.at("token").to_number<uint64_t>() == 42);
  CHECK(j.at("ttlMs").to_number<int64_t>() == 30000);
  CHECK(j.at("expiresAt").to_number<int64_t>() == 1700000000000);
  CHECK(j.size() == 5);
}

TEST_CASE("a lease is written as Boost.JSON serializes the same object", "[net]") {
  // Written directly (common/json_writer.hpp), byte for byte what the object would give.
  auto as_object = [](const fencelock::lease& x) {
    boost::json::object o{{"name", x.name}};
    fencelock::net::put_owner(o, x.owner);
    o["token"] = x.token;
    o["ttlMs"] = x.ttl_ms;
    o["expiresAt"] = x.expires_at_ms;
    return boost::json::serialize(o);
  };
  fencelock::lease plain{"orders/eu-1", "worker-7", 9007199254740991, 1, 0};
  CHECK(fencelock::net::lease_json(plain) == as_object(plain));
  fencelock::lease owned{"a", fencelock::qualified_owner("svc-a", "w1"), 7, 30000, 1700000000000};
  CHECK(fencelock::net::lease_json(owned) == as_object(owned));
  CHECK(fencelock::net::lease_json(owned).find(R"("principal":"svc-a")") != std::string::npos);
  fencelock::lease odd{"q\"\\\n\t\x01\x7f\xc3\xa9", "o\b\f\r", 1, 2, 3};
  CHECK(fencelock::net::lease_json(odd) == as_object(odd));
}

TEST_CASE("a string is escaped as Boost.JSON escapes it, wherever the byte falls", "[net]") {
  // append_json_string scans eight bytes at a time: every byte value at every offset of a word,
  // in strings long and short enough to end mid-word, and escapes side by side.
  auto ours = [](std::string_view x) {
    std::string out;
    fencelock::append_json_string(out, x);
    return out;
  };
  auto boosts = [](std::string_view x) { return boost::json::serialize(boost::json::string(x)); };
  int mismatches = 0;
  for (int byte = 0; byte < 256; ++byte)
    for (std::size_t length = 1; length <= 19; ++length)
      for (std::size_t at = 0; at < length; ++at) {
        std::string x(length, 'a');
        x[at] = static_cast<char>(byte);
        if (ours(x) != boosts(x))
          ++mismatches;
      }
  CHECK(mismatches == 0);
  for (std::string_view x : {"", "\"\"\"\"\"\"\"\"\"", "orders/eu-1\\\n\x1f\x20~\x7f", "\x01\x02 ab \x1e\"c",
                             "\xc3\xa9\"\xff\x1f\x80\\a\x9f\x7f\x21\x5b\x5d\x1f\xa2\xdc"})
    CHECK(ours(x) == boosts(x));
}

TEST_CASE("json writes a lock status, with the holder only while held", "[net]") {
  fencelock::lock_status held{"a", true, "w", 7, 123, 2, 7};
  auto h = fencelock::net::to_json(held);
  CHECK(h.at("held").as_bool());
  CHECK(h.at("owner").as_string() == "w");
  CHECK(h.at("token").to_number<uint64_t>() == 7);
  CHECK(h.at("expiresAt").to_number<int64_t>() == 123);
  CHECK(h.at("waiters").to_number<uint64_t>() == 2);
  CHECK(h.at("lastToken").to_number<uint64_t>() == 7);

  fencelock::lock_status free{"b", false, "", 0, 0, 0, 9};
  auto f = fencelock::net::to_json(free);
  CHECK_FALSE(f.at("held").as_bool());
  CHECK(f.if_contains("owner") == nullptr);
  CHECK(f.if_contains("token") == nullptr);
  CHECK(f.if_contains("expiresAt") == nullptr);
  CHECK(f.at("lastToken").to_number<uint64_t>() == 9);
}

TEST_CASE("json writes a page of locks with its cursor", "[net]") {
  fencelock::lock_list page;
  page.locks.push_back({"a", true, "w", 1, 5, 0, 1});
  page.next_cursor = "a";
  auto j = fencelock::net::to_json(page);
  CHECK(j.at("locks").as_array().size() == 1);
  CHECK(j.at("locks").as_array()[0].at("name").as_string() == "a");
  CHECK(j.at("nextCursor").as_string() == "a");

  auto last = fencelock::net::to_json(fencelock::lock_list{});
  CHECK(last.at("locks").as_array().empty());
  CHECK(last.at("nextCursor").is_null());
}

// --- request ids -------------------------------------------------------------------------------

TEST_CASE("routes accept sane request ids only", "[net]") {
  using fencelock::net::valid_request_id;
  CHECK(valid_request_id("abc-123_X.y:z/~"));
  CHECK(valid_request_id(std::string(128, 'r')));
  CHECK_FALSE(valid_request_id(""));
  CHECK_FALSE(valid_request_id(std::string(129, 'r')));
  CHECK_FALSE(valid_request_id("a b"));
  CHECK_FALSE(valid_request_id("a\tb"));
  CHECK_FALSE(valid_request_id("caf\xc3\xa9"));
}

TEST_CASE("routes make distinct 16-hex-digit request ids", "[net]") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    auto id = fencelock::net::make_request_id();
    REQUIRE(id.size() == 16);
    REQUIRE(id.find_first_not_of("0123456789abcdef") == std::string::npos);
    REQUIRE(fencelock::net::valid_request_id(id));
    seen.insert(id);
  }
  CHECK(seen.size() == 1000);
}

TEST_CASE("json quotes client text as printable ASCII", "[net]") {
  CHECK(fencelock::net::printable_excerpt("ok") == "ok");
  CHECK(fencelock::net::printable_excerpt("a\nb\x7f\xc3") == "a?b??");
  CHECK(fencelock::net::printable_excerpt(std::string(100, 'x'), 10) == std::string(10, 'x'));
}

TEST_CASE("routes parse a check and refuse bad ones", "[net]") {
  auto req = expect_call<fencelock::check_request>(post("/v1/locks/a/check", R"({"token":12})"));
  CHECK(req.name == "a");
  CHECK(req.token == 12);
  expect_invalid(post("/v1/locks/a/check", R"({})"), "token");
  expect_invalid(post("/v1/locks/a/check", R"({"token":0})"), "token");
  expect_invalid(post("/v1/locks/a/check", R"({"token":1,"owner":"w"})"), "owner");
  auto wrong = expect_reply(get("/v1/locks/a/check"));
  CHECK(wrong.status == http::status::method_not_allowed);
}

TEST_CASE("json writes a check result, token null when free", "[net]") {
  auto held = fencelock::net::to_json(fencelock::check_result{false, 7, 1234});
  CHECK(held.at("current").as_bool() == false);
  CHECK(held.at("token").as_uint64() == 7u);
  CHECK(held.at("expiresAt").as_int64() == 1234);
  auto free_lock = fencelock::net::to_json(fencelock::check_result{});
  CHECK(free_lock.at("token").is_null());
  CHECK_FALSE(free_lock.contains("expiresAt"));
}
