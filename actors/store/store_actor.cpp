#include "actors/store/store_actor.hpp"

#include <algorithm>

#include "fencelock/errc.hpp"

namespace fencelock {

namespace {

using self_ptr = store_actor::stateful_pointer<store_actor_state>;

// Queues a write; the flush message goes behind every write already in the mailbox, so one
// commit covers all of them.
caf::typed_response_promise<bool> enqueue_write(self_ptr self) {
  auto& st = self->state;
  if (!st.flush_scheduled) {
    st.flush_scheduled = true;
    self->send(self, flush_atom_v);
  }
  st.waiting.push_back(self->make_response_promise<bool>());
  return st.waiting.back();
}

} // namespace

store_actor::behavior_type store_actor_impl(self_ptr self, std::shared_ptr<lease_store> store) {
  self->state.store = std::move(store);
  return {
    [=](load_atom, const std::string& name) -> caf::result<stored_lock> {
      auto x = self->state.store->load(name);
      if (!x)
        return std::move(x.error());
      return std::move(*x);
    },
    [=](put_atom, stored_lock& x) -> caf::result<bool> {
      self->state.batch.locks.push_back(std::move(x));
      return enqueue_write(self);
    },
    [=](reserve_atom, uint64_t ceiling) -> caf::result<bool> {
      auto& batch = self->state.batch;
      batch.fence_ceiling = std::max(batch.fence_ceiling, ceiling);
      return enqueue_write(self);
    },
    [=](list_atom, const list_request& req) -> caf::result<std::vector<stored_lock>> {
      auto x = self->state.store->list_held(req);
      if (!x)
        return std::move(x.error());
      return std::move(*x);
    },
    [=](flush_atom) {
      auto& st = self->state;
      st.flush_scheduled = false;
      auto batch = std::exchange(st.batch, store_batch{});
      auto waiting = std::exchange(st.waiting, {});
      auto err = st.store->commit(batch);
      for (auto& rp : waiting) {
        if (err)
          rp.deliver(err);
        else
          rp.deliver(true);
      }
    },
  };
}

} // namespace fencelock
