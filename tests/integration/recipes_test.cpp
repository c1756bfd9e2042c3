// The fencing recipes of docs/fencing.md ("Recipes"), run against the real thing:
// examples/recipes/fenced_set.lua in a redis-server started by the test (reported SKIPPED when
// redis-server is not installed), and the sqlite.* blocks of examples/recipes/fenced_update.sql
// on a SQLite file. Each checks the rules a fenced resource must keep: the first write is
// admitted, a higher or equal token is admitted, a lower one is rejected and changes nothing,
// and concurrent writers leave the value written with the highest token.

#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "support/child_process.hpp"
#include "support/redis_server.hpp"
#include "support/poll.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

namespace {

// -- files ---------------------------------------------------------------------------------------

std::string recipe_path(std::string_view name) {
  return std::string{FENCELOCK_SOURCE_DIR} + "/examples/recipes/" + std::string{name};
}

// Returns the whole content of `path`; throws when it cannot be read.
std::string read_text(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// Loads fenced_set.lua into `conn`'s server and returns its SHA1.
std::string load_fenced_set(redis_connection& conn) {
  auto r = conn.call({"SCRIPT", "LOAD", read_text(recipe_path("fenced_set.lua"))});
  if (r->type != REDIS_REPLY_STRING)
    throw std::runtime_error("SCRIPT LOAD failed: "
                             + (r->str != nullptr ? std::string{r->str, r->len} : std::string{}));
  return std::string{r->str, r->len};
}

// What fenced_set.lua answered.
struct fenced_reply {
  bool admitted = false;
  std::string token;  // admitted: the writer's token; rejected: the fence it lost against
};

// Calls fenced_set.lua; throws std::runtime_error on an error reply or an unexpected shape, so
// that it can run on threads without Catch assertions.
fenced_reply fenced_set(redis_connection& conn, const std::string& sha, const std::string& key,
                        const std::string& fence, const std::string& token,
                        const std::string& value) {
  auto r = conn.call({"EVALSHA", sha, "2", key, fence, token, value});
  if (r->type == REDIS_REPLY_ERROR)
    throw std::runtime_error("fenced_set error: " + std::string{r->str, r->len});
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2
      || r->element[0]->type != REDIS_REPLY_INTEGER
      || r->element[1]->type != REDIS_REPLY_STRING)
    throw std::runtime_error("fenced_set: unexpected reply shape");
  return {r->element[0]->integer == 1, std::string{r->element[1]->str, r->element[1]->len}};
}

// -- SQLite --------------------------------------------------------------------------------------

struct db_closer {
  void operator()(sqlite3* db) const noexcept {
    sqlite3_close(db);
  }
};
using db_ptr = std::unique_ptr<sqlite3, db_closer>;

struct stmt_finalizer {
  void operator()(sqlite3_stmt* s) const noexcept {
    sqlite3_finalize(s);
  }
};
using stmt_ptr = std::unique_ptr<sqlite3_stmt, stmt_finalizer>;

// Splits fenced_update.sql into its blocks: each starts at a "-- name: <name>" line and runs to
// the next one, comments included (SQLite skips them).
std::map<std::string, std::string> load_sql_blocks() {
  std::map<std::string, std::string> blocks;
  std::istringstream in{read_text(recipe_path("fenced_update.sql"))};
  const std::string marker = "-- name: ";
  std::string* current = nullptr;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(marker)) {
      current = &blocks[line.substr(marker.size())];
      continue;
    }
    if (current != nullptr)
      *current += line + "\n";
  }
  return blocks;
}

// The recipe statements for SQLite, read from the file once per test.
struct sqlite_recipes {
  std::map<std::string, std::string> blocks = load_sql_blocks();

  const std::string& operator[](const std::string& name) const {
    auto i = blocks.find("sqlite." + name);
    if (i == blocks.end())
      throw std::runtime_error("fenced_update.sql has no block sqlite." + name);
    return i->second;
  }
};

using sql_value = std::variant<int64_t, std::string>;
using sql_binds = std::map<std::string, sql_value>;

