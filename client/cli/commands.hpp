#pragma once

// The client commands of the fencelock binary, run from their parsed arguments (args.hpp);
// app/main.cpp parses the command line and dispatches here (or to serve).
//
// Signals: main() blocks SIGINT and SIGTERM before anything else (for `serve`). The short
// commands unblock them, so Ctrl-C stops a waiting acquire; `run` and `watch` keep them
// blocked and take them with sigwait, before the client's I/O thread inherits the mask.

#include "client/cli/args.hpp"
#include "fencelock/client.hpp"

namespace fencelock::cli {

/// Returns the options of a client for the common arguments `a`: the server, its bearer token
/// and TLS files. Defined in commands.cpp.
client_options client_options_of(const common_args& a);

/// Runs `cmd`, any command but serve (which app/serve.cpp runs), and returns the exit code
/// (docs/cli.md). Never throws.
int execute(const cli_command& cmd, const cli_context& ctx);

/// `fencelock run`. Defined in run_command.cpp.
int run_command(const run_args& args);

/// `fencelock watch`. Defined in watch_command.cpp.
int watch_command(const watch_args& args);

} // namespace fencelock::cli
