#pragma once

// The command line of the fencelock binary, parsed with CLI11 (Debian's libcli11-dev) into plain
// structs without touching the network, so that tests can check it directly. One definition of
// the commands serves parsing, --help, the shell completions and the man page (completion.hpp).
//
// Durations are a number with units, largest first: 1h, 90s, 1m30s, 250ms, 2h45m; a bare number
// is milliseconds. Usage errors name the flag as typed on the command line (--ttl), never the
// wire field (ttlMs).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace fencelock::cli {

/// The server URL when neither --url nor FENCELOCK_URL names one.
inline constexpr std::string_view default_url = "http://127.0.0.1:7070";

/// How results are printed (-o/--output).
enum class output_format : uint8_t {
  /// One JSON object per line, field names as on the wire: for scripts (the default when
  /// stdout is not a terminal).
  json,
  /// Aligned columns with human times ("expires in 12.3s", local time): for people (the
  /// default on a terminal).
  table,
};

/// What every client command takes.
struct common_args {
  /// One URL, or several separated by commas (tried in turn, docs/client.md).
  std::string url;
  output_format output = output_format::json;
  /// The bearer token for a server with an auth-file (docs/security.md); "" = none.
  std::string bearer_token;
  /// For https:// and wss://: the CA file (empty: the system's), and a client certificate and
  /// key for mutual TLS (both or neither).
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
};

/// The arguments of `fencelock run <name> [options] -- <command...>`.
struct run_args : common_args {
  std::string name;
  std::string owner; // empty = the client's default
  std::chrono::milliseconds ttl{30'000};
  std::chrono::milliseconds wait{0};
  std::chrono::milliseconds grace{5'000};
  bool session = false;
  std::vector<std::string> command; // argv of the child, after "--"
};

/// The arguments of `fencelock acquire <name>`.
struct acquire_args : common_args {
  std::string name;
  std::string owner;
  std::chrono::milliseconds ttl{30'000};
  std::chrono::milliseconds wait{0};
};

/// The arguments of `fencelock release <name> -O owner -T token`.
struct release_args : common_args {
  std::string name;
  std::string owner;
  /// 0 with `force`: whatever lease the lock has.
  uint64_t token = 0;
  /// An admin's force-release (--force): no owner.
  bool force = false;
};

/// The arguments of `fencelock renew <name> -O owner -T token [-t ttl]`.
struct renew_args : common_args {
  std::string name;
  std::string owner;
  uint64_t token = 0;
  std::chrono::milliseconds ttl{0}; // 0 = the lease's own TTL
};

/// The arguments of `fencelock status <name>`.
struct status_args : common_args {
  std::string name;
};

/// The arguments of `fencelock check <name> -T token`.
struct check_args : common_args {
  std::string name;
  uint64_t token = 0;
};

/// The arguments of `fencelock list [prefix]`.
struct list_args : common_args {
  std::string prefix; // "" = every held lock
};

/// The arguments of `fencelock watch <name>|<prefix>*`.
struct watch_args : common_args {
  std::string target; // a lock name, or a prefix when `prefix`
  bool prefix = false;
};

/// `fencelock serve ...`: the arguments are the configuration loader's (config/load.hpp).
struct serve_args {
  std::vector<std::string> args;
};

/// The arguments of `fencelock version`.
struct version_args {
  output_format output = output_format::json;
};

/// `fencelock completion bash|zsh`.
struct completion_args {
  std::string shell;
};

/// `fencelock manpage` (hidden): prints the man page, troff, for the build to install.
struct manpage_args {};

using cli_command =
  std::variant<serve_args, run_args, acquire_args, release_args, renew_args, status_args,
               check_args, list_args, watch_args, version_args, completion_args, manpage_args>;

/// A parsed command line: the command, or text to print (help, version), or a usage error.
struct parsed_command {
  std::optional<cli_command> cmd;
  /// The subcommand as typed ("" when there was none), for diagnostics.
  std::string name;
  /// Help or version text for stdout; the exit code is 0.
  std::string print;
  /// A usage error naming the flag or argument; the exit code is 64.
  std::string error;
};

/// A setting of `fencelock serve`, for help, completion and the man page.
struct flag_doc {
  std::string name; // without "--"
  std::string arg;  // the value's placeholder
  std::string help;
};

/// What the command line is read against.
struct cli_context {
  /// The value of FENCELOCK_URL ("" when unset): --url wins over it, default_url applies when
  /// both are empty.
  std::string env_url;
  /// The value of FENCELOCK_AUTH_TOKEN ("" when unset): --auth-token-file wins over it.
  std::string env_auth_token;
  /// Whether stdout is a terminal: the default of -o (table there, JSON elsewhere).
  bool stdout_is_tty = false;
  /// What --version prints.
  std::string version = "fencelock";
  /// The settings of `fencelock serve` (config/load.hpp), described but not parsed here.
  std::vector<flag_doc> serve_flags;
};

/// Parses `args` (argv[1..]).
parsed_command parse_command_line(const std::vector<std::string>& args, const cli_context& ctx);

/// Parses a duration: integers with units, largest first ("1h", "90s", "1m30s", "250ms",
/// "2h45m"), or a bare number of milliseconds ("500"). Nothing when malformed or too large.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

/// Returns `d` the way parse_duration reads it back, shortest first: "1h", "1m30s", "250ms",
/// "0s".
std::string format_duration(std::chrono::milliseconds d);

/// Describes one option of a command, for help, completion and the man page.
struct option_doc {
  std::vector<std::string> names; // "-t", "--ttl"
  std::string arg;                // value placeholder; "" for a flag without value
  std::string help;
  std::vector<std::string> choices; // the values a completion offers ("json", "table")
};

/// Describes one command.
struct command_doc {
  std::string name;
  std::string summary;
  std::string usage;                           // the synopsis after "fencelock "
  std::vector<std::string> positionals;        // "name", "prefix"...
  std::vector<std::string> positional_choices; // the values a completion offers for them
  std::vector<option_doc> options;
  bool hidden = false;
};

/// Returns every command of the binary as the parser defines them (serve's flags from `ctx`).
std::vector<command_doc> describe_commands(const cli_context& ctx);

/// The footer of `fencelock --help` and the man page: environment, durations, exit codes.
std::string_view help_footer() noexcept;

} // namespace fencelock::cli
