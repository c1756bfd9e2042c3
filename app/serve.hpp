#pragma once

// `fencelock serve`: the lock service behind its HTTP/JSON and WebSocket front end, until
// SIGINT or SIGTERM.

#include <csignal>
#include <string>
#include <vector>

namespace fencelock::app {

/// Returns the signals that stop the server. main() blocks them before any thread exists, so
/// that every thread inherits the mask and only serve()'s sigwait() sees them.
sigset_t stop_signals();

// The exit codes of `fencelock serve` (docs/cli.md), from sysexits.h. Each failure to start is
// also explained in words on stderr, and logged as a start_failed event.

/// A flag or argument of the command line is wrong (EX_USAGE).
inline constexpr int exit_serve_usage = 64;
/// The store could not be opened: the data directory is in use by another fencelock, cannot be
/// created or read, or holds an unreadable database (EX_UNAVAILABLE).
inline constexpr int exit_serve_store = 69;
/// Something unexpected went wrong (EX_SOFTWARE).
inline constexpr int exit_serve_internal = 70;
/// The listener could not be opened: the address is in use, not local, or not permitted
/// (EX_OSERR).
inline constexpr int exit_serve_listen = 71;
/// The configuration file or the FENCELOCK_* environment is wrong, or settings contradict each
/// other (EX_CONFIG).
inline constexpr int exit_serve_config = 78;

/*
 * Runs `fencelock serve`; `args` are the arguments after "serve". Returns the exit code: 0
 * after a clean stop on a signal (or after --help), else one of the codes above. Configuration
 * is checked before any port is opened.
 */
int serve(const std::vector<std::string>& args);

} // namespace fencelock::app
