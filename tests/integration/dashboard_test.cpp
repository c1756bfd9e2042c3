// The dashboard page over real HTTP: GET / answers HTML with its Content-Security-Policy, the
// scripts come with their content type, a revalidation is answered 304 on a connection that
// stays usable, and `--dashboard false` leaves / a 404. What the page does in a browser is
// tests/browser/dashboard.test.mjs (integration.dashboard_browser).

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;

TEST_CASE("dashboard_served_at_root", "[integration]") {
  temp_dir dir;
  server_process server{dir.str()};
  http_client client{server.port(), http_options{std::chrono::seconds{10}, true}};

  auto page = client.get("/");
  INFO(page.describe());
  REQUIRE(page.status == 200);
  CHECK(page.header("content-type") == "text/html; charset=utf-8");
  CHECK(page.body.starts_with("<!doctype html>"));
  CHECK(page.body.find("/dashboard/app.js") != std::string::npos);
  auto csp = page.header("content-security-policy");
  CHECK(csp.find("default-src 'none'") != std::string::npos);
  CHECK(csp.find("script-src 'self'") != std::string::npos);
  CHECK(csp.find("connect-src 'self' ws: wss:") != std::string::npos);
  CHECK(page.header("x-content-type-options") == "nosniff");
  CHECK(page.header("cache-control") == "no-cache");
  auto etag = page.header("etag");
  REQUIRE_FALSE(etag.empty());

  // The shared link of a prefix is the same page.
  CHECK(client.get("/?prefix=jobs%3A").body == page.body);

  auto script = client.get("/dashboard/app.js");
  CHECK(script.status == 200);
  CHECK(script.header("content-type") == "text/javascript; charset=utf-8");
  CHECK(client.get("/dashboard/style.css").header("content-type") == "text/css; charset=utf-8");

  // Revalidation: 304 without a body, and the kept-alive connection serves the next request.
  auto again = client.get("/", {{"If-None-Match", etag}});
  CHECK(again.status == 304);
  CHECK(again.body.empty());
  CHECK_FALSE(again.has_header("content-length"));
  CHECK(client.get("/healthz").status == 200);

  auto missing = client.get("/dashboard/nope.js");
  CHECK(missing.status == 404);
  CHECK(missing.error() == "not_found");
  auto post = client.request("POST", "/", std::string{"{}"});
  CHECK(post.status == 405);
  CHECK(post.header("allow") == "GET, HEAD");
}

TEST_CASE("dashboard_can_be_turned_off", "[integration]") {
  temp_dir dir;
  server_process server{dir.str(), {"--dashboard", "false"}};
  http_client client{server.port()};
  for (const char* target : {"/", "/dashboard/app.js"}) {
    INFO(target);
    auto res = client.get(target);
    CHECK(res.status == 404);
    CHECK(res.error() == "not_found");
  }
  // The API is unaffected.
  CHECK(client.get("/healthz").status == 200);
}
