#pragma once

// The client subcommands of the fencelock binary; net/main.cpp dispatches to them.
//
// Signals: main() blocks SIGINT and SIGTERM before anything else (for `serve`). The short
// commands unblock them, so Ctrl-C stops a waiting acquire; `run` and `watch` keep them
// blocked and take them with sigwait, before the client's I/O thread inherits the mask.

#include <string>
#include <string_view>
#include <vector>

namespace fencelock::cli {

/// Returns whether `command` is a client subcommand (run, acquire, release, status, watch).
bool is_client_command(std::string_view command);

/// Runs client subcommand `command` with `args` (the words after it); returns the exit code.
/// Never throws.
int run_client_command(std::string_view command, const std::vector<std::string>& args);

/// `fencelock run`; see usage.hpp. Defined in run_command.cpp.
int run_command(const std::vector<std::string>& args, std::string_view env_url);

/// `fencelock watch`; see usage.hpp. Defined in watch_command.cpp.
int watch_command(const std::vector<std::string>& args, std::string_view env_url);

} // namespace fencelock::cli
