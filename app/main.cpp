// The fencelock binary: the program entry. It dispatches to `fencelock serve` (app/serve.cpp)
// and to the client subcommands (run, acquire, release, status, watch: client/cli/), which talk
// to a server over its WebSocket API.

#include <pthread.h>

#include <csignal>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include <caf/config.hpp>

#include "app/serve.hpp"
#include "fencelock_build_commit.hpp" // generated: FENCELOCK_COMMIT
#include "client/cli/commands.hpp"
#include "client/cli/usage.hpp"

#ifndef FENCELOCK_VERSION
// Keep in step with project(VERSION) in CMakeLists.txt until the build passes it in.
#  define FENCELOCK_VERSION "0.1.0"
#endif

namespace {

constexpr std::string_view usage_head = R"(Usage: fencelock <command> [options]

A distributed lock service with fencing tokens, served over HTTP/JSON and WebSocket.

Commands:
  serve [options]   Run the lock service; `fencelock serve --help` lists every option.

)";

constexpr std::string_view usage_tail = R"(
Options:
  -h, --help        Print this help and exit.
  --version         Print the version and exit.
)";

/// Prints the whole `fencelock --help` text to `out`.
void print_usage(std::ostream& out) {
  out << usage_head << fencelock::cli::commands_help << usage_tail << fencelock::cli::env_and_codes;
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

  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_usage(std::cerr);
    return fencelock::app::exit_serve_usage;
  }
  const auto& command = args.front();
  if (command == "-h" || command == "--help" || command == "help") {
    print_usage(std::cout);
    return 0;
  }
  if (command == "--version") {
    std::cout << "fencelock " FENCELOCK_VERSION " (commit " FENCELOCK_COMMIT ", CAF "
              << CAF_VERSION / 10000 << '.' << CAF_VERSION / 100 % 100 << '.' << CAF_VERSION % 100
              << ")\n";
    return 0;
  }
  if (command == "serve") {
    try {
      return fencelock::app::serve({args.begin() + 1, args.end()});
    } catch (const std::exception& e) {
      // Not expected (the I/O path uses error codes); report it rather than abort silently.
      std::cerr << "fencelock serve: fatal: " << e.what() << '\n';
      return fencelock::app::exit_serve_internal;
    }
  }
  if (fencelock::cli::is_client_command(command)) // run, acquire, release, status, watch
    return fencelock::cli::run_client_command(command, {args.begin() + 1, args.end()});
  std::cerr << "fencelock: unknown command \"" << command << "\"\n\n";
  print_usage(std::cerr);
  return fencelock::app::exit_serve_usage; // 64, as every usage error of every command
}
