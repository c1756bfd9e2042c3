// POST /v1/locks/{name}/check over HTTP: a resource without a high-water mark of its own can ask
// whether a token is still the current lease.

#include <catch2/catch.hpp>

#include <boost/json.hpp>

#include "integration/checks.hpp"
#include "support/lock_api.hpp"
#include "support/server_process.hpp"
#include "support/store_under_test.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;

namespace {

http_response check(lock_client& api, const std::string& name, uint64_t token) {
  return api.http().post("/v1/locks/" + name + "/check", boost::json::object{{"token", token}});
}

} // namespace

TEST_CASE("check_reports_the_current_lease", "[integration]") {
  temp_dir dir;
  store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("store: " << store.kind());
  server_process server{dir.str(), store.server_args()};
  lock_client api{server.port()};

  auto free_lock = check(api, "orders", 5);
  INFO(free_lock.describe());
  REQUIRE(free_lock.status == 200);
  CHECK(free_lock.json->at("current").as_bool() == false);
  CHECK(free_lock.json->at("token").is_null());

  auto first = require_lease(api.acquire("orders", "alice", 60'000, 0));
  auto current = check(api, "orders", first.token);
  REQUIRE(current.status == 200);
  CHECK(current.json->at("current").as_bool());
  CHECK(current.json->at("token").to_number<uint64_t>() == first.token);
  CHECK(current.json->as_object().contains("expiresAt"));

  REQUIRE(api.release("orders", "alice", first.token).status == 200);
  auto second = require_lease(api.acquire("orders", "bob", 60'000, 0));
  auto stale = check(api, "orders", first.token);
  REQUIRE(stale.status == 200);
  CHECK(stale.json->at("current").as_bool() == false);
  CHECK(stale.json->at("token").to_number<uint64_t>() == second.token);

  auto bad = check(api, "orders", 0);
  CHECK(bad.status == 400);
  CHECK(bad.error() == "invalid_request");
}
