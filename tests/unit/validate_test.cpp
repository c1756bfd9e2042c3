// The boundary checks every front end shares (HTTP, the embedding API).

#include <catch2/catch.hpp>

#include "fencelock/errc.hpp"
#include "fencelock/validate.hpp"

using namespace fencelock;

namespace {

// Returns the message of an invalid_request error, or "" when `err` is none.
std::string rejected(const caf::error& err) {
  if (!err)
    return {};
  errc code;
  REQUIRE(as_errc(err, code));
  CHECK(code == errc::invalid_request);
  return error_message(err);
}

} // namespace

TEST_CASE("lock names and owners", "[validate]") {
  CHECK(valid_lock_name("a"));
  CHECK(valid_lock_name("jobs:report.daily_v2-1"));
  CHECK(valid_lock_name(std::string(200, 'x')));
  CHECK_FALSE(valid_lock_name(""));
  CHECK_FALSE(valid_lock_name(std::string(201, 'x')));
  CHECK_FALSE(valid_lock_name("a/b"));
  CHECK_FALSE(valid_lock_name("a b"));
  CHECK_FALSE(valid_lock_name("caf\xc3\xa9"));
  CHECK(valid_owner("worker 1 (pid 42)"));
  CHECK(valid_owner(std::string(128, '~')));
  CHECK_FALSE(valid_owner(""));
  CHECK_FALSE(valid_owner(std::string(129, 'o')));
  CHECK_FALSE(valid_owner("tab\there"));
  CHECK_FALSE(valid_owner("del\x7f"));
}

TEST_CASE("requests are checked against the configured bounds", "[validate]") {
  config cfg;
  CHECK(rejected(validate(acquire_request{"a", "o", 100, 0, 1}, cfg)).empty());
  CHECK(rejected(validate(acquire_request{"a", "o", 3'600'000, 300'000, 1}, cfg)).empty());
  CHECK(rejected(validate(acquire_request{"a", "o", 99, 0, 1}, cfg)).rfind("ttlMs:", 0) == 0);
  CHECK(rejected(validate(acquire_request{"a", "o", 100, -1, 1}, cfg)).rfind("waitMs:", 0) == 0);
  CHECK(rejected(validate(acquire_request{"a", "o", 100, 300'001, 1}, cfg)).rfind("waitMs:", 0)
        == 0);
  CHECK(rejected(validate(acquire_request{"a/b", "o", 100, 0, 1}, cfg)).rfind("name:", 0) == 0);
  CHECK(rejected(validate(acquire_request{"a", "", 100, 0, 1}, cfg)).rfind("owner:", 0) == 0);
  cfg.ttl_min_ms = 1000;
  CHECK(rejected(validate(acquire_request{"a", "o", 999, 0, 1}, cfg)).rfind("ttlMs:", 0) == 0);
}

TEST_CASE("tokens are 1 .. 2^53-1; renew's ttl 0 keeps the lease's TTL", "[validate]") {
  config cfg;
  CHECK(rejected(validate(renew_request{"a", "o", 1, 0}, cfg)).empty());
  CHECK(rejected(validate(renew_request{"a", "o", max_token, 0}, cfg)).empty());
  CHECK(rejected(validate(renew_request{"a", "o", 0, 0}, cfg)).rfind("token:", 0) == 0);
  CHECK(rejected(validate(renew_request{"a", "o", max_token + 1, 0}, cfg)).rfind("token:", 0)
        == 0);
  CHECK(rejected(validate(renew_request{"a", "o", 1, 50}, cfg)).rfind("ttlMs:", 0) == 0);
  CHECK(rejected(validate(release_request{"a", "o", 0}, cfg)).rfind("token:", 0) == 0);
}

TEST_CASE("list requests", "[validate]") {
  config cfg;
  CHECK(rejected(validate(list_request{"", "", 100}, cfg)).empty());
  CHECK(rejected(validate(list_request{"jobs:", "jobs:a", 1000}, cfg)).empty());
  CHECK(rejected(validate(list_request{"a b", "", 10}, cfg)).rfind("prefix:", 0) == 0);
  CHECK(rejected(validate(list_request{"", "a/b", 10}, cfg)).rfind("cursor:", 0) == 0);
  CHECK(rejected(validate(list_request{"", "", 0}, cfg)).rfind("limit:", 0) == 0);
  CHECK(rejected(validate(list_request{"", "", 1001}, cfg)).rfind("limit:", 0) == 0);
}
