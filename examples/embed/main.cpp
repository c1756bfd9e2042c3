// Embedding fencelock in a host program: the lock service runs inside the host's own
// caf::actor_system, without HTTP.
//
//   fencelock_embed_example <data_dir>
//
// The host acquires a lock, renews it, reads its status, watches a second owner bounce off it,
// releases it, and finally talks to the service's registry actor with a typed request. Each step
// prints what happened; the exit code is 0 only if every check held.
//
// Logging: the service writes one JSON line per operation through spdlog's default logger (or
// a logger named "fencelock", if the host registers one), so those lines appear between ours.
//
// Threads: service callbacks run on CAF worker threads. Here the host's main thread waits for
// them through a std::promise, which is fine for a host's own thread. Never block an actor or an
// I/O thread that way.

#include <chrono>
#include <future>
#include <iostream>
#include <memory>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include "fencelock/config.hpp"
#include "fencelock/errc.hpp"
#include "fencelock/interfaces.hpp"
#include "fencelock/messages.hpp"
#include "fencelock/service.hpp"

namespace {

const std::string lock_name = "example:report";

int failures = 0;

/// Prints one check and counts it if it failed.
void check(bool ok, const std::string& what) {
  std::cout << (ok ? "  ok:     " : "  FAILED: ") << what << '\n';
  if (!ok)
    ++failures;
}

/// Returns "lock_held: <message>" for a fencelock error, CAF's rendering otherwise.
std::string describe(caf::actor_system& sys, const caf::error& err) {
  fencelock::errc code{};
  if (fencelock::as_errc(err, code))
    return std::string{fencelock::to_string(code)} + ": " + fencelock::error_message(err);
  return sys.render(err);
}

/*
 * Calls one asynchronous service operation and waits for its result on this thread.
 * `start` receives the callback to pass to the service. The promise is shared with the
 * callback so that it outlives the worker thread's set_value() even after get() returned.
 */
template <class T, class Start>
caf::expected<T> await(Start start) {
  auto done = std::make_shared<std::promise<caf::expected<T>>>();
  auto result = done->get_future();
  start([done](caf::expected<T> x) { done->set_value(std::move(x)); });
  return result.get();
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fencelock_embed_example <data_dir>\n";
    return 2;
  }

  // 1. The host's actor system. Register fencelock's messages before it exists.
  caf::actor_system_config sys_cfg;
  fencelock::add_message_types(sys_cfg);
  caf::actor_system sys{sys_cfg};

  // 2. The service, with defaults except where to keep its files.
  fencelock::config cfg;
  cfg.data_dir = argv[1];
  fencelock::service svc{sys, cfg};
  if (auto err = svc.start()) {
    std::cout << "service failed to start: " << describe(sys, err) << '\n';
    return 1;
  }
  std::cout << "service started (data_dir " << cfg.data_dir << ")\n";

  // 3. Acquire as host-1, try once (wait_ms 0).
  auto acquired = await<fencelock::lease>([&](auto done) {
    svc.acquire({lock_name, "host-1", 30'000, 0, svc.next_request_id()}, done);
  });
  check(static_cast<bool>(acquired),
        "host-1 acquires " + lock_name
          + (acquired ? " with token " + std::to_string(acquired->token)
                      : " (" + describe(sys, acquired.error()) + ")"));
  if (!acquired) {
    svc.stop();
    return 1; // every later step needs the lease
  }
  const auto token = acquired->token;

  // 4. Renew: same token, new deadline (ttl_ms 0 = keep the lease's own TTL).
  auto renewed = await<fencelock::lease>(
    [&](auto done) { svc.renew({lock_name, "host-1", token, 0}, done); });
  check(renewed && renewed->token == token, "host-1 renews and keeps token "
                                              + std::to_string(token));

  // 5. Status shows host-1 holding the lock with that token.
  auto held = await<fencelock::lock_status>([&](auto done) { svc.status(lock_name, done); });
  check(held && held->held && held->owner == "host-1" && held->token == token,
        "status: held by host-1 with token " + std::to_string(token));

  // 6. A second owner trying once gets lock_held.
  auto second = await<fencelock::lease>([&](auto done) {
    svc.acquire({lock_name, "host-2", 30'000, 0, svc.next_request_id()}, done);
  });
  fencelock::errc code{};
  check(!second && fencelock::as_errc(second.error(), code) && code == fencelock::errc::lock_held,
        "host-2 is refused: "
          + (second ? "granted token " + std::to_string(second->token) + "?!"
                    : describe(sys, second.error())));

  // 7. Release, then the lock is free.
  auto released = await<bool>(
    [&](auto done) { svc.release({lock_name, "host-1", token}, done); });
  check(released && *released, "host-1 releases token " + std::to_string(token));
  auto freed = await<fencelock::lock_status>([&](auto done) { svc.status(lock_name, done); });
  check(freed && !freed->held, "status: free");

  // 8. The typed interface: a scoped_actor sends a request straight to the registry and blocks
  //    for the answer (fine on the host's main thread; an actor would use request().then()).
  //    Requests sent this way skip validation, so only send names you have validated.
  {
    caf::scoped_actor self{sys};
    self
      ->request(svc.registry(), std::chrono::seconds{5}, fencelock::status_atom_v, lock_name)
      .receive(
        [&](const fencelock::lock_status& st) {
          check(!st.held, "registry says free (last token granted: "
                            + std::to_string(st.last_token) + ")");
        },
        [&](const caf::error& err) {
          check(false, "registry status request: " + describe(sys, err));
        });
  }

  // 9. Stop before the actor system goes away (its destructor waits for every actor).
  check(svc.stop(), "service stops");
  if (failures > 0) {
    std::cout << failures << " check(s) failed\n";
    return 1;
  }
  std::cout << "all checks passed\n";
  return 0;
}
