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
//   svc.acquire({"jobs:report", "worker-1", 30'000, 0}, [](caf::expected<fencelock::lease> l) {...});

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "fencelock/config.hpp"
#include "fencelock/errc.hpp"
#include "fencelock/interfaces.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

/// Identifies one client operation in the operation log (an HTTP x-request-id, say).
struct call_context {
  std::string request_id;
};

/// Receives the outcome of an asynchronous call.
template <class T>
using callback = std::function<void(caf::expected<T>)>;

class service {
public:
  /// Prepares a service on `sys` with `cfg`; nothing runs until start().
  service(caf::actor_system& sys, config cfg);

  /// Stops the service if it still runs.
  ~service();

  service(const service&) = delete;
  service& operator=(const service&) = delete;

  /// Opens the store, recovers leases and the token ceiling, and spawns the actors. Blocks the
  /// calling thread (never call it from an actor) until the service is ready or failed.
  caf::error start();

  /// Stops the actors; pending waiters are answered shutting_down. Returns whether everything
  /// stopped within `grace`.
  bool stop(std::chrono::milliseconds grace = std::chrono::seconds{5});

  /// Returns whether start() succeeded and stop() was not called.
  bool running() const noexcept;

  /// Returns the registry, for hosts that prefer typed messages to callbacks. Requests sent there
  /// directly skip validation: validate them first (fencelock/validate.hpp).
  registry_actor registry() const;

  /// Returns the configuration the service runs with.
  const fencelock::config& cfg() const noexcept;

  /// Returns the service's metrics in the Prometheus text format 0.0.4 (docs/metrics.md).
  /// Thread-safe.
  std::string metrics_text() const;

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

  /// Withdraws the waiting acquire `request_id` (the client went away). If that acquire was
  /// granted but its answer could not be delivered, the grant is undone. Fire and forget.
  void cancel(const std::string& name, uint64_t request_id);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace fencelock
