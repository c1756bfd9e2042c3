#pragma once

// The server's side of systemd's readiness protocol (sd_notify(3), Type=notify): one small
// place, so that the rest of the program does not know systemd exists. Every call does
// nothing when $NOTIFY_SOCKET is unset (not started by systemd, or by a test that listens).

#include <cstdint>
#include <string_view>

namespace fencelock::app {

/*
 * Reports that the service is ready: the listener is up and the store answers (service::ready()).
 * Sends READY=1, a STATUS= line for `systemctl status` naming `host`, `port` and the store
 * (`store_text`, with any password already hidden), and X_FENCELOCK_PORT=<port>, so that a
 * supervisor that started the server with port 0 learns the port without reading the log.
 */
void notify_ready(std::string_view host, uint16_t port, std::string_view store_text);

/// Sends STATUS=<text>: what the service waits for while it is not ready yet.
void notify_status(std::string_view text);

/// Sends STOPPING=1 with a STATUS= line: the drain has begun (SIGTERM or SIGINT).
void notify_stopping();

} // namespace fencelock::app
