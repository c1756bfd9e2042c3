#include "actors/store/embedded/store_actor.hpp"

#include <algorithm>

#include "actors/caf_workarounds.hpp"
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

int64_t steady_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

/// Commits `batch`. A store that throws (out of memory, a bug) fails the commit like one that
/// reports an error: every write waiting on it is answered, and the actor lives on.
caf::error commit(lease_store& store, const store_batch& batch) {
  try {
    return store.commit(batch);
  } catch (const std::exception& e) {
    return caf::make_error(errc::store_unavailable, std::string{"the commit failed: "} + e.what());
  } catch (...) {
    return caf::make_error(errc::store_unavailable, std::string{"the commit failed"});
  }
}

// Tells the reporter and the readiness flag when commits start or stop failing.
void track_health(self_ptr self, const caf::error& err) {
  auto& st = self->state;
  bool ok = !err;
  bool was = st.health ? st.health->ok.exchange(ok) : ok;
  if (was == ok || !st.reporter)
    return;
  if (ok)
    st.reporter->note(log_level::info, "store_writes_recovered", {});
  else
    st.reporter->note(log_level::warn, "store_writes_failing", {{"reason", error_message(err)}});
}

/// Reports a commit that ran past the stall limit, once it returned.
void report_stall(self_ptr self, std::chrono::steady_clock::duration took) {
  auto& st = self->state;
  if (!st.health || !st.reporter || took <= st.health->stall_limit)
    return;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
  st.reporter->note(log_level::warn, "store_commit_stalled", {{"took_ms", ms}});
}

} // namespace

bool commit_health::ready(std::chrono::steady_clock::time_point now) const noexcept {
  auto since = running_since_ns.load();
  return ok.load()
         && (since == 0 || now.time_since_epoch() - std::chrono::nanoseconds{since} <= stall_limit);
}

store_actor_state::~store_actor_state() {
  break_promises(waiting,
                 caf::make_error(errc::store_unavailable, std::string{"the store stopped"}));
}

store_actor::behavior_type store_actor_impl(self_ptr self, std::shared_ptr<lease_store> store,
                                            std::shared_ptr<lease_table> table,
                                            std::shared_ptr<commit_health> health,
                                            std::shared_ptr<store_reporter> reporter) {
  auto& st = self->state;
  st.store = std::move(store);
  st.table = std::move(table);
  st.health = std::move(health);
  st.reporter = std::move(reporter);
  return {
    [=](put_atom, stored_lock& x) -> caf::result<bool> {
      self->state.batch.locks.push_back(std::move(x));
      return enqueue_write(self);
    },
    [=](reserve_atom, uint64_t ceiling) -> caf::result<bool> {
      auto& batch = self->state.batch;
      batch.fence_ceiling = std::max(batch.fence_ceiling, ceiling);
      return enqueue_write(self);
    },
    [=](settle_atom, uint64_t ceiling) -> caf::result<bool> {
      // The issuer sends it last and hands out no token after it, so no reserve can follow.
      self->state.batch.fence_ceiling = ceiling;
      return enqueue_write(self);
    },
    [=](flush_atom) {
      auto& s = self->state;
      s.flush_scheduled = false;
      auto batch = std::exchange(s.batch, store_batch{});
      auto waiting = std::exchange(s.waiting, {});
      s.table->prepare(batch);
      auto began = std::chrono::steady_clock::now();
      if (s.health)
        s.health->running_since_ns = steady_ns(began);
      auto err = commit(*s.store, batch);
      if (s.health)
        s.health->running_since_ns = 0;
      auto took = std::chrono::steady_clock::now() - began;
      report_stall(self, took);
      if (s.reporter)
        s.reporter->commit_done(took, waiting.size());
      if (!err)
        s.table->apply(batch); // before any answer: whoever hears "done" reads it there
      track_health(self, err);
      for (auto& rp : waiting) {
        if (err)
          rp.deliver(err);
        else
          rp.deliver(true);
      }
    },
  };
}

table_lister_actor::behavior_type table_lister_impl(table_lister_actor::pointer self,
                                                    std::shared_ptr<const lease_table> table,
                                                    clock_mapping clock) {
  return {
    [=](list_atom, const list_request& req) -> lock_list {
      auto recs = table->list_held(req);
      auto now = to_ns(self->clock().now());
      lock_list result;
      for (auto& rec : recs) {
        if (rec.deadline_ns <= now)
          continue; // ended; its actor is cleaning it up
        lock_status x;
        x.name = rec.name;
        x.held = true;
        x.owner = std::move(rec.owner);
        x.token = rec.token;
        x.expires_at_ms = clock.to_wall_ms(rec.deadline_ns);
        x.last_token = rec.last_token;
        result.locks.push_back(std::move(x));
      }
      if (!recs.empty() && recs.size() == req.limit)
        result.next_cursor = recs.back().name;
      return result;
    },
  };
}

} // namespace fencelock
