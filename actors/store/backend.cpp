#include "actors/store/backend.hpp"

namespace fencelock {

namespace {

/// Acquires the lock for `next` once `released` ended the lease, and answers both.
void acquire_after(lock_backend& backend, lock_self self, const store_answer& released,
                   const acquire_request& next, lock_backend::reply<hand_over_answer> done) {
  backend.acquire(self, next, [released, done](caf::expected<store_answer> y) {
    hand_over_answer out{released, {}, {}};
    if (y)
      out.granted = std::move(*y);
    else
      out.grant_failed = std::move(y.error());
    done(std::move(out));
  });
}

} // namespace

// The backend lives as long as its lock actor, and the answers come on that actor's thread.

void lock_backend::hand_over(lock_self self, const release_request& req, lease_end_cause cause,
                             const acquire_request& next, reply<hand_over_answer> done) {
  release(self, req, cause, [this, self, next, done](caf::expected<store_answer> x) {
    if (!x)
      return done(std::move(x.error()));
    if (x->v != verdict::ok)
      return done(hand_over_answer{*x, {}, {}});
    acquire_after(*this, self, *x, next, done);
  });
}

void lock_backend::hand_over_expired(lock_self self, const lease_record& known,
                                     const acquire_request& next, reply<hand_over_answer> done) {
  expire(self, known, [this, self, next, done](caf::expected<store_answer> x) {
    if (!x)
      return done(std::move(x.error()));
    if (x->v == verdict::held)
      return done(hand_over_answer{*x, {}, {}});
    acquire_after(*this, self, *x, next, done);
  });
}

} // namespace fencelock
