#pragma once

// What the client subcommands print: one JSON object per line on stdout (field names as on the
// wire, docs/websocket-api.md), and one-line diagnostics on stderr.

#include <string>
#include <string_view>
#include <vector>

#include "fencelock/client.hpp"

namespace fencelock::cli {

/// Returns {"name","owner","token","ttlMs","expiresAt"}.
std::string lease_json(const held_lease& lease);

/// Returns {"name","held","owner"?,"token"?,"expiresAt"?,"waiters","lastToken"}.
std::string status_json(const lock_info& info);

/// Returns {"type":"snapshot","locks":[status...]}.
std::string snapshot_json(const std::vector<lock_info>& locks);

/// Returns {"type":"lock_event","event","lock","owner","token","expiresAt"?,"revision","at",
/// "cause"?}.
std::string event_json(const watch_event& e);

/// Prints `line` and a newline to stdout and flushes (a pipe reader sees it at once).
void print_line(const std::string& line);

/// Prints "fencelock <command>: <message>" to stderr.
void complain(std::string_view command, std::string_view message);

/// Prints "fencelock <command>: <code>: <message>" (and the holder, if any) to stderr.
void complain(std::string_view command, const client_error& e);

} // namespace fencelock::cli