// Opens (creating) the database file `path` with a busy timeout, so that concurrent writers
// wait for each other instead of failing with SQLITE_BUSY.
db_ptr open_db(const std::string& path) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                           nullptr);
  db_ptr db{raw};
  if (rc != SQLITE_OK)
    throw std::runtime_error("sqlite3_open " + path + ": "
                             + (raw != nullptr ? sqlite3_errmsg(raw) : "out of memory"));
  sqlite3_busy_timeout(db.get(), 30'000);
  return db;
}

// Prepares `sql`, which must hold exactly one statement (comments aside), and binds its named
// parameters from `binds` (every parameter must be given). Throws std::runtime_error.
stmt_ptr prepare(sqlite3* db, const std::string& sql, const sql_binds& binds) {
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &raw, &tail) != SQLITE_OK)
    throw std::runtime_error(std::string{"prepare: "} + sqlite3_errmsg(db) + "\n" + sql);
  stmt_ptr stmt{raw};
  if (!stmt)
    throw std::runtime_error("no statement in:\n" + sql);
  sqlite3_stmt* extra = nullptr;
  sqlite3_prepare_v2(db, tail, -1, &extra, nullptr);
  if (extra != nullptr) {
    sqlite3_finalize(extra);
    throw std::runtime_error("more than one statement in:\n" + sql);
  }
  for (int i = 1; i <= sqlite3_bind_parameter_count(raw); ++i) {
    const char* name = sqlite3_bind_parameter_name(raw, i);
    auto b = name != nullptr ? binds.find(name) : binds.end();
    if (b == binds.end())
      throw std::runtime_error(std::string{"no value for parameter "}
                               + (name != nullptr ? name : "?") + " in:\n" + sql);
    int rc = std::holds_alternative<int64_t>(b->second)
               ? sqlite3_bind_int64(raw, i, std::get<int64_t>(b->second))
               : sqlite3_bind_text(raw, i, std::get<std::string>(b->second).c_str(), -1,
                                   SQLITE_TRANSIENT);
    if (rc != SQLITE_OK)
      throw std::runtime_error(std::string{"bind: "} + sqlite3_errmsg(db));
  }
  return stmt;
}

// Runs a statement that returns no rows; returns the number of rows it changed. Throws
// std::runtime_error when it fails.
int exec(sqlite3* db, const std::string& sql, const sql_binds& binds = {}) {
  auto stmt = prepare(db, sql, binds);
  int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_DONE)
    throw std::runtime_error(std::string{"step: "} + sqlite3_errmsg(db));
  return sqlite3_changes(db);
}

// The row of `key`: its value and fence token.
struct fenced_row {
  std::string value;
  int64_t fence_token = 0;

  bool operator==(const fenced_row&) const = default;
};

std::ostream& operator<<(std::ostream& os, const fenced_row& row) {
  return os << "{value=\"" << row.value << "\", fence_token=" << row.fence_token << "}";
}

std::optional<fenced_row> read_row(sqlite3* db, const sqlite_recipes& sql, const std::string& key) {
  auto stmt = prepare(db, sql["read"], {{":key", key}});
  int rc = sqlite3_step(stmt.get());
  if (rc == SQLITE_DONE)
    return std::nullopt;
  if (rc != SQLITE_ROW)
    throw std::runtime_error(std::string{"read: "} + sqlite3_errmsg(db));
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), 0));
  return fenced_row{text != nullptr ? text : "", sqlite3_column_int64(stmt.get(), 1)};
}

sql_binds write_args(const std::string& key, const std::string& value, sql_value token) {
  return {{":key", key}, {":value", value}, {":token", std::move(token)}};
}

} // namespace

namespace Catch {
template <>
struct StringMaker<std::optional<fenced_row>> {
  static std::string convert(const std::optional<fenced_row>& row) {
    std::ostringstream os;
    if (row)
      os << *row;
    else
      os << "{no row}";
    return os.str();
  }
};
} // namespace Catch

// -- Redis ---------------------------------------------------------------------------------------

