// docs/openapi.json: a well-formed OpenAPI 3.0 document whose references resolve, served as it
// is by GET /v1/openapi.json, naming every error code the server sends (and docs/http-api.md
// explaining each); and the validator the integration test checks real answers with
// (tests/support/openapi_check.hpp) really rejects what does not conform.

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <variant>

#include <boost/json/parse.hpp>

#include "fencelock/config.hpp"
#include "fencelock/errc.hpp"
#include "net/routes.hpp"
#include "support/openapi_check.hpp"

namespace json = boost::json;
using fencelock::test::openapi_check;

namespace {

const std::string doc_path = FENCELOCK_SOURCE_DIR "/docs/openapi.json";

std::string read(const std::string& path) {
  std::ifstream in{path};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The codes the HTTP layer sends itself, besides those of fencelock::errc.
const std::vector<std::string> http_layer_codes = {
  "not_found", "method_not_allowed", "payload_too_large", "headers_too_large", "rate_limited"};

} // namespace

TEST_CASE("the OpenAPI document is well-formed and its references resolve", "[openapi]") {
  auto spec = openapi_check::from_file(doc_path);
  CHECK(spec.dangling_refs().empty());
  CHECK(spec.document().at("info").at("version").as_string() == FENCELOCK_VERSION);
  CHECK(spec.match("/v1/locks/a/acquire") == "/v1/locks/{name}/acquire");
  CHECK(spec.match("/v1/locks/a") == "/v1/locks/{name}");
  CHECK(spec.match("/v1/locks") == "/v1/locks");
  CHECK(spec.match("/") == "/");
  CHECK(spec.match("/dashboard/app.js") == "/dashboard/{file}");
  CHECK_FALSE(spec.match("/v1/locks//acquire"));
  CHECK_FALSE(spec.match("/nope"));
  // Every schema of every response and request is one the validator fully understands.
  for (const auto& [name, schema] : spec.document().at("components").at("schemas").as_object()) {
    INFO(name);
    auto errors = spec.validate(json::value{nullptr}, schema, std::string{name});
    for (const auto& e : errors)
      CHECK(e.find("does not know") == std::string::npos);
  }
}

TEST_CASE("the OpenAPI document and docs/http-api.md name every error code", "[openapi]") {
  auto spec = openapi_check::from_file(doc_path);
  const auto& codes =
    spec.document().at("components").at("schemas").at("ErrorCode").at("enum").as_array();
  auto docs = read(FENCELOCK_SOURCE_DIR "/docs/http-api.md");
  std::vector<std::string> all = http_layer_codes;
  for (auto x : fencelock::all_errc)
    if (x != fencelock::errc::cancelled) // the outcome of a client gone away: never sent
      all.emplace_back(fencelock::to_string(x));
  for (const auto& code : all) {
    INFO(code);
    CHECK(std::find(codes.begin(), codes.end(), json::value(code)) != codes.end());
    CHECK(docs.find("`" + code + "`") != std::string::npos);
  }
  CHECK(codes.size() == all.size()); // and no code the server does not send
}

TEST_CASE("GET /v1/openapi.json serves docs/openapi.json as built", "[openapi][net]") {
  namespace http = boost::beast::http;
  const fencelock::config cfg{};
  auto got = fencelock::net::route(http::verb::get, "/v1/openapi.json", "", cfg, true);
  REQUIRE(std::holds_alternative<fencelock::net::reply>(got));
  const auto& r = std::get<fencelock::net::reply>(got);
  CHECK(r.status == http::status::ok);
  CHECK(r.text_type == "application/json");
  CHECK(r.text == read(doc_path));
  auto posted = fencelock::net::route(http::verb::post, "/v1/openapi.json", "", cfg, true);
  REQUIRE(std::holds_alternative<fencelock::net::reply>(posted));
  CHECK(std::get<fencelock::net::reply>(posted).status == http::status::method_not_allowed);
}

TEST_CASE("the validator rejects what does not conform", "[openapi]") {
  auto spec = openapi_check::from_file(doc_path);
  auto lease_schema = json::parse(R"({"$ref":"#/components/schemas/Lease"})");
  auto good =
    json::parse(R"({"name":"a","owner":"o","token":1,"ttlMs":1000,"expiresAt":1795000000000})");
  CHECK(spec.validate(good, lease_schema, "lease").empty());
  struct bad {
    const char* json;
    const char* why;
  };
  for (auto [text, why] : {
         bad{R"({"name":"a","owner":"o","token":1,"ttlMs":1000})", "required"},
         bad{R"({"name":"a","owner":"o","token":"1","ttlMs":1000,"expiresAt":1})", "expected"},
         bad{R"({"name":"a","owner":"o","token":0,"ttlMs":1000,"expiresAt":1})", "minimum"},
         bad{R"({"name":"a b","owner":"o","token":1,"ttlMs":1000,"expiresAt":1})", "match"},
         bad{R"({"name":"a","owner":"","token":1,"ttlMs":1000,"expiresAt":1})", "minLength"},
         bad{R"({"name":"a","owner":"o","token":1.5,"ttlMs":1000,"expiresAt":1})", "expected"},
         bad{R"({"name":"a","owner":"o","token":1,"ttlMs":1000,"expiresAt":1,"x":1})",
             "not allowed"},
         bad{R"([1])", "expected object"},
       }) {
    INFO(text);
    auto errors = spec.validate(json::parse(text), lease_schema, "lease");
    REQUIRE_FALSE(errors.empty());
    CHECK(errors.front().find(why) != std::string::npos);
  }
  auto check_schema = json::parse(R"({"$ref":"#/components/schemas/CheckResult"})");
  CHECK(spec.validate(json::parse(R"({"current":false,"token":null})"), check_schema, "c").empty());
  CHECK_FALSE(spec.validate(json::parse(R"({"current":false})"), check_schema, "c").empty());
  auto list_schema = json::parse(R"({"$ref":"#/components/schemas/LockList"})");
  CHECK(spec.validate(json::parse(R"({"locks":[],"nextCursor":null})"), list_schema, "l").empty());
  CHECK_FALSE(
    spec.validate(json::parse(R"({"locks":[{"name":"a"}],"nextCursor":null})"), list_schema, "l")
      .empty());
  auto one_of = json::parse(R"({"oneOf":[{"type":"integer"},{"type":"number"}]})");
  CHECK_FALSE(spec.validate(json::value(1), one_of, "x").empty()); // both match: not one
  CHECK(spec.validate(json::value(1.5), one_of, "x").empty());
  CHECK_FALSE(spec.validate(json::value(1), json::parse(R"({"format":"x"})"), "x").empty());

  // Error bodies: the code must be one of that response's.
  fencelock::test::http_response res;
  res.status = 409;
  res.headers = {{"content-type", "application/json"}, {"x-request-id", "r1"}};
  res.json =
    json::parse(R"({"error":"lock_held","message":"m","holder":{"owner":"o","expiresAt":1}})");
  CHECK(spec.check("POST", "/v1/locks/a/acquire", res).empty());
  res.json = json::parse(R"({"error":"lease_lost","message":"m"})");
  CHECK_FALSE(spec.check("POST", "/v1/locks/a/acquire", res).empty());
  CHECK(spec.check("POST", "/v1/locks/a/renew", res).empty());
  res.status = 418;
  CHECK_FALSE(spec.check("POST", "/v1/locks/a/renew", res).empty());
  res.status = 429; // needs Retry-After
  res.json = json::parse(R"({"error":"rate_limited","message":"m"})");
  CHECK_FALSE(spec.check("POST", "/v1/locks/a/renew", res).empty());
  res.headers.push_back({"retry-after", "1"});
  CHECK(spec.check("POST", "/v1/locks/a/renew", res).empty());
}
