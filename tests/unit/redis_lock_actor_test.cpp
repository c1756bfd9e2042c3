// The Redis store's lock actor on CAF's test coordinator, deterministic: two "instances" (two
// registries with their own lock actors and watchdogs) share one model of the Redis store. The
// model answers the store actor's requests with the semantics of the Lua scripts
// (actors/store/redis/scripts.cpp) on the coordinator's clock, and, like the event channel,
// wakes every instance's waiters when a lease ends. Time moves only when a test says so.

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/redis_lock_actor.hpp"
#include "actors/registry.hpp"
#include "actors/watchdog.hpp"
#include "unit/actor_fixture.hpp"

using namespace fencelock;
using namespace fencelock::test;
using redis::script_lease;

namespace {

using time_point = caf::actor_clock::time_point;

/// The store as the scripts keep it, plus what the tests look at.
struct redis_model {
  struct record {
    std::string owner;
    uint64_t token = 0;
    int64_t ttl_ms = 0;
    time_point deadline;
    uint64_t revision = 0;
    bool held = false;
  };
  std::map<std::string, record> locks;
  uint64_t counter = 0;
  /// Fail every script with this text (empty: work).
  std::string failing;
  /// Swallow every request without an answer (a frozen Redis); the promises wait here.
  bool frozen = false;
  std::vector<caf::typed_response_promise<script_lease>> parked;
  /// Deliver the wake-ups of the event channel.
  bool channel = true;
  /// Every script call: "<script> <lock> @<ms since start>".
  std::vector<std::string> calls;
  /// Lease ends as "<lock>:<token>:<cause>".
  std::vector<std::string> ends;
  std::vector<registry_actor> instances;
};

using model_ptr = std::shared_ptr<redis_model>;

int64_t ms_since(time_point start, time_point now) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
}

// The fake store actor: the scripts' decisions in C++.
redis_store_actor::behavior_type fake_redis(redis_store_actor::pointer self, model_ptr m,
                                            time_point start) {
  auto remaining = [=](const redis_model::record& r) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(r.deadline - self->clock().now());
    return std::max<int64_t>(0, left.count());
  };
  auto answer = [=](const std::string& status, const redis_model::record& r) {
    script_lease x;
    x.status = status;
    x.owner = r.owner;
    x.token = r.token;
    x.ttl_ms = r.ttl_ms;
    x.remaining_ms = remaining(r);
    x.revision = r.revision;
    x.deadline_ms = 1'000'000 + ms_since(start, r.deadline);
    return x;
  };
  auto live = [=](const redis_model::record& r) {
    return r.held && self->clock().now() < r.deadline;
  };
  auto finish = [=](const std::string& name, redis_model::record& r, const std::string& cause) {
    r.held = false;
    ++r.revision;
    m->ends.push_back(name + ":" + std::to_string(r.token) + ":" + cause);
    if (m->channel)
      for (auto& reg : m->instances)
        caf::anon_send(reg, wake_atom_v, name);
  };
  auto settle = [=](const std::string& name) {
    auto i = m->locks.find(name);
    if (i != m->locks.end() && i->second.held && !live(i->second))
      finish(name, i->second, "expired");
  };
  auto log = [=](const char* script, const std::string& name) {
    m->calls.push_back(std::string{script} + " " + name + " @"
                       + std::to_string(ms_since(start, self->clock().now())));
  };
  // Answers with `x`, or fails, or never (frozen).
  auto respond = [=](auto make) -> caf::result<script_lease> {
    if (m->frozen) {
      m->parked.push_back(self->make_response_promise<script_lease>()); // never delivered
      return m->parked.back();
    }
    if (!m->failing.empty())
      return caf::make_error(errc::store_unavailable, m->failing);
    return make();
  };
  return {
    [=](acquire_atom, const acquire_request& req) {
      return respond([&] {
        log("acquire", req.name);
        auto& r = m->locks[req.name];
        auto now = self->clock().now();
        if (live(r)) {
          if (r.owner != req.owner)
            return answer("held", r);
          r.ttl_ms = req.ttl_ms;
          r.deadline = now + std::chrono::milliseconds{req.ttl_ms};
          ++r.revision;
          return answer("refreshed", r);
        }
        settle(req.name);
        r = {req.owner, ++m->counter, req.ttl_ms, now + std::chrono::milliseconds{req.ttl_ms}, 0,
             true};
        return answer("granted", r);
      });
    },
    [=](renew_atom, const renew_request& req) {
      return respond([&] {
        log("renew", req.name);
        auto& r = m->locks[req.name];
        if (!live(r) || r.owner != req.owner || r.token != req.token) {
          settle(req.name);
          return script_lease{"lost", "", "", 0, 0, 0, 0, 0};
        }
        r.ttl_ms = req.ttl_ms > 0 ? req.ttl_ms : r.ttl_ms;
        r.deadline = self->clock().now() + std::chrono::milliseconds{r.ttl_ms};
        ++r.revision;
        return answer("ok", r);
      });
    },
    [=](release_atom, const release_request& req, const std::string& cause) {
      return respond([&] {
        log("release", req.name);
        auto& r = m->locks[req.name];
        if (!live(r) || r.owner != req.owner || r.token != req.token) {
          settle(req.name);
          return script_lease{"lost", "", "", 0, 0, 0, 0, 0};
        }
        finish(req.name, r, cause);
        return answer("ok", r);
      });
    },
    [=](expire_atom, const std::string& name, uint64_t token) {
      return respond([&] {
        log("expire", name);
        auto& r = m->locks[name];
        if (!r.held || r.token != token)
          return script_lease{"gone", "", "", 0, 0, 0, 0, 0};
        if (live(r))
          return answer("alive", r);
        finish(name, r, "expired");
        return script_lease{"ended", "", "", 0, 0, 0, 0, 0};
      });
    },
    [=](status_atom, const std::string& name) {
      return respond([&] {
        log("peek", name);
        auto& r = m->locks[name];
        if (live(r))
          return answer("held", r);
        return script_lease{"free", "", "", r.token, 0, 0, 0, 0};
      });
    },
    [=](list_atom, const list_request&) -> caf::result<std::vector<script_lease>> {
      return std::vector<script_lease>{};
    },
    [=](redis_reply_atom, uint64_t, redis_reply&) {},
  };
}

