#pragma once

// The one interface every durable lease store implements (SQLite; a memory store in tests). A
// store keeps, per lock, the holder (owner, token, TTL, deadline on the monotonic clock) and the
// last token ever granted, plus the fence ceiling: the bound below which the fence issuer may
// hand out tokens. Stores are plain, synchronous C++ objects, written by the store actor
// (store_actor.hpp, group commit) and read once, at start-up, into the lease table
// (lease_table.hpp), which serves every read after that.

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
  /// Released records are numbered in release order (the lease table does it); 0 while held.
  uint64_t released_seq = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stored_lock& x) {
  return f(caf::meta::type_name("fencelock::stored_lock"), x.name, x.held, x.owner, x.token,
           x.ttl_ms, x.deadline_ns, x.last_token, x.released_seq);
}

/// Writes that become durable together, in one transaction.
struct store_batch {
  std::vector<stored_lock> locks;
  /// New fence ceiling, or 0 to leave it unchanged. It may be lower than the stored one: a clean
  /// stop gives back the unused rest of a reserved block (fence_issuer.hpp).
  uint64_t fence_ceiling = 0;
  /// Released records deleted after `locks` are written (a name held by then stays): the
  /// store deletes them, and the lease table drops them once the batch is durable.
  std::vector<std::string> pruned;
  /// The lease table's bookkeeping: the release number up to which `pruned` leaves nothing.
  uint64_t prune_released_through = 0;
};

class lease_store {
public:
  virtual ~lease_store() = default;

  /// Returns every record, held and released (at start-up, to fill the lease table).
  virtual caf::expected<std::vector<stored_lock>> load_all() = 0;

  /// Makes every write in `batch` durable in one transaction (later records of the same name
  /// win), and deletes the released records it names in `pruned`.
  virtual caf::error commit(const store_batch& batch) = 0;

  /// Returns the lowest token that may be issued next: at or above the durable fence ceiling and
  /// above every stored token.
  virtual caf::expected<uint64_t> fence_floor() = 0;
};

} // namespace fencelock
