#pragma once

// Turns what a store reports (actors/store/reporter.hpp) into the service's metrics and log
// lines.

#include <memory>

#include "actors/store/reporter.hpp"

namespace fencelock {

class metrics;

/// Returns a reporter that records into `stats` and logs through common/log.
std::shared_ptr<store_reporter> make_store_reporter(std::shared_ptr<metrics> stats);

} // namespace fencelock
