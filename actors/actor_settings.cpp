#include "fencelock/actor_settings.hpp"

#include "fencelock/messages.hpp"

namespace fencelock {

void apply_actor_settings(caf::actor_system_config& cfg, uint32_t actor_threads) {
  add_message_types(cfg);
  if (actor_threads > 0)
    cfg.set("scheduler.max-threads", static_cast<std::size_t>(actor_threads));
}

} // namespace fencelock
