#include "actors/lock_errors.hpp"

#include "fencelock/errc.hpp"

namespace fencelock {

caf::error lease_lost_error() {
  return caf::make_error(errc::lease_lost,
                         std::string{"the token is not the current, unexpired lease of this owner"});
}

caf::error lock_held_error(const std::optional<lease_record>& holder) {
  if (!holder)
    return caf::make_error(errc::lock_held, std::string{}, int64_t{0});
  return caf::make_error(errc::lock_held, holder->owner, holder->expires_at_ms);
}

caf::error store_error(const caf::error& err) {
  errc code;
  if (as_errc(err, code))
    return err;
  return caf::make_error(errc::store_unavailable, "lease store: " + to_string(err));
}

caf::error shutting_down_error() {
  return caf::make_error(errc::shutting_down, std::string{"the service is stopping"});
}

} // namespace fencelock