/// Two instances on one Redis model.
struct two_instances {
  caf::actor_system_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
  model_ptr model = std::make_shared<redis_model>();
  redis_store_actor redis;
  std::vector<watchdog_actor> watchdogs;
  std::shared_ptr<std::atomic<bool>> draining = std::make_shared<std::atomic<bool>>(false);

  two_instances()
    : sys(testing_config(cfg)),
      sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {
    redis = sys.spawn(fake_redis, model, sched.clock().now());
    for (int i = 0; i < 2; ++i) {
      watchdogs.push_back(sys.spawn(watchdog_impl, std::shared_ptr<stall_window>{},
                                    stall_settings{}, std::shared_ptr<metrics>{}));
      lock_context ctx;
      ctx.redis = redis;
      ctx.watchdog = watchdogs.back();
      ctx.clock = clock_mapping{1'000'000, 0};
      ctx.max_waiters = 10;
      ctx.store_timeout = std::chrono::seconds{4};
      ctx.draining = i == 0 ? draining : nullptr;
      model->instances.push_back(sys.spawn(registry_impl, ctx, std::vector<std::string>{}));
    }
    run();
  }

  ~two_instances() {
    // A lock actor awaiting a frozen store's answer handles nothing else until its request times
    // out: let that happen before asking everyone to quit.
    advance(10'000);
    for (auto& reg : model->instances)
      caf::anon_send_exit(reg, caf::exit_reason::user_shutdown);
    for (auto& w : watchdogs)
      caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(redis, caf::exit_reason::user_shutdown);
    run();
  }

  void run() {
    run_until_idle(sched);
  }

  void advance(int64_t ms) {
    advance_clock(sched, ms);
  }

  /// Asks instance `instance` and runs until nothing is left to do.
  template <class T, class... Ts>
  reply<T> ask(int instance, Ts... xs) {
    auto out = ask_from<T>(sys, model->instances[static_cast<size_t>(instance)], xs...);
    run();
    return out;
  }

  reply<lease> acquire(int instance, const std::string& name, const std::string& owner,
                       int64_t ttl_ms, int64_t wait_ms = 0, uint64_t request_id = 0) {
    static uint64_t next_id = 5000;
    return ask<lease>(instance, acquire_atom_v,
                      acquire_request{name, owner, ttl_ms, wait_ms,
                                      request_id != 0 ? request_id : next_id++});
  }

  std::vector<std::string> calls_of(const std::string& script) const {
    std::vector<std::string> out;
    for (auto& c : model->calls)
      if (c.rfind(script + " ", 0) == 0)
        out.push_back(c);
    return out;
  }
};

uint64_t token_of(const reply<lease>& r) {
  REQUIRE(r->has_value());
  REQUIRE(r->value());
  return r->value()->token;
}

} // namespace

