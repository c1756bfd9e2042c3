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
  /// Opens (creating if needed) the store in `data_dir`, taking an exclusive lock on its
  /// database file so that two servers never share it. `boot_id` identifies the running kernel
  /// boot and `now_ns` is the current monotonic time: when the stored boot id differs (the
  /// machine rebooted, so stored monotonic deadlines mean nothing), every held lease gets a
  /// fresh full TTL from `now_ns` — it is extended, never revoked early (docs/durability.md).
  static caf::expected<std::unique_ptr<sqlite_store>>
  open(const std::string& data_dir, const std::string& boot_id, int64_t now_ns);

  ~sqlite_store() override;

  caf::expected<std::vector<stored_lock>> load_all() override;
  caf::error commit(const store_batch& batch) override;
  caf::expected<uint64_t> fence_floor() override;

private:
  sqlite_store() = default;
  caf::error exec(const char* sql);
  caf::error step_once(sqlite3_stmt* stmt, const char* what);
  caf::error prepare(const char* sql, sqlite3_stmt** out);
  caf::error fail(const char* what);
  caf::error adopt_boot(const std::string& boot_id, int64_t now_ns);
  caf::error migrate();
  caf::error check_integrity(const std::string& path);
  /// Writes one lock's row (updated in place, else inserted) inside the open transaction.
  caf::error write_lock(const stored_lock& x);

  sqlite3* db_ = nullptr;
  int lock_fd_ = -1;
  sqlite3_stmt* update_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  sqlite3_stmt* set_meta_ = nullptr;
  sqlite3_stmt* all_ = nullptr;
  sqlite3_stmt* floor_ = nullptr;
  sqlite3_stmt* prune_ = nullptr;
  // Every commit's own statements, prepared once instead of parsed each time.
  sqlite3_stmt* begin_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
  sqlite3_stmt* rollback_ = nullptr;
};

/// Returns this boot's id (/proc/sys/kernel/random/boot_id), or "" when unknown.
std::string current_boot_id();

} // namespace fencelock
