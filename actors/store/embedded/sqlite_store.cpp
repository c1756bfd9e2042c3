#include "actors/store/embedded/sqlite_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <sqlite3.h>

#include "fencelock/errc.hpp"

namespace fencelock {

namespace {

// Each lock is one row. A released lock keeps its row, so that lastToken survives, until the
// lease table prunes it among the oldest releases beyond the kept number (docs/durability.md)
// and names it for deletion. The table is read once, at start-up; after that only written, one
// row at a time by its key: no secondary index to keep up on every write.
constexpr const char* schema = R"(
  CREATE TABLE IF NOT EXISTS locks (
    name         TEXT PRIMARY KEY,
    owner        TEXT,              -- NULL when free
    token        INTEGER NOT NULL,
    ttl_ms       INTEGER NOT NULL,
    deadline_ns  INTEGER NOT NULL,  -- monotonic clock of boot meta.boot_id
    last_token   INTEGER NOT NULL,
    released_seq INTEGER            -- the order of its release; NULL while held
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
)";

// Indexes of earlier releases, which pruned by a range of release numbers: each one cost every
// write of a lock an index update (a third of a write's instructions).
constexpr const char* old_indexes = R"(
  DROP INDEX IF EXISTS locks_held;
  DROP INDEX IF EXISTS locks_released;
)";

caf::error store_error(std::string msg) {
  return caf::make_error(errc::store_unavailable, std::move(msg));
}

// Resets a statement on scope exit so that it never holds a read transaction open.
struct stmt_guard {
  sqlite3_stmt* stmt;
  ~stmt_guard() {
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
  }
};

/// Binds `x` without a copy: it must outlive the statement's step (stmt_guard clears it).
void bind_static(sqlite3_stmt* stmt, int idx, const std::string& x) {
  sqlite3_bind_text(stmt, idx, x.data(), static_cast<int>(x.size()), SQLITE_STATIC);
}

std::string column_text(sqlite3_stmt* stmt, int idx) {
  auto ptr = sqlite3_column_text(stmt, idx);
  auto len = sqlite3_column_bytes(stmt, idx);
  return ptr ? std::string{reinterpret_cast<const char*>(ptr), static_cast<size_t>(len)}
             : std::string{};
}

stored_lock read_row(sqlite3_stmt* stmt) {
  // Columns: name, owner, token, ttl_ms, deadline_ns, last_token, released_seq.
  stored_lock x;
  x.name = column_text(stmt, 0);
  x.held = sqlite3_column_type(stmt, 1) != SQLITE_NULL;
  x.owner = column_text(stmt, 1);
  x.token = static_cast<uint64_t>(sqlite3_column_int64(stmt, 2));
  x.ttl_ms = sqlite3_column_int64(stmt, 3);
  x.deadline_ns = sqlite3_column_int64(stmt, 4);
  x.last_token = static_cast<uint64_t>(sqlite3_column_int64(stmt, 5));
  x.released_seq = static_cast<uint64_t>(sqlite3_column_int64(stmt, 6));
  return x;
}

} // namespace

std::string current_boot_id() {
  std::ifstream in{"/proc/sys/kernel/random/boot_id"};
  std::string id;
  std::getline(in, id);
  return id;
}

