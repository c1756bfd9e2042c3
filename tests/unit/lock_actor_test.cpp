// The lock actor over the embedded store, under deterministic time (CAF's test coordinator):
// what needs the clock or the embedded store's specifics. The semantics both stores share are
// tested over both in tests/integration/lock_semantics_test.cpp.

#include <catch2/catch.hpp>

#include "actors/clock.hpp"
#include "actors/fence_issuer.hpp"
#include "support/faulty_store.hpp"
#include "tests/unit/actor_fixture.hpp"

using namespace fencelock;
using fencelock::test::actor_fixture;
using fencelock::test::code_of;

TEST_CASE("the holder acquiring again keeps its token and gets a new deadline", "[actors]") {
  actor_fixture f;
  auto first = f.acquire("a", "alice", 1000)->value().value();
  f.advance(600);
  auto again = f.acquire("a", "alice", 1000)->value().value();
  CHECK(again.token == first.token);
  CHECK(again.expires_at_ms == first.expires_at_ms + 600);
  f.advance(600); // past the first deadline, before the refreshed one
  CHECK(f.status("a").held);
}

TEST_CASE("renew extends only the current lease of its owner", "[actors]") {
  actor_fixture f;
  auto l = f.acquire("a", "alice", 1000)->value().value();
  f.advance(900);
  auto renewed = f.renew("a", "alice", l.token, 2000);
  REQUIRE(renewed->value());
  CHECK(renewed->value()->token == l.token);
  CHECK(renewed->value()->ttl_ms == 2000);
  f.advance(1500); // past the original deadline
  CHECK(f.status("a").held);
  CHECK(code_of(f.renew("a", "alice", l.token + 1)) == errc::lease_lost);
  CHECK(code_of(f.renew("a", "mallory", l.token)) == errc::lease_lost);
  CHECK(code_of(f.renew("nosuchlock", "alice", l.token)) == errc::lease_lost);
  // ttl 0 keeps the lease's own TTL.
  CHECK(f.renew("a", "alice", l.token)->value()->ttl_ms == 2000);
}

TEST_CASE("a lease runs from when the service took its request, a waiter's from its grant",
          "[actors]") {
  actor_fixture f;
  auto taken_now = [&] { return to_ns(f.sys.clock().now()); };
  // Checks that `name` is held by `owner` for another `ms` exactly.
  auto held_for = [&](const std::string& name, const std::string& owner, int64_t ms) {
    f.advance(ms - 1);
    CHECK(f.status(name).held);
    CHECK(f.status(name).owner == owner);
    f.advance(1);
    CHECK_FALSE(f.status(name).held);
  };
  // Queues `owner` for `name`, which someone else holds, stamped as taken now.
  auto queue_stamped = [&](const std::string& name, const std::string& owner, uint64_t id) {
    acquire_request req{name, owner, 1000, 5000, id};
    req.received_ns = taken_now();
    auto r = f.ask<lease>(f.registry, acquire_atom_v, req);
    f.run();
    CHECK_FALSE(r->has_value()); // queued behind the holder
    return r;
  };

  // Taken 30 ms before the lock actor gets to it (an actor to spawn, a write queued ahead).
  acquire_request first{"a", "alice", 1000, 0, 1};
  first.received_ns = taken_now();
  f.advance(30);
  auto granted = f.ask<lease>(f.registry, acquire_atom_v, first);
  f.run();
  REQUIRE(granted->value());
  held_for("a", "alice", 970);

  // A renewal taken 20 ms before it is served: its new deadline is 1000 ms from then.
  auto held = f.acquire("b", "bob", 1000)->value().value();
  renew_request renewal{"b", "bob", held.token, 1000};
  renewal.received_ns = taken_now();
  f.advance(20);
  auto renewed = f.ask<lease, caf::message_priority::high>(f.registry, renew_atom_v, renewal);
  f.run();
  REQUIRE(renewed->value());
  held_for("b", "bob", 980);

  // A waiter handed the lock when the lease before runs out, 1000 ms after it queued: its
  // lease runs from the takeover.
  f.acquire("c", "carol", 1000)->value().value();
  auto handed = queue_stamped("c", "dave", 2);
  f.advance(1000);
  REQUIRE(handed->has_value());
  REQUIRE(handed->value());
  held_for("c", "dave", 1000);

  // And when an admin ends the lease: the waiter is then granted by an acquire of its own.
  f.acquire("e", "gina", 1000)->value().value();
  auto forced = queue_stamped("e", "hank", 3);
  f.advance(500);
  REQUIRE(f.force_release("e")->value());
  REQUIRE(forced->has_value());
  REQUIRE(forced->value());
  held_for("e", "hank", 1000);
}

