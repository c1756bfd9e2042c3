// `fencelock watch <name> | 'prefix*'`: print the snapshot, then every lock event, one JSON line
// each, until SIGINT or SIGTERM. The lines are printed on the client's I/O thread (the watch
// handlers run there, in order); the main thread only waits for the stop signal.

#include <pthread.h>

#include <csignal>
#include <iostream>
#include <optional>

#include "client/cli/args.hpp"
#include "client/cli/commands.hpp"
#include "client/cli/exit_codes.hpp"
#include "client/cli/output.hpp"
#include "client/cli/usage.hpp"
#include "fencelock/client.hpp"

namespace fencelock::cli {

int watch_command(const std::vector<std::string>& args, std::string_view env_url) {
  auto p = parse_watch(args, env_url);
  if (p.help) {
    std::cout << watch_help;
    return exit_ok;
  }
  if (!p) {
    complain("watch", p.error);
    std::cerr << "Try 'fencelock watch --help'.\n";
    return exit_usage;
  }
  // main() blocked SIGINT and SIGTERM already; the client's I/O thread inherits that, so both
  // wait for the sigwait below.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  client_options opts;
  opts.url = p.args.url;
  watch_handlers h;
  h.on_snapshot = [](const std::vector<lock_info>& locks) { print_line(snapshot_json(locks)); };
  h.on_event = [](const watch_event& e) { print_line(event_json(e)); };
  h.on_interrupted = [](const client_error& e) { complain("watch", e); };
  std::optional<client> c;
  subscription sub;
  try {
    c.emplace(opts);
    sub = c->watch(p.args.target, p.args.prefix, std::move(h));
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
