// The embedding API's promise at shutdown: every call's callback runs exactly once, so stopping
// the service answers a waiting acquire (shutting_down) instead of dropping it. No sockets: the
// service runs in this process on a real actor system and a real SQLite store.

#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <optional>

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
