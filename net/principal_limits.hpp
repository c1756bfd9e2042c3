#pragma once

// Per-principal limits (docs/security.md): an auth-file line may cap a principal's request rate
// (`rate:N`, over all its connections) and its acquires waiting at once (`waiters:N`, over all
// locks), so that one tenant cannot starve another. Renewals and releases are never limited
// here: a tenant over its rate keeps the leases it has. Thread-safe: sessions on several I/O
// threads, and service callbacks on CAF's, share one.

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include <caf/error.hpp>

#include "net/auth.hpp"
#include "net/rate_limiter.hpp"

namespace fencelock::net {

class principal_limits {
public:
  using clock = rate_limiter::clock;

  /// Takes one request of `who` from its rate; returns false (taking nothing) when it has none
  /// left. Always true for a principal without `rate:`.
  bool admit(const principal& who, clock::time_point now = clock::now());

  /// Counts an acquire of `who` that may wait; returns false, counting nothing, when `who`
  /// already has its `waiters:` such acquires in progress. Always true without `waiters:`.
  bool start_waiting(const principal& who);

  /// Gives back one acquire counted by start_waiting for the principal named `name`.
  void end_waiting(const std::string& name);

  /// Returns the acquires of `name` counted as waiting now.
  uint32_t waiting(const std::string& name) const;

  /// Returns the message of a request refused (429 rate_limited) over `who`'s rate.
  static std::string over_rate(const principal& who);

  /// Returns the error of an acquire refused over `who`'s waiters (429 too_many_waiters).
  static caf::error over_waiters(const principal& who);

private:
  struct account {
    rate_limiter rate{0};
    /// The rate `rate` was made for: a reload that changes it starts a fresh bucket.
    uint32_t rate_limit = 0;
    uint32_t waiting = 0;
  };

  mutable std::mutex mutex_;
  // One entry per principal that was ever limited: as many as the auth file names.
  std::unordered_map<std::string, account> accounts_;
};

} // namespace fencelock::net
