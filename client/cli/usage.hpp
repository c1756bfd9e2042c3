#pragma once

// The help texts of the client subcommands (`fencelock <command> --help`). docs/cli.md says
// the same at length; keep the two in step.

#include <string_view>

namespace fencelock::cli {

/// The client part of `fencelock --help`.
inline constexpr std::string_view commands_help =
  R"(Client commands (talk to a server over its WebSocket API):
  run <name> [options] -- <command...>
                    Hold the lock while a command runs; see `fencelock run --help`.
  acquire <name>    Acquire a lease and print it as JSON (it is not renewed or released).
  release <name>    Release a lease: --owner O --token N.
  status <name>     Print the lock's status as JSON.
  watch <name>|'<prefix>*'
                    Print the current state, then every change, one JSON line each.
  Every client command takes --url URL (default: $FENCELOCK_URL, else http://127.0.0.1:7070).
)";

inline constexpr std::string_view env_and_codes =
  R"(
Environment:
  FENCELOCK_URL     The server when --url is not given (default http://127.0.0.1:7070).

Durations are milliseconds (500) or a number with a unit: 500ms, 30s, 5m.

Exit codes: 0 ok; 64 usage error (or the server rejected the request as invalid);
69 server unreachable, no answer in time, store unavailable; 75 lock not acquired within
--wait; 76 lease lost (run: the command was stopped; release: the lease had already ended).
)";

inline constexpr std::string_view run_help =
  R"(Usage: fencelock run <name> [options] -- <command> [args...]

Acquires lock <name> (waiting up to --wait), runs the command with FENCELOCK_LOCK=<name> and
FENCELOCK_TOKEN=<fencing token> in its environment, renews the lease while it runs, and
releases it when the command exits. Exits with the command's exit code (128 + N when a signal
N killed it). SIGINT, SIGTERM and SIGHUP sent to fencelock are passed on to the command.

If the lease is lost (the server said so, or no renewal was confirmed before the local
deadline: the send time of the last confirmed renewal plus the TTL), the command's process
group gets SIGTERM, then SIGKILL after --grace, and fencelock exits 76 whatever the command
returned. If fencelock itself dies, the command gets SIGKILL: nobody renews its lease any more.
The command runs in a process group of its own.

Options:
  --ttl D           Lease TTL (default 30s); renewed every third of it.
  --wait D          How long to wait for the lock in the server's queue (default 0: try once).
  --owner O         Owner name (default <hostname>:<pid>:<random hex>).
  --grace D         Time between SIGTERM and SIGKILL after a loss (default 5s).
  --session         Bind the lease to the connection: it ends at once if the connection
                    drops (and then counts as lost), instead of surviving a reconnect.
  --url URL         The server (http://host:port or ws://host:port).
  -h, --help        Print this help.

Exit codes: the command's own; 64 usage error; 69 server unreachable or unexpected error;
75 lock not acquired within --wait; 76 lease lost (command stopped); 126 command not
executable; 127 command not found.
)";

inline constexpr std::string_view acquire_help =
  R"(Usage: fencelock acquire <name> [options]

Acquires lock <name> and prints the lease as one JSON line:
  {"name":...,"owner":...,"token":N,"ttlMs":...,"expiresAt":...}
The lease is neither renewed nor released: it ends at its TTL or with `fencelock release`.

Options:
  --owner O         Owner name (default <hostname>:<pid>:<random hex>; printed in the output).
  --ttl D           Lease TTL (default 30s).
  --wait D          How long to wait for the lock in the server's queue (default 0).
  --url URL         The server.
  -h, --help        Print this help.
)";

inline constexpr std::string_view release_help =
  R"(Usage: fencelock release <name> --owner O --token N [--url URL]

Releases the lease of lock <name> with fencing token N held by owner O; prints
{"released":true}. Exits 76 when the lease had already ended (lease_lost).
)";

inline constexpr std::string_view status_help =
  R"(Usage: fencelock status <name> [--url URL]

Prints the lock's status as one JSON line:
  {"name","held","owner"?,"token"?,"expiresAt"?,"waiters","lastToken"}
)";

inline constexpr std::string_view watch_help =
  R"(Usage: fencelock watch <name> | 'prefix*' [--url URL]

Watches one lock, or every lock whose name starts with <prefix> (a trailing '*'; '*' alone
watches all). Prints the current state as {"type":"snapshot","locks":[status...]}, then every
change as {"type":"lock_event","event":"acquired|renewed|released|expired",...}, one JSON line
each, until SIGINT or SIGTERM (exit 0). After a lost connection it reconnects and prints a
fresh snapshot (changes in between are not replayed).
)";

} // namespace fencelock::cli
