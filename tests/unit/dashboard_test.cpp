// net/dashboard: the compiled-in files of the dashboard page, their content types, and the
// answers to GET / and GET /dashboard/<file> (headers, 304, 404, 405, the setting). No sockets:
// dashboard_route() is a pure function of the request line, If-None-Match and the setting.

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <variant>

#include "fencelock/config.hpp"
#include "net/dashboard.hpp"
#include "net/routes.hpp"

namespace http = boost::beast::http;
using fencelock::net::dashboard_route;
using fencelock::net::etag_matches;
using fencelock::net::find_dashboard_asset;
using fencelock::net::reply;

namespace {

/// Returns the value of header `name` in `r`, or nothing.
std::optional<std::string_view> header(const reply& r, std::string_view name) {
  for (const auto& [key, value] : r.headers)
    if (key == name)
      return value;
  return std::nullopt;
}

reply require_route(http::verb method, std::string_view target,
                    std::string_view if_none_match = "") {
  auto r = dashboard_route(method, target, if_none_match, true);
  REQUIRE(r);
  return *r;
}

} // namespace

TEST_CASE("dashboard: the page's files are compiled in, each with its content type",
          "[dashboard]") {
  auto files = fencelock::net::dashboard_files();
  REQUIRE(files.size() >= 4);
  std::set<std::string_view> names;
  std::set<std::string_view> etags;
  for (const auto& file : files) {
    INFO(file.name);
    CHECK(names.insert(file.name).second);
    CHECK(etags.insert(file.etag).second);
    CHECK_FALSE(file.body.empty());
    // A strong ETag: 16 hex digits in quotes.
    CHECK(std::regex_match(std::string{file.etag}, std::regex{R"("[0-9a-f]{16}")"}));
    CHECK(fencelock::net::dashboard_content_type(file.name) != "application/octet-stream");
  }
  for (const char* name : {"index.html", "app.js", "style.css", "favicon.svg"})
    CHECK(names.contains(name));
}

TEST_CASE("dashboard: a path finds its file", "[dashboard]") {
  auto index = find_dashboard_asset("/");
  REQUIRE(index);
  CHECK(index->name == "index.html");
  CHECK(index->content_type == "text/html; charset=utf-8");
  CHECK(index->body.starts_with("<!doctype html>"));

  struct expected {
    const char* path;
    const char* type;
  };
  for (auto [path, type] : {expected{"/dashboard/app.js", "text/javascript; charset=utf-8"},
                            expected{"/dashboard/style.css", "text/css; charset=utf-8"},
                            expected{"/dashboard/favicon.svg", "image/svg+xml"}}) {
    INFO(path);
    auto file = find_dashboard_asset(path);
    REQUIRE(file);
    CHECK(file->content_type == type);
  }

  for (const char* path : {"/dashboard/", "/dashboard", "/dashboard/nope.js", "/index.html",
                           "/app.js", "/dashboard/../app.js", "/dashboard//app.js",
                           "/dashboard/APP.JS", "", "/v1/locks"}) {
    INFO(path);
    CHECK_FALSE(find_dashboard_asset(path));
  }
}

TEST_CASE("dashboard: content types go by extension", "[dashboard]") {
  using fencelock::net::dashboard_content_type;
  CHECK(dashboard_content_type("a.html") == "text/html; charset=utf-8");
  CHECK(dashboard_content_type("a.js") == "text/javascript; charset=utf-8");
  CHECK(dashboard_content_type("a.css") == "text/css; charset=utf-8");
  CHECK(dashboard_content_type("a.svg") == "image/svg+xml");
  CHECK(dashboard_content_type("a.png") == "image/png");
  CHECK(dashboard_content_type("a.json") == "application/json");
  CHECK(dashboard_content_type("a.exe") == "application/octet-stream");
  CHECK(dashboard_content_type("js") == "application/octet-stream");
}

TEST_CASE("dashboard: GET / answers the page with a strict policy", "[dashboard]") {
  auto r = require_route(http::verb::get, "/");
  CHECK(r.status == http::status::ok);
  CHECK(r.text_type == "text/html; charset=utf-8");
  CHECK(r.text == find_dashboard_asset("/")->body);
  CHECK(header(r, "Cache-Control") == "no-cache");
  CHECK(header(r, "ETag") == find_dashboard_asset("/")->etag);
  CHECK(header(r, "X-Content-Type-Options") == "nosniff");
  auto csp = header(r, "Content-Security-Policy");
  REQUIRE(csp);
  CHECK(csp->find("default-src 'none'") != std::string_view::npos);
  CHECK(csp->find("script-src 'self';") != std::string_view::npos);
  CHECK(csp->find("connect-src 'self' ws: wss:") != std::string_view::npos);
  CHECK(csp->find("frame-ancestors 'none'") != std::string_view::npos);
  CHECK(csp->find("unsafe") == std::string_view::npos);

  // The query string is the page's own (its prefix, filter and sort).
  CHECK(require_route(http::verb::get, "/?prefix=jobs%3A&sort=left").text == r.text);
  // HEAD gets the same answer; the session leaves the body out.
  CHECK(require_route(http::verb::head, "/").status == http::status::ok);

  auto js = require_route(http::verb::get, "/dashboard/app.js");
  CHECK(js.status == http::status::ok);
  CHECK(js.text_type == "text/javascript; charset=utf-8");
  CHECK(header(js, "Content-Security-Policy"));
}

