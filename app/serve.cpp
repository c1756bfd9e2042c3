// `fencelock serve`:
//
//   load config (flags > FENCELOCK_* env > file > defaults)  bad flag -> 64, bad config -> 78
//   -> logger "fencelock" (JSON lines on stdout)
//   -> auth file (auth-file)                                    unreadable / invalid -> 78
//   -> TLS certificate and key (tls-cert, tls-key, tls-client-ca) unusable            -> 78
//   -> actor_system -> service::start()                         store failed       -> 69
//                   -> http_server::start()                     listener failed    -> 71
//   -> one "listening" line with the bound port (info level)
//   -> once service::ready() (the store answers): READY=1 to $NOTIFY_SOCKET (app/systemd_notify)
//   -> sigwait(SIGINT | SIGTERM | SIGHUP)
//        SIGHUP: reload the auth file and the TLS files (bad ones keep the old), wait again
//      -> STOPPING=1 -> http stop (drain) -> service stop -> "stopped"
//                                                                                   -> exit 0
//
// Integration tests start the server with --port 0 and read the port from the readiness
// notification (X_FENCELOCK_PORT), or from the "listening" line when the log level shows it.

#include "app/serve.hpp"

#include <unistd.h>

#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <string_view>

#include <boost/asio/ip/address.hpp>
#include <boost/json/object.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <spdlog/spdlog.h>

#include "common/batched_sink.hpp"
#include "common/log.hpp"
#include "common/redis_url.hpp"
#include "config/load.hpp"
#include "fencelock/actor_settings.hpp"
#include "fencelock/config.hpp"
#include "fencelock/errc.hpp"
#include "fencelock/service.hpp"
#include "app/systemd_notify.hpp"
#include "net/auth.hpp"
#include "net/http_server.hpp"
#include "net/tls.hpp"

