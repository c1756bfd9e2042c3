#pragma once

// Shell completions (`fencelock completion bash|zsh`) and the man page (`fencelock manpage`),
// generated from the same description of the commands as the parser uses (describe_commands in
// args.hpp), so that neither can fall behind a new command or flag. Plain text in, text out.

#include <string>
#include <string_view>
#include <vector>

#include "client/cli/args.hpp"

namespace fencelock::cli {

/// Returns a bash completion script for `commands`: source it, or install it as
/// /usr/share/bash-completion/completions/fencelock. It defines _fencelock.
std::string bash_completion(const std::vector<command_doc>& commands);

/// Returns a zsh completion script for `commands` (#compdef fencelock): install it as _fencelock
/// in a directory of $fpath, e.g. /usr/share/zsh/vendor-completions.
std::string zsh_completion(const std::vector<command_doc>& commands);

/// Returns the man page fencelock(1) in troff (man macros), for `version`.
std::string man_page(const std::vector<command_doc>& commands, std::string_view version);

} // namespace fencelock::cli