TEST_CASE("recipe_redis_fenced_set_orders_tokens", "[integration]") {
  auto bin = redis_server_or_skip();
  if (!bin)
    return;
  redis_server server{*bin};
  redis_connection conn{server.port()};
  auto sha = load_fenced_set(conn);
  REQUIRE(sha.size() == 40);

  const std::string data = "orders:data";
  const std::string fence = "orders:fence";

  // No fence yet: the first write is admitted and sets the fence.
  auto r = fenced_set(conn, sha, data, fence, "5", "a");
  CHECK(r.admitted);
  CHECK(r.token == "5");
  CHECK(conn.get(data) == "a");
  CHECK(conn.get(fence) == "5");

  // A higher token is admitted.
  r = fenced_set(conn, sha, data, fence, "7", "b");
  CHECK(r.admitted);
  CHECK(r.token == "7");
  CHECK(conn.get(data) == "b");

  // An equal token is admitted: the same holder writing again.
  r = fenced_set(conn, sha, data, fence, "7", "c");
  CHECK(r.admitted);
  CHECK(conn.get(data) == "c");

  // A lower token is rejected with the fence it lost against, and nothing changes.
  r = fenced_set(conn, sha, data, fence, "6", "stale");
  CHECK_FALSE(r.admitted);
  CHECK(r.token == "7");
  CHECK(conn.get(data) == "c");
  CHECK(conn.get(fence) == "7");

  // A second data key under the same lock shares the fence: a write through it with a higher
  // token fences off the older token on the first key too.
  const std::string other = "orders:index";
  CHECK_FALSE(fenced_set(conn, sha, other, fence, "6", "stale").admitted);
  CHECK_FALSE(conn.get(other).has_value());
  CHECK(fenced_set(conn, sha, other, fence, "8", "x").admitted);
  r = fenced_set(conn, sha, data, fence, "7", "late");
  CHECK_FALSE(r.admitted);
  CHECK(r.token == "8");
  CHECK(conn.get(data) == "c");

  // Tokens compare exactly beyond 2^53, where Lua's doubles would round them equal.
  const std::string big_fence = "big:fence";
  CHECK(fenced_set(conn, sha, "big:data", big_fence, "9007199254740993", "hi").admitted);
  r = fenced_set(conn, sha, "big:data", big_fence, "9007199254740992", "lo");
  CHECK_FALSE(r.admitted);
  CHECK(r.token == "9007199254740993");
  CHECK(fenced_set(conn, sha, "big:data", big_fence, "18446744073709551615", "max").admitted);
  CHECK(conn.get("big:data") == "max");
}

TEST_CASE("recipe_redis_fenced_set_rejects_non_integer_tokens", "[integration]") {
  auto bin = redis_server_or_skip();
  if (!bin)
    return;
  redis_server server{*bin};
  redis_connection conn{server.port()};
  auto sha = load_fenced_set(conn);
  REQUIRE(fenced_set(conn, sha, "d", "f", "10", "good").admitted);

  for (std::string token : {"abc", "", "-1", "1.5", "1e3", "07", " 7", "7 ", "0x10"}) {
    INFO("token \"" << token << "\"");
    auto r = conn.call({"EVALSHA", sha, "2", "d", "f", token, "bad"});
    REQUIRE(r->type == REDIS_REPLY_ERROR);
    CHECK_THAT(std::string(r->str, r->len), Catch::Contains("token must be"));
  }
  // A missing value is an error too.
  auto r = conn.call({"EVALSHA", sha, "2", "d", "f", "11"});
  REQUIRE(r->type == REDIS_REPLY_ERROR);
  CHECK_THAT(std::string(r->str, r->len), Catch::Contains("missing value"));

  // Nothing was written.
  CHECK(conn.get("d") == "good");
  CHECK(conn.get("f") == "10");
}