TEST_CASE("dashboard: a known ETag is answered 304 without a body", "[dashboard]") {
  auto etag = std::string{find_dashboard_asset("/dashboard/app.js")->etag};
  for (const auto& given : {etag, "W/" + etag, "\"other\", " + etag, std::string{"*"}}) {
    INFO(given);
    auto r = require_route(http::verb::get, "/dashboard/app.js", given);
    CHECK(r.status == http::status::not_modified);
    CHECK(r.text.empty());
    CHECK(header(r, "ETag") == etag);
  }
  CHECK(require_route(http::verb::get, "/dashboard/app.js", "\"other\"").status
        == http::status::ok);
  // Another file's tag does not match.
  CHECK(require_route(http::verb::get, "/", etag).status == http::status::ok);
}

TEST_CASE("dashboard: If-None-Match is a list of tags, weak or strong", "[dashboard]") {
  CHECK(etag_matches("\"a\"", "\"a\""));
  CHECK(etag_matches("W/\"a\"", "\"a\""));
  CHECK(etag_matches(" \"b\" ,\t\"a\" ", "\"a\""));
  CHECK(etag_matches("*", "\"a\""));
  CHECK_FALSE(etag_matches("", "\"a\""));
  CHECK_FALSE(etag_matches("\"b\"", "\"a\""));
  CHECK_FALSE(etag_matches("a", "\"a\""));
  CHECK_FALSE(etag_matches(",,", "\"a\""));
}

TEST_CASE("dashboard: unknown files are 404, other methods 405", "[dashboard]") {
  auto missing = require_route(http::verb::get, "/dashboard/nope.js");
  CHECK(missing.status == http::status::not_found);
  CHECK(missing.body.as_object().at("error") == "not_found");
  CHECK(missing.text_type.empty()); // JSON, as every other 404

  for (auto method : {http::verb::post, http::verb::put, http::verb::delete_}) {
    auto r = require_route(method, "/");
    CHECK(r.status == http::status::method_not_allowed);
    CHECK(r.allow == "GET, HEAD");
  }
  // Paths that are not the page's are left to the API's routes.
  for (const char* target : {"/v1/locks", "/metrics", "/healthz", "/dashboard", "/favicon.ico"})
    CHECK_FALSE(dashboard_route(http::verb::get, target, "", true));
}

TEST_CASE("dashboard: with the setting off there is no page: / is 404 as before", "[dashboard]") {
  for (const char* target : {"/", "/dashboard/app.js", "/dashboard/nope.js"})
    CHECK_FALSE(dashboard_route(http::verb::get, target, "", false));
  fencelock::config cfg;
  cfg.dashboard = false;
  auto result = fencelock::net::route(http::verb::get, "/", "", cfg, true);
  REQUIRE(std::holds_alternative<reply>(result));
  CHECK(std::get<reply>(result).status == http::status::not_found);
}

TEST_CASE("dashboard: the page needs nothing its policy forbids, and never parses data as HTML",
          "[dashboard]") {
  // An inline script, style attribute or event handler would be blocked by the CSP and show up
  // as a console error; the browser test would catch it too, this says where.
  auto index = std::string{find_dashboard_asset("/")->body};
  CHECK(std::regex_search(index, std::regex{R"(<script type="module" src="/dashboard/app\.js">)"}));
  CHECK_FALSE(std::regex_search(index, std::regex{R"(<script(?![^>]*\ssrc=))"}));
  CHECK_FALSE(std::regex_search(index, std::regex{R"(\sstyle=)"}));
  CHECK_FALSE(std::regex_search(index, std::regex{R"(\son[a-z]+=)"}));
  CHECK(index.find("<style") == std::string::npos);
  // Lock names and owners are user input: scripts set text, never markup.
  for (const auto& file : fencelock::net::dashboard_files()) {
    if (!file.name.ends_with(".js"))
      continue;
    INFO(file.name);
    auto body = std::string{file.body};
    for (const char* sink : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write",
                             "eval(", "new Function"})
      CHECK(body.find(sink) == std::string::npos);
  }
}
