// `fencelock run` against the real server: the command gets FENCELOCK_LOCK and FENCELOCK_TOKEN,
// its exit code comes back, the lease is released after it; a signal sent to run reaches the
// command; a lost lease stops the command (SIGTERM, then SIGKILL after --grace) with exit 76;
// a held lock is 75, no server 69, no command 127.

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include <sys/types.h>

#include <cerrno>
#include <csignal>
#include <filesystem>

#include "integration/checks.hpp"
#include "integration/client_support.hpp"
#include "support/lock_api.hpp"
#include "support/poll.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

namespace {

bool exists(const std::string& path) {
  return std::filesystem::exists(path);
}

// Returns the command line of `fencelock run` for `lock` with `flags`, running `script` in sh.
std::vector<std::string> run_args(uint16_t port, const std::string& lock,
                                  std::vector<std::string> flags, const std::string& script) {
  std::vector<std::string> args{"run", lock, "--url", url_of(port)};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--", "/bin/sh", "-c", script});
  return args;
}

} // namespace

TEST_CASE("cli_run_passes_the_token_and_the_exit_code", "[integration][cli]") {
  temp_dir dir;
  temp_dir work{"fencelock-run-"};
  server_process server{dir.str()};
  lock_client api{server.port()};
  auto out = work.str() + "/env";

  auto st = run_cli(run_args(server.port(), "cli:run", {"--ttl", "2000"},
                             "echo \"$FENCELOCK_LOCK $FENCELOCK_TOKEN\" > " + out + "; exit 7"));
  INFO(st.describe());
  CHECK(st.exited);
  CHECK(st.code == 7);

  auto written = read_file(out);
  INFO(written);
  REQUIRE(written.starts_with("cli:run "));
  auto token = std::stoull(written.substr(8));
  CHECK(token > 0);
  // Released after the command: free, and the token was the one granted.
  auto status = api.status_of("cli:run");
  CHECK_FALSE(status.held);
  CHECK(status.last_token == token);

  // A command killed by a signal: 128 + N, as in a shell.
  st = run_cli(run_args(server.port(), "cli:run", {}, "kill -KILL $$"));
  INFO(st.describe());
  CHECK(st.exited);
  CHECK(st.code == 128 + SIGKILL);
}

TEST_CASE("cli_run_passes_signals_on_to_the_command", "[integration][cli]") {
  temp_dir dir;
  temp_dir work{"fencelock-run-"};
  server_process server{dir.str()};
  lock_client api{server.port()};
  auto started = work.str() + "/started";

  child_process run{server_binary(),
                    run_args(server.port(), "cli:signal", {"--ttl", "5000"},
                             "trap 'exit 5' TERM; touch " + started
                               + "; i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done")};
  REQUIRE(eventually([&] { return exists(started); }, 30s));
  CHECK(api.status_of("cli:signal").held);
  run.send_signal(SIGTERM);
  auto st = run.wait(30s);
  INFO(run.diagnostics());
  REQUIRE(st.has_value());
  CHECK(st->exited);
  CHECK(st->code == 5); // the command's answer to SIGTERM, not run's death
  CHECK_FALSE(api.status_of("cli:signal").held);
}

TEST_CASE("cli_run_stops_the_command_when_the_lease_is_lost", "[integration][cli]") {
  temp_dir dir;
  temp_dir work{"fencelock-run-"};
  server_process server{dir.str()};
  auto started = work.str() + "/started";
  auto marker = work.str() + "/term";

  // The command notes SIGTERM in a file; otherwise it would run for a minute and exit 3.
  child_process run{server_binary(),
                    run_args(server.port(), "cli:lost", {"--ttl", "500", "--grace", "10000"},
                             "trap 'echo term > " + marker + "; exit 0' TERM; touch " + started
                               + "; i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done;"
                                 " exit 3")};
  REQUIRE(eventually([&] { return exists(started); }, 30s));

  // Freeze the server: renewals go unanswered and the local deadline passes.
  REQUIRE(server.sigstop());
  auto st = run.wait(30s);
  server.sigcont();
  INFO(run.diagnostics());
  REQUIRE(st.has_value());
  CHECK(st->exited);
  CHECK(st->code == 76);
  CHECK(read_file(marker) == "term\n");
}

TEST_CASE("cli_run_kills_a_command_that_ignores_sigterm_after_the_grace",
          "[integration][cli]") {
  temp_dir dir;
  temp_dir work{"fencelock-run-"};
  server_process server{dir.str()};
  auto started = work.str() + "/started";

  child_process run{server_binary(),
                    run_args(server.port(), "cli:stubborn", {"--ttl", "500", "--grace", "300"},
                             "trap '' TERM; echo $$ > " + started
                               + "; i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done")};
  REQUIRE(eventually([&] { return !read_file(started).empty(); }, 30s));
  auto pid = static_cast<pid_t>(std::stol(read_file(started)));

  server.sigkill(); // gone for good: the connection drops, renewals fail until the deadline
  auto st = run.wait(30s);
  INFO(run.diagnostics());
  REQUIRE(st.has_value());
  CHECK(st->exited);
  CHECK(st->code == 76);
  // run reaped it before exiting, so the pid no longer names a process.
  CHECK(eventually([&] { return ::kill(pid, 0) != 0 && errno == ESRCH; }, 5s));
}

TEST_CASE("cli_run_exit_codes_for_held_unreachable_and_missing", "[integration][cli]") {
  temp_dir dir;
  temp_dir work{"fencelock-run-"};
  server_process server{dir.str()};
  lock_client api{server.port()};
  auto ran = work.str() + "/ran";
  require_lease(api.acquire("cli:busy", "someone-else", 60'000, 0));

  auto st = run_cli(run_args(server.port(), "cli:busy", {"--wait", "300"}, "touch " + ran));
  CHECK(st.code == 75);
  CHECK_FALSE(exists(ran)); // the command never ran

  st = run_cli(run_args(closed_port(), "cli:busy", {}, "touch " + ran));
  CHECK(st.code == 69);
  CHECK_FALSE(exists(ran));

  st = run_cli({"run", "cli:free", "--url", url_of(server.port()), "--", work.str() + "/nope"});
  CHECK(st.code == 127);
  CHECK_FALSE(api.status_of("cli:free").held); // checked before taking the lock

  st = run_cli({"run", "cli:free", "--url", url_of(server.port()), "--wait", "x", "--", "true"});
  CHECK(st.code == 64);
}
