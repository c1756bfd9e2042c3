#pragma once

// Where a client connects: the server URL of client_options taken apart (no I/O).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fencelock::detail {

/// A WebSocket endpoint: host (without brackets), port, the upgrade's request target, and
/// whether it speaks TLS (https://, wss://).
struct endpoint {
  std::string host;
  std::string port;
  std::string target;
  bool tls = false;

  /// Returns the Host header: "host:port", with brackets around an IPv6 address.
  std::string host_header() const;
};

/*
 * Parses `url`: "http://" or "ws://" (or "https://", "wss://": TLS), a host name, an IPv4
 * address or a bracketed IPv6 address, an optional ":port" (default 80, 443 with TLS), and an
 * optional path. The WebSocket path /v1/ws is implied: an empty path or "/" becomes "/v1/ws", a
 * path ending in /v1/ws is kept, any other path is taken as a prefix (a proxy's) and gets
 * /v1/ws appended. Returns nothing and sets `why` when `url` is unusable.
 */
std::optional<endpoint> parse_endpoint(std::string_view url, std::string& why);

/// Parses `urls`: one URL as parse_endpoint() takes it, or several separated by commas (blanks
/// around each ignored), in the order the client tries them. Returns nothing and sets `why`
/// (naming the URL at fault) when any one is unusable or the list has an empty entry.
std::optional<std::vector<endpoint>> parse_endpoints(std::string_view urls, std::string& why);

} // namespace fencelock::detail
