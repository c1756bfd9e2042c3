// GET /metrics against the real server binary: the scrape is Prometheus text, and the operation
// counters, lease ends and the held gauge move with the requests.

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include "integration/checks.hpp"
#include "support/lock_api.hpp"
#include "support/prom_text.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;

namespace {

std::string scrape(lock_client& api) {
  auto res = api.http().get("/metrics");
  INFO(res.describe());
  REQUIRE(res.status == 200);
  CHECK(res.header("content-type") == "text/plain; version=0.0.4");
  return res.body;
}

} // namespace

TEST_CASE("metrics_are_scraped_and_move", "[integration]") {
  temp_dir dir;
  server_process server{dir.str()};
  lock_client api{server.port()};
  const std::string lock = "metrics:one";

  auto a = require_lease(api.acquire(lock, "alice", 10'000, 0));
  require_lease(api.renew(lock, "alice", a.token, 20'000));
  auto released = api.release(lock, "alice", a.token);
  REQUIRE(released.status == 200);
  auto lost = api.renew(lock, "alice", a.token, 20'000);
  CHECK(lost.status == 409);
  CHECK(lost.error() == "lease_lost");

  auto text = scrape(api);
  INFO(text);
  CHECK(has_line(text, "# TYPE fencelock_operations_total counter"));
  CHECK(has_line(text, "# TYPE fencelock_operation_duration_seconds histogram"));
  CHECK(sample(text, R"(fencelock_operations_total{op="acquire",outcome="ok"})") == 1.0);
  CHECK(sample(text, R"(fencelock_operations_total{op="renew",outcome="ok"})") == 1.0);
  CHECK(sample(text, R"(fencelock_operations_total{op="renew",outcome="lease_lost"})") == 1.0);
  CHECK(sample(text, R"(fencelock_operations_total{op="release",outcome="ok"})") == 1.0);
  CHECK(sample(text, R"(fencelock_operation_duration_seconds_count{op="renew"})") == 2.0);
  CHECK(sample(text, R"(fencelock_lease_ends_total{cause="released"})") == 1.0);
  CHECK(sample(text, R"(fencelock_lease_ends_total{cause="expired"})") == 0.0);
  CHECK(sample(text, "fencelock_locks_held") == 0.0);

  require_lease(api.acquire(lock, "bob", 10'000, 0));
  auto again = scrape(api);
  INFO(again);
  CHECK(sample(again, R"(fencelock_operations_total{op="acquire",outcome="ok"})") == 2.0);
  CHECK(sample(again, "fencelock_locks_held") == 1.0);
}
