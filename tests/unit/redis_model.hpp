#pragma once

// A model of the Redis store's scripts (actors/store/redis/scripts.cpp) as an actor that speaks
// the Redis store actor's protocol, on CAF's test coordinator: deterministic, and on the
// coordinator's clock. Like the event channel, it wakes every instance's waiters when a lease
// ends. model_lab runs two instances of the service over one model.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/store/redis/redis_runtime.hpp"
#include "actors/store/redis/redis_store.hpp"
#include "support/lab.hpp"

namespace fencelock::test {

using redis::script_lease;
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

inline int64_t ms_since(time_point start, time_point now) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
}

// The fake store actor: the scripts' decisions in C++.
inline redis_store_actor::behavior_type fake_redis(redis_store_actor::pointer self, model_ptr m,
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
        caf::anon_send(reg, heard_atom_v, name, r.token, true);
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
        auto replaced = r.token; // 0 when the store has no record (never, or lost)
        r = {req.owner, ++m->counter, req.ttl_ms, now + std::chrono::milliseconds{req.ttl_ms},
             0,         true};
        if (m->channel)
          for (auto& reg : m->instances)
            caf::anon_send(reg, heard_atom_v, req.name, r.token, false);
        auto out = answer("granted", r);
        out.replaced = replaced;
        return out;
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
    [=](list_atom, const list_request&) -> caf::result<lock_list> { return lock_list{}; },
    [=](redis_reply_atom, uint64_t, redis_reply&) {},
  };
}

/// Two instances of the service over one Redis model; instance 0 has the lab's draining flag.
struct model_lab : lab {
  model_ptr model = std::make_shared<redis_model>();
  redis_store_actor redis;

  model_lab() : lab(lab_options{.max_waiters = 10}) {
    redis = sys.spawn(fake_redis, model, sched.clock().now());
    for (int i = 0; i < 2; ++i) {
      auto store = redis_runtime::assemble(nullptr, std::make_shared<redis_fanout>(events, nullptr),
                                           redis, std::chrono::seconds{4}, clock);
      model->instances.push_back(
        start(std::move(store), i == 0 ? draining : std::make_shared<std::atomic<bool>>(false)));
    }
  }

  ~model_lab() override {
    stop(10'000);
  }

  /// Asks instance `instance` and runs until nothing is left to do.
  template <class T, class... Ts>
  reply<T> ask_instance(int instance, Ts... xs) {
    auto out = ask_from<T>(sys, model->instances[static_cast<size_t>(instance)], xs...);
    run();
    return out;
  }

  reply<lease> acquire_at(int instance, const std::string& name, const std::string& owner,
                          int64_t ttl_ms, int64_t wait_ms = 0, uint64_t request_id = 0) {
    static uint64_t next_id = 5000;
    return ask_instance<lease>(
      instance, acquire_atom_v,
      acquire_request{name, owner, ttl_ms, wait_ms, request_id != 0 ? request_id : next_id++});
  }

  std::vector<std::string> calls_of(const std::string& script) const {
    std::vector<std::string> out;
    for (auto& c : model->calls)
      if (c.rfind(script + " ", 0) == 0)
        out.push_back(c);
    return out;
  }
};

} // namespace fencelock::test
