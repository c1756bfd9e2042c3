#pragma once

// The embedded store's records in memory: every held lease and the latest released ones, as the
// durable store has them. The store actor applies each batch here once it is durable; backends
// load a lock's record and the lister reads held locks from here, on their own threads, so that
// reads never queue in front of a commit and never touch the disk after start-up.

#include <cstdint>
#include <map>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "actors/store/embedded/lease_store.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

class lease_table {
public:
  /// Keeps the records of the latest `released_kept` releases (0 = none) besides the held ones.
  explicit lease_table(uint64_t released_kept);

  /// Fills the table from the durable store's records (at start-up).
  void load(std::vector<stored_lock> records);

  /// Returns the record of `name`; an unknown name yields held=false and last_token 0.
  stored_lock find(const std::string& name) const;

  /// Returns up to `req.limit` held records whose names start with `req.prefix` and sort after
  /// `req.cursor`, in name order. Costs what it returns, not the names ever used.
  std::vector<stored_lock> list_held(const list_request& req) const;

  /// Returns the names of the held records.
  std::vector<std::string> held_names() const;

  /// Numbers the releases in `batch` and sets its pruning: the store writes both with the batch.
  /// Called by the store actor before the commit.
  void prepare(store_batch& batch);

  /// Applies `batch`, made durable, to the table. Called by the store actor after the commit.
  void apply(const store_batch& batch);

  /// Returns the number of records (held and released).
  std::size_t size() const;

private:
  mutable std::shared_mutex mutex_;
  uint64_t released_kept_;
  std::map<std::string, stored_lock> records_;
  /// Names of the held records: lists walk this range, never the released records.
  std::set<std::string, std::less<>> held_;
  /// The released records by release number, oldest first: pruning takes from the front.
  std::map<uint64_t, std::string> released_;
  /// The release number of the latest release, and the one up to which records were pruned.
  uint64_t release_seq_ = 0;
  uint64_t pruned_through_ = 0;
};

} // namespace fencelock
