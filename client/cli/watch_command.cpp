// `fencelock watch <name> | 'prefix*'`: print the snapshot, then every lock event, one JSON line
// each, until SIGINT or SIGTERM. The lines are printed on the client's I/O thread (the watch
// handlers run there, in order); the main thread only waits for the stop signal.

#include <pthread.h>

#include <csignal>
#include <optional>

#include "client/cli/args.hpp"
#include "client/cli/commands.hpp"
#include "client/cli/exit_codes.hpp"
#include "client/cli/output.hpp"
#include "fencelock/client.hpp"

namespace fencelock::cli {

int watch_command(const watch_args& a) {
  // main() blocked SIGINT and SIGTERM already; the client's I/O thread inherits that, so both
  // wait for the sigwait below.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  auto opts = client_options_of(a);
  bool table = a.output == output_format::table;
  watch_handlers h;
  h.on_snapshot = [table](const std::vector<lock_info>& locks) {
    print_line(table ? status_table(locks, wall_now_ms()) : snapshot_json(locks));
  };
  h.on_event = [table](const watch_event& e) {
    print_line(table ? event_line(e, wall_now_ms()) : event_json(e));
  };
  h.on_interrupted = [](const client_error& e) { complain("watch", e); };
  std::optional<client> c;
  subscription sub;
  try {
    c.emplace(opts);
    sub = c->watch(a.target, a.prefix, std::move(h));
  } catch (const client_error& e) {
    complain("watch", e);
    return exit_code_of(e);
  }
  int sig = 0;
  sigwait(&stop, &sig);
  sub.cancel();
  return exit_ok;
}

} // namespace fencelock::cli
