// `fencelock acquire | release | status | watch` and the help texts, against the real server.

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include <csignal>

#include <boost/json.hpp>

#include "integration/checks.hpp"
#include "integration/client_support.hpp"
#include "support/lock_api.hpp"
#include "support/poll.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

namespace {

boost::json::value parse_line(const std::vector<std::string>& lines, size_t i = 0) {
  INFO("stdout lines: " << lines.size());
  REQUIRE(lines.size() > i);
  boost::system::error_code ec;
  auto v = boost::json::parse(lines[i], ec);
  INFO(lines[i]);
  REQUIRE_FALSE(ec);
  return v;
}

} // namespace

TEST_CASE("cli_acquire_status_release", "[integration][cli]") {
  temp_dir dir;
  server_process server{dir.str()};
  auto url = url_of(server.port());
  std::vector<std::string> out;

  auto st = run_cli({"acquire", "cli:cmd", "--owner", "o1", "--ttl", "60s", "--url", url},
                    60s, &out);
  REQUIRE(st.clean());
  auto lease = parse_line(out);
  CHECK(json_str(lease, "name") == "cli:cmd");
  CHECK(json_str(lease, "owner") == "o1");
  CHECK(json_i64(lease, "ttlMs") == 60'000);
  auto token = json_u64(lease, "token").value_or(0);
  REQUIRE(token > 0);

  // Not released on exit: still held, by o1.
  REQUIRE(run_cli({"status", "cli:cmd", "--url", url}, 60s, &out).clean());
  auto status = parse_line(out);
  CHECK(json_bool(status, "held") == true);
  CHECK(json_str(status, "owner") == "o1");
  CHECK(json_u64(status, "token") == token);

  CHECK(run_cli({"acquire", "cli:cmd", "--owner", "o2", "--url", url}).code == 75);

  REQUIRE(run_cli({"release", "cli:cmd", "--owner", "o1", "--token", std::to_string(token),
                   "--url", url},
                  60s, &out)
            .clean());
  CHECK(json_bool(parse_line(out), "released") == true);
  CHECK(run_cli({"release", "cli:cmd", "--owner", "o1", "--token", std::to_string(token),
                 "--url", url})
          .code
        == 76);

  REQUIRE(run_cli({"status", "cli:cmd", "--url", url}, 60s, &out).clean());
  status = parse_line(out);
  CHECK(json_bool(status, "held") == false);
  CHECK(json_u64(status, "lastToken") == token);

  // FENCELOCK_URL names the server when --url does not.
  child_process with_env{"/usr/bin/env",
                         {"FENCELOCK_URL=" + url, server_binary(), "status", "cli:cmd"}};
  auto env_st = with_env.wait(60s);
  INFO(with_env.diagnostics());
  REQUIRE(env_st.has_value());
  CHECK(env_st->clean());

  CHECK(run_cli({"status", "cli:cmd", "--url", url_of(closed_port())}).code == 69);
  CHECK(run_cli({"status"}).code == 64);
}

TEST_CASE("cli_watch_prints_snapshot_then_events", "[integration][cli]") {
  temp_dir dir;
  server_process server{dir.str()};
  lock_client api{server.port()};
  auto held = require_lease(api.acquire("cli:w:held", "w0", 60'000, 0));

  child_process watch{server_binary(), {"watch", "cli:w:*", "--url", url_of(server.port())}};
  size_t at = 0;
  auto snap = watch.wait_for_line(
    [](std::string_view l) { return l.find("\"snapshot\"") != std::string_view::npos; }, 30s,
    0, &at);
  INFO(watch.diagnostics());
  REQUIRE(snap.has_value());
  auto v = boost::json::parse(*snap);
  auto& locks = v.as_object().at("locks").as_array();
  REQUIRE(locks.size() == 1u);
  CHECK(json_u64(locks[0], "token") == held.token);

  auto lease = require_lease(api.acquire("cli:w:job", "w1", 60'000, 0));
  REQUIRE(api.release("cli:w:job", "w1", lease.token).status == 200);
  api.acquire("other:job", "w1", 60'000, 0); // outside the prefix: never printed
  auto event_of = [&](const std::string& event) {
    return watch.wait_for_line(
      [&](std::string_view l) {
        return l.find("\"event\":\"" + event + "\"") != std::string_view::npos
               && l.find("\"cli:w:job\"") != std::string_view::npos;
      },
      30s, at);
  };
  auto acquired = event_of("acquired");
  REQUIRE(acquired.has_value());
  auto a = boost::json::parse(*acquired);
  CHECK(json_str(a, "type") == "lock_event");
  CHECK(json_u64(a, "token") == lease.token);
  CHECK(json_str(a, "owner") == "w1");
  REQUIRE(event_of("released").has_value());
  for (const auto& line : watch.lines())
    CHECK(line.find("other:job") == std::string::npos);

  watch.send_signal(SIGTERM);
  auto st = watch.wait(30s);
  REQUIRE(st.has_value());
  CHECK(st->clean());
}

TEST_CASE("cli_help_describes_every_command", "[integration][cli]") {
  std::vector<std::string> out;
  REQUIRE(run_cli({"--help"}, 60s, &out).clean());
  std::string all;
  for (const auto& l : out)
    all += l + "\n";
  for (auto word : {"serve", "run", "acquire", "release", "status", "watch", "FENCELOCK_URL"})
    CHECK(all.find(word) != std::string::npos);
  for (std::string cmd : {"run", "acquire", "release", "status", "watch"}) {
    INFO(cmd);
    REQUIRE(run_cli({cmd, "--help"}, 60s, &out).clean());
    REQUIRE_FALSE(out.empty());
    CHECK(out.front().starts_with("Usage: fencelock " + cmd));
  }
}
