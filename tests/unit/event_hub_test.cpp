// actors/event_hub: subscriptions see every change after their snapshot and nothing the
// snapshot already shows; lease watches fire once, also for a lease that ended before its token
// was bound; a holder's own release fires none.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "actors/event_hub.hpp"

using fencelock::event_hub;
using fencelock::lease_end_cause;
using fencelock::lock_event;
using fencelock::lock_event_kind;
using fencelock::lock_status;

namespace {

lock_event event(lock_event_kind kind, std::string name, uint64_t token, uint64_t revision,
                 lease_end_cause cause = lease_end_cause::released) {
  lock_event ev;
  ev.kind = kind;
  ev.name = std::move(name);
  ev.owner = "w";
  ev.token = token;
  ev.revision = revision;
  ev.cause = cause;
  return ev;
}

lock_status held(std::string name, uint64_t token, uint64_t revision) {
  lock_status st;
  st.name = std::move(name);
  st.held = true;
  st.token = token;
  st.last_token = token;
  st.revision = revision;
  return st;
}

lock_status free_lock(std::string name, uint64_t last_token) {
  lock_status st;
  st.name = std::move(name);
  st.last_token = last_token;
  return st;
}

/// "name:token:revision" of each event, in order.
std::vector<std::string> keys(const std::vector<lock_event>& events) {
  std::vector<std::string> out;
  for (const auto& ev : events)
    out.push_back(ev.name + ":" + std::to_string(ev.token) + ":" + std::to_string(ev.revision));
  return out;
}

} // namespace

TEST_CASE("a subscription sees nothing before open(), then the snapshot, then newer events") {
  event_hub hub;
  std::vector<std::string> seen; // "snapshot" marks where the snapshot went out
  std::vector<lock_event> events;
  auto id = hub.subscribe("jobs:", false, [&](const lock_event& ev) {
    events.push_back(ev);
    seen.push_back("event");
  });
  REQUIRE(id != 0);
  // Raced with the snapshot: renewals up to revision 2 of token 5 are in it, revision 3 is not.
  hub.publish(event(lock_event_kind::renewed, "jobs:a", 5, 2));
  hub.publish(event(lock_event_kind::renewed, "jobs:a", 5, 3));
  hub.publish(event(lock_event_kind::acquired, "jobs:b", 9, 0)); // not in the snapshot at all
  hub.publish(event(lock_event_kind::acquired, "other", 1, 0));  // another prefix
  CHECK(events.empty());
  REQUIRE(hub.open(id, {held("jobs:a", 5, 2)}, [&] { seen.push_back("snapshot"); }));
  CHECK(seen == std::vector<std::string>{"snapshot", "event", "event"});
  CHECK(keys(events) == std::vector<std::string>{"jobs:a:5:3", "jobs:b:9:0"});
  // Live from now on, in order.
  hub.publish(event(lock_event_kind::released, "jobs:a", 5, 4));
  hub.publish(event(lock_event_kind::acquired, "jobs:a", 6, 0));
  CHECK(keys(events)
        == std::vector<std::string>{"jobs:a:5:3", "jobs:b:9:0", "jobs:a:5:4", "jobs:a:6:0"});
  hub.unsubscribe(id);
  hub.publish(event(lock_event_kind::renewed, "jobs:a", 6, 1));
  CHECK(events.size() == 4);
  CHECK(hub.subscriptions() == 0);
}

TEST_CASE("a free lock in the snapshot hides the events of leases that ended before it") {
  event_hub hub;
  std::vector<lock_event> events;
  auto id = hub.subscribe("jobs:a", true, [&](const lock_event& ev) { events.push_back(ev); });
  hub.publish(event(lock_event_kind::expired, "jobs:a", 7, 1, lease_end_cause::expired));
  hub.publish(event(lock_event_kind::acquired, "jobs:ab", 1, 0)); // exact: not this lock
  hub.publish(event(lock_event_kind::acquired, "jobs:a", 8, 0));
  REQUIRE(hub.open(id, {free_lock("jobs:a", 7)}, [] {}));
  CHECK(keys(events) == std::vector<std::string>{"jobs:a:8:0"});
}

TEST_CASE("open() fails for a subscription that is gone or held back too much") {
  event_hub hub;
  bool delivered = false;
  auto gone = hub.subscribe("", false, [](const lock_event&) {});
  hub.unsubscribe(gone);
  CHECK_FALSE(hub.open(gone, {}, [&] { delivered = true; }));
  auto flooded = hub.subscribe("", false, [](const lock_event&) {});
  for (std::size_t i = 0; i <= event_hub::held_back_limit; ++i)
    hub.publish(event(lock_event_kind::renewed, "x", 1, i + 1));
  CHECK_FALSE(hub.open(flooded, {}, [&] { delivered = true; }));
  CHECK_FALSE(delivered);
  CHECK(hub.subscriptions() == 0);
}

