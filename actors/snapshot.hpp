#pragma once

// The snapshot a subscription starts from: one lock's status, or every held lock with a prefix,
// gathered page by page through the bridge.

#include <cstdint>

#include <caf/actor.hpp>

#include "fencelock/service.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

/// Gathers the snapshot of `req` through `bridge` (pages of `page_limit` locks) and calls
/// `done` once with all of it, or with the first error.
void collect_snapshot(caf::actor bridge, subscribe_request req, uint32_t page_limit,
                      callback<lock_list> done);

} // namespace fencelock
