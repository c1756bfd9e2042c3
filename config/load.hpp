#pragma once

// Turns a config file, FENCELOCK_* environment variables and command-line flags (in rising order
// of precedence) into a validated fencelock::config. Every error names the offending key.

#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "fencelock/config.hpp"

namespace fencelock::config_loader {

/// What a parse produced: a config, or a request to print help.
struct load_result {
  fencelock::config cfg;
  bool help = false;
  std::string help_text;
};

/// Parses `args` (the flags after the subcommand), the environment `env` (entries "KEY=VALUE";
/// only FENCELOCK_* are read) and the file named by --config / FENCELOCK_CONFIG, if any.
/// With --help or -h anywhere in `args`, returns help_text without reading anything else.
/// Otherwise returns a validated config, or a caf::sec::invalid_argument error whose message
/// (fencelock::error_message) starts with the key: `port: must be an integer 0..65535 (got
/// "abc")`, `FENCELOCK_PORTT: unknown setting`. Every value is checked as its layer is read, so
/// a bad file value is reported even when a flag overrides it.
caf::expected<load_result> load(const std::vector<std::string>& args,
                                const std::vector<std::string>& env);

/// Describes one setting as a flag of `fencelock serve`: for help, completion and the man page.
struct setting_doc {
  std::string key;  // the flag without "--"
  std::string arg;  // the value's placeholder, or its range
  std::string help; // what it does, with its variable and default
};

/// Returns every setting, in the order of config/fencelock.conf.
std::vector<setting_doc> setting_docs();

/// Where a load() error came from.
enum class error_source {
  /// A flag or argument of the command line: a usage error (`fencelock serve` exits 64).
  command_line,
  /// The file, the environment, or a rule across settings (`fencelock serve` exits 78).
  configuration,
};

/// Returns where `err`, an error of load(), came from.
error_source source_of(const caf::error& err);

/// Checks ranges and cross-field rules of a config however it was built (load() calls it); the
/// error is as for load().
caf::error validate(const fencelock::config& cfg);

} // namespace fencelock::config_loader
