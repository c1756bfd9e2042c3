// net/error_mapping: every fencelock error code has a sane HTTP status, wire code, message and
// Retry-After, and nothing else can produce a client-visible surprise.

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include <boost/json/value_to.hpp>
#include <caf/sec.hpp>

#include "fencelock/errc.hpp"
#include "net/error_mapping.hpp"

namespace http = boost::beast::http;
using fencelock::errc;
using fencelock::net::error_reply;

namespace {

std::string field(const fencelock::net::reply& r, const char* key) {
  return boost::json::value_to<std::string>(r.body.at(key));
}

unsigned status_code(const fencelock::net::reply& r) {
  return static_cast<unsigned>(r.status);
}

} // namespace

TEST_CASE("error_mapping maps every errc to a status, its wire code and Retry-After", "[net]") {
  for (auto code : fencelock::all_errc) {
    CAPTURE(fencelock::to_string(code));
    auto r = error_reply(caf::make_error(code, std::string{"why it failed"}));
    CHECK(status_code(r) >= 400);
    CHECK(status_code(r) <= 599);
    CHECK(r.status != http::status::internal_server_error);
    CHECK(r.status == fencelock::net::wire_of(code).status);
    CHECK(field(r, "error") == fencelock::to_string(code));
    CHECK_FALSE(field(r, "message").empty());
    // Whatever asks the client to come back says when.
    bool come_back = r.status == http::status::too_many_requests
                     || r.status == http::status::service_unavailable;
    CHECK(r.retry_after_s == (come_back ? 1u : 0u));
    CHECK(r.allow.empty());
  }
}

TEST_CASE("error_mapping gives the documented status of each client-facing code", "[net]") {
  CHECK(fencelock::net::wire_of(errc::invalid_request).status == http::status::bad_request);
  CHECK(fencelock::net::wire_of(errc::lock_held).status == http::status::conflict);
  CHECK(fencelock::net::wire_of(errc::lease_lost).status == http::status::conflict);
  CHECK(fencelock::net::wire_of(errc::too_many_waiters).status
        == http::status::too_many_requests);
  for (auto code :
       {errc::overloaded, errc::store_unavailable, errc::shutting_down, errc::unavailable})
    CHECK(fencelock::net::wire_of(code).status == http::status::service_unavailable);
}

TEST_CASE("error_mapping passes the message of an invalid_request through", "[net]") {
  auto r = error_reply(
    caf::make_error(errc::invalid_request, std::string{"ttlMs: must be an integer"}));
  CHECK(r.status == http::status::bad_request);
  CHECK(field(r, "message") == "ttlMs: must be an integer");
}

TEST_CASE("error_mapping adds the holder to lock_held and never shows it as the message",
          "[net]") {
  auto r = error_reply(caf::make_error(errc::lock_held, std::string{"alice"}, int64_t{1234}));
  CHECK(r.status == http::status::conflict);
  CHECK(field(r, "error") == "lock_held");
  CHECK(field(r, "message") != "alice");
  const auto& holder = r.body.at("holder").as_object();
  CHECK(holder.at("owner").as_string() == "alice");
  CHECK(holder.at("expiresAt").as_int64() == 1234);
}

TEST_CASE("error_mapping omits the holder when lock_held carries no context", "[net]") {
  auto r = error_reply(caf::make_error(errc::lock_held));
  CHECK(r.status == http::status::conflict);
  CHECK(r.body.as_object().if_contains("holder") == nullptr);
  CHECK_FALSE(field(r, "message").empty());
}

TEST_CASE("error_mapping turns foreign errors and no error into 503 unavailable", "[net]") {
  auto foreign = error_reply(caf::make_error(caf::sec::request_timeout, "internal detail"));
  CHECK(foreign.status == http::status::service_unavailable);
  CHECK(field(foreign, "error") == "unavailable");
  CHECK(field(foreign, "message") != "internal detail");
  CHECK(foreign.retry_after_s == 1);

  auto none = error_reply(caf::error{});
  CHECK(none.status == http::status::service_unavailable);
  CHECK(field(none, "error") == "unavailable");
}

TEST_CASE("error_mapping builds the HTTP layer's own errors", "[net]") {
  auto r = error_reply(http::status::payload_too_large, "payload_too_large", "too big");
  CHECK(r.status == http::status::payload_too_large);
  CHECK(field(r, "error") == "payload_too_large");
  CHECK(field(r, "message") == "too big");
  CHECK(r.retry_after_s == 0);
}
