#pragma once

// The exit codes of the client subcommands (docs/cli.md). `run` otherwise exits with its
// command's own code, or 128 + the signal that killed it, as a shell does.

#include <string_view>

#include "fencelock/client.hpp"

namespace fencelock::cli {

inline constexpr int exit_ok = 0;
/// Bad command line (sysexits EX_USAGE), or the server refused the request as invalid.
inline constexpr int exit_usage = 64;
/// Server unreachable, no answer in time, store unavailable, anything unexpected (EX_UNAVAILABLE).
inline constexpr int exit_unavailable = 69;
/// The lock was not acquired within --wait: held, or too many waiters (EX_TEMPFAIL).
inline constexpr int exit_not_acquired = 75;
/// The lease was lost: `run` stopped its command; `release` found the lease already ended.
inline constexpr int exit_lease_lost = 76;
/// The server refused this client's credentials or permissions: unauthenticated, forbidden
/// (EX_NOPERM; docs/security.md).
inline constexpr int exit_not_permitted = 77;
/// `run`: the command was found but could not be executed (as in a shell).
inline constexpr int exit_cannot_execute = 126;
/// `run`: the command was not found (as in a shell).
inline constexpr int exit_not_found = 127;

/// Returns the exit code for a failed request: lock_held and too_many_waiters -> 75, lease_lost
/// -> 76, invalid_request -> 64, unauthenticated and forbidden -> 77, everything else -> 69.
inline int exit_code_of(const client_error& e) {
  std::string_view code = e.code();
  if (code == "lock_held" || code == "too_many_waiters")
    return exit_not_acquired;
  if (code == "lease_lost")
    return exit_lease_lost;
  if (code == "invalid_request")
    return exit_usage;
  if (code == "unauthenticated" || code == "forbidden")
    return exit_not_permitted;
  return exit_unavailable;
}

} // namespace fencelock::cli
