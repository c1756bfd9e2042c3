#include "actors/bridge.hpp"

#include <chrono>
#include <string>

#include "actors/caf_workarounds.hpp"
#include "fencelock/errc.hpp"

namespace fencelock {

namespace {

using running_flag = std::shared_ptr<std::atomic<bool>>;

// Requests that are not acquires finish within a few store round trips; an acquire may wait.
constexpr auto call_timeout = std::chrono::seconds{30};

// Callers see fencelock codes only: anything else (an actor gone, a timeout) is `unavailable`,
// or `shutting_down` once stop() began.
caf::error normalize(caf::error err, const running_flag& running) {
  errc code;
  if (as_errc(err, code))
    return err;
  if (!running->load())
    return caf::make_error(errc::shutting_down, std::string{"the service is stopping"});
  return caf::make_error(errc::unavailable, "internal: " + to_string(err));
}

template <class T, caf::message_priority Priority = caf::message_priority::normal, class... Ts>
void forward(caf::event_based_actor* self, const registry_actor& registry, caf::timespan timeout,
             const running_flag& running, reply_to<T> cb, Ts&&... xs) {
  self->request<Priority>(registry, priority_timeout(timeout), std::forward<Ts>(xs)...)
    .then([cb](T& x) { cb.fn(std::move(x)); },
          [cb, running](caf::error& err) { cb.fn(normalize(std::move(err), running)); });
}

} // namespace

caf::behavior bridge_impl(caf::event_based_actor* self, registry_actor registry,
                          running_flag running) {
  return {
    [=](acquire_atom, acquire_request& req, reply_to<lease>& cb) {
      auto timeout = std::chrono::milliseconds{req.wait_ms} + call_timeout;
      forward(self, registry, timeout, running, std::move(cb), acquire_atom_v, std::move(req));
    },
    // Renewals and releases overtake queued acquires and reads in every mailbox on their way
    // (the registry's delegate keeps the priority): under load a holder keeps its lease.
    [=](renew_atom, renew_request& req, reply_to<lease>& cb) {
      forward<lease, caf::message_priority::high>(self, registry, call_timeout, running,
                                                  std::move(cb), renew_atom_v, std::move(req));
    },
    [=](release_atom, release_request& req, reply_to<bool>& cb) {
      forward<bool, caf::message_priority::high>(self, registry, call_timeout, running,
                                                 std::move(cb), release_atom_v, std::move(req));
    },
    [=](status_atom, std::string& name, reply_to<lock_status>& cb) {
      forward(self, registry, call_timeout, running, std::move(cb), status_atom_v, std::move(name));
    },
    [=](check_atom, check_request& req, reply_to<check_result>& cb) {
      forward(self, registry, call_timeout, running, std::move(cb), check_atom_v, std::move(req));
    },
    [=](list_atom, list_request& req, reply_to<lock_list>& cb) {
      forward(self, registry, call_timeout, running, std::move(cb), list_atom_v, std::move(req));
    },
    // A cancel takes the acquire's path, so that it can never overtake the acquire it withdraws
    // (one sender to one receiver keeps its order): a client that closes right after asking
    // would otherwise be granted after its cancel was dropped.
    [=](cancel_atom, std::string& name, uint64_t request_id) {
      self->send(registry, cancel_atom_v, std::move(name), request_id);
    },
  };
}

} // namespace fencelock
