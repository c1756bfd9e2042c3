// One contract, every durable store: the same cases run over the memory store and SQLite. Then
// what only SQLite does (reopening, reboots, the exclusion, old stores), and the lease table that
// serves every read from memory.

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>

#include <sqlite3.h>

#include "actors/store/embedded/lease_table.hpp"
#include "actors/store/embedded/sqlite_store.hpp"
#include "actors/store/embedded/memory_store.hpp"

using namespace fencelock;

namespace {

struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    char tmpl[] = "/tmp/fencelock-unit-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

stored_lock held(std::string name, std::string owner, uint64_t token, int64_t deadline_ns,
                 int64_t ttl_ms = 1000) {
  return {std::move(name), true, std::move(owner), token, ttl_ms, deadline_ns, token, 0};
}

stored_lock freed(std::string name, uint64_t last_token, uint64_t released_seq = 1) {
  stored_lock x;
  x.name = std::move(name);
  x.last_token = last_token;
  x.released_seq = released_seq;
  return x;
}

/// Returns the records of `store` by name.
std::map<std::string, stored_lock> all_of(lease_store& store) {
  auto xs = store.load_all();
  REQUIRE(xs);
  std::map<std::string, stored_lock> out;
  for (auto& x : *xs)
    out[x.name] = x;
  return out;
}

struct memory_store_maker {
  static constexpr const char* name = "memory";
  std::shared_ptr<lease_store> open() {
    return store;
  }
  std::shared_ptr<memory_store> store = std::make_shared<memory_store>();
};

struct sqlite_store_maker {
  static constexpr const char* name = "sqlite";
  temp_dir dir;
  std::shared_ptr<lease_store> open() {
    auto x = sqlite_store::open(dir.path.string(), "boot-1", 0);
    REQUIRE(x);
    return std::shared_ptr<lease_store>{std::move(*x)};
  }
};

} // namespace

TEMPLATE_TEST_CASE("store contract", "[store]", memory_store_maker, sqlite_store_maker) {
  TestType maker;
  auto store = maker.open();

  SECTION("a new store is empty") {
    CHECK(all_of(*store).empty());
  }

  SECTION("a commit is read back, later writes of a name win") {
    store_batch batch;
    batch.locks.push_back(held("a", "alice", 7, 123));
    batch.locks.push_back(held("b", "bob", 8, 456));
    batch.locks.push_back(freed("b", 8, 3));
    REQUIRE_FALSE(store->commit(batch));
    auto all = all_of(*store);
    REQUIRE(all.size() == 2);
    CHECK(all["a"].held);
    CHECK(all["a"].owner == "alice");
    CHECK(all["a"].token == 7);
    CHECK(all["a"].deadline_ns == 123);
    CHECK_FALSE(all["b"].held);
    CHECK(all["b"].last_token == 8);
    CHECK(all["b"].released_seq == 3);
  }

  SECTION("pruning deletes the released records it names, never held ones") {
    store_batch batch;
    batch.locks.push_back(freed("r1", 1, 1));
    batch.locks.push_back(freed("r2", 2, 2));
    batch.locks.push_back(freed("r3", 3, 3));
    batch.locks.push_back(held("h", "o", 4, 1));
    REQUIRE_FALSE(store->commit(batch));
    store_batch prune;
    prune.pruned = {"r1", "r2", "h", "never-used"};
    REQUIRE_FALSE(store->commit(prune));
    auto all = all_of(*store);
    CHECK(all.count("r1") == 0);
    CHECK(all.count("r2") == 0);
    CHECK(all.count("r3") == 1);
    CHECK(all.count("h") == 1);
  }

  SECTION("a name written held in the batch that prunes it stays") {
    store_batch batch;
    batch.locks.push_back(freed("r", 1, 1));
    REQUIRE_FALSE(store->commit(batch));
    store_batch regrant;
    regrant.locks.push_back(held("r", "o", 2, 1));
    regrant.pruned = {"r"};
    REQUIRE_FALSE(store->commit(regrant));
    auto all = all_of(*store);
    REQUIRE(all.count("r") == 1);
    CHECK(all["r"].held);
  }

  SECTION("a record is updated in place, then read back as last written") {
    store_batch first;
    first.locks.push_back(held("a", "alice", 1, 10));
    REQUIRE_FALSE(store->commit(first));
    store_batch second;
    second.locks.push_back(freed("a", 1, 5));
    REQUIRE_FALSE(store->commit(second));
    store_batch third;
    third.locks.push_back(held("a", "bob", 2, 20));
    REQUIRE_FALSE(store->commit(third));
    auto all = all_of(*store);
    REQUIRE(all.size() == 1);
    CHECK(all["a"].owner == "bob");
    CHECK(all["a"].token == 2);
    CHECK(all["a"].deadline_ns == 20);
    CHECK(all["a"].released_seq == 0);
  }

  SECTION("the fence floor lies above the ceiling and every stored token") {
    CHECK(*store->fence_floor() == 1);
    store_batch batch;
    batch.fence_ceiling = 100;
    REQUIRE_FALSE(store->commit(batch));
    CHECK(*store->fence_floor() == 100);
    store_batch more;
    more.locks.push_back(held("a", "o", 250, 1));
    REQUIRE_FALSE(store->commit(more));
    CHECK(*store->fence_floor() == 251);
  }
}

