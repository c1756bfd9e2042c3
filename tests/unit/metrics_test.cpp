// actors/metrics and the GET /metrics route: counters move, the held gauge goes up and down, and
// the scrape is the Prometheus text format. No sockets.

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include "actors/admission.hpp"
#include "support/lab.hpp"
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <variant>
#include <vector>

#include "actors/metrics.hpp"
#include "fencelock/config.hpp"
#include "net/process_metrics.hpp"
#include "net/routes.hpp"
#include "support/prom_text.hpp"

using fencelock::lease_end_cause;
using fencelock::test::has_line;
using fencelock::test::sample;
using namespace std::chrono_literals;

TEST_CASE("metrics start at zero with every known series", "[metrics]") {
  fencelock::metrics m;
  auto text = m.scrape();
  CHECK(has_line(text, "# TYPE fencelock_operations_total counter"));
  CHECK(has_line(text, "# TYPE fencelock_operation_duration_seconds histogram"));
  CHECK(has_line(text, "# TYPE fencelock_lease_ends_total counter"));
  CHECK(has_line(text, "# TYPE fencelock_locks_held gauge"));
  for (auto op : {"acquire", "renew", "release", "check", "status", "list"}) {
    CAPTURE(op);
    CHECK(sample(text, std::string{"fencelock_operations_total{op=\""} + op
                         + "\",outcome=\"ok\"}")
          == 0.0);
    CHECK(sample(text, std::string{"fencelock_operation_duration_seconds_count{op=\""} + op
                         + "\"}")
          == 0.0);
  }
  for (auto cause : {"released", "expired", "undelivered", "session_closed"})
    CHECK(sample(text, std::string{"fencelock_lease_ends_total{cause=\""} + cause + "\"}") == 0.0);
  CHECK(sample(text, "fencelock_locks_held") == 0.0);
}

TEST_CASE("metrics count operations and their durations", "[metrics]") {
  fencelock::metrics m;
  m.record_operation("acquire", "ok", 2ms);
  m.record_operation("acquire", "ok", 20ms);
  m.record_operation("renew", "lease_lost", 50us);
  auto text = m.scrape();
  CHECK(sample(text, R"(fencelock_operations_total{op="acquire",outcome="ok"})") == 2.0);
  CHECK(sample(text, R"(fencelock_operations_total{op="renew",outcome="lease_lost"})") == 1.0);
  CHECK(sample(text, R"(fencelock_operations_total{op="renew",outcome="ok"})") == 0.0);
  CHECK(sample(text, R"(fencelock_operation_duration_seconds_count{op="acquire"})") == 2.0);
  CHECK(sample(text, R"(fencelock_operation_duration_seconds_count{op="renew"})") == 1.0);
  // Buckets run from 100 µs to 10 s.
  CHECK(sample(text, R"(fencelock_operation_duration_seconds_bucket{op="renew",le="0.0001"})")
        == 1.0);
  CHECK(sample(text, R"(fencelock_operation_duration_seconds_bucket{op="acquire",le="0.005"})")
        == 1.0);
  CHECK(sample(text, R"(fencelock_operation_duration_seconds_bucket{op="acquire",le="10"})")
        == 2.0);
  auto sum = sample(text, R"(fencelock_operation_duration_seconds_sum{op="acquire"})");
  REQUIRE(sum);
  CHECK(*sum == Approx(0.022));
}

TEST_CASE("every scrape shows the counts made until it, however many scrapes run", "[metrics]") {
  // The hot counts live beside the registry and are copied into it at scrape: a copy must add
  // only what is new, also when scrapes run at once.
  fencelock::metrics m;
  m.record_operation("release", "ok", 1ms);
  m.count_lease_end(lease_end_cause::released);
  m.set_lock_actors(3);
  auto first = m.scrape();
  CHECK(sample(first, R"(fencelock_operations_total{op="release",outcome="ok"})") == 1.0);
  CHECK(sample(first, R"(fencelock_lease_ends_total{cause="released"})") == 1.0);
  CHECK(sample(first, "fencelock_lock_actors") == 3.0);
  CHECK(sample(m.scrape(), R"(fencelock_operations_total{op="release",outcome="ok"})") == 1.0);

  constexpr int threads = 4;
  constexpr int each = 2'000;
  {
    std::vector<std::jthread> running;
    for (int t = 0; t < threads; ++t)
      running.emplace_back([&m] {
        for (int i = 0; i < each; ++i) {
          m.record_operation("release", "ok", 1ms);
          m.count_lease_end(lease_end_cause::released);
          if (i % 100 == 0)
            m.scrape();
        }
      });
  }
  m.set_lock_actors(1);
  auto last = m.scrape();
  CHECK(sample(last, R"(fencelock_operations_total{op="release",outcome="ok"})")
        == 1.0 + threads * each);
  CHECK(sample(last, R"(fencelock_lease_ends_total{cause="released"})") == 1.0 + threads * each);
  CHECK(sample(last, "fencelock_lock_actors") == 1.0);
}

