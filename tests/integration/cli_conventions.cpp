// The command line conventions etcdctl and consul users expect, against the real binary and
// server: renew, check and list; -o table with human times; --url with several endpoints;
// server errors that name the flag; an empty --owner refused; the version; the bash and zsh
// completions (checked by the shells themselves) and the man page (checked by groff).

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include <fstream>

#include <boost/json.hpp>

#include "integration/checks.hpp"
#include "integration/client_support.hpp"
#include "support/child_process.hpp"
#include "support/lock_api.hpp"
#include "support/poll.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

namespace {

struct cli_result {
  int code = -1;
  std::vector<std::string> out;
  std::string err;
};

/// Runs `program args...` to completion; returns its exit code, stdout lines and stderr.
cli_result run(const std::string& program, const std::vector<std::string>& args,
               const std::vector<std::string>& env = {}) {
  child_process p{program, args, env};
  auto st = p.wait(60s);
  INFO(p.diagnostics());
  REQUIRE(st.has_value());
  REQUIRE(st->exited);
  eventually([&] { return p.output_closed(); }, 5s); // stderr read to the end too
  cli_result r;
  r.code = st->code;
  r.out = p.lines();
  for (const auto& l : p.stderr_lines())
    r.err += l + "\n";
  return r;
}

cli_result cli(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  return run(server_binary(), args, env);
}

boost::json::value json_line(const cli_result& r, size_t i = 0) {
  INFO("stdout: " << r.out.size() << " lines; stderr: " << r.err);
  REQUIRE(r.out.size() > i);
  return boost::json::parse(r.out[i]);
}

std::string joined(const std::vector<std::string>& lines) {
  std::string all;
  for (const auto& l : lines)
    all += l + "\n";
  return all;
}

/// Returns the first of `paths` that exists, or "".
std::string find_program(std::initializer_list<const char*> paths) {
  for (auto p : paths)
    if (std::ifstream{p})
      return p;
  return {};
}

} // namespace