caf::expected<std::unique_ptr<sqlite_store>>
sqlite_store::open(const std::string& data_dir, const std::string& boot_id, int64_t now_ns) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec)
    return store_error("data-dir: cannot create " + data_dir + ": " + ec.message());
  std::unique_ptr<sqlite_store> self{new sqlite_store};
  // Two servers on one store would each hand out the same tokens: refuse the second. The lock is
  // on the database file itself, held for the life of the store: no other file in the
  // directory can be deleted to get around it, and the kernel drops it when the process dies.
  auto path = data_dir + "/fencelock.db";
  self->lock_fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (self->lock_fd_ < 0)
    return store_error("data-dir: cannot open " + path + ": " + std::strerror(errno));
  if (::flock(self->lock_fd_, LOCK_EX | LOCK_NB) != 0)
    return store_error("data-dir: " + data_dir + " is in use by another fencelock process");
  if (sqlite3_open_v2(path.c_str(), &self->db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr)
      != SQLITE_OK)
    return self->fail("open");
  // WAL + synchronous=FULL: every commit is fsynced before it returns.
  if (auto err = self->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"))
    return err;
  if (auto err = self->check_integrity(path))
    return err;
  if (auto err = self->exec(schema))
    return err;
  if (auto err = self->migrate())
    return err;
  if (auto err = self->exec(old_indexes))
    return err;
  // A lock's row is updated in place when it exists (nearly always: a name comes back), else
  // inserted; cheaper than an upsert, which tries the insert first.
  if (auto err = self->prepare("UPDATE locks SET owner = ?2, token = ?3, ttl_ms = ?4, "
                               "deadline_ns = ?5, last_token = ?6, released_seq = ?7 "
                               "WHERE name = ?1",
                               &self->update_))
    return err;
  if (auto err = self->prepare(
        "INSERT INTO locks (name, owner, token, ttl_ms, deadline_ns, last_token, released_seq) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        &self->insert_))
    return err;
  if (auto err = self->prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
                               &self->set_meta_))
    return err;
  if (auto err = self->prepare("SELECT name, owner, token, ttl_ms, deadline_ns, last_token, "
                               "coalesce(released_seq, 0) FROM locks",
                               &self->all_))
    return err;
  if (auto err = self->prepare("DELETE FROM locks WHERE name = ?1 AND owner IS NULL",
                               &self->prune_))
    return err;
  if (auto err = self->prepare(
        "SELECT max(coalesce((SELECT value FROM meta WHERE key = 'fence_ceiling'), 0), "
        "coalesce((SELECT max(last_token) + 1 FROM locks), 0), 1)",
        &self->floor_))
    return err;
  for (auto [sql, stmt] : {std::pair{"BEGIN IMMEDIATE", &self->begin_},
                           std::pair{"COMMIT", &self->commit_},
                           std::pair{"ROLLBACK", &self->rollback_}})
    if (auto err = self->prepare(sql, stmt))
      return err;
  if (auto err = self->adopt_boot(boot_id, now_ns))
    return err;
  return self;
}

caf::error sqlite_store::check_integrity(const std::string& path) {
  // A damaged file must stop the server at start, not after it has granted from half a table:
  // quick_check reads every page once (milliseconds for a large store).
  sqlite3_stmt* check = nullptr;
  if (auto err = prepare("PRAGMA quick_check", &check))
    return store_error("data-dir: " + path + " cannot be read: " + error_message(err)
                       + " (restore it from a backup, or move it away to start empty: tokens "
                         "may then repeat, see docs/durability.md)");
  std::string verdict;
  int rc = sqlite3_step(check);
  if (rc == SQLITE_ROW)
    verdict = column_text(check, 0);
  else
    verdict = sqlite3_errmsg(db_);
  sqlite3_finalize(check);
  if (verdict == "ok")
    return caf::none;
  return store_error("data-dir: " + path + " is damaged (" + verdict
                     + "); restore it from a backup, or move it away to start empty: tokens may "
                       "then repeat, see docs/durability.md");
}

caf::error sqlite_store::migrate() {
  // Stores written before released records were pruned lack released_seq: add it, and number
  // their released rows in name order (they have no other), so that the usual bound applies.
  sqlite3_stmt* cols = nullptr;
  if (auto err = prepare("SELECT 1 FROM pragma_table_info('locks') WHERE name = 'released_seq'",
                         &cols))
    return err;
  bool has = sqlite3_step(cols) == SQLITE_ROW;
  sqlite3_finalize(cols);
  if (has)
    return caf::none;
  return exec("BEGIN IMMEDIATE; ALTER TABLE locks ADD COLUMN released_seq INTEGER; "
              "UPDATE locks SET released_seq = numbered.n FROM (SELECT name, row_number() "
              "OVER (ORDER BY name) AS n FROM locks WHERE owner IS NULL) AS numbered "
              "WHERE locks.name = numbered.name; COMMIT;");
}

caf::error sqlite_store::adopt_boot(const std::string& boot_id, int64_t now_ns) {
  sqlite3_stmt* get = nullptr;
  if (auto err = prepare("SELECT value FROM meta WHERE key = 'boot_id'", &get))
    return err;
  std::string stored;
  if (sqlite3_step(get) == SQLITE_ROW)
    stored = column_text(get, 0);
  sqlite3_finalize(get);
  if (stored == boot_id && !boot_id.empty())
    return caf::none;
  // A new boot (or an unknown one): stored deadlines are on another monotonic clock. Give each
  // held lease its full TTL from now: its holder can renew, and nobody else is granted the lock
  // before the holder's own deadline has certainly passed.
  sqlite3_stmt* rebase = nullptr;
  if (auto err = prepare("UPDATE locks SET deadline_ns = ?1 + ttl_ms * 1000000 "
                         "WHERE owner IS NOT NULL",
                         &rebase))
    return err;
  if (auto err = exec("BEGIN IMMEDIATE"))
    return err;
  sqlite3_bind_int64(rebase, 1, now_ns);
  auto rc = sqlite3_step(rebase);
  sqlite3_finalize(rebase);
  // The error is read before the rollback, which would reset it to "not an error".
  auto rollback = [this](const char* what) {
    auto err = fail(what);
    exec("ROLLBACK");
    return err;
  };
  if (rc != SQLITE_DONE)
    return rollback("rebase deadlines");
  {
    stmt_guard guard{set_meta_};
    sqlite3_bind_text(set_meta_, 1, "boot_id", -1, SQLITE_STATIC);
    bind_static(set_meta_, 2, boot_id);
    if (sqlite3_step(set_meta_) != SQLITE_DONE)
      return rollback("store boot id");
  }
  return exec("COMMIT");
}

sqlite_store::~sqlite_store() {
  for (auto* stmt : {update_, insert_, set_meta_, all_, floor_, prune_, begin_, commit_, rollback_})
    sqlite3_finalize(stmt);
  if (db_)
    sqlite3_close(db_);
  if (lock_fd_ >= 0)
    ::close(lock_fd_); // the flock goes; after sqlite3_close, which never closes this fd
}

caf::error sqlite_store::exec(const char* sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string text = msg ? msg : "unknown error";
    sqlite3_free(msg);
    return store_error(std::string{"sqlite: "} + text);
  }
  return caf::none;
}

