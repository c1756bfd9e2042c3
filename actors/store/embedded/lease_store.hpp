#pragma once

// The one interface every lease store implements. A store keeps, per lock, the holder (owner,
// token, TTL, deadline on the monotonic clock) and the last token ever granted, plus the fence
// ceiling: the bound below which the fence issuer may hand out tokens. Stores are plain,
// synchronous C++ objects; store_actor (store_actor.hpp) wraps one and batches writes (group
// commit).

#include <cstdint>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/meta/type_name.hpp>

#include "fencelock/types.hpp"

namespace fencelock {

/// One lock as stored. Deadlines are nanoseconds on the server's monotonic clock
/// (steady_clock::time_since_epoch); see docs/durability.md for the rule across restarts.
struct stored_lock {
  std::string name;
  bool held = false;
  std::string owner;
  uint64_t token = 0;
  int64_t ttl_ms = 0;
  int64_t deadline_ns = 0;
  uint64_t last_token = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stored_lock& x) {
  return f(caf::meta::type_name("fencelock::stored_lock"), x.name, x.held, x.owner, x.token,
           x.ttl_ms, x.deadline_ns, x.last_token);
}

/// Writes that become durable together, in one transaction.
struct store_batch {
  std::vector<stored_lock> locks;
  /// New fence ceiling, or 0 to leave it unchanged. It may be lower than the stored one: a clean
  /// stop gives back the unused rest of a reserved block (fence_issuer.hpp).
  uint64_t fence_ceiling = 0;
};

class lease_store {
public:
  virtual ~lease_store() = default;

  /// Returns the record of `name`; an unknown name yields held=false and last_token=0.
  virtual caf::expected<stored_lock> load(const std::string& name) = 0;

  /// Makes every write in `batch` durable in one transaction (later records of the same name win).
  virtual caf::error commit(const store_batch& batch) = 0;

  /// Returns up to `req.limit` held records whose names start with `req.prefix` and sort after
  /// `req.cursor`, in name order. Deadlines are not checked here.
  virtual caf::expected<std::vector<stored_lock>> list_held(const list_request& req) = 0;

  /// Returns the names of all held records (at start-up, to arm their expiry).
  virtual caf::expected<std::vector<std::string>> held_names() = 0;

  /// Returns the lowest token that may be issued next: at or above the durable fence ceiling and
  /// above every stored token.
  virtual caf::expected<uint64_t> fence_floor() = 0;
};

} // namespace fencelock
