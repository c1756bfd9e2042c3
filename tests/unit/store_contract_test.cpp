// One contract, every store: the same cases run over the memory store and SQLite.

#include <catch2/catch.hpp>

#include <filesystem>

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
