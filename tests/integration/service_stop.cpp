// The embedding API's promise at shutdown: every call's callback runs exactly once, so stopping
// the service answers a waiting acquire (shutting_down) instead of dropping it. No sockets: the
// service runs in this process on a real actor system and a real SQLite store.

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "fencelock/messages.hpp"
#include "fencelock/service.hpp"
#include "support/poll.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock;
using namespace std::chrono_literals;

TEST_CASE("stop_answers_waiting_acquires_shutting_down", "[integration]") {
  fencelock::test::temp_dir dir;
  caf::actor_system_config cfg;
  add_message_types(cfg);
  caf::actor_system sys{cfg};
  config conf;
  conf.data_dir = dir.str();
  service svc{sys, conf};
  REQUIRE_FALSE(svc.start());

  std::promise<caf::expected<lease>> held;
  svc.acquire({"a", "alice", 60'000, 0}, [&](caf::expected<lease> x) { held.set_value(x); });
  auto held_future = held.get_future();
  REQUIRE(held_future.wait_for(10s) == std::future_status::ready);
  REQUIRE(held_future.get());

  std::promise<caf::expected<lease>> waiter;
  int calls = 0;
  svc.acquire({"a", "bob", 60'000, 60'000}, [&](caf::expected<lease> x) {
    ++calls;
    waiter.set_value(x);
  });
  auto queued = fencelock::test::eventually(
    [&] {
      std::promise<uint64_t> waiters;
      svc.status("a", [&](caf::expected<lock_status> st) { waiters.set_value(st ? st->waiters : 0); });
      return waiters.get_future().get() == 1;
    },
    10s);
  REQUIRE(queued);

  CHECK(svc.stop(5s));
  auto answer = waiter.get_future();
  REQUIRE(answer.wait_for(5s) == std::future_status::ready);
  auto x = answer.get();
  REQUIRE_FALSE(x);
  errc code;
  REQUIRE(as_errc(x.error(), code));
  CHECK(code == errc::shutting_down);
  CHECK(calls == 1);

  // After stop every call is answered at once, on the calling thread.
  std::optional<caf::expected<lease>> late;
  svc.acquire({"a", "carol", 1000, 0}, [&](caf::expected<lease> y) { late = y; });
  REQUIRE(late.has_value());
  REQUIRE_FALSE(*late);
  REQUIRE(as_errc(late->error(), code));
  CHECK(code == errc::shutting_down);
}

namespace {

/// Runs `call` with a callback and waits for its outcome.
template <class T, class F>
caf::expected<T> answer_of(F call) {
  std::promise<caf::expected<T>> p;
  call([&](caf::expected<T> x) { p.set_value(std::move(x)); });
  auto f = p.get_future();
  if (f.wait_for(10s) != std::future_status::ready)
    return caf::make_error(errc::unavailable, std::string{"no answer within 10 s"});
  return f.get();
}

std::optional<errc> code_of(const caf::error& err) {
  errc code;
  if (as_errc(err, code))
    return code;
  return std::nullopt;
}

} // namespace

TEST_CASE("a lagging io_loop sheds new acquires but not renewals", "[integration][overload]") {
  fencelock::test::temp_dir dir;
  caf::actor_system_config cfg;
  add_message_types(cfg);
  caf::actor_system sys{cfg};
  config conf;
  conf.data_dir = dir.str();
  conf.shed_io_lag_ms = 500;
  service svc{sys, conf};
  REQUIRE_FALSE(svc.start());
  auto held = answer_of<lease>([&](auto done) { svc.acquire({"a", "alice", 60'000, 0}, done); });
  REQUIRE(held);
  CHECK(svc.ready());

  svc.report_io_lag(std::chrono::milliseconds{800}); // the front end's loop runs late
  CHECK_FALSE(svc.ready());
  auto shed = answer_of<lease>([&](auto done) { svc.acquire({"b", "bob", 60'000, 0}, done); });
  REQUIRE_FALSE(shed);
  CHECK(code_of(shed.error()) == errc::overloaded);
  auto renewed = answer_of<lease>(
    [&](auto done) { svc.renew({"a", "alice", held->token, 60'000}, done); });
  CHECK(renewed); // renewals are never shed for lag
  CHECK(svc.metrics_text().find("fencelock_shed_total{op=\"acquire\"} 1") != std::string::npos);

  svc.report_io_lag(std::chrono::milliseconds{3}); // caught up
  // New acquires go through at once; /readyz holds 503 for a second after the last shed one
  // (docs/overload.md), then says ready by itself.
  auto later = answer_of<lease>([&](auto done) { svc.acquire({"b", "bob", 60'000, 0}, done); });
  CHECK(later);
  CHECK(fencelock::test::eventually([&] { return svc.ready(); }, std::chrono::seconds{10}));
  svc.stop();
}

// A host that stops its service while calls are in flight in the lock actors, gives up waiting
// (grace 0) and destroys it: no callback may run afterwards, since the host's own state may be
// gone by then. Under AddressSanitizer (scripts/sanitize.sh) this also shows that nothing the
// service owned is touched after it was freed.
TEST_CASE("a service destroyed while busy runs no callback afterwards", "[integration][stop]") {
  caf::actor_system_config cfg;
  add_message_types(cfg);
  caf::actor_system sys{cfg};
  std::atomic<bool> destroyed{false};
  std::atomic<int> late{0};
  std::atomic<int> answered{0};
  // One data dir per round: a stop that gave up leaves the store's actor holding its directory
  // until that actor finished.
  std::vector<std::unique_ptr<fencelock::test::temp_dir>> dirs;
  for (int round = 0; round < 5; ++round) {
    dirs.push_back(std::make_unique<fencelock::test::temp_dir>());
    config conf;
    conf.data_dir = dirs.back()->str();
    auto svc = std::make_unique<service>(sys, conf);
    REQUIRE_FALSE(svc->start());
    auto held = answer_of<lease>([&](auto done) { svc->acquire({"held", "alice", 60'000, 0}, done); });
    REQUIRE(held);
    destroyed = false;
    auto note = [&](auto) {
      if (destroyed.load())
        ++late;
      ++answered;
    };
    for (int i = 0; i < 200; ++i) {
      svc->acquire({"held", "w" + std::to_string(i), 60'000, 60'000}, note);
      svc->renew({"held", "alice", held->token, 60'000}, note);
      svc->status("held", note);
      svc->acquire({"free" + std::to_string(i), "o", 60'000, 0}, note);
    }
    svc->stop(std::chrono::milliseconds{0}); // gives up at once
    svc.reset();
    destroyed = true;
  }
  sys.await_all_actors_done(); // whatever was still running has finished now
  CHECK(late.load() == 0);
  CHECK(answered.load() > 0);
}
