#include "app/systemd_notify.hpp"

#include <string>

#include <systemd/sd-daemon.h>

namespace fencelock::app {

namespace {

/// Sends `state` (newline-separated KEY=VALUE lines). A failure is not the service's problem:
/// systemd then times the start out and says so itself.
void send(const std::string& state) {
  sd_notify(0, state.c_str()); // 0: keep $NOTIFY_SOCKET for later notifications
}

} // namespace

void notify_ready(std::string_view host, uint16_t port, std::string_view store_text) {
  auto where = std::string{host}.find(':') == std::string::npos
                 ? std::string{host} + ":" + std::to_string(port)
                 : "[" + std::string{host} + "]:" + std::to_string(port);
  send("READY=1\nSTATUS=Serving on " + where + ", store " + std::string{store_text}
       + "\nX_FENCELOCK_PORT=" + std::to_string(port));
}

void notify_status(std::string_view text) {
  send("STATUS=" + std::string{text});
}

void notify_stopping() {
  send("STOPPING=1\nSTATUS=Draining: finishing the requests in progress");
}

} // namespace fencelock::app
