#pragma once

// The command lines of the client subcommands (run, acquire, release, status, watch), parsed
// into plain structs without touching the network, so that tests can check them directly.
// Flags are "--flag value" or "--flag=value", each at most once; durations are milliseconds,
// or a number with a unit: 500ms, 30s, 5m.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fencelock::cli {

/// The server URL when neither --url nor FENCELOCK_URL names one.
inline constexpr std::string_view default_url = "http://127.0.0.1:7070";

struct run_args {
  std::string url;
  std::string name;
  std::string owner;  // empty = the client's default
  std::chrono::milliseconds ttl{30'000};
  std::chrono::milliseconds wait{0};
  std::chrono::milliseconds grace{5'000};
  bool session = false;
  std::vector<std::string> command;  // argv of the child, after "--"
};

struct acquire_args {
  std::string url;
  std::string name;
  std::string owner;
  std::chrono::milliseconds ttl{30'000};
  std::chrono::milliseconds wait{0};
};

struct release_args {
  std::string url;
  std::string name;
  std::string owner;
  uint64_t token = 0;
};

struct status_args {
  std::string url;
  std::string name;
};

struct watch_args {
  std::string url;
  std::string target;  // a lock name, or a prefix when `prefix`
  bool prefix = false;
};

/// A parsed command line: the arguments, or --help, or what is wrong with it.
template <class Args>
struct parsed {
  Args args;
  bool help = false;
  std::string error;  // non-empty: a usage error naming the flag or argument

  explicit operator bool() const noexcept {
    return error.empty();
  }
};

/// Parses "500", "500ms", "30s" or "5m" into milliseconds; nothing when malformed or negative.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// Each parser takes the arguments after the subcommand's name and the value of FENCELOCK_URL
// ("" when unset); --url wins over it, and default_url applies when both are empty.

/// `run <name> [--ttl D] [--wait D] [--owner O] [--grace D] [--session] [--url U] -- cmd...`
parsed<run_args> parse_run(const std::vector<std::string>& args, std::string_view env_url);

/// `acquire <name> [--owner O] [--ttl D] [--wait D] [--url U]`
parsed<acquire_args> parse_acquire(const std::vector<std::string>& args,
                                   std::string_view env_url);

/// `release <name> --owner O --token N [--url U]`
parsed<release_args> parse_release(const std::vector<std::string>& args,
                                   std::string_view env_url);

/// `status <name> [--url U]`
parsed<status_args> parse_status(const std::vector<std::string>& args, std::string_view env_url);

/// `watch <name> | watch 'prefix*' [--url U]`: a trailing '*' makes a prefix ("*" = all).
parsed<watch_args> parse_watch(const std::vector<std::string>& args, std::string_view env_url);

} // namespace fencelock::cli