TEST_CASE("sqlite: data survives reopening, and a second process is refused", "[store]") {
  temp_dir dir;
  {
    auto s = sqlite_store::open(dir.path.string(), "boot-1", 0);
    REQUIRE(s);
    store_batch batch;
    batch.locks.push_back(held("a", "alice", 5, 5'000'000'000, 1000));
    batch.fence_ceiling = 50;
    REQUIRE_FALSE((*s)->commit(batch));
    auto second = sqlite_store::open(dir.path.string(), "boot-1", 0);
    CHECK_FALSE(second);
  }
  auto s = sqlite_store::open(dir.path.string(), "boot-1", 9'000'000'000);
  REQUIRE(s);
  auto a = all_of(**s)["a"];
  CHECK(a.held);
  CHECK(a.deadline_ns == 5'000'000'000); // same boot: the monotonic deadline stands
  CHECK(*(*s)->fence_floor() == 50);
}

TEST_CASE("sqlite: after a reboot held leases get a full TTL from now", "[store]") {
  temp_dir dir;
  {
    auto s = sqlite_store::open(dir.path.string(), "boot-1", 0);
    REQUIRE(s);
    store_batch batch;
    batch.locks.push_back(held("a", "alice", 5, 5'000'000'000, 1000));
    batch.locks.push_back(freed("b", 4));
    REQUIRE_FALSE((*s)->commit(batch));
  }
  auto s = sqlite_store::open(dir.path.string(), "boot-2", 42);
  REQUIRE(s);
  auto all = all_of(**s);
  CHECK(all["a"].held);
  CHECK(all["a"].deadline_ns == 42 + 1000 * 1'000'000);
  CHECK_FALSE(all["b"].held);
}

TEST_CASE("sqlite: the exclusion does not rest on a file that can be deleted", "[store]") {
  temp_dir dir;
  auto first = sqlite_store::open(dir.path.string(), "boot-1", 0);
  REQUIRE(first);
  // Whatever else lies in the directory (an older release used a LOCK file there) may go.
  for (auto& entry : std::filesystem::directory_iterator{dir.path})
    if (entry.path().filename() != "fencelock.db")
      std::filesystem::remove(entry.path());
  auto second = sqlite_store::open(dir.path.string(), "boot-1", 0);
  REQUIRE_FALSE(second);
  CHECK(to_string(second.error()).find("in use by another fencelock process") != std::string::npos);
}

TEST_CASE("sqlite: a store from before pruning gets its released records numbered", "[store]") {
  temp_dir dir;
  {
    auto s = sqlite_store::open(dir.path.string(), "boot-1", 0);
    REQUIRE(s);
    store_batch batch;
    for (int i = 0; i < 30; ++i)
      batch.locks.push_back(freed("old" + std::to_string(10 + i), static_cast<uint64_t>(i + 1)));
    batch.locks.push_back(held("live", "o", 99, 1, 1000));
    REQUIRE_FALSE((*s)->commit(batch));
  }
  {
    // The schema of earlier releases: no released_seq column.
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open((dir.path / "fencelock.db").c_str(), &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "ALTER TABLE locks DROP COLUMN released_seq;",
                       nullptr, nullptr, nullptr)
          == SQLITE_OK);
    sqlite3_close(db);
  }
  auto s = sqlite_store::open(dir.path.string(), "boot-1", 0);
  REQUIRE(s);
  auto all = all_of(**s);
  std::vector<uint64_t> numbers;
  for (auto& [name, rec] : all)
    if (!rec.held)
      numbers.push_back(rec.released_seq);
  std::sort(numbers.begin(), numbers.end());
  REQUIRE(numbers.size() == 30);
  CHECK(numbers.front() == 1);
  CHECK(numbers.back() == 30); // numbered 1..30: pruning can take them oldest first
  CHECK(all["live"].held);
  CHECK(*(*s)->fence_floor() == 100);
}

TEST_CASE("sqlite: the index of earlier releases is dropped on open", "[store]") {
  // Releases that pruned by a range of release numbers kept an index that every write of a
  // lock had to update; pruning by name needs none.
  temp_dir dir;
  { REQUIRE(sqlite_store::open(dir.path.string(), "boot-1", 0)); }
  auto path = dir.path / "fencelock.db";
  auto indexes = [&] {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    sqlite3_stmt* q = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' "
                                   "AND name = 'locks_released'",
                               -1, &q, nullptr)
            == SQLITE_OK);
    REQUIRE(sqlite3_step(q) == SQLITE_ROW);
    auto n = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n;
  };
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       "CREATE INDEX locks_released ON locks(released_seq) WHERE owner IS NULL",
                       nullptr, nullptr, nullptr)
          == SQLITE_OK);
    sqlite3_close(db);
  }
  REQUIRE(indexes() == 1);
  { REQUIRE(sqlite_store::open(dir.path.string(), "boot-1", 0)); }
  CHECK(indexes() == 0);
}

