#include "actors/direct_call.hpp"

#include "fencelock/errc.hpp"

namespace fencelock {

caf::error dropped_call_error(const std::atomic<bool>& running) {
  if (!running.load())
    return caf::make_error(errc::shutting_down, std::string{"the service is stopping"});
  return caf::make_error(errc::unavailable,
                         std::string{"internal: the lock's actor ended without answering"});
}

} // namespace fencelock
