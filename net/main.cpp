// The fencelock binary. `fencelock serve` runs the lock service behind its HTTP/JSON front end:
//
//   load config (flags > FENCELOCK_* env > INI file > defaults)   config error -> exit 2
//   -> logger "fencelock" (JSON lines on stdout)
//   -> actor_system -> service::start() -> http_server::start()   failure      -> exit 1
//   -> one "listening" line with the bound port
//   -> sigwait(SIGINT | SIGTERM) -> http stop -> service stop -> "stopped"    -> exit 0
//
// Every log line is one JSON object; integration tests start the server with --port 0 and read
// the port from the "listening" line.
//
// The client subcommands (run, acquire, release, status, watch) live in client/cli/ and talk to
// a server over its WebSocket API; main() only dispatches to them.

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <pthread.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/config.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "actors/oplog.hpp"
#include "actors/store/redis/url.hpp"
#include "client/cli/commands.hpp"
#include "client/cli/usage.hpp"
#include "config/load.hpp"
#include "fencelock/config.hpp"
#include "fencelock/errc.hpp"
#include "fencelock/messages.hpp"
#include "fencelock/service.hpp"
#include "net/http_server.hpp"

#ifndef FENCELOCK_VERSION
// Keep in step with project(VERSION) in CMakeLists.txt until the build passes it in.
#  define FENCELOCK_VERSION "0.1.0"
#endif

namespace {

constexpr std::string_view usage_head = R"(Usage: fencelock <command> [options]

A distributed lock service with fencing tokens, served over HTTP/JSON and WebSocket.

Commands:
  serve [options]   Run the lock service; `fencelock serve --help` lists every option.

)";

constexpr std::string_view usage_tail = R"(
Options:
  -h, --help        Print this help and exit.
  --version         Print the version and exit.
)";

/// Prints the whole `fencelock --help` text to `out`.
void print_usage(std::ostream& out) {
  out << usage_head << fencelock::cli::commands_help << usage_tail
      << fencelock::cli::env_and_codes;
}

constexpr std::string_view serve_usage = R"(Usage: fencelock serve [options]

Runs the lock service until SIGINT or SIGTERM. Logs JSON lines to stdout; the first
"listening" line reports the bound address and port.

)";

/// Returns the process environment as "KEY=VALUE" entries.
std::vector<std::string> environment() {
  std::vector<std::string> out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry)
    out.emplace_back(*entry);
  return out;
}

/// Returns the signals that stop the server.
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

/// Creates the "fencelock" logger: every line is already a JSON object, so the pattern is the
/// bare message. Registered as the default logger too, for code that logs through spdlog::info.
std::shared_ptr<spdlog::logger> make_logger(const std::string& level) {
  auto log = std::make_shared<spdlog::logger>("fencelock",
                                              std::make_shared<spdlog::sinks::stdout_sink_mt>());
  log->set_pattern("%v");
  log->set_level(spdlog::level::from_str(level)); // validated by the loader
  // stdout is a pipe under a supervisor or a test: flush every line that matters at once.
  log->flush_on(spdlog::level::info);
  spdlog::register_logger(log);
  spdlog::set_default_logger(log);
  return log;
}

/// Returns the line {"ts", "level", "event", ...fields} ready to log, in the configured format;
/// Boost.JSON escapes the strings (a data_dir may hold quotes).
std::string json_line(std::string_view level, std::string_view event,
                      const boost::json::object& fields) {
  boost::json::object line;
  line["ts"] = fencelock::iso_timestamp();
  line["level"] = level;
  line["event"] = event;
  for (const auto& [key, value] : fields)
    line[key] = value;
  return fencelock::render_log_line(line);
}

/// Logs `line` at error level.
void log_error(spdlog::logger& log, const std::string& line) {
  log.error(line);
  log.flush();
}

/// Logs a lifecycle line (listening, stopped) whatever the log level, unless it is "off":
/// supervisors and tests find the port in it even when running with log-level error.
void log_lifecycle(spdlog::logger& log, const std::string& line) {
  auto level = std::max(log.level(), spdlog::level::info);
  if (level == spdlog::level::off)
    return;
  log.log(level, line);
  log.flush();
}

