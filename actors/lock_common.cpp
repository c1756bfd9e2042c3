#include "actors/lock_common.hpp"

#include <string>

#include "fencelock/errc.hpp"

namespace fencelock {

caf::error lease_lost_error() {
  return caf::make_error(errc::lease_lost,
                         std::string{"the token is not the current, unexpired lease of this owner"});
}

caf::error store_error(const caf::error& err) {
  errc code;
  if (as_errc(err, code))
    return err;
  return caf::make_error(errc::store_unavailable, "lease store: " + to_string(err));
}

} // namespace fencelock
