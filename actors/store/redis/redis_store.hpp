#pragma once

// The Redis lease store: where the truth of every lease lives when several fencelock instances
// share one Redis (docs/redis.md). Two connections on one I/O thread of its own: one runs the
// lease scripts (EVALSHA, falling back to EVAL when Redis answers NOSCRIPT), one is subscribed
// to the store's event channel, on which every script publishes its change.
//
// redis_store_actor serves it to the lock actors: each request becomes one script call, and its
// answer comes back as a response, so lock actors use it with request(...).await like the
// embedded store, and a Redis that does not answer in time is a request timeout: fail closed.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/replies_to.hpp>

#include "actors/store/redis/connection.hpp"
#include "actors/store/redis/scripts.hpp"
#include "actors/store/reporter.hpp"
#include "fencelock/events.hpp"
#include "fencelock/messages.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

/// A Redis script's answer on its way from the store's I/O thread back into its actor.
struct redis_reply {
  redis::outcome result;
};

} // namespace fencelock

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fencelock::redis_reply)

namespace fencelock {

/// Serves the Redis store to lock backends: each request is one Lua script, atomic across every
/// instance that shares the Redis.
using redis_store_actor = caf::typed_actor<
  caf::replies_to<acquire_atom, acquire_request>::with<redis::script_lease>,
  caf::replies_to<renew_atom, renew_request>::with<redis::script_lease>,
  /// Ends lease `token` of `owner` with the given cause (released, session_closed,
  /// undelivered).
  caf::replies_to<release_atom, release_request, std::string>::with<redis::script_lease>,
  /// Ends lease `token` of lock `name` if its deadline passed.
  caf::replies_to<expire_atom, std::string, uint64_t>::with<redis::script_lease>,
  caf::replies_to<status_atom, std::string>::with<redis::script_lease>,
  caf::replies_to<list_atom, list_request>::with<lock_list>,
  caf::reacts_to<redis_reply_atom, uint64_t, redis_reply>>;

/// How to reach the Redis store and name its keys.
struct redis_settings {
  redis::endpoint where;
  /// Prefix of every key and of the event channel, so that several deployments (or tests) can
  /// share one Redis.
  std::string key_prefix = "fencelock:";
  /// Longest wait for one reply; past it the connection counts as failed.
  std::chrono::milliseconds timeout{2000};
  /// How long an ended lease's record stays (its last token stays visible meanwhile).
  std::chrono::milliseconds keep_ended{60'000};
  /// The lowest token to hand out (0: none): it floors new tokens as the highest token seen
  /// does (docs/redis.md).
  uint64_t fence_floor = 0;
};

/// Parses one message of the event channel; nothing when it is not a lock event.
std::optional<lock_event> parse_store_event(std::string_view json);

/// Runs the store's scripts. Replies, and the store's channel events, arrive on one thread of
/// the store's (its "event thread"); post() gets there too.
class script_runner {
public:
  virtual ~script_runner() = default;

  /// Runs `id` with `keys` and `args`; `done` runs on the event thread. Thread-safe.
  virtual void run(redis::script_id id, std::vector<std::string> keys,
                   std::vector<std::string> args, redis::reply_handler done) = 0;

  /// Runs `f` on the event thread. Thread-safe.
  virtual void post(std::function<void()> f) = 0;

  /// Returns how the store is reached and its keys named.
  virtual const redis_settings& settings() const noexcept = 0;

  std::string lock_key(std::string_view name) const;
  std::string token_key() const;
  std::string held_key() const;
  std::string channel() const;
};

/// Owns the I/O thread (the event thread) and both connections.
class redis_store : public script_runner {
public:
  /// Receives every lock event published on the channel, on the store's I/O thread.
  using event_sink = std::function<void(const lock_event&)>;
  /// Learns that the subscription (re)started: events may have been missed before it.
  using resync_sink = std::function<void()>;

  /// Prepares the store; `on_event` and `on_resync` run on its I/O thread, and what an operator
  /// should know goes to `reporter` (may be null).
  redis_store(redis_settings s, event_sink on_event, resync_sink on_resync,
              std::shared_ptr<store_reporter> reporter = nullptr);
  ~redis_store();

  redis_store(const redis_store&) = delete;
  redis_store& operator=(const redis_store&) = delete;

  /// Starts the I/O thread and connecting; returns at once (Redis may still be unreachable).
  void start();

  /// Closes both connections and joins the I/O thread.
  void stop();

  /// Returns whether both connections are up: the store can grant and report changes.
  bool ready() const noexcept;

  void run(redis::script_id id, std::vector<std::string> keys, std::vector<std::string> args,
           redis::reply_handler done) override;
  void post(std::function<void()> f) override;
  const redis_settings& settings() const noexcept override;


private:
  redis_settings settings_;
  event_sink on_event_;
  resync_sink on_resync_;
  std::shared_ptr<store_reporter> reporter_;
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::shared_ptr<redis::connection> commands_;
  std::shared_ptr<redis::connection> events_;
  std::vector<std::string> shas_; // SHA-1 of each script, by script_id
};

struct redis_store_actor_state {
  // Not an aggregate: CAF would otherwise try to build the state from the actor pointer.
  redis_store_actor_state() = default;

  std::shared_ptr<script_runner> store;
  /// Records the round trip of each lease write (null = not recorded).
  std::shared_ptr<store_reporter> reporter;
  uint64_t next_call = 1;
  /// The highest token this instance has seen: new tokens start above it even if Redis lost
  /// its counter while this process ran.
  uint64_t seen_token = 0;
  struct call {
    redis::script_id script;
    std::chrono::steady_clock::time_point sent;
    caf::typed_response_promise<redis::script_lease> one;
    caf::typed_response_promise<lock_list> many;
    uint32_t limit = 0; // list: the page size asked for
  };
  std::unordered_map<uint64_t, call> calls;
  static inline const char* name = "fencelock.redis_store";
};

/// Turns each request into a script call on `store` and its reply into the response; a Redis
/// that does not answer in time fails the call (fail closed). Write round trips go to
/// `reporter` (may be null).
redis_store_actor::behavior_type
redis_store_actor_impl(redis_store_actor::stateful_pointer<redis_store_actor_state> self,
                       std::shared_ptr<script_runner> store,
                       std::shared_ptr<store_reporter> reporter);

} // namespace fencelock