TEST_CASE("cli_renew_check_list_and_tables", "[integration][cli]") {
  temp_dir dir;
  server_process server{dir.str()};
  auto url = url_of(server.port());

  auto acquired = cli({"acquire", "conv:a", "-O", "o1", "-t", "1m", "-u", url});
  REQUIRE(acquired.code == 0);
  auto token = std::to_string(json_u64(json_line(acquired), "token").value_or(0));
  REQUIRE(cli({"acquire", "conv:b", "-O", "o1", "-t", "1m", "-u", url}).code == 0);

  // renew: once, with a new TTL; the wire field stays out of sight.
  auto renewed = cli({"renew", "conv:a", "-O", "o1", "-T", token, "-t", "2m", "-u", url});
  REQUIRE(renewed.code == 0);
  CHECK(json_i64(json_line(renewed), "ttlMs") == 120'000);
  CHECK(cli({"renew", "conv:a", "-O", "o2", "-T", token, "-u", url}).code == 76);

  // check: 0 while current, 76 when not.
  auto current = cli({"check", "conv:a", "-T", token, "-u", url});
  CHECK(current.code == 0);
  CHECK(json_bool(json_line(current), "current") == true);
  auto stale = cli({"check", "conv:a", "-T", "1000000", "-u", url});
  CHECK(stale.code == 76);
  CHECK(json_bool(json_line(stale), "current") == false);

  // list: one JSON line per held lock, in name order; a prefix narrows it.
  auto all = cli({"list", "-u", url});
  REQUIRE(all.code == 0);
  REQUIRE(all.out.size() == 2u);
  CHECK(json_str(json_line(all, 0), "name") == "conv:a");
  CHECK(json_str(json_line(all, 1), "name") == "conv:b");
  CHECK(cli({"list", "conv:b", "-u", url}).out.size() == 1u);
  CHECK(cli({"list", "nothing:", "-u", url}).out.empty());

  // Tables: human times ("in 1m59s (<local date and time>)").
  auto table = cli({"status", "conv:a", "-o", "table", "-u", url});
  REQUIRE(table.code == 0);
  REQUIRE(table.out.size() == 2u);
  CHECK(table.out[0].starts_with("NAME"));
  CHECK(table.out[1].find(" in 1m5") != std::string::npos);
  auto list_table = cli({"list", "-o", "table", "-u", url});
  CHECK(list_table.out.size() == 3u);
  auto check_table = cli({"check", "conv:a", "-T", token, "-o", "table", "-u", url});
  CHECK(check_table.out.at(0).find("is current (expires in ") != std::string::npos);
  auto released = cli({"release", "conv:a", "-O", "o1", "-T", token, "-o", "table", "-u", url});
  CHECK(released.code == 0);
  CHECK(released.out.at(0) == "released conv:a (token " + token + ")");
}

TEST_CASE("cli_errors_name_flags_and_use_their_codes", "[integration][cli]") {
  temp_dir dir;
  server_process server{dir.str()};
  auto url = url_of(server.port());
  // The server refuses a TTL below ttl-min-ms: the message names --ttl, in durations.
  auto short_ttl = cli({"acquire", "conv:x", "--ttl", "10ms", "-u", url});
  CHECK(short_ttl.code == 64);
  CHECK(short_ttl.err.find("--ttl: must be between 100ms and 1h") != std::string::npos);
  CHECK(short_ttl.err.find("ttlMs") == std::string::npos);
  // Usage errors exit 64 everywhere, and say which flag.
  auto empty_owner = cli({"acquire", "conv:x", "--owner", "", "-u", url});
  CHECK(empty_owner.code == 64);
  CHECK(empty_owner.err.find("--owner: must not be empty") != std::string::npos);
  CHECK(cli({"bogus"}).code == 64);
  CHECK(cli({"status"}).code == 64);
  CHECK(cli({"status", "x", "--wait", "1s"}).code == 64);
  // Several endpoints: the first refuses, the second answers.
  auto failover = cli({"status", "conv:x", "--url", url_of(closed_port()) + "," + url});
  CHECK(failover.code == 0);
  auto via_env = cli({"status", "conv:x"}, {"FENCELOCK_URL=" + url_of(closed_port()) + "," + url});
  CHECK(via_env.code == 0);
  CHECK(cli({"status", "conv:x", "-u", url_of(closed_port())}).code == 69);
}

TEST_CASE("cli_version_everywhere", "[integration][cli]") {
  auto v = cli({"version"});
  REQUIRE(v.code == 0);
  auto version = json_str(json_line(v), "version").value_or("");
  CHECK(version.starts_with("fencelock "));
  for (std::vector<std::string> args : {std::vector<std::string>{"--version"},
                                        {"status", "--version"},
                                        {"run", "--version"},
                                        {"serve", "--version"},
                                        {"version", "-o", "table"}}) {
    auto r = cli(args);
    CHECK(r.code == 0);
    CHECK(joined(r.out) == version + "\n");
  }
}

TEST_CASE("cli_completion_scripts_are_valid_and_complete", "[integration][cli]") {
  temp_dir dir;
  auto bash = find_program({"/usr/bin/bash", "/bin/bash"});
  REQUIRE_FALSE(bash.empty()); // Debian's essential set
  auto script = cli({"completion", "bash"});
  REQUIRE(script.code == 0);
  auto path = (dir.path() / "fencelock.bash").string();
  std::ofstream{path} << joined(script.out);
  CHECK(run(bash, {"-n", path}).code == 0);

  // Ask bash what it completes, as it would at a prompt.
  auto complete = [&](const std::string& line) {
    auto probe = "source " + path + "\nCOMP_WORDS=(" + line
                 + ")\nCOMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n"
                   "_fencelock\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n";
    auto r = run(bash, {"-c", probe});
    REQUIRE(r.code == 0);
    return r.out;
  };
  auto has = [](const std::vector<std::string>& xs, const std::string& x) {
    return std::find(xs.begin(), xs.end(), x) != xs.end();
  };
  auto commands = complete("fencelock ''");
  for (auto c : {"serve", "run", "acquire", "release", "renew", "status", "check", "list", "watch",
                 "version", "completion"})
    CHECK(has(commands, c));
  CHECK_FALSE(has(commands, "manpage"));
  auto run_flags = complete("fencelock run x --");
  for (auto f : {"--ttl", "--wait", "--owner", "--grace", "--session", "--url", "--help"})
    CHECK(has(run_flags, f));
  CHECK(complete("fencelock status x -o ''") == std::vector<std::string>{"json", "table"});
  CHECK(has(complete("fencelock serve --data"), "--data-dir"));
  CHECK(complete("fencelock completion ''") == std::vector<std::string>{"bash", "zsh"});
}

TEST_CASE("cli_zsh_completion_script_is_valid", "[integration][cli]") {
  auto zsh = find_program({"/usr/bin/zsh", "/bin/zsh"});
  if (zsh.empty()) {
    WARN("SKIPPED: the zsh script's syntax check needs zsh (scripts/install-deps.sh installs "
         "it)");
    return;
  }
  temp_dir dir;
  auto zscript = cli({"completion", "zsh"});
  REQUIRE(zscript.code == 0);
  auto zpath = (dir.path() / "_fencelock").string();
  std::ofstream{zpath} << joined(zscript.out);
  CHECK(run(zsh, {"-n", zpath}).code == 0);
}

TEST_CASE("cli_man_page_renders_without_warnings", "[integration][cli]") {
  temp_dir dir;
  auto page = cli({"manpage"});
  REQUIRE(page.code == 0);
  auto path = (dir.path() / "fencelock.1").string();
  std::ofstream{path} << joined(page.out);
  auto groff = find_program({"/usr/bin/groff"});
  REQUIRE_FALSE(groff.empty()); // groff-base: man-db needs it
  // -ww: every warning; -z: no output. groff warns on stderr and still exits 0.
  auto r = run(groff, {"-man", "-Tutf8", "-ww", "-z", path});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  auto text = joined(page.out);
  for (auto c : {"run", "acquire", "release", "renew", "status", "check", "list", "watch",
                 "version", "completion", "serve"})
    CHECK(text.find(".SS \"fencelock " + std::string{c}) != std::string::npos);
}
