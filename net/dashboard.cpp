#include "net/dashboard.hpp"

#include <utility>

#include "net/error_mapping.hpp"

namespace fencelock::net {

namespace http = boost::beast::http;

namespace {

constexpr std::string_view asset_prefix = "/dashboard/";

/// Returns `x` without spaces and tabs at either end.
std::string_view trim(std::string_view x) noexcept {
  while (!x.empty() && (x.front() == ' ' || x.front() == '\t'))
    x.remove_prefix(1);
  while (!x.empty() && (x.back() == ' ' || x.back() == '\t'))
    x.remove_suffix(1);
  return x;
}

reply method_not_allowed() {
  auto result = error_reply(http::status::method_not_allowed, "method_not_allowed",
                            "use GET or HEAD");
  result.allow = "GET, HEAD";
  return result;
}

} // namespace

std::string_view dashboard_content_type(std::string_view name) noexcept {
  struct type {
    std::string_view extension;
    std::string_view content_type;
  };
  // Text types say their charset: the files are UTF-8, and a page must not be sniffed.
  static constexpr type types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".json", "application/json"},
  };
  for (const auto& t : types)
    if (name.ends_with(t.extension))
      return t.content_type;
  return "application/octet-stream";
}

std::optional<dashboard_asset> find_dashboard_asset(std::string_view path) noexcept {
  std::string_view name;
  if (path == "/")
    name = "index.html";
  else if (path.starts_with(asset_prefix))
    name = path.substr(asset_prefix.size());
  else
    return std::nullopt;
  for (auto file : dashboard_files()) {
    if (file.name == name) {
      file.content_type = dashboard_content_type(file.name);
      return file;
    }
  }
  return std::nullopt;
}

bool etag_matches(std::string_view if_none_match, std::string_view etag) noexcept {
  while (!if_none_match.empty()) {
    auto comma = if_none_match.find(',');
    auto item = trim(if_none_match.substr(0, comma));
    if_none_match = comma == std::string_view::npos ? std::string_view{}
                                                    : if_none_match.substr(comma + 1);
    if (item == "*")
      return true;
    if (item.starts_with("W/"))
      item.remove_prefix(2);
    if (!item.empty() && item == etag)
      return true;
  }
  return false;
}

std::optional<reply> dashboard_route(http::verb method, std::string_view target,
                                     std::string_view if_none_match, bool enabled) {
  if (!enabled)
    return std::nullopt;
  auto path = target.substr(0, target.find('?'));
  if (path != "/" && !path.starts_with(asset_prefix))
    return std::nullopt;
  auto asset = find_dashboard_asset(path);
  if (!asset)
    return error_reply(http::status::not_found, "not_found", "no such route");
  if (method != http::verb::get && method != http::verb::head)
    return method_not_allowed();
  reply result;
  result.text_type = asset->content_type;
  result.headers = {
    // Revalidated on every load (a 304 costs one round trip): an upgraded server never runs
    // against a cached copy of an older page.
    {"Cache-Control", "no-cache"},
    {"ETag", asset->etag},
    {"Content-Security-Policy", dashboard_csp},
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
  };
  if (etag_matches(if_none_match, asset->etag)) {
    result.status = http::status::not_modified;
    return result;
  }
  result.text = std::string{asset->body};
  return result;
}

} // namespace fencelock::net
