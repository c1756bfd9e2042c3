#pragma once

// The actor system settings `fencelock serve` uses (app/serve.cpp), for the benchmarks that run
// CAF themselves: the in-process scenario of fencelock_loader and baseline_caf, whose
// request/response rate is the yardstick of the in-process lock path. Both must run CAF as the
// server does; keep this in step with app/serve.cpp.

#include <cstddef>
#include <cstdint>

#include <caf/actor_system_config.hpp>

#include "fencelock/messages.hpp"

namespace fencelock::bench {

/// Applies the server's actor system settings to `cfg`; `actor_threads` as config::actor_threads
/// (0 = CAF's default, one worker per core).
inline void apply_server_settings(caf::actor_system_config& cfg, uint32_t actor_threads = 0) {
  add_message_types(cfg); // before the actor_system exists
  if (actor_threads > 0)
    cfg.set("scheduler.max-threads", static_cast<std::size_t>(actor_threads));
}

} // namespace fencelock::bench