/// Returns the fields of a start_failed line: which `component` failed and how.
boost::json::object failure_fields(caf::actor_system& sys, std::string_view component,
                                   const caf::error& err) {
  fencelock::errc code{};
  return {{"component", component},
          // The fencelock code when there is one, else CAF's rendering of the error.
          {"code", fencelock::as_errc(err, code) ? fencelock::to_string(code) : sys.render(err)},
          {"message", fencelock::error_message(err)}};
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    default:
      return "unknown";
  }
}

/*
 * Runs `fencelock serve`. `args` are the arguments after "serve".
 * Returns the exit code: 0 after a clean stop on a signal, 1 when the service or the listener
 * fails to start, 2 on a configuration error (reported before any port is opened).
 */
int serve(const std::vector<std::string>& args) {
  auto loaded = fencelock::config_loader::load(args, environment());
  if (!loaded) {
    std::cerr << "fencelock: config error: " << fencelock::error_message(loaded.error()) << '\n';
    return 2;
  }
  if (loaded->help) {
    std::cout << serve_usage << loaded->help_text;
    return 0;
  }
  const fencelock::config& cfg = loaded->cfg;
  fencelock::set_log_format(cfg.log_format == "text" ? fencelock::log_format::text
                                                     : fencelock::log_format::json);
  auto log = make_logger(cfg.log_level);

  caf::actor_system_config sys_cfg;
  fencelock::add_message_types(sys_cfg); // before the actor_system exists
  if (cfg.actor_threads > 0)
    sys_cfg.set("scheduler.max-threads", static_cast<size_t>(cfg.actor_threads));
  // CAF's own logger needs no silencing: Debian builds libcaf with CAF_LOG_LEVEL quiet.
  caf::actor_system sys{sys_cfg};

  fencelock::service svc{sys, cfg};
  if (auto err = svc.start()) {
    log_error(*log, json_line("error", "start_failed", failure_fields(sys, "service", err)));
    return 1;
  }
  fencelock::net::http_server http{svc, cfg};
  if (auto err = http.start()) {
    log_error(*log, json_line("error", "start_failed", failure_fields(sys, "http", err)));
    svc.stop();
    return 1;
  }
  log_lifecycle(*log, json_line("info", "listening",
                                {{"host", cfg.host},
                                 {"port", http.port()},
                                 {"store", fencelock::redis::redacted_text(cfg.store)},
                                 {"data_dir", cfg.data_dir}}));

  // The stop signals were blocked in main() before any thread existed, so every thread
  // inherited the mask and only this sigwait() sees them.
  auto signals = stop_signals();
  int sig = 0;
  if (sigwait(&signals, &sig) != 0) // fails only for an invalid set; stop cleanly anyway
    sig = 0;
  http.stop(); // no new requests reach the service from here on
  bool clean = svc.stop();
  log_lifecycle(*log, json_line("info", "stopped",
                                {{"signal", signal_name(sig)}, {"clean", clean}}));
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  // Block the stop signals before CAF, spdlog or Asio start a thread: threads inherit the
  // mask, so the signals are left for serve()'s sigwait() instead of killing a random thread.
  auto signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A reader that closes our stdout (a test that has read the port) must not kill the
  // server with SIGPIPE; a failed write is harmless.
  std::signal(SIGPIPE, SIG_IGN);

  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_usage(std::cerr);
    return 2;
  }
  const auto& command = args.front();
  if (command == "-h" || command == "--help" || command == "help") {
    print_usage(std::cout);
    return 0;
  }
  if (command == "--version") {
    std::cout << "fencelock " FENCELOCK_VERSION " (CAF " << CAF_VERSION / 10000 << '.'
              << CAF_VERSION / 100 % 100 << '.' << CAF_VERSION % 100 << ")\n";
    return 0;
  }
  if (command == "serve") {
    try {
      return serve({args.begin() + 1, args.end()});
    } catch (const std::exception& e) {
      // Not expected (the I/O path uses error codes); report it rather than abort silently.
      std::cerr << "fencelock: fatal: " << e.what() << '\n';
      return 1;
    }
  }
  if (fencelock::cli::is_client_command(command)) // run, acquire, release, status, watch
    return fencelock::cli::run_client_command(command, {args.begin() + 1, args.end()});
  std::cerr << "fencelock: unknown command \"" << command << "\"\n\n";
  print_usage(std::cerr);
  return 2;
}
