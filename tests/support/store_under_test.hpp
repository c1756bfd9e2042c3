#pragma once

// The lease store a server under test runs on, so that one test body checks the semantics of
// both: the embedded default, or a redis-server of the test's own.
//
//   store_under_test store{GENERATE(as<std::string>{}, "embedded", "redis")};
//   server_process server{dir.str(), store.server_args()};

#include <memory>
#include <string>
#include <vector>

#include "support/redis_server.hpp"

namespace fencelock::test {

class store_under_test {
public:
  /// `kind` is "embedded" or "redis"; throws std::invalid_argument otherwise, and
  /// std::runtime_error when redis-server is missing or does not start.
  explicit store_under_test(std::string kind);

  /// Returns the server flags that select this store (none for the embedded one), then
  /// `extra`.
  std::vector<std::string> server_args(std::vector<std::string> extra = {}) const;

  const std::string& kind() const noexcept {
    return kind_;
  }

  /// Returns the redis-server (null for the embedded store).
  redis_server* redis() noexcept {
    return redis_.get();
  }

private:
  std::string kind_;
  std::unique_ptr<redis_server> redis_;
};

} // namespace fencelock::test
