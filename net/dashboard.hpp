#pragma once

// The dashboard (docs/dashboard.md): a read-only page that shows the held locks and their lock
// events, driven by the public WebSocket API. Its files (net/dashboard/) are compiled into the
// binary by cmake/dashboard.cmake; this is the lookup of a file by path and the answer to a
// request for one. As in routes.hpp, nothing here touches a socket.
//
//   GET|HEAD /                     index.html
//   GET|HEAD /dashboard/<file>     the page's scripts, style sheet and icon

#include <optional>
#include <span>
#include <string_view>

#include <boost/beast/http/verb.hpp>

#include "net/reply.hpp"

namespace fencelock::net {

/// Describes one file of the page as compiled in; every view points at static data.
struct dashboard_asset {
  /// The file's name in net/dashboard/ ("index.html", "app.js").
  std::string_view name;
  /// The Content-Type it is served with, chosen by the name's extension.
  std::string_view content_type;
  std::string_view body;
  /// A strong entity tag, quoted: a digest of the body taken at build time.
  std::string_view etag;
};

/// The Content-Security-Policy of every dashboard response: files from this server only, no
/// inline script or style, connections to this server and to WebSockets.
inline constexpr std::string_view dashboard_csp =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
  "connect-src 'self' ws: wss:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Returns every compiled-in file, as the build generated them; defined in the generated
/// dashboard_files.cpp with an empty content_type (find_dashboard_asset fills it in).
std::span<const dashboard_asset> dashboard_files() noexcept;

/// Returns the file served at `path` (without a query string): index.html for "/", the file
/// <name> for "/dashboard/<name>"; nothing for any other path or an unknown name.
std::optional<dashboard_asset> find_dashboard_asset(std::string_view path) noexcept;

/// Returns the Content-Type for a file name by its extension (application/octet-stream when the
/// extension is not one the page uses).
std::string_view dashboard_content_type(std::string_view name) noexcept;

/// Returns whether the value of an If-None-Match header names `etag`: "*", or a comma-separated
/// list holding it, weak (W/"...") or strong (RFC 9110 section 13.1.2, weak comparison).
bool etag_matches(std::string_view if_none_match, std::string_view etag) noexcept;

/*
 * Answers a request for the page, or returns nothing so that the API's routes answer it (which
 * gives 404 for "/" as when there is no page).
 * `method`, `target`: the request line; the query string is ignored (the page reads it).
 * `if_none_match`: the request's If-None-Match header ("" = none).
 * `enabled`: the `dashboard` setting; false returns nothing for every request.
 * Returns, for "/" and "/dashboard/...": the file with 200, or 304 when `if_none_match` holds
 * its ETag (GET and HEAD); 405 with Allow for another method; 404 not_found for an unknown file.
 * Every file goes out with Cache-Control no-cache (revalidated by ETag), the CSP above and
 * X-Content-Type-Options nosniff.
 */
std::optional<reply> dashboard_route(boost::beast::http::verb method, std::string_view target,
                                     std::string_view if_none_match, bool enabled);

} // namespace fencelock::net