TEST_CASE("a lease ends at its deadline and is never revived", "[actors]") {
  actor_fixture f;
  auto l = f.acquire("a", "alice", 1000)->value().value();
  f.advance(999);
  CHECK(f.status("a").held);
  f.advance(1);
  CHECK_FALSE(f.status("a").held);
  CHECK(code_of(f.renew("a", "alice", l.token)) == errc::lease_lost);
  CHECK(code_of(f.release("a", "alice", l.token)) == errc::lease_lost);
  // The record in the store says free too.
  CHECK_FALSE(std::static_pointer_cast<memory_store>(f.store)->record("a").held);
  // The former holder acquiring again gets a new, higher token.
  auto again = f.acquire("a", "alice", 1000)->value().value();
  CHECK(again.token > l.token);
}

TEST_CASE("a timeout for an older token or a moved deadline is ignored", "[actors]") {
  actor_fixture f;
  auto lock = f.sys.spawn(lock_actor_impl, std::string{"a"}, f.lock_ctx(), uint64_t{0});
  f.run();
  auto granted = f.ask<lease>(lock, acquire_atom_v, acquire_request{"a", "alice", 1000, 0, 1});
  f.run();
  auto l = granted->value().value();
  caf::anon_send(lock, expire_atom_v, l.token - 1); // an older token
  caf::anon_send(lock, expire_atom_v, l.token);     // the current one, before its deadline
  f.run();
  auto st = f.ask<lock_status>(lock, status_atom_v, std::string{"a"});
  f.run();
  CHECK(st->value()->held);
  CHECK(st->value()->token == l.token);
  caf::anon_send_exit(lock, caf::exit_reason::user_shutdown);
}

TEST_CASE("waiters are handed the lock in FIFO order with new tokens", "[actors]") {
  actor_fixture f;
  auto a = f.acquire("a", "alice", 1000)->value().value();
  auto b = f.acquire("a", "bob", 1000, 5000);
  auto c = f.acquire("a", "carol", 1000, 5000);
  CHECK_FALSE(b->has_value());
  CHECK_FALSE(c->has_value());
  CHECK(f.status("a").waiters == 2);
  REQUIRE(f.release("a", "alice", a.token)->value());
  REQUIRE(b->has_value());
  auto lb = b->value().value();
  CHECK(lb.owner == "bob");
  CHECK(lb.token > a.token);
  CHECK_FALSE(c->has_value());
  // Expiry hands over too.
  f.advance(1000);
  REQUIRE(c->has_value());
  auto lc = c->value().value();
  CHECK(lc.owner == "carol");
  CHECK(lc.token > lb.token);
}

