#pragma once

#include <cstdint>

namespace fencelock::test {

/// Returns a loopback port that was free a moment ago (nothing listens on it; someone else may
/// take it before the caller does, so callers that bind retry with another).
uint16_t pick_free_port();

} // namespace fencelock::test