TEST_CASE("a lease watch fires once when its lease ends without its holder's release") {
  event_hub hub;
  std::vector<lock_event> ends;
  auto id = hub.watch_lease("a", [&](const lock_event& ev) { ends.push_back(ev); });
  hub.bind_lease_watch(id, 3);
  hub.publish(event(lock_event_kind::renewed, "a", 3, 1));
  hub.publish(event(lock_event_kind::expired, "a", 2, 1, lease_end_cause::expired)); // older
  CHECK(ends.empty());
  hub.publish(event(lock_event_kind::expired, "a", 3, 2, lease_end_cause::expired));
  REQUIRE(ends.size() == 1);
  CHECK(ends[0].cause == lease_end_cause::expired);
  hub.publish(event(lock_event_kind::expired, "a", 3, 2, lease_end_cause::expired));
  CHECK(ends.size() == 1);
}

TEST_CASE("a lease that ends before its watch is bound still fires at bind time") {
  event_hub hub;
  std::vector<lock_event> ends;
  auto id = hub.watch_lease("a", [&](const lock_event& ev) { ends.push_back(ev); });
  hub.publish(event(lock_event_kind::acquired, "a", 4, 0));
  hub.publish(event(lock_event_kind::expired, "a", 4, 1, lease_end_cause::undelivered));
  CHECK(ends.empty());
  hub.bind_lease_watch(id, 4);
  REQUIRE(ends.size() == 1);
  CHECK(ends[0].cause == lease_end_cause::undelivered);
}

TEST_CASE("a holder's own release ends the watch without firing; unwatch stops it") {
  event_hub hub;
  int fired = 0;
  auto released = hub.watch_lease("a", [&](const lock_event&) { ++fired; });
  hub.bind_lease_watch(released, 1);
  hub.publish(event(lock_event_kind::released, "a", 1, 1, lease_end_cause::released));
  auto closed = hub.watch_lease("a", [&](const lock_event&) { ++fired; });
  hub.bind_lease_watch(closed, 2);
  hub.publish(event(lock_event_kind::released, "a", 2, 1, lease_end_cause::session_closed));
  CHECK(fired == 1); // another socket's session-bound lease: its watchers hear of it
  auto unwatched = hub.watch_lease("a", [&](const lock_event&) { ++fired; });
  hub.bind_lease_watch(unwatched, 3);
  hub.unwatch_lease(unwatched);
  hub.publish(event(lock_event_kind::expired, "a", 3, 1, lease_end_cause::expired));
  CHECK(fired == 1);
}

TEST_CASE("unbound watches of one lock share its recent lease ends") {
  // A hot lock: every waiter watches for the lease it waits for, and each hand-off ends one
  // lease while the rest are still unbound. Each watch finds its own lease's end at bind time
  // among the last unbound_memory ends of the lock, whenever it opened.
  event_hub hub;
  std::vector<uint64_t> fired;
  auto watch = [&] {
    return hub.watch_lease("hot", [&](const lock_event& ev) { fired.push_back(ev.token); });
  };
  std::vector<uint64_t> early;
  for (int i = 0; i < 40; ++i)
    early.push_back(watch());
  uint64_t token = 0;
  auto end_next = [&] {
    ++token;
    hub.publish(event(lock_event_kind::acquired, "hot", token, 0));
    hub.publish(event(lock_event_kind::expired, "hot", token, 1, lease_end_cause::expired));
  };
  for (int i = 0; i < 10; ++i)
    end_next(); // tokens 1..10 end
  auto late = watch();
  for (int i = 0; i < 10; ++i)
    end_next(); // tokens 11..20 end: the lock remembers 5..20
  CHECK(fired.empty());
  hub.bind_lease_watch(early[0], 3); // ended too long ago: forgotten, as documented
  hub.bind_lease_watch(early[1], 5);
  hub.bind_lease_watch(late, 12);
  hub.bind_lease_watch(early[2], 21); // still live
  CHECK(fired == std::vector<uint64_t>{5, 12});
  end_next(); // 21 ends
  CHECK(fired == std::vector<uint64_t>{5, 12, 21});
  // Once bound, every watch hears of its own lease only.
  for (std::size_t i = 3; i < early.size(); ++i)
    hub.bind_lease_watch(early[i], 100 + i);
  hub.publish(event(lock_event_kind::expired, "hot", 107, 1, lease_end_cause::expired));
  CHECK(fired == std::vector<uint64_t>{5, 12, 21, 107});
}
