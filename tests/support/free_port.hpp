#pragma once

#include <cstdint>

namespace fencelock::test {

/// Returns a loopback port that was free a moment ago (nothing listens on it; someone else may
/// take it before the caller does, so callers that bind retry with another).
uint16_t pick_free_port();

/// Returns a loopback port that a socket of this process holds, bound and never listening, until
/// the process exits. A connection to it is refused, and no other process can take the port
/// meanwhile: a port that was merely free a moment ago (pick_free_port) may be handed to a
/// server that a test running beside this one starts, which would then answer.
uint16_t hold_closed_port();

} // namespace fencelock::test
