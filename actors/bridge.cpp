#include "actors/bridge.hpp"

#include <chrono>
#include <string>

#include "fencelock/errc.hpp"

namespace fencelock {

namespace {

using running_flag = std::shared_ptr<std::atomic<bool>>;

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

/// Looks for overdue calls in a second.
void arm_sweep(bridge_actor_ptr self) {
  auto& st = self->state;
  if (st.sweep_armed)
    return;
  st.sweep_armed = true;
  self->delayed_send(self, std::chrono::seconds{1}, sweep_atom_v);
}

/// Answers every call past its deadline, and looks again in a second while any is open.
void sweep(bridge_actor_ptr self) {
  auto& st = self->state;
  st.sweep_armed = false;
  auto now = self->clock().now();
  bool direct_open = st.direct && st.direct->expire(now) > 0;
  auto& open = st.deadlines;
  for (auto i = open.begin(); i != open.end() && i->first <= now; i = open.erase(i)) {
    auto& call = *i->second;
    if (!std::exchange(call.answered, true))
      call.fail(caf::make_error(caf::sec::request_timeout));
  }
  // Answered calls leave their entries until their deadline; drop them from the front.
  while (!open.empty() && open.begin()->second->answered)
    open.erase(open.begin());
  if (!open.empty() || direct_open)
    arm_sweep(self);
}

/// Sends `xs` to the registry and runs `cb` with the answer, or with an error once `timeout`
/// passed without one (the sweep). The request itself has no CAF timeout (see bridge_state).
template <class T, caf::message_priority Priority = caf::message_priority::normal, class... Ts>
void forward(bridge_actor_ptr self, const registry_actor& registry, caf::timespan timeout,
             const running_flag& running, reply_to<T> cb, Ts&&... xs) {
  auto call = std::make_shared<open_call>();
  call->fail = [cb, running](caf::error err) { cb.fn(normalize(std::move(err), running)); };
  self->request<Priority>(registry, caf::infinite, std::forward<Ts>(xs)...)
    .then(
      [cb, call](T& x) {
        if (!std::exchange(call->answered, true))
          cb.fn(std::move(x));
      },
      [call](caf::error& err) {
        if (!std::exchange(call->answered, true))
          call->fail(std::move(err));
      });
  self->state.deadlines.emplace(self->clock().now() + timeout, std::move(call));
  arm_sweep(self);
}

} // namespace

caf::behavior bridge_impl(bridge_actor_ptr self, registry_actor registry, running_flag running,
                          std::shared_ptr<direct_deadlines> direct) {
  self->state.direct = std::move(direct);
  return {
    [=](sweep_atom) { sweep(self); },
    [=](arm_atom) { arm_sweep(self); }, // direct calls are watched
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
    // A cancel always takes this path, so that it can never overtake the acquire it withdraws:
    // that acquire is in the lock actor's mailbox already (sent directly), or ahead of it in the
    // bridge's and the registry's (one sender to one receiver keeps its order). A client that
    // closes right after asking would otherwise be granted after its cancel was dropped.
    [=](cancel_atom, std::string& name, uint64_t request_id) {
      self->send(registry, cancel_atom_v, std::move(name), request_id);
    },
  };
}

} // namespace fencelock
