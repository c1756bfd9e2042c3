#pragma once

// Catch2 assertions shared by the integration tests (header-only: the support library stays free
// of Catch, because the holder program links it without a test runner).

#include <catch2/catch.hpp>

#include "support/lock_api.hpp"

namespace fencelock::test {

/// Requires `res` to be a 200 lease and returns it.
inline lease_view require_lease(const http_response& res) {
  INFO(res.describe());
  REQUIRE(res.status == 200);
  auto lease = lease_view::from(res);
  REQUIRE(lease.has_value());
  return *lease;
}

} // namespace fencelock::test
