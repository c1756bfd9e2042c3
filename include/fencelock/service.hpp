#pragma once

// The embedding API: a host program starts the lock service inside its own caf::actor_system and
// calls it asynchronously. The HTTP front end is a client of exactly this API, so there is one
// implementation of the semantics.
//
//   caf::actor_system_config cfg;
//   fencelock::add_message_types(cfg);
//   caf::actor_system sys{cfg};
//   fencelock::service svc{sys, fencelock::config{}};
//   if (auto err = svc.start()) { ... }
//   svc.acquire({"jobs:report", "worker-1", 30'000, 0}, [](caf::expected<fencelock::lease> l)
//   {...});

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "fencelock/config.hpp"
#include "fencelock/errc.hpp"
#include "fencelock/events.hpp"
#include "fencelock/interfaces.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

/// Identifies one client operation in the operation log (an HTTP x-request-id, say).
struct call_context {
  std::string request_id;
  /// The authenticated principal that made the call ("" without authentication); logged.
  std::string principal;
};

/// Receives the outcome of an asynchronous call.
template <class T>
using callback = std::function<void(caf::expected<T>)>;

/// Receives lock events. Runs on the publishing lock actor's thread while the event hub holds
/// its lock: hand the event on (post it to your own thread or strand) and return; never block
/// and never call the service from it.
using event_handler = std::function<void(const lock_event&)>;

class service {
public:
  /// Prepares a service on `sys` with `cfg`; nothing runs until start().
  service(caf::actor_system& sys, config cfg);

  /// Stops the service if it still runs. Once it returns no callback, event handler or lease
  /// watch of this service runs any more, even after a stop() that gave up after its grace (a
  /// call whose answer came too late is then never answered). Never call it from one of them.
  ~service();

  service(const service&) = delete;
  service& operator=(const service&) = delete;

  /// Opens the store, recovers leases and the token ceiling, and spawns the actors. Blocks the
  /// calling thread (never call it from an actor) until the service is ready or failed.
  caf::error start();

  /// Stops the actors; pending waiters are answered shutting_down. Returns whether everything
  /// stopped within `grace`.
  bool stop(std::chrono::milliseconds grace = std::chrono::seconds{5});

  /// Begins a graceful shutdown (SIGTERM): every waiting acquire is answered shutting_down and
  /// no new one queues, while everything else (acquires that need no wait, renewals, releases,
  /// reads) is still served, so that requests in flight finish. /readyz answers 503 from here.
  /// Call stop() once the front ends finished their requests. Thread-safe.
  void drain();

  /// Returns whether start() succeeded and stop() was not called.
  bool running() const noexcept;

  /// Returns whether the service runs and takes new acquires: it is not draining or shedding
  /// them under load, and its store is reachable. The answer of /readyz. Thread-safe.
  bool ready() const noexcept;

  /// Returns the registry, for hosts that prefer typed messages to callbacks. Requests sent there
  /// directly skip validation: validate them first (fencelock/validate.hpp).
  registry_actor registry() const;

  /// Returns the configuration the service runs with.
  const fencelock::config& cfg() const noexcept;

  /// Returns the service's metrics in the Prometheus text format 0.0.4 (docs/metrics.md).
  /// Thread-safe.
  std::string metrics_text() const;

  /// Reports how late the front end's I/O loop ran a timer just now: a load signal that sheds
  /// new acquires past shed-io-lag-ms, and a metric. Thread-safe.
  void report_io_lag(std::chrono::microseconds lag);

  /// Reports the number of open WebSocket sessions, for the metrics. Thread-safe.
  void set_websocket_sessions(std::size_t n);

  /// Returns a process-unique id for acquire_request::request_id.
  uint64_t next_request_id() noexcept;

  // Each call validates its request and then calls `done` exactly once: on a CAF worker thread,
  // or on the calling thread when the request is invalid. Each also writes one operation event to
  // the log, tagged with `ctx.request_id`.

  /// Acquires a lock; `done` gets the lease, or lock_held / too_many_waiters / ... .
  void acquire(acquire_request req, callback<lease> done, call_context ctx = {});

  /// Extends a lease; `done` gets the renewed lease or lease_lost.
  void renew(renew_request req, callback<lease> done, call_context ctx = {});

  /// Ends a lease; `done` gets true or lease_lost.
  void release(release_request req, callback<bool> done, call_context ctx = {});

  /// Reads one lock's state.
  void status(std::string name, callback<lock_status> done, call_context ctx = {});

  /// Tells whether a token is the current, unexpired lease of its lock (for resources that keep
  /// no high-water mark of their own; see docs/fencing.md for when that is enough).
  void check(check_request req, callback<check_result> done, call_context ctx = {});

  /// Lists held locks, one page at a time.
  void list(list_request req, callback<lock_list> done, call_context ctx = {});

  /// Subscribes to lock events. `snapshot` gets the current state of the matching locks (for one
  /// name its status, held or not; for a prefix every lock held now) and runs under the event
  /// hub's lock like `on_event` (see event_handler). Then `on_event` gets every change after that
  /// state, in order per lock, so none is missed; an event may repeat what the snapshot shows
  /// (compare token and revision). Returns the id for unsubscribe(); 0 when the request is
  /// invalid or the service is not running (`snapshot` then gets the error at once).
  uint64_t subscribe(subscribe_request req, callback<lock_list> snapshot, event_handler on_event,
                     call_context ctx = {});

  /// Ends a subscription; `on_event` is not called once this returns.
  void unsubscribe(uint64_t id);

  /// Starts watching for the end of a lease of lock `name`, before its token is known: call it
  /// before the acquire (or renew) and bind_lease_watch() the token from the answer, so that a
  /// lease that ends in between is not missed. Returns the id (0 when the service is not
  /// running). `on_end` runs like an event_handler.
  uint64_t watch_lease(const std::string& name, event_handler on_end);

  /// Binds watch `id` to lease `token`: `on_end` is called once if that lease ends other than by
  /// its holder's release (expiry, an undelivered grant, a closed session): the trigger of
  /// lease_lost pushes. Called at once if it ended already.
  void bind_lease_watch(uint64_t id, uint64_t token);

  /// Removes a lease watch; a no-op if it fired already.
  void unwatch_lease(uint64_t id);

  /// Returns the number of event subscriptions. Thread-safe.
  std::size_t subscriptions() const;

  /// Withdraws the waiting acquire `request_id` (the client went away). If that acquire was
  /// granted but its answer could not be delivered, the grant is undone. Fire and forget.
  void cancel(const std::string& name, uint64_t request_id);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace fencelock
