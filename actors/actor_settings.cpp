#include "fencelock/actor_settings.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <caf/atom.hpp>
#include <caf/defaults.hpp>
#include <caf/scheduler/coordinator.hpp>
#include <caf/timespan.hpp>

#include "actors/backoff_stealing.hpp"
#include "fencelock/messages.hpp"

namespace fencelock {

std::size_t actor_threads_for(uint32_t actor_threads) {
  if (actor_threads > 0)
    return actor_threads;
  // CAF 0.17 runs at least 4 workers. On a small machine the extra ones only take turns with
  // the I/O thread and the store's commit thread on the same cores (2 cores, side by side:
  // uncontended HTTP +4 to +13 %, WebSocket -1 to +15 %, the hot lock unchanged).
  return std::max<std::size_t>(1, std::thread::hardware_concurrency());
}

void use_precise_timers() {
#ifdef __linux__
  // 1 ns, since 0 would mean "the thread's default" (50 µs). A timer that fires late delays a
  // takeover by as much (side by side, 30 takeovers each: the watchdog's tick came 104-124 µs
  // after the deadline at p50 instead of 153-172 µs); the extra wake-ups it costs are those of
  // the timers, which are few.
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
}

void apply_actor_settings(caf::actor_system_config& cfg, uint32_t actor_threads) {
  add_message_types(cfg);
  cfg.set("scheduler.max-threads", actor_threads_for(actor_threads));
  // An idle CAF 0.17 worker polls its queue 500 times with a 50 µs sleep between attempts
  // before it waits on its condition variable. With a worker per core (at least 4), those
  // wake-ups took a core's worth of context switches from the I/O thread and the store's
  // commits on a small machine, and a message from the I/O thread waited up to 50 µs for a
  // polling worker. Without the moderate phase a worker spins briefly, then sleeps until a
  // message wakes it. A sleeping worker steals only when its wait times out, so that wait is
  // 1 ms rather than 10: work queued behind a busy worker is taken up soon (in process, 64
  // clients: p99 33 ms with 10, 8 ms with 1). Measured side by side (issue 13's note): hot-lock
  // grants/s +41 %, hand-off p50 ~1.0 -> ~0.72 ms, uncontended HTTP and WebSocket +9-10 %.
  cfg.set("work-stealing.moderate-poll-attempts", std::size_t{0});
  cfg.set("work-stealing.relaxed-sleep-duration", caf::timespan{std::chrono::milliseconds{1}});
  // CAF 0.17 lets an actor run through its whole mailbox before the worker moves on. The
  // embedded store's actor, with writes queued behind each commit, then kept its worker for
  // commit after commit while the lock actors it had just answered waited on that worker's
  // queue (a sleeping worker steals only when its wait times out). After 16 messages it yields
  // instead. Side by side (issue 13's note), uncontended HTTP at 64 connections: +11-16 % in each
  // of 4 rounds (median 20.4k -> 23.2k cycles/s), 12 -> 17-24 writes per group commit; the hot
  // lock +12-13 % grants/s; 4 and 32 gained less, 128 nothing.
  cfg.set("scheduler.max-throughput", std::size_t{16});
  // A 1 ms sleep woke each idle worker a thousand times a second; this scheduler backs it off
  // while nothing comes (actors/backoff_stealing.hpp). Only in place of CAF's own work
  // stealing: a program that chose another scheduler (the tests' deterministic one) keeps it.
  if (caf::get_or(cfg, "scheduler.policy", caf::defaults::scheduler::policy)
      == caf::atom("stealing"))
    cfg.load<caf::scheduler::coordinator<backoff_stealing>>();
}

} // namespace fencelock
