// One contract, every store: the same cases run over the memory store and SQLite.

#include <catch2/catch.hpp>

#include <filesystem>

#include <sqlite3.h>

#include "support/memory_store.hpp"
#include "actors/store/embedded/sqlite_store.hpp"

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
  return {std::move(name), true, std::move(owner), token, ttl_ms, deadline_ns, token};
}

stored_lock freed(std::string name, uint64_t last_token) {
  stored_lock x;
  x.name = std::move(name);
  x.last_token = last_token;
  return x;
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

  SECTION("an unknown lock is free and never granted") {
    auto x = store->load("nope");
    REQUIRE(x);
    CHECK(x->name == "nope");
    CHECK_FALSE(x->held);
    CHECK(x->last_token == 0);
  }

  SECTION("a commit is read back, later writes of a name win") {
    store_batch batch;
    batch.locks.push_back(held("a", "alice", 7, 123));
    batch.locks.push_back(held("b", "bob", 8, 456));
    batch.locks.push_back(freed("b", 8));
    REQUIRE_FALSE(store->commit(batch));
    auto a = store->load("a");
    CHECK(a->held);
    CHECK(a->owner == "alice");
    CHECK(a->token == 7);
    CHECK(a->deadline_ns == 123);
    auto b = store->load("b");
    CHECK_FALSE(b->held);
    CHECK(b->last_token == 8);
    CHECK(*store->held_names() == std::vector<std::string>{"a"});
  }

  SECTION("listing pages through held locks with a prefix") {
    store_batch batch;
    for (auto n : {"app:1", "app:2", "app:3", "other:1"})
      batch.locks.push_back(held(n, "o", 1, 1));
    batch.locks.push_back(freed("app:0", 3));
    REQUIRE_FALSE(store->commit(batch));
    auto page1 = store->list_held({"app:", "", 2});
    REQUIRE(page1->size() == 2);
    CHECK(page1->at(0).name == "app:1");
    CHECK(page1->at(1).name == "app:2");
    auto page2 = store->list_held({"app:", "app:2", 2});
    REQUIRE(page2->size() == 1);
    CHECK(page2->at(0).name == "app:3");
    CHECK(store->list_held({"", "", 10})->size() == 4);
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
  auto a = (*s)->load("a");
  CHECK(a->held);
  CHECK(a->deadline_ns == 5'000'000'000); // same boot: the monotonic deadline stands
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
  auto a = (*s)->load("a");
  CHECK(a->held);
  CHECK(a->deadline_ns == 42 + 1000 * 1'000'000);
  CHECK_FALSE((*s)->load("b")->held);
}

TEST_CASE("sqlite: records of released locks are kept for the latest releases only", "[store]") {
  temp_dir dir;
  auto s = sqlite_store::open(dir.path.string(), "boot-1", 0, 100);
  REQUIRE(s);
  auto& store = **s;
  // 300 locks acquired and released, one commit each.
  for (int i = 0; i < 300; ++i) {
    auto name = "n" + std::to_string(1000 + i);
    store_batch grant;
    grant.locks.push_back(held(name, "o", static_cast<uint64_t>(i + 1), 1, 1000));
    REQUIRE_FALSE(store.commit(grant));
    store_batch end;
    end.locks.push_back(freed(name, static_cast<uint64_t>(i + 1)));
    REQUIRE_FALSE(store.commit(end));
  }
  // At most a tenth more than the kept number remains between prunes; the latest are there.
  int kept = 0;
  for (int i = 0; i < 300; ++i)
    kept += store.load("n" + std::to_string(1000 + i))->last_token != 0 ? 1 : 0;
  CHECK(kept >= 100);
  CHECK(kept <= 110);
  CHECK(store.load("n1299")->last_token == 300);
  // A pruned name reads as never used; the fence floor still lies above every token.
  CHECK(store.load("n1000")->last_token == 0);
  CHECK(*store.fence_floor() == 301);
  // Held locks are never pruned.
  store_batch keep;
  keep.locks.push_back(held("long", "o", 400, 1, 1000));
  REQUIRE_FALSE(store.commit(keep));
  for (int i = 0; i < 300; ++i) {
    store_batch end;
    end.locks.push_back(freed("x" + std::to_string(i), 401));
    REQUIRE_FALSE(store.commit(end));
  }
  CHECK(store.load("long")->held);
}

TEST_CASE("sqlite: a store from before pruning gets its released records numbered", "[store]") {
  temp_dir dir;
  {
    // The schema of earlier releases: no released_seq column.
    auto s = sqlite_store::open(dir.path.string(), "boot-1", 0);
    REQUIRE(s);
    store_batch batch;
    for (int i = 0; i < 30; ++i)
      batch.locks.push_back(freed("old" + std::to_string(10 + i), static_cast<uint64_t>(i + 1)));
    batch.locks.push_back(held("live", "o", 99, 1, 1000));
    REQUIRE_FALSE((*s)->commit(batch));
  }
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open((dir.path / "fencelock.db").c_str(), &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       "DROP INDEX locks_released; DROP INDEX locks_held; "
                       "ALTER TABLE locks DROP COLUMN released_seq;",
                       nullptr, nullptr, nullptr)
          == SQLITE_OK);
    sqlite3_close(db);
  }
  auto s = sqlite_store::open(dir.path.string(), "boot-1", 0, 10);
  REQUIRE(s);
  int kept = 0;
  for (int i = 0; i < 30; ++i)
    kept += (*s)->load("old" + std::to_string(10 + i))->last_token != 0 ? 1 : 0;
  CHECK(kept == 10);
  CHECK((*s)->load("live")->held);
  CHECK(*(*s)->fence_floor() == 100);
}

TEST_CASE("sqlite: a list reads only the held locks of its prefix", "[store]") {
  temp_dir dir;
  auto s = sqlite_store::open(dir.path.string(), "boot-1", 0);
  REQUIRE(s);
  store_batch batch;
  for (auto name : {"a", "b:1", "b:2", "b:3", "ba", "c"})
    batch.locks.push_back(held(name, "o", 1, 1, 1000));
  batch.locks.push_back(freed("b:0", 1));
  REQUIRE_FALSE((*s)->commit(batch));
  auto names = [&](list_request req) {
    std::vector<std::string> out;
    auto page = (*s)->list_held(req);
    REQUIRE(page);
    for (auto& x : *page)
      out.push_back(x.name);
    return out;
  };
  CHECK(names({"b:", "", 10}) == std::vector<std::string>{"b:1", "b:2", "b:3"});
  CHECK(names({"b:", "b:1", 10}) == std::vector<std::string>{"b:2", "b:3"});
  CHECK(names({"b:", "", 2}) == std::vector<std::string>{"b:1", "b:2"});
  CHECK(names({"", "b:3", 10}) == std::vector<std::string>{"ba", "c"});
  // The query walks the index of held rows by range, not every name ever used.
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open((dir.path / "fencelock.db").c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* plan = nullptr;
  auto explain = std::string{"EXPLAIN QUERY PLAN "} + sqlite_store::list_query;
  REQUIRE(sqlite3_prepare_v2(db, explain.c_str(), -1, &plan, nullptr) == SQLITE_OK);
  std::string detail;
  while (sqlite3_step(plan) == SQLITE_ROW)
    detail += reinterpret_cast<const char*>(sqlite3_column_text(plan, 3));
  sqlite3_finalize(plan);
  sqlite3_close(db);
  INFO(detail);
  CHECK(detail.find("USING INDEX locks_held (name>? AND name<?)") != std::string::npos);
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