TEST_CASE("recipe_redis_fenced_set_concurrent_writers_keep_the_max", "[integration]") {
  auto bin = redis_server_or_skip();
  if (!bin)
    return;
  redis_server server{*bin};
  std::string sha;
  {
    redis_connection conn{server.port()};
    sha = load_fenced_set(conn);
  }

  // Writer `id` writes tokens id + 1, id + 1 + writers, ...: increasing per writer, distinct
  // across writers, so exactly one write carries the highest token.
  constexpr int writers = 4;
  constexpr int writes = 300;
  struct writer_log {
    int admitted = 0;
    int rejected = 0;
    std::vector<std::string> anomalies;
  };
  std::vector<writer_log> logs(writers);
  std::latch start{writers};
  std::vector<std::thread> threads;
  for (int id = 0; id < writers; ++id) {
    threads.emplace_back([&, id] {
      auto& log = logs[static_cast<size_t>(id)];
      try {
        redis_connection conn{server.port()};
        start.arrive_and_wait();
        long long last_fence = 0;
        for (int i = 0; i < writes; ++i) {
          long long token = static_cast<long long>(i) * writers + id + 1;
          auto value = "writer-" + std::to_string(id) + "-token-" + std::to_string(token);
          auto r = fenced_set(conn, sha, "shared:data", "shared:fence", std::to_string(token),
                              value);
          long long seen = std::stoll(r.token);
          if (r.admitted) {
            ++log.admitted;
            if (seen != token)
              log.anomalies.push_back("admitted " + std::to_string(token) + " answered "
                                      + r.token);
          } else {
            ++log.rejected;
            if (seen <= token)
              log.anomalies.push_back("rejected " + std::to_string(token) + " against fence "
                                      + r.token);
          }
          // The fence only rises, so what one writer sees of it never goes down.
          if (seen < last_fence)
            log.anomalies.push_back("fence went down from " + std::to_string(last_fence)
                                    + " to " + r.token);
          last_fence = std::max(last_fence, seen);
        }
      } catch (const std::exception& e) {
        log.anomalies.push_back(e.what());
      }
    });
  }
  for (auto& t : threads)
    t.join();

  int admitted = 0;
  for (const auto& log : logs) {
    for (const auto& a : log.anomalies)
      FAIL_CHECK(a);
    CHECK(log.admitted + log.rejected == writes);
    admitted += log.admitted;
  }
  // The first write to reach iteration i carries a token above every earlier one, so it is
  // admitted: at least `writes` writes are.
  CHECK(admitted >= writes);

  constexpr long long max_token = static_cast<long long>(writes - 1) * writers + writers;
  redis_connection conn{server.port()};
  CHECK(conn.get("shared:fence") == std::to_string(max_token));
  CHECK(conn.get("shared:data")
        == "writer-" + std::to_string(writers - 1) + "-token-" + std::to_string(max_token));
}

// -- SQLite --------------------------------------------------------------------------------------

TEST_CASE("recipe_sqlite_fenced_update_orders_tokens", "[integration]") {
  temp_dir dir{"fencelock-recipe-"};
  const auto path = (dir.path() / "resource.db").string();
  sqlite_recipes sql;
  auto db = open_db(path);
  exec(db.get(), sql["create_table"]);

  // The UPDATE form needs the row: on a missing row it changes nothing.
  CHECK(exec(db.get(), sql["update"], write_args("k", "none", int64_t{1})) == 0);
  CHECK_FALSE(read_row(db.get(), sql, "k").has_value());

  // First write (insert-if-absent form), then higher and equal tokens are admitted.
  CHECK(exec(db.get(), sql["upsert"], write_args("k", "a", int64_t{5})) == 1);
  CHECK(exec(db.get(), sql["update"], write_args("k", "b", int64_t{7})) == 1);
  CHECK(read_row(db.get(), sql, "k") == fenced_row{"b", 7});
  CHECK(exec(db.get(), sql["update"], write_args("k", "c", int64_t{7})) == 1);
  CHECK(read_row(db.get(), sql, "k") == fenced_row{"c", 7});

  // A lower token changes 0 rows, and the value and fence stay.
  CHECK(exec(db.get(), sql["update"], write_args("k", "stale", int64_t{6})) == 0);
  CHECK(read_row(db.get(), sql, "k") == fenced_row{"c", 7});

  // A token that is not an integer is refused by the STRICT table, not stored as text.
  CHECK_THROWS(exec(db.get(), sql["update"], write_args("k", "text", std::string{"abc"})));
  CHECK(read_row(db.get(), sql, "k") == fenced_row{"c", 7});

  // It is all in the file: a new connection reads the same.
  db.reset();
  auto again = open_db(path);
  CHECK(read_row(again.get(), sql, "k") == fenced_row{"c", 7});
}

