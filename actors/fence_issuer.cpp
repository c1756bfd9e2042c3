#include "actors/fence_issuer.hpp"

#include <algorithm>
#include <chrono>

#include "actors/caf_workarounds.hpp"
#include "fencelock/errc.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

namespace {

using self_ptr = fence_issuer_actor::stateful_pointer<fence_issuer_state>;

constexpr auto store_timeout = std::chrono::seconds{10};

void reserve(self_ptr self);
void settle(self_ptr self);

// Answers queued requests from the reserved range, oldest first.
void drain(self_ptr self) {
  auto& st = self->state;
  while (!st.queued.empty() && st.next < st.ceiling) {
    st.queued.front().deliver(st.next++);
    st.queued.pop_front();
  }
  if (!st.queued.empty() || st.ceiling - st.next < st.block / 2)
    reserve(self);
}

void reserve(self_ptr self) {
  auto& st = self->state;
  if (st.reserving)
    return;
  auto target = std::min(std::max(st.next, st.ceiling) + st.block, max_token + 1);
  if (target <= st.next) {
    // 2^53 tokens are spent; a JSON client could not hold a larger one exactly.
    for (auto& rp : st.queued)
      rp.deliver(caf::make_error(errc::unavailable, std::string{"fencing tokens exhausted"}));
    st.queued.clear();
    return;
  }
  st.reserving = true;
  self->request(st.store, store_timeout, reserve_atom_v, target)
    .then(
      [=](bool) {
        auto& s = self->state;
        s.reserving = false;
        s.ceiling = std::max(s.ceiling, target);
        if (s.settling)
          return settle(self);
        drain(self);
      },
      [=](caf::error& err) {
        // Fail closed: no token without a durable ceiling above it. The next request retries.
        auto& s = self->state;
        s.reserving = false;
        if (s.settling)
          return settle(self);
        for (auto& rp : s.queued)
          rp.deliver(caf::make_error(errc::store_unavailable,
                                     "cannot reserve fencing tokens: " + to_string(err)));
        s.queued.clear();
      });
}

/*
 * The clean stop: answers the queued requests shutting_down, waits for a reservation in flight,
 * then writes the ceiling back down to `next` and quits. Every token handed out lies below
 * `next`, and none goes out after this, so the lowered ceiling still covers them all. Should the
 * write fail, the higher ceiling stays on record: a restart then skips the rest of the block,
 * which is safe.
 */
void settle(self_ptr self) {
  auto& st = self->state;
  st.settling = true;
  for (auto& rp : st.queued)
    rp.deliver(caf::make_error(errc::shutting_down, std::string{"the service is stopping"}));
  st.queued.clear();
  if (st.reserving)
    return; // the reservation's answer calls settle() again
  if (st.ceiling <= st.next)
    return self->quit(st.stop_reason); // nothing reserved beyond the next token
  auto done = [=] { self->quit(self->state.stop_reason); };
  self->request(st.store, store_timeout, settle_atom_v, st.next)
    .then([=](bool) { done(); }, [=](caf::error&) { done(); });
}

} // namespace

fence_issuer_state::~fence_issuer_state() {
  // A crash (not a clean stop, which answers them) leaves requests queued for a reservation.
  break_promises(queued,
                 caf::make_error(errc::unavailable, std::string{"the fence issuer stopped"}));
}

fence_issuer_actor::behavior_type fence_issuer_impl(self_ptr self, store_actor store,
                                                    uint64_t floor, uint64_t block) {
  auto& st = self->state;
  st.store = std::move(store);
  st.next = std::max<uint64_t>(floor, 1);
  st.ceiling = st.next; // nothing reserved by this process yet
  st.block = std::max<uint64_t>(block, 1);
  reserve(self);
  self->set_exit_handler([=](caf::exit_msg& msg) {
    auto& s = self->state;
    s.stop_reason = std::move(msg.reason);
    if (s.stop_reason != caf::exit_reason::user_shutdown)
      return self->quit(s.stop_reason); // not a clean stop: leave the ceiling as it is
    if (!s.settling)
      settle(self);
  });
  return {
    [=](next_token_atom) -> caf::result<uint64_t> {
      auto& s = self->state;
      if (s.settling)
        return caf::make_error(errc::shutting_down, std::string{"the service is stopping"});
      if (s.next < s.ceiling && s.queued.empty()) {
        auto token = s.next++;
        if (s.ceiling - s.next < s.block / 2)
          reserve(self);
        return token;
      }
      s.queued.push_back(self->make_response_promise<uint64_t>());
      reserve(self);
      return s.queued.back();
    },
  };
}

} // namespace fencelock
