// The fencelock binary: the program entry. It parses the command line (client/cli/args.hpp,
// CLI11) and dispatches to `fencelock serve` (app/serve.cpp) or to the client commands
// (client/cli/), which talk to a server over its WebSocket API.

#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <caf/config.hpp>

#include "app/serve.hpp"
#include "client/cli/args.hpp"
#include "client/cli/commands.hpp"
#include "config/load.hpp"
#include "fencelock_build_commit.hpp" // generated: FENCELOCK_COMMIT

#ifndef FENCELOCK_VERSION
#  error "FENCELOCK_VERSION must be defined by the build"
#endif

namespace {

/// Returns what --version prints: "fencelock 0.1.0 (commit abc123def456, CAF 0.17.6)".
std::string version_text() {
  return "fencelock " FENCELOCK_VERSION " (commit " FENCELOCK_COMMIT ", CAF "
         + std::to_string(CAF_VERSION / 10000) + "." + std::to_string(CAF_VERSION / 100 % 100) + "."
         + std::to_string(CAF_VERSION % 100) + ")";
}

fencelock::cli::cli_context make_context() {
  fencelock::cli::cli_context ctx;
  if (const char* url = std::getenv("FENCELOCK_URL"))
    ctx.env_url = url;
  if (const char* token = std::getenv("FENCELOCK_AUTH_TOKEN"))
    ctx.env_auth_token = token;
  ctx.stdout_is_tty = ::isatty(STDOUT_FILENO) == 1;
  ctx.version = version_text();
  for (auto& s : fencelock::config_loader::setting_docs())
    ctx.serve_flags.push_back({std::move(s.key), std::move(s.arg), std::move(s.help)});
  return ctx;
}

} // namespace

int main(int argc, char** argv) {
  // Block the stop signals before CAF, spdlog or Asio start a thread: threads inherit the
  // mask, so the signals are left for serve()'s sigwait() instead of killing a random thread.
  auto signals = fencelock::app::stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A reader that closes our stdout (a test that has read the port) must not kill the
  // server with SIGPIPE; a failed write is harmless.
  std::signal(SIGPIPE, SIG_IGN);

  auto ctx = make_context();
  auto parsed = fencelock::cli::parse_command_line({argv + 1, argv + argc}, ctx);
  if (!parsed.print.empty()) {
    std::cout << parsed.print;
    return 0;
  }
  if (!parsed.error.empty()) {
    // Usage errors exit 64 (EX_USAGE) for every command, serve's included.
    auto who = parsed.name.empty() ? std::string{"fencelock"} : "fencelock " + parsed.name;
    std::cerr << who << ": " << parsed.error << "\nTry '" << who << " --help'.\n";
    return fencelock::app::exit_serve_usage;
  }
  if (auto* serve = std::get_if<fencelock::cli::serve_args>(&*parsed.cmd)) {
    try {
      return fencelock::app::serve(serve->args);
    } catch (const std::exception& e) {
      // Not expected (the I/O path uses error codes); report it rather than abort silently.
      std::cerr << "fencelock serve: fatal: " << e.what() << '\n';
      return fencelock::app::exit_serve_internal;
    }
  }
  return fencelock::cli::execute(*parsed.cmd, ctx);
}
