// The command lines of the client subcommands: flags, defaults, FENCELOCK_URL, usage errors.

#include <catch2/catch.hpp>

#include "client/cli/args.hpp"
#include "client/cli/exit_codes.hpp"

using namespace fencelock::cli;
using namespace std::chrono_literals;
using args_t = std::vector<std::string>;

TEST_CASE("durations", "[cli]") {
  CHECK(parse_duration("500") == 500ms);
  CHECK(parse_duration("500ms") == 500ms);
  CHECK(parse_duration("30s") == 30s);
  CHECK(parse_duration("5m") == 5min);
  CHECK(parse_duration("0") == 0ms);
  CHECK_FALSE(parse_duration(""));
  CHECK_FALSE(parse_duration("-1"));
  CHECK_FALSE(parse_duration("1.5s"));
  CHECK_FALSE(parse_duration("10h"));
  CHECK_FALSE(parse_duration("s"));
  CHECK_FALSE(parse_duration("99999999999999999999"));
}

TEST_CASE("run: flags, defaults and the command after --", "[cli]") {
  auto p = parse_run({"jobs:report", "--ttl", "5s", "--wait=1000", "--owner", "w1", "--grace",
                      "200", "--", "sh", "-c", "exit 7"},
                     "");
  REQUIRE(p);
  CHECK(p.args.name == "jobs:report");
  CHECK(p.args.ttl == 5s);
  CHECK(p.args.wait == 1000ms);
  CHECK(p.args.owner == "w1");
  CHECK(p.args.grace == 200ms);
  CHECK_FALSE(p.args.session);
  CHECK(p.args.url == default_url);
  CHECK(p.args.command == args_t{"sh", "-c", "exit 7"});

  // Defaults; flags after the command's "--" belong to the command.
  p = parse_run({"x", "--session", "--", "cmd", "--ttl", "1"}, "");
  REQUIRE(p);
  CHECK(p.args.ttl == 30s);
  CHECK(p.args.wait == 0ms);
  CHECK(p.args.grace == 5s);
  CHECK(p.args.session);
  CHECK(p.args.command == args_t{"cmd", "--ttl", "1"});
}

TEST_CASE("the server comes from --url, else FENCELOCK_URL, else the default", "[cli]") {
  CHECK(parse_status({"x"}, "").args.url == "http://127.0.0.1:7070");
  CHECK(parse_status({"x"}, "http://env:1").args.url == "http://env:1");
  CHECK(parse_status({"x", "--url", "ws://flag:2"}, "http://env:1").args.url == "ws://flag:2");
}

TEST_CASE("usage errors name the problem", "[cli]") {
  auto error_of = [](const auto& p) {
    CHECK_FALSE(p);
    return p.error;
  };
  CHECK(error_of(parse_run({}, "")) == "missing lock name");
  CHECK(error_of(parse_run({"x"}, "")).find("missing the command") != std::string::npos);
  CHECK(error_of(parse_run({"x", "--"}, "")).find("missing the command") != std::string::npos);
  CHECK(error_of(parse_run({"x", "--ttl", "0", "--", "true"}, "")).find("--ttl") == 0);
  CHECK(error_of(parse_run({"x", "--ttl"}, "")) == "--ttl: requires a value");
  CHECK(error_of(parse_run({"x", "--bogus", "--", "true"}, "")) == "--bogus: unknown option");
  CHECK(error_of(parse_run({"x", "-v", "--", "true"}, "")) == "-v: unknown option");
  CHECK(error_of(parse_run({"x", "--wait", "1", "--wait", "2", "--", "true"}, ""))
        == "--wait: given more than once");
  CHECK(error_of(parse_run({"x", "--session=yes", "--", "true"}, ""))
        == "--session: takes no value");
  CHECK(error_of(parse_status({"a", "b"}, "")) == "unexpected argument \"b\"");
  CHECK(error_of(parse_status({"a", "--", "b"}, "")) == "unexpected \"--\"");
  CHECK(error_of(parse_release({"a", "--token", "3"}, "")).find("--owner") == 0);
  CHECK(error_of(parse_release({"a", "--owner", "o"}, "")).find("--token") == 0);
  CHECK(error_of(parse_release({"a", "--owner", "o", "--token", "0"}, "")).find("--token") == 0);
  CHECK(error_of(parse_release({"a", "--owner", "o", "--token", "3x"}, "")).find("--token")
        == 0);
}

TEST_CASE("help wins over missing arguments", "[cli]") {
  CHECK(parse_run({"--help"}, "").help);
  CHECK(parse_acquire({"-h"}, "").help);
  CHECK(parse_watch({"--help"}, "").help);
}

TEST_CASE("acquire, release, status", "[cli]") {
  auto a = parse_acquire({"l", "--owner", "o", "--ttl", "2s", "--wait", "3s"}, "");
  REQUIRE(a);
  CHECK(a.args.name == "l");
  CHECK(a.args.owner == "o");
  CHECK(a.args.ttl == 2s);
  CHECK(a.args.wait == 3s);

  auto r = parse_release({"l", "--owner=o", "--token=42"}, "");
  REQUIRE(r);
  CHECK(r.args.owner == "o");
  CHECK(r.args.token == 42u);

  auto s = parse_status({"l"}, "");
  REQUIRE(s);
  CHECK(s.args.name == "l");
}

TEST_CASE("watch: a trailing * makes a prefix", "[cli]") {
  auto w = parse_watch({"jobs:report"}, "");
  REQUIRE(w);
  CHECK(w.args.target == "jobs:report");
  CHECK_FALSE(w.args.prefix);
  w = parse_watch({"jobs:*"}, "");
  REQUIRE(w);
  CHECK(w.args.target == "jobs:");
  CHECK(w.args.prefix);
  w = parse_watch({"*"}, "");
  REQUIRE(w);
  CHECK(w.args.target.empty());
  CHECK(w.args.prefix);
}

TEST_CASE("exit codes of failed requests", "[cli]") {
  using fencelock::client_error;
  CHECK(exit_code_of(client_error{"lock_held", "m"}) == 75);
  CHECK(exit_code_of(client_error{"too_many_waiters", "m"}) == 75);
  CHECK(exit_code_of(client_error{"lease_lost", "m"}) == 76);
  CHECK(exit_code_of(client_error{"invalid_request", "m"}) == 64);
  CHECK(exit_code_of(client_error{"connection_failed", "m"}) == 69);
  CHECK(exit_code_of(client_error{"timeout", "m"}) == 69);
  CHECK(exit_code_of(client_error{"store_unavailable", "m"}) == 69);
}