// -- the lease table ----------------------------------------------------------------------------

namespace {

/// Releases `name` (token `token`) through `table`, as the store actor does.
void release_through(lease_table& table, const std::string& name, uint64_t token,
                     lease_store* store = nullptr) {
  store_batch grant;
  grant.locks.push_back(held(name, "o", token, 1));
  table.prepare(grant);
  if (store)
    REQUIRE_FALSE(store->commit(grant));
  table.apply(grant);
  store_batch end;
  end.locks.push_back(freed(name, token, 0));
  table.prepare(end);
  if (store)
    REQUIRE_FALSE(store->commit(end));
  table.apply(end);
}

} // namespace

TEMPLATE_TEST_CASE("lease table: records of released locks are kept for the latest releases",
                   "[store]", memory_store_maker, sqlite_store_maker) {
  TestType maker;
  auto store = maker.open();
  lease_table table{100};
  for (int i = 0; i < 300; ++i)
    release_through(table, "n" + std::to_string(1000 + i), static_cast<uint64_t>(i + 1),
                    store.get());
  int kept = 0;
  for (int i = 0; i < 300; ++i)
    kept += table.find("n" + std::to_string(1000 + i)).last_token != 0 ? 1 : 0;
  // At most a tenth more than the kept number remains between prunes; the latest are there.
  CHECK(kept >= 100);
  CHECK(kept <= 110);
  CHECK(table.find("n1299").last_token == 300);
  // A pruned name reads as never used.
  CHECK(table.find("n1000").last_token == 0);
  // The durable store pruned the same records.
  auto durable = all_of(*store);
  CHECK(durable.size() == table.size());
  CHECK(durable.count("n1000") == 0);
}

TEMPLATE_TEST_CASE("lease table: a batch that prunes keeps what it writes, as the store does",
                   "[store]", memory_store_maker, sqlite_store_maker) {
  // Names the batch re-grants or releases again are among the oldest releases: the table and
  // the store must still agree on every record afterwards.
  TestType maker;
  auto store = maker.open();
  lease_table table{4};
  for (int i = 0; i < 6; ++i)
    release_through(table, "o" + std::to_string(i), static_cast<uint64_t>(i + 1), store.get());
  store_batch batch;
  // o0 and o1 are pruned by now; o2 and o3 are the oldest releases kept.
  batch.locks.push_back(held("o2", "again", 50, 1)); // held again
  batch.locks.push_back(freed("o3", 51, 0));         // released again: the newest now
  for (int i = 0; i < 3; ++i)
    batch.locks.push_back(freed("new" + std::to_string(i), 60 + i, 0));
  table.prepare(batch);
  REQUIRE_FALSE(batch.pruned.empty());
  REQUIRE_FALSE(store->commit(batch));
  table.apply(batch);
  auto durable = all_of(*store);
  REQUIRE(durable.size() == table.size());
  for (const auto& [name, rec] : durable) {
    INFO(name);
    auto mine = table.find(name);
    CHECK(mine.held == rec.held);
    CHECK(mine.last_token == rec.last_token);
    CHECK(mine.released_seq == rec.released_seq);
  }
  CHECK(table.find("o2").held);
  CHECK(table.find("o3").last_token == 51);
  CHECK(durable.count("o4") == 0); // the oldest release left: pruned
}

