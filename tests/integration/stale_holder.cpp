// The stale holder, the product's first requirement: a holder that is paused past its lease and
// then resumes must not be able to overwrite the work of the next holder. The fencing token makes
// the resource reject it, and the service refuses its renewal. The resource is the fenced
// key-value store (examples/fenced_store), a child process with its own data directory; every
// write names the lock and token in its Fencing-Lock / Fencing-Token headers.
//
//   child (separate process)       test                         fenced store
//   acquire L (ttl 1 s) -> t1
//   write(t1) --------------------------------------------------> accepted
//   {"step":"ready"}
//                                  SIGSTOP child
//                                  "go" into child's stdin (buffered)
//                                  poll status(L) until free
//                                  acquire L -> t2 > t1
//                                  write(t2) -------------------> accepted
//                                  SIGCONT child
//   write(t1) --------------------------------------------------> 409 stale_token
//   renew(t1) -> 409 lease_lost
//
// It runs on both lease stores; on Redis the second holder acquires through a second instance
// that shares the store, so the token order holds across instances.

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include <csignal>
#include <optional>

#include <boost/json.hpp>

#include "support/child_process.hpp"
#include "support/http_client.hpp"
#include "support/lock_api.hpp"
#include "support/poll.hpp"
#include "support/server_process.hpp"
#include "support/store_under_test.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

namespace {

// The fenced key-value store as a child process on a free port with its data in `data_dir`.
struct fenced_store_process {
  child_process proc;
  uint16_t port = 0;

  explicit fenced_store_process(const std::string& data_dir)
    : proc(FENCELOCK_FENCED_STORE, {"--port", "0", "--data-dir", data_dir}) {
    auto line = proc.wait_for_line(
      [](std::string_view l) { return parse_listening_port(l).has_value(); }, 30s);
    INFO("fenced store\n" << proc.diagnostics());
    REQUIRE(line.has_value());
    port = parse_listening_port(*line).value_or(0);
    REQUIRE(port != 0);
  }
};

// Returns the store's GET /kv/{key} answer.
http_response store_get(uint16_t port, const std::string& key) {
  http_client c{port};
  return c.get("/kv/" + key);
}

// Waits for the child's JSON line of `step` and returns it parsed.
boost::json::value child_step(child_process& child, const std::string& step) {
  auto needle = "\"step\":\"" + step + "\"";
  auto line = child.wait_for_line(
    [&](std::string_view l) { return l.find(needle) != std::string_view::npos; }, 30s);
  INFO("child step " << step << "\n" << child.diagnostics());
  REQUIRE(line.has_value());
  boost::system::error_code ec;
  auto v = boost::json::parse(*line, ec);
  REQUIRE_FALSE(ec);
  return v;
}

} // namespace

TEST_CASE("stale_holder_is_fenced_off", "[integration]") {
  temp_dir dir;
  temp_dir store_dir{"fencelock-store-"};
  fenced_store_process store{store_dir.str()};
  store_under_test leases{GENERATE(as<std::string>{}, "embedded", "redis")};
  INFO("lease store: " << leases.kind());
  server_process server{dir.str(), leases.server_args()};
  lock_client api{server.port()};
  // With Redis the second holder goes through another instance that shares the store, as
  // behind a load balancer; the embedded store has one instance only.
  temp_dir dir_b;
  std::optional<server_process> instance_b;
  if (leases.redis() != nullptr)
    instance_b.emplace(dir_b.str(), leases.server_args());
  lock_client api_b{instance_b ? instance_b->port() : server.port()};
  const std::string lock = "reports:daily";
  const std::string key = "reports.daily.csv";
  constexpr int64_t child_ttl_ms = 1000;

  child_process child{FENCELOCK_TEST_HOLDER,
                      {std::to_string(server.port()), lock, "paused-worker",
                       std::to_string(child_ttl_ms), std::to_string(store.port), key}};

  // The child holds the lock and has written once.
  auto acquired = child_step(child, "acquire");
  REQUIRE(json_i64(acquired, "status") == 200);
  auto t1 = json_u64(acquired, "token").value_or(0);
  REQUIRE(t1 > 0);
  auto write1 = child_step(child, "write1");
  CHECK(json_i64(write1, "status") == 200);
  child_step(child, "ready");
  {
    auto before = store_get(store.port, key);
    INFO(before.describe());
    CHECK(before.status == 200);
    REQUIRE(before.json.has_value());
    CHECK(json_str(*before.json, "value") == "child:before-pause");
    CHECK(json_u64(*before.json, "token") == t1);
  }

  // Freeze it; queue its "go" so that it acts the moment it is thawed.
  REQUIRE(child.stop());
  REQUIRE(child.write_stdin("go\n"));

  // Its lease runs out while it is frozen.
  bool expired = eventually([&] { return !api.status_of(lock).held; }, 30s, 50ms);
  REQUIRE(expired);

  // A second holder takes over with a higher token and writes.
  auto res = api_b.acquire(lock, "second-worker", 30'000, 0);
  INFO(res.describe());
  REQUIRE(res.status == 200);
  auto second = lease_view::from(res);
  REQUIRE(second.has_value());
  CHECK(second->token > t1);
  {
    http_client writer{store.port};
    auto w = writer.request("PUT", "/kv/" + key, std::string{"second:work"},
                            {{"Fencing-Lock", lock},
                             {"Fencing-Token", std::to_string(second->token)}});
    INFO(w.describe());
    CHECK(w.status == 200);
    REQUIRE(w.json.has_value());
    CHECK(json_u64(*w.json, "token") == second->token);
  }

  // Thaw the child: its write with the old token is rejected, its renewal is refused.
  child.resume();
  auto write2 = child_step(child, "write2");
  CHECK(json_i64(write2, "status") == 409);
  CHECK(json_str(write2, "error") == "stale_token");
  CHECK(json_u64(write2, "highest") == second->token);
  auto renew = child_step(child, "renew");
  CHECK(json_i64(renew, "status") == 409);
  CHECK(json_str(renew, "error") == "lease_lost");
  auto ended = child.wait(30s);
  REQUIRE(ended.has_value());
  INFO(child.diagnostics());
  CHECK(ended->clean());

  // The store holds the second holder's work; the stale write left no trace.
  auto entry = store_get(store.port, key);
  INFO(entry.describe());
  REQUIRE(entry.status == 200);
  REQUIRE(entry.json.has_value());
  CHECK(json_str(*entry.json, "value") == "second:work");
  CHECK(json_u64(*entry.json, "token") == second->token);
  {
    http_client c{store.port};
    auto stats = c.get("/stats");
    INFO(stats.describe());
    REQUIRE(stats.json.has_value());
    CHECK(json_u64(*stats.json, "written") == 2u); // child's first write, second holder's
    CHECK(json_u64(*stats.json, "stale") == 1u);   // child's write after the pause
  }

  // The service (every instance) still shows the second holder.
  auto st = api.status_of(lock);
  CHECK(api_b.status_of(lock).token == second->token);
  CHECK(st.held);
  CHECK(st.owner == "second-worker");
  CHECK(st.token == second->token);

  // The store stops cleanly on SIGTERM.
  store.proc.send_signal(SIGTERM);
  auto store_end = store.proc.wait(30s);
  INFO(store.proc.diagnostics());
  REQUIRE(store_end.has_value());
  CHECK(store_end->clean());
}
