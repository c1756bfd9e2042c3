#pragma once

// The errors a lock answers with, made in one place so that every path words them alike.

#include <string>

#include <caf/error.hpp>

#include "actors/store/backend.hpp"

namespace fencelock {

/// The answer to a renew or release whose token is not the owner's current lease.
caf::error lease_lost_error();

/// The answer to an acquire of a lock held by someone else: lock_held naming the holder (an
/// empty owner when the holder is not known here).
caf::error lock_held_error(const std::optional<lease_record>& holder);

/// A store failure as callers see it: fencelock errors pass, anything else (a timeout, a dead
/// store actor) becomes store_unavailable.
caf::error store_error(const caf::error& err);

/// The answer to a waiting acquire while the service stops or drains.
caf::error shutting_down_error();

} // namespace fencelock
