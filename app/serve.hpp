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

/*
 * Runs `fencelock serve`; `args` are the arguments after "serve". Returns the exit code: 0
 * after a clean stop on a signal (or after --help), 1 when the service or the listener fails
 * to start, 2 on a configuration error (reported before any port is opened).
 */
int serve(const std::vector<std::string>& args);

} // namespace fencelock::app
