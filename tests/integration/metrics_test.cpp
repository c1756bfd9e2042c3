// GET /metrics against the real server binary: the scrape is Prometheus text, and the operation
// counters, lease ends, wait and store histograms and the load gauges move with the requests.

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include <optional>
#include <thread>

#include "integration/checks.hpp"
#include "support/lock_api.hpp"
#include "support/poll.hpp"
#include "support/prom_text.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"
#include "support/ws_client.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

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

TEST_CASE("metrics_describe_the_process_and_the_build", "[integration]") {
  temp_dir dir;
  server_process server{dir.str()};
  lock_client api{server.port()};
  auto text = scrape(api);
  INFO(text);
  for (auto name : {"process_cpu_seconds_total", "process_resident_memory_bytes",
                    "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
                    "process_start_time_seconds"})
    CHECK(sample(text, name).value_or(-1) >= 0);
  CHECK(sample(text, "process_resident_memory_bytes") > 0.0);
  CHECK(sample(text, "process_open_fds") > 2.0); // at least the listener and the store
  auto started = sample(text, "process_start_time_seconds").value_or(0);
  auto now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch());
  CHECK(started > now.count() - 3600);
  CHECK(started <= now.count() + 5);

  // fencelock_build_info{version,commit} 1, with the version --version prints.
  std::string version_line;
  {
    child_process v{server_binary(), {"--version"}};
    REQUIRE(v.wait(30s).has_value());
    eventually([&] { return v.stdout_closed(); }, 5s);
    REQUIRE_FALSE(v.lines().empty());
    version_line = v.lines().front(); // "fencelock 0.1.0 (commit <c>, CAF 0.17.6)"
  }
  auto version = version_line.substr(10, version_line.find(' ', 10) - 10);
  auto commit_at = version_line.find("commit ") + 7;
  auto commit = version_line.substr(commit_at, version_line.find(',', commit_at) - commit_at);
  CHECK(sample(text, "fencelock_build_info{version=\"" + version + "\",commit=\"" + commit
                       + "\"}")
        == 1.0);
}

TEST_CASE("metrics_count_waits_store_writes_sessions_and_load", "[integration]") {
  temp_dir dir;
  server_process server{dir.str()};
  lock_client api{server.port()};
  const std::string lock = "metrics:wait";

  auto first = require_lease(api.acquire(lock, "alice", 10'000, 0));
  // A waiter on its own thread is handed the lock when alice releases.
  std::optional<http_response> waited;
  std::thread waiter{[&] {
    lock_client other{server.port()};
    waited = other.acquire(lock, "bob", 10'000, 30'000);
  }};
  REQUIRE(eventually([&] { return api.status_of(lock).waiters == 1u; }, 10s));
  auto during = scrape(api);
  CHECK(sample(during, "fencelock_waiters") == 1.0);
  CHECK(sample(during, "fencelock_requests_in_progress") >= 1.0); // the waiting acquire
  CHECK(sample(during, "fencelock_shedding") == 0.0);
  REQUIRE(api.release(lock, "alice", first.token).status == 200);
  waiter.join();
  REQUIRE(waited);
  CHECK(waited->status == 200);

  auto text = scrape(api);
  INFO(text);
  CHECK(has_line(text, "# TYPE fencelock_lock_wait_seconds histogram"));
  CHECK(sample(text, "fencelock_lock_wait_seconds_count") == 1.0);
  // The grant, then the release and bob's grant in one hand-off: two lease writes, each timed.
  CHECK(sample(text, "fencelock_store_write_seconds_count") == 2.0);
  // Those writes, and the fence issuer's reservations, went out in group commits.
  auto commits = sample(text, "fencelock_store_commit_seconds_count");
  auto committed = sample(text, "fencelock_store_commit_writes_sum");
  CHECK(commits >= 1.0);
  CHECK(committed >= 2.0);
  CHECK(committed >= commits);
  CHECK(sample(text, "fencelock_store_commit_writes_count") == commits);
  // Every request a lock actor took up (acquire, status, release, ...) was measured.
  CHECK(has_line(text, "# TYPE fencelock_lock_mailbox_depth histogram"));
  CHECK(sample(text, "fencelock_lock_mailbox_depth_count") >= 4.0);
  CHECK(sample(text, R"(fencelock_lock_mailbox_depth_bucket{le="+Inf"})")
        == sample(text, "fencelock_lock_mailbox_depth_count"));
  CHECK(sample(text, "fencelock_waiters") == 0.0);
  CHECK(sample(text, R"(fencelock_shed_total{op="acquire"})") == 0.0);
  CHECK(sample(text, "fencelock_stalls_total") == 0.0);
  CHECK(sample(text, "fencelock_websocket_sessions") == 0.0);
  {
    ws_client ws{server.port()};
    CHECK(eventually([&] { return sample(scrape(api), "fencelock_websocket_sessions") == 1.0; },
                     10s));
  }
  CHECK(eventually([&] { return sample(scrape(api), "fencelock_websocket_sessions") == 0.0; },
                   10s));
}