TEST_CASE("recipe_sqlite_fenced_upsert_orders_tokens", "[integration]") {
  temp_dir dir{"fencelock-recipe-"};
  sqlite_recipes sql;
  auto db = open_db((dir.path() / "resource.db").string());
  exec(db.get(), sql["create_table"]);

  // Absent: inserted.
  CHECK(exec(db.get(), sql["upsert"], write_args("k", "a", int64_t{5})) == 1);
  CHECK(read_row(db.get(), sql, "k") == fenced_row{"a", 5});
  // Higher and equal: updated.
  CHECK(exec(db.get(), sql["upsert"], write_args("k", "b", int64_t{9})) == 1);
  CHECK(exec(db.get(), sql["upsert"], write_args("k", "c", int64_t{9})) == 1);
  CHECK(read_row(db.get(), sql, "k") == fenced_row{"c", 9});
  // Lower: 0 rows changed, the row stays.
  CHECK(exec(db.get(), sql["upsert"], write_args("k", "stale", int64_t{8})) == 0);
  CHECK(read_row(db.get(), sql, "k") == fenced_row{"c", 9});
  // Tokens up to 2^63 - 1 compare exactly.
  CHECK(exec(db.get(), sql["upsert"], write_args("k", "max", INT64_MAX)) == 1);
  CHECK(exec(db.get(), sql["upsert"], write_args("k", "below", INT64_MAX - 1)) == 0);
  CHECK(read_row(db.get(), sql, "k") == fenced_row{"max", INT64_MAX});
  // Other keys have their own fence.
  CHECK(exec(db.get(), sql["upsert"], write_args("other", "z", int64_t{1})) == 1);
  CHECK(read_row(db.get(), sql, "other") == fenced_row{"z", 1});
}

TEST_CASE("recipe_sqlite_concurrent_writers_keep_the_max", "[integration]") {
  temp_dir dir{"fencelock-recipe-"};
  const auto path = (dir.path() / "resource.db").string();
  sqlite_recipes sql;
  {
    auto db = open_db(path);
    exec(db.get(), sql["create_table"]);
  }

  // As for Redis: each writer has its own connection and increasing tokens, distinct across
  // writers; half use the UPDATE form, half the insert-if-absent form. The last writer, whose
  // last write carries the highest token, upserts, so that write lands whatever the timing.
  constexpr int writers = 4;
  constexpr int writes = 60;
  std::vector<std::vector<std::string>> anomalies(writers);
  std::latch start{writers};
  std::vector<std::thread> threads;
  for (int id = 0; id < writers; ++id) {
    threads.emplace_back([&, id] {
      auto& log = anomalies[static_cast<size_t>(id)];
      try {
        auto db = open_db(path);
        const auto& stmt = sql[id % 2 == 1 ? "upsert" : "update"];
        start.arrive_and_wait();
        for (int i = 0; i < writes; ++i) {
          int64_t token = int64_t{i} * writers + id + 1;
          auto value = "writer-" + std::to_string(id) + "-token-" + std::to_string(token);
          int changed = exec(db.get(), stmt, write_args("shared", value, token));
          if (changed != 0 && changed != 1)
            log.push_back("changed " + std::to_string(changed) + " rows");
        }
      } catch (const std::exception& e) {
        log.push_back(e.what());
      }
    });
  }
  for (auto& t : threads)
    t.join();
  for (const auto& log : anomalies)
    for (const auto& a : log)
      FAIL_CHECK(a);

  constexpr int64_t max_token = int64_t{writes - 1} * writers + writers;
  auto db = open_db(path);
  auto row = read_row(db.get(), sql, "shared");
  REQUIRE(row.has_value());
  CHECK(row->fence_token == max_token);
  CHECK(row->value
        == "writer-" + std::to_string(writers - 1) + "-token-" + std::to_string(max_token));
}