caf::error sqlite_store::prepare(const char* sql, sqlite3_stmt** out) {
  if (sqlite3_prepare_v2(db_, sql, -1, out, nullptr) != SQLITE_OK)
    return fail("prepare");
  return caf::none;
}

caf::error sqlite_store::fail(const char* what) {
  return store_error(std::string{"sqlite "} + what + ": "
                     + (db_ ? sqlite3_errmsg(db_) : "cannot allocate"));
}

caf::expected<std::vector<stored_lock>> sqlite_store::load_all() {
  stmt_guard guard{all_};
  std::vector<stored_lock> result;
  int rc;
  while ((rc = sqlite3_step(all_)) == SQLITE_ROW)
    result.push_back(read_row(all_));
  if (rc != SQLITE_DONE)
    return fail("load");
  return result;
}

caf::error sqlite_store::step_once(sqlite3_stmt* stmt, const char* what) {
  stmt_guard guard{stmt};
  if (sqlite3_step(stmt) != SQLITE_DONE)
    return fail(what);
  return caf::none;
}

caf::error sqlite_store::commit(const store_batch& batch) {
  if (auto err = step_once(begin_, "begin"))
    return err;
  // The error is read before the rollback, which would reset it to "not an error".
  auto rollback = [this](const char* what) {
    auto err = fail(what);
    step_once(rollback_, "rollback");
    return err;
  };
  for (const auto& x : batch.locks) {
    if (auto err = write_lock(x)) { // read before the rollback, as above
      step_once(rollback_, "rollback");
      return err;
    }
  }
  if (batch.fence_ceiling != 0) {
    stmt_guard guard{set_meta_};
    sqlite3_bind_text(set_meta_, 1, "fence_ceiling", -1, SQLITE_STATIC);
    sqlite3_bind_int64(set_meta_, 2, static_cast<int64_t>(batch.fence_ceiling));
    if (sqlite3_step(set_meta_) != SQLITE_DONE)
      return rollback("write fence ceiling");
  }
  for (const auto& name : batch.pruned) {
    stmt_guard guard{prune_};
    bind_static(prune_, 1, name);
    if (sqlite3_step(prune_) != SQLITE_DONE)
      return rollback("prune released records");
  }
  if (auto err = step_once(commit_, "commit")) {
    step_once(rollback_, "rollback");
    return err;
  }
  return caf::none;
}

caf::error sqlite_store::write_lock(const stored_lock& x) {
  // Columns ?1..?7 of both statements: name, owner, token, ttl_ms, deadline_ns, last_token,
  // released_seq. The strings outlive the step: bound without a copy.
  auto bind = [&x](sqlite3_stmt* stmt) {
    bind_static(stmt, 1, x.name);
    if (x.held)
      bind_static(stmt, 2, x.owner);
    else
      sqlite3_bind_null(stmt, 2);
    sqlite3_bind_int64(stmt, 3, static_cast<int64_t>(x.token));
    sqlite3_bind_int64(stmt, 4, x.ttl_ms);
    sqlite3_bind_int64(stmt, 5, x.deadline_ns);
    sqlite3_bind_int64(stmt, 6, static_cast<int64_t>(x.last_token));
    if (x.held)
      sqlite3_bind_null(stmt, 7);
    else
      sqlite3_bind_int64(stmt, 7, static_cast<int64_t>(x.released_seq));
  };
  {
    stmt_guard guard{update_};
    bind(update_);
    if (sqlite3_step(update_) != SQLITE_DONE)
      return fail("write lock");
    if (sqlite3_changes(db_) > 0)
      return caf::none;
  }
  stmt_guard guard{insert_};
  bind(insert_);
  if (sqlite3_step(insert_) != SQLITE_DONE)
    return fail("write lock");
  return caf::none;
}

caf::expected<uint64_t> sqlite_store::fence_floor() {
  stmt_guard guard{floor_};
  if (sqlite3_step(floor_) != SQLITE_ROW)
    return fail("read fence floor");
  return static_cast<uint64_t>(sqlite3_column_int64(floor_, 0));
}

} // namespace fencelock
