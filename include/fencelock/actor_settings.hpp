#pragma once

// The actor system settings fencelock runs with. `fencelock serve` applies them, and so do the
// benchmarks that run CAF themselves (their yardstick must run CAF as the server does); a host
// program that embeds the service may apply them to its own actor_system_config.

#include <cstddef>
#include <cstdint>

#include <caf/actor_system_config.hpp>

namespace fencelock {

/// Applies fencelock's settings to `cfg`; call before the actor_system exists. Registers the
/// message types (add_message_types), runs actor_threads_for(`actor_threads`) scheduler
/// workers, and lets idle workers sleep until work comes instead of polling every 50 µs,
/// looking for work to steal every millisecond while busy and less often the longer nothing
/// comes (actors/backoff_stealing.hpp). That scheduler replaces CAF's work stealing; set another
/// `scheduler.policy` before this call to keep it instead.
void apply_actor_settings(caf::actor_system_config& cfg, uint32_t actor_threads = 0);

/// Sets the calling thread's timer slack to the least (Linux; elsewhere it does nothing); the
/// threads it starts from then on inherit it. Call it before the actor_system exists, on the
/// thread that creates it: CAF's clock thread then fires timers (a lease's expiry, a waiter's
/// deadline) when they are due, not up to Linux's default 50 µs later.
void use_precise_timers();

/// Returns how many scheduler workers `actor_threads` means: itself, or one per core for 0
/// (CAF's own default is at least 4).
std::size_t actor_threads_for(uint32_t actor_threads);

} // namespace fencelock