namespace fencelock::app {

namespace {

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

// How long an info or debug line may wait on stdout to share one write with others.
constexpr std::chrono::milliseconds log_batch_delay{50};

/// Creates the "fencelock" logger: every line is rendered already (common/log.hpp), so the
/// pattern is the bare message. It becomes the default logger, which common/log writes to.
/// Warn and error lines are written at once; the others in batches (common/batched_sink.hpp).
std::shared_ptr<spdlog::logger> make_logger(const std::string& level) {
  auto sink = std::make_shared<batched_fd_sink>(STDOUT_FILENO, log_batch_delay);
  auto log = std::make_shared<spdlog::logger>("fencelock", std::move(sink));
  log->set_pattern("%v");
  log->set_level(spdlog::level::from_str(level)); // validated by the loader
  spdlog::register_logger(log);
  spdlog::set_default_logger(log);
  return log;
}

/*
 * Reports a failure to start: in words on stderr (`what`: "cannot open the store"), and as a
 * start_failed event of `component` with a stable `code` in the log. Returns `exit_code`.
 */
int start_failed(spdlog::logger& log, std::string_view component, std::string_view code,
                 std::string_view what, const caf::error& err, int exit_code) {
  auto message = error_message(err);
  std::cerr << "fencelock serve: " << what << ": " << message << '\n';
  log.error(log_line(log_level::error, "start_failed",
                     {{"component", component}, {"code", code}, {"message", message}}));
  log.flush();
  return exit_code;
}

/// Reloads the auth file (SIGHUP); a file that cannot be read or parsed leaves the one in force.
void reload_auth(spdlog::logger& log, net::authenticator& auth) {
  if (auto err = auth.reload()) {
    log.warn(log_line(log_level::warn, "auth_reload_failed",
                      {{"message", error_message(err)}, {"kept_principals", auth.size()}}));
    return;
  }
  log.info(log_line(log_level::info, "auth_reloaded", {{"principals", auth.size()}}));
}

/// Reloads the listener's certificate and key (SIGHUP): new connections use them, open ones
/// keep theirs. Files that cannot be used leave the ones in force.
void reload_tls(spdlog::logger& log, net::tls_credentials& tls) {
  if (auto err = tls.reload()) {
    log.warn(log_line(log_level::warn, "tls_reload_failed",
                      {{"message", error_message(err)}, {"kept", "the certificate in force"}}));
    return;
  }
  log.info(log_line(log_level::info, "tls_reloaded", {}));
}

/// Returns whether `host` is a loopback address, reachable from this machine only.
bool is_loopback(const std::string& host) {
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(host, ec);
  return !ec && address.is_loopback();
}

/*
 * Waits until `svc` is ready (its store answers), then tells systemd READY=1 with the bound
 * `port`. Returns 0 then, or the stop signal (of `signals`) that came first; a SIGHUP meanwhile
 * calls `on_hangup` and waits on.
 */
int await_ready(const service& svc, const config& cfg, uint16_t port, const sigset_t& signals,
                const std::function<void()>& on_hangup) {
  bool said_waiting = false;
  for (;;) {
    if (svc.ready()) {
      notify_ready(cfg.host, port, redis::redacted_text(cfg.store));
      return 0;
    }
    if (!said_waiting) {
      notify_status("Waiting for the store to answer");
      said_waiting = true;
    }
    timespec poll_interval{0, 50'000'000};
    if (int sig = sigtimedwait(&signals, nullptr, &poll_interval); sig == SIGHUP)
      on_hangup();
    else if (sig > 0)
      return sig;
  }
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

} // namespace

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

int serve(const std::vector<std::string>& args) {
  // SIGHUP reloads; block it before any thread starts, as main() did the stop signals.
  sigset_t hangup;
  sigemptyset(&hangup);
  sigaddset(&hangup, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &hangup, nullptr);
  use_precise_timers(); // before any thread starts too: they inherit it

  auto loaded = config_loader::load(args, environment());
  if (!loaded) {
    if (config_loader::source_of(loaded.error()) == config_loader::error_source::command_line) {
      std::cerr << "fencelock serve: " << error_message(loaded.error())
                << "\nTry 'fencelock serve --help'.\n";
      return exit_serve_usage;
    }
    std::cerr << "fencelock serve: config error: " << error_message(loaded.error()) << '\n';
    return exit_serve_config;
  }
  if (loaded->help) {
    std::cout << serve_usage << loaded->help_text;
    return 0;
  }
  const config& cfg = loaded->cfg;
  set_log_format(cfg.log_format == "text" ? log_format::text : log_format::json);
  auto log = make_logger(cfg.log_level);
  auto auth = net::authenticator::open(cfg.auth_file);
  if (!auth) {
    std::cerr << "fencelock serve: config error: auth-file: " << error_message(auth.error())
              << '\n';
    return exit_serve_config;
  }
  auto tls = net::tls_credentials::open(cfg); // the error names tls-cert, tls-key or tls-client-ca
  if (!tls) {
    std::cerr << "fencelock serve: config error: " << error_message(tls.error()) << '\n';
    return exit_serve_config;
  }

  caf::actor_system_config sys_cfg;
  apply_actor_settings(sys_cfg, cfg.actor_threads); // before the actor_system exists
  // CAF's own logger needs no silencing: Debian builds libcaf with CAF_LOG_LEVEL quiet.
  caf::actor_system sys{sys_cfg};

  service svc{sys, cfg};
  if (auto err = svc.start()) {
    errc code{};
    return start_failed(*log, "service", as_errc(err, code) ? to_string(code) : "start_failed",
                        "cannot open the store", err, exit_serve_store);
  }
  net::http_server http{svc, cfg, *auth, *tls};
  if (auto err = http.start()) {
    svc.stop();
    return start_failed(*log, "http", "listen_failed", "cannot start the listener", err,
                        exit_serve_listen);
  }
  log->info(log_line(log_level::info, "listening",
                     {{"host", cfg.host},
                      {"port", http.port()},
                      {"tls", *tls != nullptr},
                      {"store", redis::redacted_text(cfg.store)},
                      {"data_dir", cfg.data_dir}}));
  log->flush(); // whoever waits for the port reads it now

  if ((*auth)->enabled()) {
    log->info(log_line(log_level::info, "auth_enabled", {{"principals", (*auth)->size()}}));
  } else if (!is_loopback(cfg.host)) {
    log->warn(log_line(log_level::warn, "no_authentication",
                       {{"host", cfg.host},
                        {"message", "anyone who reaches this port may take or release any "
                                    "lock; set auth-file (docs/security.md)"}}));
  }
  if ((*auth)->enabled() && !*tls && !is_loopback(cfg.host))
    log->info(log_line(log_level::info, "no_tls",
                       {{"host", cfg.host},
                        {"message", "bearer tokens cross the network in clear unless a TLS "
                                    "proxy is in front; set tls-cert and tls-key"}}));

  // The stop signals were blocked in main() before any thread existed, so every thread
  // inherited the mask and only this thread's sigwait() sees them.
  auto signals = stop_signals();
  sigaddset(&signals, SIGHUP);
  auto on_hangup = [&] {
    if ((*auth)->enabled())
      reload_auth(*log, **auth);
    if (*tls)
      reload_tls(*log, **tls);
    if (!(*auth)->enabled() && !*tls)
      log->info(log_line(log_level::info, "reload_skipped",
                         {{"reason", "neither auth-file nor tls-cert is set"}}));
  };
  int sig = await_ready(svc, cfg, http.port(), signals, on_hangup);
  while (sig == 0 || sig == SIGHUP) {
    if (sig == SIGHUP)
      on_hangup();
    if (sigwait(&signals, &sig) != 0) { // fails only for an invalid set: stop cleanly anyway
      sig = 0;
      break;
    }
  }
  notify_stopping();
  http.stop(); // drains: no new requests reach the service from here on
  bool clean = svc.stop();
  log->info(log_line(log_level::info, "stopped", {{"signal", signal_name(sig)}, {"clean", clean}}));
  log->flush();
  return 0;
}

} // namespace fencelock::app