TEST_CASE("the held gauge follows lease starts and ends", "[metrics]") {
  fencelock::test::embedded_lab lab;
  auto a = lab.acquire("a", "alice", 1000)->value().value();
  auto b = lab.acquire("b", "bob", 1000)->value().value();
  CHECK(sample(lab.stats->scrape(), "fencelock_locks_held") == 2.0);
  lab.renew("a", "alice", a.token); // a renewal leaves it unchanged
  CHECK(sample(lab.stats->scrape(), "fencelock_locks_held") == 2.0);
  lab.release("a", "alice", a.token);
  lab.advance(1000); // b expires
  auto text = lab.stats->scrape();
  CHECK(sample(text, "fencelock_locks_held") == 0.0);
  CHECK(sample(text, R"(fencelock_lease_ends_total{cause="released"})") == 1.0);
  CHECK(sample(text, R"(fencelock_lease_ends_total{cause="expired"})") == 1.0);
  CHECK(sample(text, R"(fencelock_lease_ends_total{cause="undelivered"})") == 0.0);
  (void)b;
}

TEST_CASE("GET /metrics routes to the metrics, other methods get 405", "[metrics][net]") {
  namespace http = boost::beast::http;
  using fencelock::net::reply;
  using fencelock::net::route;
  const fencelock::config cfg{};
  auto got = route(http::verb::get, "/metrics", "", cfg, true);
  REQUIRE(std::holds_alternative<fencelock::net::service_call>(got));
  CHECK(std::holds_alternative<fencelock::net::metrics_query>(
    std::get<fencelock::net::service_call>(got)));
  auto posted = route(http::verb::post, "/metrics", "", cfg, true);
  REQUIRE(std::holds_alternative<reply>(posted));
  CHECK(std::get<reply>(posted).status == http::status::method_not_allowed);
  CHECK(std::get<reply>(posted).allow == "GET");
}

TEST_CASE("process metrics come from /proc/<pid>/stat", "[metrics]") {
  using fencelock::net::parse_proc_stat;
  using fencelock::net::process_sample;
  // proc(5): utime 14, stime 15, starttime 22, vsize 23, rss 24; the name may hold ") (".
  const std::string stat = "4242 (a) (b c) S 1 4242 4242 0 -1 4194560 10 0 0 0 "
                           "250 150 0 0 20 0 9 0 1000 104857600 2560 18446744073709551615";
  process_sample x;
  REQUIRE(parse_proc_stat(stat, 100, 4096, 1'700'000'000, x));
  CHECK(x.cpu_seconds == Approx(4.0));
  CHECK(x.start_time_seconds == Approx(1'700'000'010.0));
  CHECK(x.virtual_bytes == Approx(104857600.0));
  CHECK(x.resident_bytes == Approx(2560.0 * 4096));
  CHECK_FALSE(parse_proc_stat("garbage", 100, 4096, 0, x));
  CHECK_FALSE(parse_proc_stat("1 (x) S 1 2", 100, 4096, 0, x));

  // This very process, read from /proc.
  auto self = fencelock::net::read_process_sample();
  REQUIRE(self.has_value());
  CHECK(self->resident_bytes > 0);
  CHECK(self->open_fds >= 3);
  CHECK(self->start_time_seconds > 1'500'000'000);

  auto text = fencelock::net::process_metrics_text(x, "1.2.3", "abc\"def");
  CHECK(has_line(text, "# TYPE process_cpu_seconds_total counter"));
  CHECK(sample(text, "process_cpu_seconds_total") == Approx(4.0));
  CHECK(sample(text, "process_resident_memory_bytes") == Approx(2560.0 * 4096));
  CHECK(has_line(text, R"(fencelock_build_info{version="1.2.3",commit="abc\"def"} 1)"));
  // Without a reading, the build info alone.
  auto bare = fencelock::net::process_metrics_text(std::nullopt, "1.2.3", "abc");
  CHECK_FALSE(sample(bare, "process_open_fds"));
  CHECK(sample(bare, R"(fencelock_build_info{version="1.2.3",commit="abc"})") == 1.0);
}

TEST_CASE("reads have a budget of their own", "[overload]") {
  fencelock::config cfg;
  cfg.max_reads_in_flight = 2;
  fencelock::service_core core{cfg};
  core.in_flight = 2;
  core.reads_in_flight = 2;
  CHECK(fencelock::shed(core, fencelock::call_class::read));
  CHECK_FALSE(fencelock::shed(core, fencelock::call_class::lease));
  CHECK_FALSE(fencelock::shed(core, fencelock::call_class::acquire));
  core.reads_in_flight = 1;
  CHECK_FALSE(fencelock::shed(core, fencelock::call_class::read));
}
