#include "fencelock/messages.hpp"

#include <caf/actor_system_config.hpp>

#include "actors/store/embedded/lease_store.hpp"
#include "actors/store/redis/scripts.hpp"
#include "fencelock/errc.hpp"

namespace fencelock {

void add_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<lease>("fencelock::lease");
  cfg.add_message_type<acquire_request>("fencelock::acquire_request");
  cfg.add_message_type<renew_request>("fencelock::renew_request");
  cfg.add_message_type<release_request>("fencelock::release_request");
  cfg.add_message_type<lock_status>("fencelock::lock_status");
  cfg.add_message_type<check_request>("fencelock::check_request");
  cfg.add_message_type<check_result>("fencelock::check_result");
  cfg.add_message_type<list_request>("fencelock::list_request");
  cfg.add_message_type<lock_list>("fencelock::lock_list");
  cfg.add_message_type<stored_lock>("fencelock::stored_lock");
  cfg.add_message_type<std::vector<stored_lock>>("std::vector<fencelock::stored_lock>");
  cfg.add_message_type<redis::script_lease>("fencelock::redis::script_lease");
  cfg.add_message_type<std::vector<redis::script_lease>>(
    "std::vector<fencelock::redis::script_lease>");
  cfg.add_error_category(caf::atom("fencelock"), [](uint8_t code, caf::atom_value, const caf::message& ctx) {
    std::string result = to_string(static_cast<errc>(code));
    if (!ctx.empty())
      result += ": " + to_string(ctx);
    return result;
  });
}

} // namespace fencelock
