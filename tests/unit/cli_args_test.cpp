// The command line of the fencelock binary (client/cli/args.hpp, on CLI11): flags, defaults,
// FENCELOCK_URL, durations, usage errors naming the flag, help and version, the output formats,
// the completions and the man page. No sockets.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <ctime>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "client/cli/args.hpp"
#include "client/cli/completion.hpp"
#include "client/cli/exit_codes.hpp"
#include "client/cli/output.hpp"

using namespace fencelock::cli;
using namespace std::chrono_literals;
using args_t = std::vector<std::string>;

namespace {

cli_context piped() {
  cli_context ctx;
  ctx.version = "fencelock 9.9.9 (commit test)";
  ctx.serve_flags = {{"port", "0..65535", "TCP port of the HTTP listener."},
                     {"data-dir", "path", "Where the store keeps its files."}};
  return ctx;
}

template <class T>
T parse_ok(const args_t& args, const cli_context& ctx = piped()) {
  auto p = parse_command_line(args, ctx);
  INFO("error: " << p.error);
  REQUIRE(p.error.empty());
  REQUIRE(p.cmd.has_value());
  REQUIRE(std::holds_alternative<T>(*p.cmd));
  return std::get<T>(*p.cmd);
}

std::string error_of(const args_t& args, const cli_context& ctx = piped()) {
  auto p = parse_command_line(args, ctx);
  CHECK_FALSE(p.cmd.has_value());
  CHECK(p.print.empty());
  return p.error;
}

} // namespace

