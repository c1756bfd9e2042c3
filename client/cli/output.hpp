#pragma once

// What the client commands print: JSON (one object per line, field names as on the wire,
// docs/websocket-api.md) or tables for people (aligned columns, times as "in 12.3s" with the
// local time), and one-line diagnostics on stderr. Formatting takes the wall-clock time `now_ms`
// (ms since the Unix epoch) and the time zone of the process as they are, so that tests can fix
// both.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fencelock/client.hpp"

namespace fencelock::cli {

/// Returns lease_info of a lease this process holds.
lease_info info_of(const held_lease& lease);

/// Returns {"name","owner","token","ttlMs","expiresAt"}.
std::string lease_json(const lease_info& lease);

/// Returns a table of one lease: NAME OWNER TOKEN TTL EXPIRES.
std::string lease_table(const lease_info& lease, int64_t now_ms);

/// Returns {"name","held","owner"?,"token"?,"expiresAt"?,"waiters","lastToken"}.
std::string status_json(const lock_info& info);

/// Returns a table of locks: NAME HELD OWNER TOKEN EXPIRES WAITERS LAST-TOKEN ("(none)" when
/// empty).
std::string status_table(const std::vector<lock_info>& locks, int64_t now_ms);

/// Returns {"type":"snapshot","locks":[status...]}.
std::string snapshot_json(const std::vector<lock_info>& locks);

/// Returns {"type":"lock_event","event","lock","owner","token","expiresAt"?,"revision","at",
/// "cause"?}.
std::string event_json(const watch_event& e);

/// Returns one line for an event: "15:04:05.123  acquired  jobs:a  owner=w1 token=42 ...".
std::string event_line(const watch_event& e, int64_t now_ms);

/// Returns {"name","token","current","currentToken" (null when free),"expiresAt"?}.
std::string check_json(std::string_view name, uint64_t token, const token_check& c);

/// Returns a sentence: "token 42 of jobs:a is current (expires in 3s, 15:04:08)".
std::string check_text(std::string_view name, uint64_t token, const token_check& c, int64_t now_ms);

/// Returns {"released":true} or the sentence "released jobs:a (token 42)".
std::string released_json();
std::string released_text(std::string_view name, uint64_t token);

/// Returns "12.3s", "9m58s", "1h2m", "3d4h": a duration for people, at most two units.
std::string human_duration(int64_t ms);

/// Returns "in 12.3s (2026-12-01 16:27:10)" or "2.1s ago (...)": `at_ms` seen from `now_ms`,
/// with the local date and time.
std::string human_time(int64_t at_ms, int64_t now_ms);

/// Returns the local date and time of `at_ms`: "2026-12-01 16:27:10".
std::string local_time(int64_t at_ms);

/// Returns the wall-clock time now, in ms since the Unix epoch.
int64_t wall_now_ms();

/// Prints `text` and, unless it ends with one, a newline to stdout and flushes (a pipe reader
/// sees it at once).
void print_line(const std::string& text);

/// Prints "fencelock <command>: <message>" to stderr.
void complain(std::string_view command, std::string_view message);

/// Prints "fencelock <command>: <code>: <message>" (and the holder, if any) to stderr, with the
/// server's wire field names turned into the flags that set them (ttlMs -> --ttl).
void complain(std::string_view command, const client_error& e);

/// Returns a server message about a request field, with the field named as the flag that set
/// it: "ttlMs: must be an integer between 100 and 3600000" -> "--ttl: must be between 100ms
/// and 1h". Other messages come back unchanged.
std::string in_flag_terms(std::string_view message);

} // namespace fencelock::cli