TEST_CASE("a waiter is handed a lock freed on another instance as the channel says so",
          "[unit][redis]") {
  two_instances t;
  auto a = token_of(t.acquire(0, "L", "alice", 30'000));
  auto waiting = t.acquire(1, "L", "bob", 10'000, 10'000);
  REQUIRE_FALSE(waiting->has_value());
  auto released = t.ask<bool>(0, release_atom_v, release_request{"L", "alice", a, false});
  REQUIRE(released->has_value());
  // No time passed: the end on instance 0 woke the waiter on instance 1.
  auto b = token_of(waiting);
  CHECK(b > a);
  CHECK(t.model->locks["L"].owner == "bob");
}

TEST_CASE("without the channel a waiter still gets the lock at the holder's deadline, not before",
          "[unit][redis]") {
  two_instances t;
  t.model->channel = false;
  auto a = token_of(t.acquire(0, "L", "alice", 1'000));
  auto waiting = t.acquire(1, "L", "bob", 10'000, 5'000);
  t.advance(999);
  CHECK_FALSE(waiting->has_value());
  // The retry timer fires just past the deadline Redis reported: no polling before it.
  CHECK(t.calls_of("acquire").size() == 2u);
  t.advance(2);
  CHECK(token_of(waiting) > a);
  CHECK(t.calls_of("acquire").size() == 3u);
}

TEST_CASE("a watched lease renewed through another instance is not reported expired early",
          "[unit][redis]") {
  two_instances t;
  t.model->channel = false;
  auto a = token_of(t.acquire(0, "L", "alice", 1'000));
  t.advance(500);
  auto renewed = t.ask<lease>(1, renew_atom_v, renew_request{"L", "alice", a, 1'000});
  REQUIRE(renewed->has_value());
  REQUIRE(renewed->value());
  // Instance 0 looks at its own deadline (1001 ms), finds the lease alive until 1500, looks
  // again then; instance 1 watches from its renewal. Exactly one of them ends it.
  t.advance(501);
  CHECK(t.model->ends.empty());
  auto expires = t.calls_of("expire");
  REQUIRE_FALSE(expires.empty());
  CHECK(expires.front() == "expire L @1001");
  t.advance(500);
  CHECK(t.model->ends == std::vector<std::string>{"L:" + std::to_string(a) + ":expired"});
}

TEST_CASE("a store that fails or stops answering fails closed", "[unit][redis]") {
  two_instances t;
  t.model->failing = "redis store: redis is not connected";
  auto refused = t.acquire(0, "L", "alice", 1'000);
  CHECK(code_of(refused) == errc::store_unavailable);
  CHECK(t.model->locks.empty());

  // A waiter queued while the store worked is answered once a retry fails.
  t.model->failing.clear();
  t.model->channel = false;
  auto a = token_of(t.acquire(0, "L", "alice", 1'000));
  auto waiting = t.acquire(1, "L", "bob", 1'000, 5'000);
  t.model->failing = "redis store: no reply within 2000 ms";
  t.advance(1'001);
  CHECK(code_of(waiting) == errc::store_unavailable);

  // Frozen: the request times out (store_timeout) instead of hanging, and nothing is granted.
  t.model->failing.clear();
  t.model->frozen = true;
  auto renew = t.ask<lease>(0, renew_atom_v, renew_request{"L", "alice", a, 1'000});
  CHECK_FALSE(renew->has_value());
  t.advance(4'001);
  REQUIRE(renew->has_value());
  CHECK_FALSE(renew->value());
}

TEST_CASE("draining answers waiters shutting_down and queues no new ones", "[unit][redis]") {
  two_instances t;
  auto a = token_of(t.acquire(0, "L", "alice", 30'000));
  auto waiting = t.acquire(0, "L", "bob", 30'000, 20'000);
  REQUIRE_FALSE(waiting->has_value());
  t.draining->store(true);
  caf::anon_send(t.model->instances[0], drain_atom_v);
  t.run();
  CHECK(code_of(waiting) == errc::shutting_down);
  CHECK(code_of(t.acquire(0, "L", "carol", 30'000, 20'000)) == errc::shutting_down);
  // Everything else is still served while draining.
  auto renewed = t.ask<lease>(0, renew_atom_v, renew_request{"L", "alice", a, 30'000});
  REQUIRE(renewed->has_value());
  CHECK(renewed->value());
}

TEST_CASE("a grant whose answer never reached its client is undone with cause undelivered",
          "[unit][redis]") {
  two_instances t;
  auto a = token_of(t.acquire(0, "L", "alice", 30'000, 0, 77));
  caf::anon_send(t.model->instances[0], cancel_atom_v, std::string{"L"}, uint64_t{77});
  t.run();
  CHECK(t.model->ends == std::vector<std::string>{"L:" + std::to_string(a) + ":undelivered"});
  CHECK_FALSE(t.model->locks["L"].held);
}