TEST_CASE("durations have units, largest first; a bare number is milliseconds", "[cli]") {
  CHECK(parse_duration("1h") == 1h);
  CHECK(parse_duration("90s") == 90s);
  CHECK(parse_duration("1m30s") == 90s);
  CHECK(parse_duration("250ms") == 250ms);
  CHECK(parse_duration("2h45m") == 165min);
  CHECK(parse_duration("1h0m5s20ms") == 3'605'020ms);
  CHECK(parse_duration("5m") == 5min);
  CHECK(parse_duration("500") == 500ms);
  CHECK(parse_duration("0") == 0ms);
  CHECK(parse_duration("0s") == 0ms);
  for (auto bad : {"", "-1", "1.5s", "s", "10x", "1s1m", "30s30s", "1m 30s", "1ms5s", "h",
                   "99999999999999999999", "9999999999999h"}) {
    INFO(bad);
    CHECK_FALSE(parse_duration(bad));
  }
  CHECK(format_duration(90s) == "1m30s");
  CHECK(format_duration(1h) == "1h");
  CHECK(format_duration(250ms) == "250ms");
  CHECK(format_duration(0ms) == "0s");
  for (std::chrono::milliseconds d : {1ms, 999ms, 1000ms, 61'000ms, 3'601'001ms, 86'400'000ms})
    CHECK(parse_duration(format_duration(d)) == d);
}

TEST_CASE("run: flags, short flags, defaults and the command after --", "[cli]") {
  auto a = parse_ok<run_args>({"run", "jobs:report", "--ttl", "5s", "--wait=1m30s", "--owner", "w1",
                               "--grace", "200ms", "--", "sh", "-c", "exit 7"});
  CHECK(a.name == "jobs:report");
  CHECK(a.ttl == 5s);
  CHECK(a.wait == 90s);
  CHECK(a.owner == "w1");
  CHECK(a.grace == 200ms);
  CHECK_FALSE(a.session);
  CHECK(a.url == default_url);
  CHECK(a.command == args_t{"sh", "-c", "exit 7"});

  auto s = parse_ok<run_args>({"run", "x", "-t", "2s", "-w", "1s", "-O", "o", "-g", "1s", "-s",
                               "-u", "http://h:1", "--", "cmd", "--ttl", "1"});
  CHECK(s.ttl == 2s);
  CHECK(s.wait == 1s);
  CHECK(s.owner == "o");
  CHECK(s.grace == 1s);
  CHECK(s.session);
  CHECK(s.url == "http://h:1");
  CHECK(s.command == args_t{"cmd", "--ttl", "1"}); // flags after "--" belong to the command

  auto d = parse_ok<run_args>({"run", "x", "--", "true"});
  CHECK(d.ttl == 30s);
  CHECK(d.wait == 0ms);
  CHECK(d.grace == 5s);
}

TEST_CASE("the server comes from --url, else FENCELOCK_URL, else the default", "[cli]") {
  CHECK(parse_ok<status_args>({"status", "x"}).url == "http://127.0.0.1:7070");
  auto env = piped();
  env.env_url = "http://env:1";
  CHECK(parse_ok<status_args>({"status", "x"}, env).url == "http://env:1");
  CHECK(parse_ok<status_args>({"status", "x", "--url", "ws://flag:2"}, env).url == "ws://flag:2");
  // A list of endpoints, tried in turn.
  CHECK(parse_ok<status_args>({"status", "x", "-u", "http://a:1, http://b:2"}).url
        == "http://a:1, http://b:2");
  CHECK(error_of({"status", "x", "--url", "http://a:1,"}).starts_with("--url: "));
  CHECK(error_of({"status", "x", "--url", "ftp://a"}).starts_with("--url: "));
  env.env_url = "nonsense";
  CHECK(error_of({"status", "x"}, env).starts_with("FENCELOCK_URL: "));
}

TEST_CASE("the bearer token comes from --auth-token-file, else FENCELOCK_AUTH_TOKEN", "[cli]") {
  CHECK(parse_ok<status_args>({"status", "x"}).bearer_token.empty());
  auto env = piped();
  env.env_auth_token = "from-env";
  CHECK(parse_ok<status_args>({"status", "x"}, env).bearer_token == "from-env");
  auto path =
    std::filesystem::temp_directory_path() / ("fencelock_cli_token_" + std::to_string(::getpid()));
  std::ofstream{path} << "from-file\r\nsecond line ignored\n";
  const std::vector<args_t> commands = {{"status", "x"},
                                        {"acquire", "x"},
                                        {"release", "x", "-O", "o", "-T", "1"},
                                        {"renew", "x", "-O", "o", "-T", "1"},
                                        {"check", "x", "-T", "1"},
                                        {"list"},
                                        {"watch", "x"},
                                        {"run", "x", "--", "true"}};
  for (auto args : commands) {
    INFO(args.front());
    args.insert(args.begin() + 1, {"--auth-token-file", path.string()});
    auto p = parse_command_line(args, env);
    INFO(p.error);
    REQUIRE(p.cmd.has_value());
    std::visit(
      [](const auto& a) {
        if constexpr (std::is_base_of_v<common_args, std::decay_t<decltype(a)>>)
          CHECK(a.bearer_token == "from-file");
        else
          FAIL("a client command without the common options");
      },
      *p.cmd);
  }
  std::ofstream{path} << "\n";
  CHECK(error_of({"status", "x", "--auth-token-file", path.string()})
        == "--auth-token-file: \"" + path.string() + "\" has no token on its first line");
  std::filesystem::remove(path);
  CHECK(error_of({"status", "x", "--auth-token-file", path.string()})
        == "--auth-token-file: cannot read \"" + path.string() + "\"");
  env.env_auth_token = "tab\there";
  CHECK(error_of({"status", "x"}, env)
        == "FENCELOCK_AUTH_TOKEN: the token must be printable ASCII");
}

TEST_CASE("usage errors name the flag as typed", "[cli]") {
  CHECK(error_of({"run"}) == "missing lock name");
  CHECK(error_of({"run", "x"}).find("missing the command") != std::string::npos);
  CHECK(error_of({"run", "x", "--"}).find("missing the command") != std::string::npos);
  CHECK(error_of({"run", "x", "--ttl", "0", "--", "true"})
          .starts_with("--ttl: expected a "
                       "positive duration"));
  CHECK(error_of({"acquire", "x", "--ttl", "5x"}).starts_with("--ttl: "));
  CHECK(error_of({"acquire", "x", "-t", "5x"}).starts_with("--ttl: "));
  CHECK(error_of({"acquire", "x", "--wait", "soon"}).starts_with("--wait: "));
  CHECK(error_of({"run", "x", "--ttl"}).find("--ttl") != std::string::npos);
  CHECK(error_of({"run", "x", "--bogus", "--", "true"}) == "--bogus: unknown option");
  CHECK(error_of({"run", "x", "-v", "--", "true"}) == "-v: unknown option");
  CHECK(error_of({"run", "x", "--wait", "1", "--wait", "2", "--", "true"})
        == "--wait: given more than once");
  CHECK(error_of({"run", "x", "--session=yes", "--", "true"}) == "--session: takes no value");
  CHECK(error_of({"run", "x", "sh", "--", "true"}).find("comes after \"--\"") != std::string::npos);
  CHECK(error_of({"status", "a", "b"}) == "unexpected argument \"b\"");
  CHECK(error_of({"release", "a", "--token", "3"}).starts_with("--owner"));
  CHECK(error_of({"release", "a", "--owner", "o"}).starts_with("--token"));
  CHECK(error_of({"release", "a", "--owner", "o", "--token", "0"}).starts_with("--token"));
  CHECK(error_of({"release", "a", "-O", "o", "-T", "3x"}).starts_with("--token"));
  CHECK(error_of({"check", "a"}).starts_with("--token"));
  CHECK(error_of({"list", "a", "b"}) == "unexpected argument \"b\"");
  CHECK(error_of({"status", "a", "-o", "yaml"}).starts_with("--output: expected json or table"));
  CHECK(error_of({"completion", "fish"}).find("bash or zsh") != std::string::npos);
  CHECK(error_of({"bogus"}) == "unknown command \"bogus\"");
  CHECK(error_of({"--bogus"}) == "--bogus: unknown option");
  CHECK(error_of({}) == "missing command");
}

TEST_CASE("an empty --owner is refused, not replaced", "[cli]") {
  CHECK(error_of({"acquire", "x", "--owner", ""}).starts_with("--owner: must not be empty"));
  CHECK(error_of({"run", "x", "-O", "", "--", "true"}).starts_with("--owner: must not be empty"));
  CHECK(error_of({"acquire", "x", "--owner", std::string(129, 'o')}).starts_with("--owner: "));
  CHECK(parse_ok<acquire_args>({"acquire", "x"}).owner.empty()); // left out: generated
}

TEST_CASE("help and version, on every command", "[cli]") {
  for (std::string cmd : {"run", "acquire", "release", "renew", "status", "check", "list", "watch",
                          "version", "completion"}) {
    INFO(cmd);
    auto help = parse_command_line({cmd, "--help"}, piped());
    CHECK(help.print.starts_with("Usage: fencelock " + cmd));
    CHECK(help.print.find("Exit codes") != std::string::npos);
    CHECK(parse_command_line({cmd, "-h"}, piped()).print == help.print);
    CHECK(parse_command_line({"help", cmd}, piped()).print == help.print);
    CHECK(parse_command_line({cmd, "--version"}, piped()).print
          == "fencelock 9.9.9 (commit "
             "test)\n");
  }
  auto top = parse_command_line({"--help"}, piped()).print;
  for (auto word : {"serve", "run", "acquire", "release", "renew", "status", "check", "list",
                    "watch", "version", "completion", "FENCELOCK_URL"})
    CHECK(top.find(word) != std::string::npos);
  CHECK(top.find("manpage") == std::string::npos); // hidden
  CHECK(parse_command_line({"--version"}, piped()).print == "fencelock 9.9.9 (commit test)\n");
  CHECK(parse_command_line({"serve", "--version"}, piped()).print
        == "fencelock 9.9.9 (commit test)\n");
  // serve's flags belong to the configuration loader; help included.
  auto serve = parse_ok<serve_args>({"serve", "--port", "1", "--help"});
  CHECK(serve.args == args_t{"--port", "1", "--help"});
}

TEST_CASE("new commands: renew, check, list, version, completion", "[cli]") {
  auto r = parse_ok<renew_args>({"renew", "l", "-O", "o", "-T", "42", "-t", "1m"});
  CHECK(r.name == "l");
  CHECK(r.owner == "o");
  CHECK(r.token == 42u);
  CHECK(r.ttl == 1min);
  CHECK(parse_ok<renew_args>({"renew", "l", "-O", "o", "-T", "42"}).ttl == 0ms); // its own TTL
  auto c = parse_ok<check_args>({"check", "l", "--token=7"});
  CHECK(c.token == 7u);
  CHECK(parse_ok<list_args>({"list"}).prefix.empty());
  CHECK(parse_ok<list_args>({"list", "jobs:"}).prefix == "jobs:");
  CHECK(parse_ok<completion_args>({"completion", "zsh"}).shell == "zsh");
  parse_ok<version_args>({"version"});
  auto rel = parse_ok<release_args>({"release", "l", "--owner=o", "--token=42"});
  CHECK(rel.owner == "o");
  CHECK(rel.token == 42u);
  CHECK_FALSE(rel.force);
}

TEST_CASE("release --force needs no owner, and takes a token to end that lease only", "[cli]") {
  auto any = parse_ok<release_args>({"release", "l", "--force"});
  CHECK(any.force);
  CHECK(any.token == 0u);
  CHECK(any.owner.empty());
  auto one = parse_ok<release_args>({"release", "l", "-f", "-T", "7"});
  CHECK(one.token == 7u);
  CHECK(error_of({"release", "l", "--force", "--owner", "o"}).starts_with("--owner: not with"));
  CHECK(error_of({"release", "l", "--force", "--token", "0"}).starts_with("--token"));
  CHECK(error_of({"release", "--force"}).starts_with("missing"));
}

TEST_CASE("watch: a trailing * makes a prefix", "[cli]") {
  auto w = parse_ok<watch_args>({"watch", "jobs:report"});
  CHECK(w.target == "jobs:report");
  CHECK_FALSE(w.prefix);
  w = parse_ok<watch_args>({"watch", "jobs:*"});
  CHECK(w.target == "jobs:");
  CHECK(w.prefix);
  w = parse_ok<watch_args>({"watch", "*"});
  CHECK(w.target.empty());
  CHECK(w.prefix);
}

TEST_CASE("output: a table on a terminal, JSON when piped, or as chosen", "[cli]") {
  CHECK(parse_ok<status_args>({"status", "x"}).output == output_format::json);
  auto tty = piped();
  tty.stdout_is_tty = true;
  CHECK(parse_ok<status_args>({"status", "x"}, tty).output == output_format::table);
  CHECK(parse_ok<status_args>({"status", "x", "-o", "json"}, tty).output == output_format::json);
  CHECK(parse_ok<status_args>({"status", "x", "--output=table"}).output == output_format::table);
}

TEST_CASE("tables show human times in local time", "[cli]") {
  // Local time is the process's time zone: fix it for the test, and put it back after.
  const char* tz = std::getenv("TZ");
  std::optional<std::string> old_tz;
  if (tz != nullptr)
    old_tz = tz;
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  const int64_t now = 1'795'000'000'000; // 2026-11-18 11:06:40 UTC
  CHECK(human_duration(12'345) == "12.3s");
  CHECK(human_duration(598'000) == "9m58s");
  CHECK(human_duration(3'720'000) == "1h2m");
  CHECK(human_duration(97'200'000) == "1d3h");
  CHECK(human_time(now + 12'300, now) == "in 12.3s (2026-11-18 11:06:52)");
  CHECK(human_time(now - 2'100, now) == "2.1s ago (2026-11-18 11:06:37)");

  fencelock::lease_info lease{"reports:daily", "cron-1", 42, 600s, now + 599'000};
  auto t = lease_table(lease, now);
  CHECK(t.starts_with("NAME "));
  CHECK(t.find("reports:daily  cron-1  42     10m  in 9m59s (2026-11-18 11:16:39)")
        != std::string::npos);
  CHECK(lease_json(lease)
        == R"({"name":"reports:daily","owner":"cron-1","token":42,"ttlMs":600000,)"
           R"("expiresAt":1795000599000})");

  fencelock::lock_info held{"a", true, "o", 7, now + 5'000, 1, 7};
  fencelock::lock_info free_lock{"b", false, "", 0, 0, 0, 3};
  auto st = status_table({held, free_lock}, now);
  CHECK(st.find("in 5.0s (2026-11-18 11:06:45)") != std::string::npos);
  CHECK(st.find("b     no    -      -") != std::string::npos);
  CHECK(status_table({}, now) == "(no locks)\n");

  fencelock::token_check current{true, 7, now + 3'000};
  CHECK(check_text("a", 7, current, now)
        == "token 7 of a is current (expires in 3.0s "
           "(2026-11-18 11:06:43))");
  CHECK(check_text("a", 6, {false, 7, now}, now)
        == "token 6 of a is not current: the current "
           "token is 7");
  CHECK(check_json("a", 6, {false, 0, 0})
        == R"({"name":"a","token":6,"current":false,"currentToken":null})");
  if (old_tz)
    ::setenv("TZ", old_tz->c_str(), 1);
  else
    ::unsetenv("TZ");
  ::tzset();
}

TEST_CASE("server messages name the flag, not the wire field", "[cli]") {
  CHECK(in_flag_terms("ttlMs: must be an integer between 100 and 3600000")
        == "--ttl: must be between 100ms and 1h");
  CHECK(in_flag_terms("waitMs: must be an integer between 0 and 300000")
        == "--wait: must be between 0s and 5m");
  CHECK(in_flag_terms("owner: must be 1..128 printable ASCII characters")
        == "--owner: must be 1..128 printable ASCII characters");
  CHECK(in_flag_terms("lock: must be 1..200 characters of [A-Za-z0-9._:-]")
        == "the lock name: must be 1..200 characters of [A-Za-z0-9._:-]");
  CHECK(in_flag_terms("no colon here") == "no colon here");
}

TEST_CASE("exit codes of failed requests", "[cli]") {
  using fencelock::client_error;
  CHECK(exit_code_of(client_error{"lock_held", "m"}) == 75);
  CHECK(exit_code_of(client_error{"too_many_waiters", "m"}) == 75);
  CHECK(exit_code_of(client_error{"lease_lost", "m"}) == 76);
  CHECK(exit_code_of(client_error{"invalid_request", "m"}) == 64);
  CHECK(exit_code_of(client_error{"unauthenticated", "m"}) == 77);
  CHECK(exit_code_of(client_error{"forbidden", "m"}) == 77);
  CHECK(exit_code_of(client_error{"connection_failed", "m"}) == 69);
  CHECK(exit_code_of(client_error{"timeout", "m"}) == 69);
  CHECK(exit_code_of(client_error{"store_unavailable", "m"}) == 69);
}

TEST_CASE("completions and the man page cover every command and flag", "[cli]") {
  auto docs = describe_commands(piped());
  auto bash = bash_completion(docs);
  auto zsh = zsh_completion(docs);
  auto man = man_page(docs, "fencelock 9.9.9");
  CHECK(bash.find("complete -F _fencelock fencelock") != std::string::npos);
  CHECK(zsh.starts_with("#compdef fencelock\n"));
  CHECK(man.find(".TH FENCELOCK 1") != std::string::npos);
  for (const auto& c : docs) {
    INFO(c.name);
    if (c.hidden) {
      CHECK(bash.find(" " + c.name + " ") == std::string::npos);
      continue;
    }
    CHECK(bash.find(c.name) != std::string::npos);
    CHECK(zsh.find("'" + c.name + ":") != std::string::npos);
    CHECK(man.find(".SS \"fencelock " + c.name) != std::string::npos);
    for (const auto& o : c.options)
      for (const auto& n : o.names) {
        INFO(n);
        CHECK(bash.find(n) != std::string::npos);
        CHECK(zsh.find(n) != std::string::npos);
        std::string troff;
        for (char ch : n)
          troff += ch == '-' ? std::string{"\\-"} : std::string(1, ch);
        CHECK(man.find(troff) != std::string::npos);
      }
  }
  // serve's settings come from the configuration loader.
  CHECK(bash.find("--data-dir") != std::string::npos);
  CHECK(bash.find("json table") != std::string::npos);
  CHECK(bash.find("bash zsh") != std::string::npos);
}

TEST_CASE("docs/cli.md describes every command and flag the parser has", "[cli]") {
  std::ifstream in{FENCELOCK_SOURCE_DIR "/docs/cli.md"};
  std::stringstream ss;
  ss << in.rdbuf();
  auto doc = ss.str();
  REQUIRE_FALSE(doc.empty());
  for (const auto& c : describe_commands(piped())) {
    if (c.hidden || c.name == "serve") // serve's settings: docs/configuration.md
      continue;
    INFO(c.name);
    CHECK(doc.find("`fencelock " + c.name) != std::string::npos);
    for (const auto& o : c.options)
      for (const auto& n : o.names) {
        INFO(n);
        CHECK(doc.find("`" + n) != std::string::npos);
      }
  }
}