TEST_CASE("waiters give up at their own deadlines, under one wait timer per lock", "[actors]") {
  actor_fixture f;
  f.acquire("a", "alice", 60'000)->value().value();
  auto b = f.acquire("a", "bob", 1000, 1000);
  auto timers = f.sched.clock().schedule().size(); // bob's wait, and the lease's expiry
  auto c = f.acquire("a", "carol", 1000, 3000);
  auto d = f.acquire("a", "dave", 1000, 2000);
  CHECK(f.sched.clock().schedule().size() == timers); // later deadlines: no timer of their own
  f.advance(999);
  CHECK_FALSE(b->has_value());
  f.advance(1);
  CHECK(test::code_of(b) == errc::lock_held);
  CHECK_FALSE(c->has_value());
  CHECK_FALSE(d->has_value());
  CHECK(f.status("a").waiters == 2);
  f.advance(1000);
  CHECK(test::code_of(d) == errc::lock_held);
  CHECK_FALSE(c->has_value());
  f.advance(1000);
  CHECK(test::code_of(c) == errc::lock_held);
  CHECK(f.status("a").waiters == 0);
  CHECK(*f.waiting == 0);
}

TEST_CASE("a release hands the lock to the next waiter in one durable write", "[actors]") {
  auto store = std::make_shared<memory_store>();
  actor_fixture f{store, 100, 1000}; // one block: the grants reserve no tokens meanwhile
  auto a = f.acquire("a", "alice", 1000)->value().value();
  auto b = f.acquire("a", "bob", 1000, 5000);
  REQUIRE_FALSE(b->has_value());
  auto commits_before = store->commits();
  REQUIRE(f.release("a", "alice", a.token)->value());
  REQUIRE(b->value());
  CHECK(store->commits() - commits_before == 1);
  // On record: bob's lease, never a free lock between the two.
  auto rec = store->record("a");
  CHECK(rec.held);
  CHECK(rec.owner == "bob");
  CHECK(rec.token == b->value()->token);
  CHECK(rec.last_token == b->value()->token);
}

TEST_CASE("a hand-off answers the next holder before the releaser", "[actors]") {
  actor_fixture f;
  auto a = f.acquire("a", "alice", 1000)->value().value();
  auto b = f.acquire("a", "bob", 1000, 5000);
  REQUIRE_FALSE(b->has_value());
  // The lock is idle until bob hears of his grant; alice's answer ends nothing she waits on.
  auto released = f.ask<bool, caf::message_priority::high>(
    f.registry, release_atom_v, release_request{"a", "alice", a.token});
  while (!b->has_value() && !released->has_value() && f.sched.has_job())
    f.sched.run_once();
  REQUIRE(b->has_value());
  CHECK(b->value()->owner == "bob");
  CHECK_FALSE(released->has_value());
  f.run();
  REQUIRE(released->has_value());
  CHECK(released->value().value());
}

TEST_CASE("a hand-over that cannot be written leaves the holder and its waiters", "[actors]") {
  auto faulty = std::make_shared<faulty_store>(std::make_shared<memory_store>());
  actor_fixture f{faulty, 100, 1000};
  auto a = f.acquire("a", "alice", 1000)->value().value();
  auto b = f.acquire("a", "bob", 1000, 5000);
  faulty->fail(faulty_store::call::commit);
  CHECK(code_of(f.release("a", "alice", a.token)) == errc::store_unavailable);
  CHECK_FALSE(b->has_value()); // bob still waits, behind alice
  auto st = f.status("a");
  CHECK(st.owner == "alice");
  CHECK(st.waiters == 1);
  faulty->heal();
  REQUIRE(f.release("a", "alice", a.token)->value());
  REQUIRE(b->value());
  CHECK(b->value()->token > a.token);
}

TEST_CASE("an expired lease goes to the next waiter in one durable write", "[actors]") {
  auto store = std::make_shared<memory_store>();
  actor_fixture f{store, 100, 1000};
  auto a = f.acquire("a", "alice", 1000)->value().value();
  auto b = f.acquire("a", "bob", 1000, 5000);
  auto commits_before = store->commits();
  f.advance(999);
  REQUIRE_FALSE(b->has_value());
  f.advance(1);
  REQUIRE(b->value());
  CHECK(b->value()->token > a.token);
  CHECK(store->commits() - commits_before == 1);
  auto rec = store->record("a");
  CHECK(rec.owner == "bob");
  CHECK(rec.token == b->value()->token);
}

TEST_CASE("a takeover that cannot be written is tried again, and nobody is granted meanwhile",
          "[actors]") {
  auto faulty = std::make_shared<faulty_store>(std::make_shared<memory_store>());
  actor_fixture f{faulty, 100, 1000};
  auto a = f.acquire("a", "alice", 1000)->value().value();
  auto b = f.acquire("a", "bob", 1000, 5000);
  faulty->fail(faulty_store::call::commit);
  f.advance(1000);
  CHECK_FALSE(b->has_value());
  CHECK(code_of(f.status_of("a")) == errc::store_unavailable); // neither held nor free
  faulty->heal();
  f.advance(1000); // the expiry is tried again, with the grant
  REQUIRE(b->value());
  CHECK(b->value()->owner == "bob");
  CHECK(b->value()->token > a.token);
}

TEST_CASE("tokens strictly increase across locks and grants", "[actors]") {
  actor_fixture f{nullptr, 100, 3}; // a small block forces many reservations
  uint64_t last = 0;
  for (int i = 0; i < 40; ++i) {
    auto name = "n" + std::to_string(i % 7);
    auto l = f.acquire(name, "o", 1000)->value().value();
    CHECK(l.token > last);
    last = l.token;
    // Every token handed out lies below a durable ceiling.
    CHECK(std::static_pointer_cast<memory_store>(f.store)->fence_ceiling() > l.token);
    f.release(name, "o", l.token);
  }
}

TEST_CASE("the token window serves lock actors while more than half a block is left", "[actors]") {
  token_window tokens{5, 4};
  CHECK_FALSE(tokens.take()); // nothing reserved yet
  tokens.raise(9);            // tokens 5..8 are durable
  CHECK(tokens.take() == 5u);
  CHECK(tokens.take() == 6u);
  CHECK_FALSE(tokens.take()); // half a block left: for the issuer, which reserves meanwhile
  CHECK(tokens.left() == 2u);
  CHECK(tokens.take_any() == 7u);
  tokens.raise(13);
  CHECK(tokens.take() == 8u);
  CHECK(tokens.close() == 9u); // a clean stop settles the ceiling at the next token
  CHECK_FALSE(tokens.take());
  CHECK_FALSE(tokens.take_any());
}

TEST_CASE("grants take their tokens without a message to the fence issuer", "[actors]") {
  actor_fixture f{nullptr, 100, 1000};
  auto first = f.acquire("warm", "o", 1000)->value().value(); // the first block is reserved
  auto issuer = std::static_pointer_cast<embedded_store>(f.runtime)->issuer_handle();
  auto* issuer_job = dynamic_cast<caf::resumable*>(caf::actor_cast<caf::abstract_actor*>(issuer));
  REQUIRE(issuer_job != nullptr);
  auto granted =
    f.ask<lease>(f.registry, acquire_atom_v, acquire_request{"a", "alice", 1000, 0, 7});
  int issuer_runs = 0;
  while (f.sched.has_job()) {
    if (f.sched.jobs.front() == issuer_job)
      ++issuer_runs;
    f.sched.run_once();
  }
  REQUIRE(granted->value());
  CHECK(granted->value()->token == first.token + 1);
  CHECK(issuer_runs == 0);
}

TEST_CASE("a clean stop gives back the unused rest of the token block", "[actors]") {
  auto store = std::make_shared<memory_store>();
  uint64_t last = 0;
  {
    actor_fixture f{store, 100, 1000};
    for (int i = 0; i < 3; ++i)
      last = f.acquire("a" + std::to_string(i), "o", 60'000)->value().value().token;
    CHECK(store->fence_ceiling() > last + 1); // a block reserved ahead
  }                                           // a clean stop, as service::stop() does it (SIGTERM)
  CHECK(store->fence_ceiling() == last + 1);
  actor_fixture again{store, 100, 1000};
  CHECK(again.acquire("b", "o", 60'000)->value().value().token == last + 1);
}

TEST_CASE("a fence floor above the store's raises the tokens for good, one below changes nothing",
          "[actors]") {
  auto store = std::make_shared<memory_store>();
  uint64_t last = 0;
  {
    actor_fixture f{store};
    last = f.acquire("a", "o", 60'000)->value().value().token;
  } // a clean stop: the ceiling settles at last + 1
  SECTION("a floor above the store's") {
    {
      test::embedded_lab lab{store, test::lab_options{.fence_floor = 5'000}};
      CHECK(lab.acquire("b", "o", 60'000)->value().value().token == 5'000);
      CHECK(store->fence_ceiling() > 5'000); // reserved, durably, before the token left
    }
    // The next run needs no floor of its own: the store's ceiling carries it.
    actor_fixture again{store};
    CHECK(again.acquire("c", "o", 60'000)->value().value().token == 5'001);
  }
  SECTION("a floor below the store's") {
    test::embedded_lab lab{store, test::lab_options{.fence_floor = last}};
    CHECK(lab.acquire("b", "o", 60'000)->value().value().token == last + 1);
  }
}

TEST_CASE("a crashed fence issuer leaves its block reserved: tokens skip, never repeat",
          "[actors]") {
  auto store = std::make_shared<memory_store>();
  uint64_t last = 0;
  uint64_t ceiling = 0;
  {
    actor_fixture f{store, 100, 1000};
    last = f.acquire("a", "o", 60'000)->value().value().token;
    ceiling = store->fence_ceiling();
    // Any end but a clean stop (here a kill) leaves the durable ceiling where it was.
    auto issuer = std::static_pointer_cast<embedded_store>(f.runtime)->issuer_handle();
    caf::anon_send_exit(issuer, caf::exit_reason::kill);
    f.run();
  }
  CHECK(store->fence_ceiling() == ceiling);
  actor_fixture again{store, 100, 1000};
  auto next = again.acquire("b", "o", 60'000)->value().value().token;
  CHECK(next > last);
  CHECK(next == ceiling); // at most one block skipped
}

TEST_CASE("idle lock actors are retired, and so are those that keep only a lease", "[actors]") {
  actor_fixture f; // no idle actor kept
  auto base = f.running_actors();
  auto l = f.acquire("a", "alice", 1000)->value().value();
  f.status("b"); // spawns, loads, answers, goes idle
  CHECK(f.running_actors() == base);
  CHECK(f.lock_actors() == 0);
  CHECK(f.actors.locks->size() == 1); // the held lease keeps its place (max-locks counts it)
  // The lease is the store's: the lock's next actor serves it.
  auto st = f.status("a");
  CHECK(st.held);
  CHECK(st.token == l.token);
  CHECK(f.running_actors() == base);
  REQUIRE(f.release("a", "alice", l.token)->value());
  CHECK(f.actors.locks->size() == 0);
  // A retired lock comes back with its history.
  CHECK(f.status("a").last_token == l.token);
}

TEST_CASE("a restart keeps leases, ends overdue ones, and never repeats a token", "[actors]") {
  auto store = std::make_shared<memory_store>();
  uint64_t before = 0;
  lease kept;
  {
    actor_fixture f{store};
    kept = f.acquire("kept", "alice", 60'000)->value().value();
    auto freed = f.acquire("freed", "bob", 60'000)->value().value();
    f.release("freed", "bob", freed.token);
    for (int i = 0; i < 5; ++i)
      before = f.acquire("x" + std::to_string(i), "o", 60'000)->value()->token;
    // The fixture is torn down without any release: a crash, as far as the store knows.
  }
  actor_fixture f{store};
  auto st = f.status("kept");
  CHECK(st.held);
  CHECK(st.owner == "alice");
  CHECK(st.token == kept.token);
  CHECK(code_of(f.acquire("kept", "mallory", 1000)) == errc::lock_held);
  CHECK(f.renew("kept", "alice", kept.token)->value());
  auto fresh = f.acquire("freed", "carol", 1000)->value().value();
  CHECK(fresh.token > before);
  // The test clock restarts at zero, so the old 60 s deadlines are still ahead: let them pass.
  f.advance(60'001);
  CHECK_FALSE(f.status("x0").held);
}

TEST_CASE("store failures fail closed", "[actors]") {
  auto faulty = std::make_shared<faulty_store>(std::make_shared<memory_store>());
  actor_fixture f{faulty};
  auto l = f.acquire("a", "alice", 1000)->value().value();
  faulty->fail(faulty_store::call::commit);
  // No grant, no renewal, no release without a durable record.
  CHECK(code_of(f.acquire("b", "bob", 1000)) == errc::store_unavailable);
  CHECK_FALSE(f.status("b").held);
  CHECK(code_of(f.renew("a", "alice", l.token)) == errc::store_unavailable);
  CHECK(code_of(f.release("a", "alice", l.token)) == errc::store_unavailable);
  CHECK(f.status("a").held);
  // An expiry that cannot be recorded leaves the lock unavailable to others, not granted, and
  // every answer about it says so alike: not "free", not "held by nobody".
  f.advance(1000);
  CHECK(code_of(f.acquire("a", "bob", 1000)) == errc::store_unavailable);
  CHECK(code_of(f.status_of("a")) == errc::store_unavailable);
  CHECK(code_of(f.check("a", l.token)) == errc::store_unavailable);
  CHECK_FALSE(f.runtime->ready()); // /readyz answers 503
  faulty->heal();
  f.advance(1000); // the expiry is retried
  CHECK(f.runtime->ready());
  CHECK_FALSE(f.status("a").held);
  auto next = f.acquire("a", "bob", 1000);
  REQUIRE(next->value());
  CHECK(next->value()->token > l.token);
}

// The lock actors await the store and the fence issuer without a CAF timeout (a timed-out write
// could still become durable): each must answer every request, however it fails.
TEST_CASE("a commit that throws is answered store_unavailable and the store goes on", "[actors]") {
  auto faulty = std::make_shared<faulty_store>(std::make_shared<memory_store>());
  actor_fixture f{faulty};
  auto l = f.acquire("a", "alice", 1000)->value().value();
  faulty->fail(faulty_store::call::commit, 1, false, faulty_store::failure::exception);
  // Answered without the clock moving: nothing waits for a timeout.
  CHECK(code_of(f.acquire("b", "bob", 1000)) == errc::store_unavailable);
  CHECK_FALSE(f.status("b").held);
  CHECK_FALSE(f.runtime->ready());
  // The store actor lives on: the next write commits.
  auto b = f.acquire("b", "bob", 1000);
  REQUIRE(b->value());
  CHECK(b->value()->token > l.token);
  CHECK(f.runtime->ready());
}

TEST_CASE("a commit that runs past the stall limit makes the store not ready", "[actors]") {
  using namespace std::chrono_literals;
  auto faulty = std::make_shared<faulty_store>(std::make_shared<memory_store>());
  actor_fixture f{faulty};
  auto& health = std::static_pointer_cast<embedded_store>(f.runtime)->health();
  std::chrono::steady_clock::time_point began;
  std::optional<bool> ready_soon;
  std::optional<bool> ready_later;
  faulty->before_commit = [&] {
    began = std::chrono::steady_clock::time_point{
      std::chrono::nanoseconds{health.running_since_ns.load()}};
    ready_soon = health.ready(began + health.stall_limit);
    ready_later = health.ready(began + health.stall_limit + 1ms);
  };
  REQUIRE(f.acquire("a", "alice", 1000)->value());
  CHECK(began.time_since_epoch().count() != 0); // the commit was timed
  CHECK(ready_soon == true);
  CHECK(ready_later == false); // a stall: /readyz answers 503
  // Once the commit returned, the store is ready again, whenever it is asked.
  CHECK(health.running_since_ns == 0);
  CHECK(health.ready(began + 1h));
  CHECK(f.runtime->ready());
}

TEST_CASE("a write waiting when the store actor stops is answered store_unavailable", "[actors]") {
  actor_fixture f;
  auto store = std::static_pointer_cast<embedded_store>(f.runtime)->store_handle();
  auto written = f.ask<bool>(store, put_atom_v, stored_lock{"a", false, "", 0, 0, 0, 7, 0});
  f.sched.run_once(); // the client sends the write
  f.sched.run_once(); // the store takes it and queues its commit behind it
  REQUIRE_FALSE(written->has_value());
  // Stopped before the commit: an urgent exit overtakes the queued flush.
  caf::anon_send<caf::message_priority::high>(
    caf::actor_cast<caf::actor>(store), caf::exit_msg{caf::actor_addr{}, caf::exit_reason::kill});
  f.run();
  CHECK(code_of(written) == errc::store_unavailable);
}

TEST_CASE("requests queued at a fence issuer that crashes are answered", "[actors]") {
  actor_fixture f;
  // A store that takes writes and never answers: the issuer's first reservation stays open.
  auto silent = f.sys.spawn([](store_actor::pointer self) -> store_actor::behavior_type {
    auto kept = std::make_shared<std::vector<caf::typed_response_promise<bool>>>();
    auto keep = [self, kept] {
      kept->push_back(self->make_response_promise<bool>());
      return kept->back();
    };
    return {
      [=](put_atom, stored_lock&) -> caf::result<bool> { return keep(); },
      [=](reserve_atom, uint64_t) -> caf::result<bool> { return keep(); },
      [=](settle_atom, uint64_t) -> caf::result<bool> { return keep(); },
      [](flush_atom) {},
    };
  });
  auto issuer =
    f.sys.spawn(fence_issuer_impl, silent, std::make_shared<token_window>(1, 10), uint64_t{10});
  auto token = f.ask<uint64_t>(issuer, next_token_atom_v);
  f.run();
  REQUIRE_FALSE(token->has_value()); // queued until a ceiling is durable
  caf::anon_send_exit(issuer, caf::exit_reason::kill);
  f.run();
  CHECK(code_of(token) == errc::unavailable);
  caf::anon_send_exit(silent, caf::exit_reason::kill);
  f.run();
}

TEST_CASE("concurrent writes share one commit", "[actors]") {
  auto store = std::make_shared<memory_store>();
  actor_fixture f{store, 100, 1000};
  auto commits_before = store->commits();
  std::vector<test::reply<lease>> replies;
  for (int i = 0; i < 50; ++i)
    replies.push_back(
      f.ask<lease>(f.registry, acquire_atom_v,
                   acquire_request{"g" + std::to_string(i), "o", 1000, 0, uint64_t(i + 1)}));
  f.run();
  for (auto& r : replies)
    REQUIRE(r->value());
  CHECK(store->commits() - commits_before < 10);
}

TEST_CASE("check tells whether a token is the current, unexpired lease", "[actors]") {
  actor_fixture f;
  auto check = [&](const std::string& name, uint64_t token) {
    auto r = f.ask<check_result>(f.registry, check_atom_v, check_request{name, token});
    f.run();
    return r->value().value();
  };
  // A lock without an actor holds nothing, and checking spawns nothing.
  auto base = f.running_actors();
  CHECK_FALSE(check("a", 1).current);
  CHECK(f.running_actors() == base);
  auto l = f.acquire("a", "alice", 1000)->value().value();
  auto now = check("a", l.token);
  CHECK(now.current);
  CHECK(now.token == l.token);
  CHECK(now.expires_at_ms == l.expires_at_ms);
  auto older = check("a", l.token - 1);
  CHECK_FALSE(older.current);
  CHECK(older.token == l.token);
  f.advance(1000);
  auto ended = check("a", l.token);
  CHECK_FALSE(ended.current);
  CHECK(ended.token == 0);
}

namespace {

// Moves time in heartbeat-sized steps: no stall.
void pass_time(actor_fixture& f, int64_t ms) {
  for (; ms > 0; ms -= 100)
    f.advance(std::min<int64_t>(ms, 100));
}

} // namespace

TEST_CASE("after a stall of the process, holders get a grace window to renew", "[actors]") {
  // Heartbeat 250 ms; a heartbeat 2 s late is a stall; 5 s of grace after it.
  actor_fixture f{nullptr, 100, 10, true};
  auto renewed = f.acquire("renewed", "alice", 1000)->value().value();
  auto left = f.acquire("left", "bob", 1000)->value().value();
  auto ended = f.acquire("ended", "carol", 200)->value().value();
  pass_time(f, 500); // "ended" expires before the stall, as always
  CHECK_FALSE(f.status("ended").held);

  f.advance(10'000); // the process stood still for ten seconds
  // The deadlines of "renewed" and "left" fell into the stall: nothing expired at wake-up.
  CHECK(f.status("renewed").held);
  CHECK(f.status("left").held);
  // A holder that renews within the grace keeps its lease and its token.
  auto again = f.renew("renewed", "alice", renewed.token, 1000);
  REQUIRE(again->value());
  CHECK(again->value()->token == renewed.token);
  // Nobody else is granted a lock in grace.
  CHECK(code_of(f.acquire("left", "mallory", 1000)) == errc::lock_held);

  pass_time(f, 5'100); // the grace is over: leases are judged by the clock again
  CHECK_FALSE(f.status("left").held);
  CHECK(code_of(f.renew("left", "bob", left.token)) == errc::lease_lost);
  CHECK_FALSE(f.status("renewed").held); // its renewal ran out during the grace too
  auto next = f.acquire("left", "mallory", 1000)->value().value();
  CHECK(next.token > left.token);
  (void)ended;
}

TEST_CASE("a renewal judged before the watchdog noticed the stall finds its lease in grace",
          "[actors]") {
  actor_fixture f{nullptr, 100, 10, true};
  auto held = f.acquire("a", "alice", 1000)->value().value();
  pass_time(f, 500);
  // The process stands still for ten seconds. On waking, the holder's renewal and a rival's
  // acquire, sent during the stall, reach the lock before the watchdog's heartbeat runs: the
  // clock moves without firing a timer, and only the messages already queued are processed.
  f.sched.clock().current_time += std::chrono::seconds{10};
  auto rival =
    f.ask<lease>(f.registry, acquire_atom_v, acquire_request{"a", "mallory", 1000, 0, 7});
  f.sched.run();
  auto renewal = f.ask<lease, caf::message_priority::high>(
    f.registry, renew_atom_v, renew_request{"a", "alice", held.token, 1000});
  f.sched.run();
  REQUIRE(rival->has_value());
  CHECK(code_of(rival) == errc::lock_held);
  REQUIRE(renewal->has_value());
  REQUIRE(renewal->value());
  CHECK(renewal->value()->token == held.token);

  f.run(); // the heartbeat: the watchdog opens the window; the renewed lease runs on
  pass_time(f, 900);
  CHECK(f.status("a").owner == "alice");
  pass_time(f, 200); // its renewal ran out, and nothing else kept it
  CHECK_FALSE(f.status("a").held);
}

TEST_CASE("a waiter granted when a stall's grace ends gets its whole lease", "[actors]") {
  actor_fixture f{nullptr, 100, 10, true};
  f.acquire("a", "alice", 1000)->value().value();
  acquire_request waiting{"a", "bob", 1000, 60'000, 7};
  waiting.received_ns = to_ns(f.sys.clock().now());
  auto handed = f.ask<lease>(f.registry, acquire_atom_v, waiting);
  f.run();
  f.advance(10'000); // a stall: alice's deadline fell into it, so her lease lives on in grace
  CHECK_FALSE(handed->has_value());
  pass_time(f, 5'100); // the grace ended at 15 s: bob was granted then, by an acquire of his own
  REQUIRE(handed->has_value());
  REQUIRE(handed->value());
  pass_time(f, 800); // his lease runs 1000 ms from that grant, not from when he queued
  CHECK(f.status("a").held);
  CHECK(f.status("a").owner == "bob");
}

TEST_CASE("without stall detection a jump of the clock expires leases at once", "[actors]") {
  actor_fixture f; // the default fixture does not watch for stalls
  f.acquire("a", "alice", 1000);
  f.advance(10'000);
  CHECK_FALSE(f.status("a").held);
}

// While the lock actor waits for a store write, what arrives meanwhile is set aside and taken up
// once the write is done, whatever its priority: the write of a renewal is urgent, a status or an
// acquire is not, and the reverse for a grant's write.
TEST_CASE("requests that arrive during a store write are all answered after it", "[actors]") {
  actor_fixture f;
  auto l = f.acquire("a", "alice", 1000)->value().value();
  // Sent together, processed in one go by run(): the later ones reach the lock actor while the
  // first one's write is in flight. Renewals are urgent, as the bridge sends them.
  auto renew = [&](uint64_t token) {
    return f.ask<lease, caf::message_priority::high>(f.registry, renew_atom_v,
                                                     renew_request{"a", "alice", token, 2000});
  };
  auto acquire = [&](const std::string& owner) {
    return f.ask<lease>(f.registry, acquire_atom_v, acquire_request{"a", owner, 1000, 0, 7});
  };

  SECTION("normal requests behind an urgent write") {
    auto renewed = renew(l.token);
    auto status = f.ask<lock_status>(f.registry, status_atom_v, std::string{"a"});
    auto other = acquire("bob");
    f.run();
    REQUIRE(renewed->has_value());
    REQUIRE(status->has_value());
    REQUIRE(other->has_value());
    REQUIRE(status->value());
    CHECK(status->value()->token == l.token);
    CHECK(code_of(other) == errc::lock_held);
  }

  SECTION("urgent requests behind a normal write") {
    // Alice's release hands the lock to Bob, who waits: that grant writes with normal priority
    // while alice's late renewal (urgent) and a status (normal) wait for it.
    auto waiting =
      f.ask<lease>(f.registry, acquire_atom_v, acquire_request{"a", "bob", 1000, 5000, 8});
    f.run();
    auto released = f.ask<bool, caf::message_priority::high>(
      f.registry, release_atom_v, release_request{"a", "alice", l.token});
    auto late = renew(l.token);
    auto status = f.ask<lock_status>(f.registry, status_atom_v, std::string{"a"});
    f.run();
    REQUIRE(released->has_value());
    REQUIRE(waiting->has_value());
    REQUIRE(status->has_value());
    REQUIRE(late->has_value());
    CHECK(code_of(late) == errc::lease_lost);
    REQUIRE(waiting->value());
    CHECK(waiting->value()->owner == "bob");
  }
}
