#include "actors/store/backend.hpp"

namespace fencelock {

void lock_backend::hand_over(lock_self self, const release_request& req, lease_end_cause cause,
                             const acquire_request& next, reply<hand_over_answer> done) {
  // The backend lives as long as its lock actor, and the answers come on that actor's thread.
  release(self, req, cause, [this, self, next, done](caf::expected<store_answer> x) {
    if (!x)
      return done(std::move(x.error()));
    if (x->v != verdict::ok)
      return done(hand_over_answer{*x, {}, {}});
    acquire(self, next, [released = *x, done](caf::expected<store_answer> y) {
      hand_over_answer out{released, {}, {}};
      if (y)
        out.granted = std::move(*y);
      else
        out.grant_failed = std::move(y.error());
      done(std::move(out));
    });
  });
}

} // namespace fencelock