TEST_CASE("lease table: held records are never pruned, and a re-grant leaves the order", "[store]") {
  lease_table table{10};
  store_batch keep;
  keep.locks.push_back(held("long", "o", 1, 1));
  table.prepare(keep);
  table.apply(keep);
  for (int i = 0; i < 100; ++i)
    release_through(table, "x" + std::to_string(i % 20), static_cast<uint64_t>(i + 2));
  CHECK(table.find("long").held);
  CHECK(table.size() <= 1 + 11);
}

TEST_CASE("lease table: a list reads only the held locks of its prefix", "[store]") {
  lease_table table{100};
  store_batch batch;
  for (auto name : {"a", "b:1", "b:2", "b:3", "ba", "c"})
    batch.locks.push_back(held(name, "o", 1, 1));
  batch.locks.push_back(freed("b:0", 1, 0));
  table.prepare(batch);
  table.apply(batch);
  auto names = [&](list_request req) {
    std::vector<std::string> out;
    for (auto& x : table.list_held(req))
      out.push_back(x.name);
    return out;
  };
  CHECK(names({"b:", "", 10}) == std::vector<std::string>{"b:1", "b:2", "b:3"});
  CHECK(names({"b:", "b:1", 10}) == std::vector<std::string>{"b:2", "b:3"});
  CHECK(names({"b:", "", 2}) == std::vector<std::string>{"b:1", "b:2"});
  CHECK(names({"", "b:3", 10}) == std::vector<std::string>{"ba", "c"});
  CHECK(names({"z", "", 10}).empty());
}

TEST_CASE("lease table: filled from the durable store at start-up", "[store]") {
  memory_store store;
  lease_table before{100};
  for (int i = 0; i < 5; ++i)
    release_through(before, "r" + std::to_string(i), static_cast<uint64_t>(i + 1), &store);
  store_batch batch;
  batch.locks.push_back(held("h", "o", 9, 1));
  before.prepare(batch);
  REQUIRE_FALSE(store.commit(batch));
  before.apply(batch);
  lease_table after{100};
  after.load(*store.load_all());
  CHECK(after.held_names() == std::vector<std::string>{"h"});
  CHECK(after.find("r4").last_token == 5);
  // Releases after the restart keep counting where the store left off.
  release_through(after, "r9", 10, &store);
  CHECK(after.find("r9").released_seq > after.find("r4").released_seq);
}

TEST_CASE("sqlite: a damaged store stops the start with a clear message", "[store]") {
  temp_dir dir;
  {
    auto s = sqlite_store::open(dir.path.string(), "boot-1", 0);
    REQUIRE(s);
    for (int i = 0; i < 300; ++i) {
      store_batch batch;
      batch.locks.push_back(held("lock:" + std::to_string(i), "owner", static_cast<uint64_t>(i + 1),
                                 1'000'000'000, 60'000));
      REQUIRE_FALSE((*s)->commit(batch));
    }
  }
  // Scribble over every page but the header page: whichever the table lives on is hit.
  auto path = dir.path / "fencelock.db";
  auto size = std::filesystem::file_size(path);
  REQUIRE(size > 4096 * 3);
  {
    std::FILE* f = std::fopen(path.c_str(), "r+b");
    REQUIRE(f != nullptr);
    for (std::uintmax_t page = 4096; page < size; page += 4096) {
      std::fseek(f, static_cast<long>(page + 8), SEEK_SET);
      char junk[64];
      std::fill(std::begin(junk), std::end(junk), '\xff');
      std::fwrite(junk, 1, sizeof(junk), f);
    }
    std::fclose(f);
  }
  auto reopened = sqlite_store::open(dir.path.string(), "boot-1", 0);
  REQUIRE_FALSE(reopened);
  auto text = to_string(reopened.error());
  INFO(text);
  CHECK(text.find("damaged") != std::string::npos);
  CHECK(text.find("not an error") == std::string::npos);
}
