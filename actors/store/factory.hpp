#pragma once

// The one place that turns config.store into a store: "embedded" (SQLite in data-dir),
// "memory" (the same backend over process memory) or a Redis URL. Everything after it works
// with the store_runtime it returns, whichever it is.

#include <memory>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "actors/clock.hpp"
#include "actors/store/backend.hpp"
#include "actors/store/reporter.hpp"
#include "fencelock/config.hpp"

namespace fencelock {

class event_hub;

/// Opens the store `cfg.store` names on `sys` (blocking: the embedded store reads its files;
/// call it before serving). It shows deadlines through `clock`, its changes reach `events`, and
/// what it reports goes to `reporter`.
/// Fails with store_unavailable naming what went wrong (the data dir in use, a Redis URL that
/// does not parse, an unknown store).
caf::expected<std::shared_ptr<store_runtime>> make_store(caf::actor_system& sys, const config& cfg,
                                                         clock_mapping clock,
                                                         std::shared_ptr<event_hub> events,
                                                         std::shared_ptr<store_reporter> reporter);

} // namespace fencelock
