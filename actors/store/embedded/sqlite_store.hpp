#pragma once

// The embedded default store: SQLite in WAL mode with synchronous=FULL, so a commit is on disk
// before it is acknowledged. store_actor batches concurrent writes into one commit (group commit),
// which is what keeps durability cheap.

#include <memory>
#include <string>

#include "actors/store/embedded/lease_store.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace fencelock {

class sqlite_store : public lease_store {
public:
  /// The query of list_held(): a range over the index of held rows, so that its cost follows
  /// the page asked for, not the names ever used. ?1 cursor, ?2 prefix, ?3 the end of the
  /// prefix's range, ?4 limit.
  static constexpr const char* list_query =
    "SELECT name, owner, token, ttl_ms, deadline_ns, last_token FROM locks "
    "WHERE owner IS NOT NULL AND name > ?1 AND name >= ?2 AND name < ?3 ORDER BY name LIMIT ?4";

  /// Released locks whose records are kept (their lastToken stays readable) by default.
  static constexpr uint64_t default_released_kept = 100'000;

  /// Opens (creating if needed) the store in `data_dir`, taking an exclusive lock on the
  /// directory so that two servers never share it. `boot_id` identifies the running kernel boot
  /// and `now_ns` is the current monotonic time: when the stored boot id differs (the machine
  /// rebooted, so stored monotonic deadlines mean nothing), every held lease gets a fresh full
  /// TTL from `now_ns` — it is extended, never revoked early (docs/durability.md). Records of
  /// released locks are kept for the `released_kept` most recent releases and pruned after.
  static caf::expected<std::unique_ptr<sqlite_store>>
  open(const std::string& data_dir, const std::string& boot_id, int64_t now_ns,
       uint64_t released_kept = default_released_kept);

  ~sqlite_store() override;

  caf::expected<stored_lock> load(const std::string& name) override;
  caf::error commit(const store_batch& batch) override;
  caf::expected<std::vector<stored_lock>> list_held(const list_request& req) override;
  caf::expected<std::vector<std::string>> held_names() override;
  caf::expected<uint64_t> fence_floor() override;

private:
  sqlite_store() = default;
  caf::error exec(const char* sql);
  caf::error prepare(const char* sql, sqlite3_stmt** out);
  caf::error fail(const char* what);
  caf::error adopt_boot(const std::string& boot_id, int64_t now_ns);
  caf::error migrate();
  caf::error prune();

  sqlite3* db_ = nullptr;
  int lock_fd_ = -1;
  sqlite3_stmt* load_ = nullptr;
  sqlite3_stmt* upsert_ = nullptr;
  sqlite3_stmt* set_meta_ = nullptr;
  sqlite3_stmt* list_ = nullptr;
  sqlite3_stmt* held_ = nullptr;
  sqlite3_stmt* floor_ = nullptr;
  sqlite3_stmt* prune_ = nullptr;
  uint64_t released_kept_ = default_released_kept;
  /// The sequence number of the latest release: released records are numbered in order, so the
  /// oldest are found by an index and the kept ones are the last `released_kept_` numbers.
  uint64_t release_seq_ = 0;
  /// The release number up to which records were pruned.
  uint64_t pruned_to_ = 0;
};

/// Returns this boot's id (/proc/sys/kernel/random/boot_id), or "" when unknown.
std::string current_boot_id();

} // namespace fencelock
