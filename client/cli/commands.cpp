// Dispatch of the client subcommands, and the short ones: acquire, release, status.

#include "client/cli/commands.hpp"

#include <csignal>
#include <cstdlib>
#include <exception>
#include <iostream>

#include <pthread.h>

#include "client/cli/args.hpp"
#include "client/cli/exit_codes.hpp"
#include "client/cli/output.hpp"
#include "client/cli/usage.hpp"
#include "fencelock/client.hpp"

namespace fencelock::cli {

namespace {

// Restores the default handling of SIGINT and SIGTERM (blocked by main() for `serve`): an
// interrupted short command just dies, and the server drops its queued acquire with the socket.
void unblock_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

// Prints a usage error and returns 64, or the help and 0, for a parse result that is not usable.
template <class Args>
int usage_or_help(const parsed<Args>& p, std::string_view command, std::string_view help) {
  if (p.help) {
    std::cout << help;
    return exit_ok;
  }
  complain(command, p.error);
  std::cerr << "Try 'fencelock " << command << " --help'.\n";
  return exit_usage;
}

client_options options_for(const std::string& url, const std::string& owner) {
  client_options opts;
  opts.url = url;
  opts.owner = owner;
  return opts;
}

int acquire_command(const std::vector<std::string>& args, std::string_view env_url) {
  auto p = parse_acquire(args, env_url);
  if (!p || p.help)
    return usage_or_help(p, "acquire", acquire_help);
  unblock_stop_signals();
  try {
    client c{options_for(p.args.url, p.args.owner)};
    auto lease = c.acquire(p.args.name, p.args.ttl, p.args.wait);
    print_line(lease_json(lease));
    lease.detach(); // the point of this command: the lease outlives the process
    return exit_ok;
  } catch (const client_error& e) {
    complain("acquire", e);
    return exit_code_of(e);
  }
}

int release_command(const std::vector<std::string>& args, std::string_view env_url) {
  auto p = parse_release(args, env_url);
  if (!p || p.help)
    return usage_or_help(p, "release", release_help);
  unblock_stop_signals();
  try {
    client c{options_for(p.args.url, p.args.owner)};
    c.release(p.args.name, p.args.token);
    print_line(R"({"released":true})");
    return exit_ok;
  } catch (const client_error& e) {
    complain("release", e);
    return exit_code_of(e);
  }
}

int status_command(const std::vector<std::string>& args, std::string_view env_url) {
  auto p = parse_status(args, env_url);
  if (!p || p.help)
    return usage_or_help(p, "status", status_help);
  unblock_stop_signals();
  try {
    client c{options_for(p.args.url, "")};
    print_line(status_json(c.status(p.args.name)));
    return exit_ok;
  } catch (const client_error& e) {
    complain("status", e);
    return exit_code_of(e);
  }
}

} // namespace

bool is_client_command(std::string_view command) {
  return command == "run" || command == "acquire" || command == "release" || command == "status"
         || command == "watch";
}

int run_client_command(std::string_view command, const std::vector<std::string>& args) {
  const char* env = std::getenv("FENCELOCK_URL");
  std::string env_url = env != nullptr ? env : "";
  try {
    if (command == "run")
      return run_command(args, env_url);
    if (command == "acquire")
      return acquire_command(args, env_url);
    if (command == "release")
      return release_command(args, env_url);
    if (command == "status")
      return status_command(args, env_url);
    if (command == "watch")
      return watch_command(args, env_url);
  } catch (const std::exception& e) {
    complain(command, std::string{"unexpected error: "} + e.what());
    return exit_unavailable;
  }
  complain(command, "unknown command");
  return exit_usage;
}

} // namespace fencelock::cli
