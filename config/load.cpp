// Turns flags, FENCELOCK_* environment variables and an INI file into a fencelock::config.
//
// Every setting is one row of `settings` below: its key, the config member it fills, its valid
// range and its help. Parsing, validation, the help text and the environment names all derive
// from that table, so a new setting is one new row (plus its member and default in
// include/fencelock/config.hpp and its documented line in config/fencelock.conf).
//
// Values are read as text and converted here rather than by Boost.Program_options, so that every
// error names the key the way the user spelled it, and "-1" for an unsigned setting is an error
// instead of a wrap-around.

#include "config/load.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string_view>
#include <type_traits>
#include <variant>

#include <boost/asio/ip/address.hpp>
#include <boost/program_options.hpp>

#include <caf/sec.hpp>

#include "common/redis_url.hpp"

namespace fencelock::config_loader {

namespace {

namespace po = boost::program_options;

using namespace std::string_literals;

/// Points at the member of fencelock::config that a setting fills.
using member = std::variant<bool config::*, uint16_t config::*, uint32_t config::*,
                            int64_t config::*, std::string config::*>;

/// Checks a text setting; returns why `x` is not acceptable, or nothing.
using text_check = std::optional<std::string> (*)(const std::string& x);

/// Describes one setting.
struct setting {
  /// Key in kebab-case: the flag without "--" and the key in the INI file.
  std::string_view key;
  member field;
  /// Valid range of an integer setting (inclusive).
  int64_t min = 0;
  int64_t max = 0;
  /// Validity check of a text setting.
  text_check check = nullptr;
  /// Placeholder of a text setting's value in the help text.
  std::string_view arg = "";
  std::string_view help;
  /// How a value appears in error messages (null = as it is): hides secrets.
  std::string (*shown)(const std::string& x) = nullptr;
};

/// 2^52: tokens counted up from the floor stay below 2^53, which JSON clients hold exactly.
constexpr int64_t max_fence_floor = int64_t{1} << 52;

std::string redacted_store(const std::string& x) {
  return redis::redacted_text(x);
}

std::optional<std::string> check_ip(const std::string& x) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(x, ec);
  if (ec)
    return "must be an IP address such as 127.0.0.1, 0.0.0.0 or ::1"s;
  return std::nullopt;
}

std::optional<std::string> check_not_empty(const std::string& x) {
  if (x.empty())
    return "must not be empty"s;
  return std::nullopt;
}

std::optional<std::string> check_store(const std::string& x) {
  // A typo must not start a service on the wrong store.
  if (x == "embedded" || x == "memory")
    return std::nullopt;
  if (!redis::is_redis_url(x))
    return "must be \"embedded\", \"memory\" or a URL redis://[[user]:password@]host[:port][/db]"s;
  std::string why;
  if (!redis::parse_url(x, why))
    return "bad Redis URL: " + why;
  return std::nullopt;
}

std::optional<std::string> check_key_prefix(const std::string& x) {
  if (x.empty() || x.size() > 100)
    return "must be 1..100 characters"s;
  return std::nullopt;
}

constexpr std::string_view log_levels[] = {"trace", "debug",    "info", "warn",
                                           "error", "critical", "off"};

std::optional<std::string> check_log_format(const std::string& x) {
  if (x != "json" && x != "text")
    return "must be json or text"s;
  return std::nullopt;
}

std::optional<std::string> check_log_level(const std::string& x) {
  if (std::find(std::begin(log_levels), std::end(log_levels), x) == std::end(log_levels))
    return "must be one of trace, debug, info, warn, error, critical, off"s;
  return std::nullopt;
}

// The ranges are part of the service's contract (docs, fencelock.conf); keep them in step.
const setting settings[] = {
  // --- network ---
  {.key = "host",
   .field = &config::host,
   .check = check_ip,
   .arg = "ip",
   .help = "Address the HTTP listener binds to (0.0.0.0 or :: for every interface)."},
  {.key = "port",
   .field = &config::port,
   .min = 0,
   .max = 65535,
   .help = "TCP port of the HTTP listener; 0 picks any free port (reported by the \"listening\" "
           "log line and the readiness notification)."},
  {.key = "io-threads",
   .field = &config::io_threads,
   .min = 1,
   .max = 64,
   .help = "Threads running the network I/O loop."},
  {.key = "io-poll-us",
   .field = &config::io_poll_us,
   .min = 0,
   .max = 10'000,
   .help = "Longest time in microseconds the I/O thread polls for work before it sleeps, "
           "adapting to the gaps between requests: less latency per request on a busy server, "
           "for CPU spent polling (docs/configuration.md). 0 never polls."},
  {.key = "max-connections",
   .field = &config::max_connections,
   .min = 1,
   .max = 1'000'000,
   .help = "Open client connections, HTTP and WebSocket together; further ones are answered 503 "
           "overloaded and closed."},
  {.key = "max-request-rate",
   .field = &config::max_request_rate,
   .min = 0,
   .max = 10'000'000,
   .help = "Requests per second one connection may send (bursts up to that many); faster ones "
           "get 429 rate_limited. 0 means no limit."},
  {.key = "body-limit",
   .field = &config::body_limit,
   .min = 256,
   .max = 16'777'216,
   .help = "Largest accepted request body in bytes; larger bodies get 413 before they are "
           "read."},
  {.key = "header-timeout-ms",
   .field = &config::header_timeout_ms,
   .min = 100,
   .max = 600'000,
   .help = "Time a client has to send a request's headers; also the keep-alive idle limit."},
  {.key = "body-timeout-ms",
   .field = &config::body_timeout_ms,
   .min = 100,
   .max = 600'000,
   .help = "Time a client has to send a request's body once its headers arrived."},
  {.key = "drain-timeout-ms",
   .field = &config::drain_timeout_ms,
   .min = 0,
   .max = 600'000,
   .help = "On SIGTERM: how long requests in progress may take to be answered (waiters are "
           "answered 503 at once) before the remaining connections are cut; 0 cuts at once."},
  // --- security ---
  {.key = "auth-file",
   .field = &config::auth_file,
   .arg = "path",
   .help = "Principals, the SHA-256 of their bearer tokens and their permissions per lock-name "
           "prefix (docs/security.md); reloaded on SIGHUP. Empty: no authentication."},
  {.key = "open-readyz",
   .field = &config::open_readyz,
   .help = "With auth-file: GET /readyz answers without a token (load balancers probe it)."},
  {.key = "open-metrics",
   .field = &config::open_metrics,
   .help = "With auth-file: GET /metrics answers without a token; false requires an admin."},
  {.key = "tls-cert",
   .field = &config::tls_cert,
   .arg = "path",
   .help = "PEM certificate chain: the listener then speaks TLS 1.2+ only, HTTP and WebSocket "
           "(docs/security.md); reloaded on SIGHUP. Needs tls-key."},
  {.key = "tls-key",
   .field = &config::tls_key,
   .arg = "path",
   .help = "PEM private key of tls-cert."},
  {.key = "tls-client-ca",
   .field = &config::tls_client_ca,
   .arg = "path",
   .help = "PEM CA certificates: every client must present a certificate they signed (mutual "
           "TLS); its subject CN can name a principal of auth-file. Needs tls-cert."},
  {.key = "dashboard",
   .field = &config::dashboard,
   .help = "Serves the live lock dashboard at / (a read-only page over /v1/ws; "
           "docs/dashboard.md); false answers / with 404."},
  // --- WebSocket ---
  {.key = "ws-max-frame",
   .field = &config::ws_max_frame,
   .min = 1024,
   .max = 16'777'216,
   .help = "Largest WebSocket frame a client may send, in bytes; a larger one closes the socket "
           "with 1009."},
  {.key = "ws-max-sessions",
   .field = &config::ws_max_sessions,
   .min = 1,
   .max = 1'000'000,
   .help = "Open WebSocket sessions; further upgrades get 503 overloaded."},
  {.key = "ws-max-subscriptions",
   .field = &config::ws_max_subscriptions,
   .min = 1,
   .max = 100'000,
   .help = "Event subscriptions one WebSocket may hold."},
  {.key = "ws-max-pending",
   .field = &config::ws_max_pending,
   .min = 1,
   .max = 100'000,
   .help = "Unanswered requests one WebSocket may have before the server stops reading it."},
  {.key = "ws-outbound-limit",
   .field = &config::ws_outbound_limit,
   .min = 65'536,
   .max = 1'073'741'824,
   .help = "Bytes queued for one WebSocket before it counts as too slow and is closed with "
           "1008."},
  {.key = "ws-idle-timeout-ms",
   .field = &config::ws_idle_timeout_ms,
   .min = 1'000,
   .max = 3'600'000,
   .help = "Silence after which a WebSocket is closed; the server pings after half of it."},
  // --- store ---
  {.key = "data-dir",
   .field = &config::data_dir,
   .check = check_not_empty,
   .arg = "path",
   .help = "Directory where the embedded store keeps its files (created if missing)."},
  {.key = "store",
   .field = &config::store,
   .check = check_store,
   .arg = "kind|url",
   .help = "Lease store: \"embedded\" (SQLite in data-dir, one instance), \"memory\" (not "
           "durable: every lease is lost on restart; docs/durability.md) or "
           "redis://[[user]:password@]host[:port][/db] (shared by several instances; "
           "docs/redis.md). The password is never logged.",
   .shown = redacted_store},
  {.key = "redis-key-prefix",
   .field = &config::redis_key_prefix,
   .check = check_key_prefix,
   .arg = "text",
   .help = "Prefix of every Redis key and of the event channel: instances that share locks use "
           "the same prefix; unrelated deployments on one Redis use different ones."},
  {.key = "redis-timeout-ms",
   .field = &config::redis_timeout_ms,
   .min = 50,
   .max = 60'000,
   .help = "Longest wait for a Redis reply (and for a connection); past it the request fails "
           "with 503 store_unavailable and the connection is re-established."},
  {.key = "fence-block",
   .field = &config::fence_block,
   .min = 1,
   .max = 1'000'000,
   .help = "Fencing tokens reserved per durable write of the token ceiling; after a crash up "
           "to this many tokens are skipped, never reused."},
  {.key = "fence-floor",
   .field = &config::fence_floor,
   .min = 0,
   .max = max_fence_floor,
   .help = "Lowest fencing token this run may hand out (0: none): the next token is the "
           "higher of it and the store's own next one. After restoring a store from a backup, "
           "set it above every token handed out since, e.g. the wall clock in microseconds "
           "(date +%s%6N)."},
  {.key = "max-released-records",
   .field = &config::max_released_records,
   .min = 0,
   .max = 100'000'000,
   .help = "Released locks whose records the embedded store keeps, so that their lastToken "
           "stays readable; the oldest releases beyond this are pruned and read lastToken 0."},
  // --- semantics ---
  {.key = "ttl-min-ms",
   .field = &config::ttl_min_ms,
   .min = 1,
   .max = 86'400'000,
   .help = "Shortest lease TTL a client may ask for; at most ttl-max-ms."},
  {.key = "ttl-max-ms",
   .field = &config::ttl_max_ms,
   .min = 1,
   .max = 86'400'000,
   .help = "Longest lease TTL a client may ask for."},
  {.key = "wait-max-ms",
   .field = &config::wait_max_ms,
   .min = 0,
   .max = 3'600'000,
   .help = "Longest time an acquire may wait for a held lock; 0 allows only try-once "
           "acquires."},
  {.key = "max-waiters-per-lock",
   .field = &config::max_waiters_per_lock,
   .min = 1,
   .max = 1'000'000,
   .help = "Waiters one lock may queue before further acquires get 429 too_many_waiters."},
  {.key = "list-limit-max",
   .field = &config::list_limit_max,
   .min = 1,
   .max = 100'000,
   .help = "Largest page size of GET /v1/locks."},
  // --- overload ---
  {.key = "shed-acquires-at",
   .field = &config::shed_acquires_at,
   .min = 1,
   .max = 10'000'000,
   .help = "Requests in progress (waiting acquires not counted) from which new acquires get 503 "
           "overloaded; renewals and releases are still served."},
  {.key = "shed-reads-at",
   .field = &config::shed_reads_at,
   .min = 1,
   .max = 10'000'000,
   .help = "Requests in progress from which status, check, list and subscribe are shed too."},
  {.key = "max-reads-in-flight",
   .field = &config::max_reads_in_flight,
   .min = 1,
   .max = 10'000'000,
   .help = "Reads in progress (status, check, list, subscribe snapshots) from which further "
           "reads get 503 overloaded: reads have a budget of their own, so that a read flood "
           "is shed before it can slow renewals down."},
  {.key = "max-in-flight",
   .field = &config::max_in_flight,
   .min = 1,
   .max = 10'000'000,
   .help = "Requests in progress from which everything is refused, renewals included; at "
           "least shed-reads-at, which is at least shed-acquires-at."},
  {.key = "max-waiters-total",
   .field = &config::max_waiters_total,
   .min = 1,
   .max = 10'000'000,
   .help = "Waiting acquires over all locks before further ones get 429 too_many_waiters."},
  {.key = "shed-io-lag-ms",
   .field = &config::shed_io_lag_ms,
   .min = 0,
   .max = 600'000,
   .help = "Lag of the network I/O loop from which new acquires are shed too; 0 means lag never "
           "sheds."},
  {.key = "shed-store-latency-ms",
   .field = &config::shed_store_latency_ms,
   .min = 0,
   .max = 600'000,
   .help = "Average round trip of the store's lease writes from which new acquires are shed "
           "too (renewals still go through); 0 means store latency never sheds."},
  {.key = "max-locks",
   .field = &config::max_locks,
   .min = 1,
   .max = 100'000'000,
   .help = "Locks held or in use at once; a request that needs one more gets 503 overloaded. "
           "Bounds memory under a flood of new lock names: with the embedded store about 1 KiB "
           "per held lease (some 1 GiB at the default), with Redis about 3 KiB."},
  {.key = "stall-threshold-ms",
   .field = &config::stall_threshold_ms,
   .min = 0,
   .max = 600'000,
   .help = "How late the watchdog's heartbeat must be to count as a stall of the process; 0 "
           "turns stall detection off."},
  {.key = "stall-grace-ms",
   .field = &config::stall_grace_ms,
   .min = 0,
   .max = 600'000,
   .help = "After a stall, how long the leases whose deadlines fell into it still count as "
           "held, so that their holders can renew before they expire."},
  {.key = "max-expiries-per-second",
   .field = &config::max_expiries_per_second,
   .min = 0,
   .max = 100'000'000,
   .help = "Lease expiries processed per second at most, in slices of 10 ms; the rest wait for "
           "the next slice, so that a mass expiry cannot starve renewals. 0 means no limit."},
  // --- runtime ---
  {.key = "actor-threads",
   .field = &config::actor_threads,
   .min = 0,
   .max = 256,
   .help = "Worker threads of the actor system; 0 means one per core."},
  {.key = "log-format",
   .field = &config::log_format,
   .check = check_log_format,
   .arg = "format",
   .help = "Format of the log lines on stdout: json (one object per line, the default) or text "
           "(ts level event key=value ...)."},
  {.key = "log-level",
   .field = &config::log_level,
   .check = check_log_level,
   .arg = "level",
   .help = "Least severe log level written to stdout: trace, debug, info, warn, error, "
           "critical or off."},
};

constexpr std::string_view env_prefix = "FENCELOCK_";

/// Variables of fencelock's clients: the server URL of the CLI, and what `fencelock run` gives
/// its child. A server started from such a child or shell must not trip over them.
constexpr std::string_view client_env_names[] = {"FENCELOCK_URL", "FENCELOCK_LOCK",
                                                 "FENCELOCK_TOKEN"};

/// Returns the setting named `key`, or null.
const setting* find_setting(std::string_view key) {
  for (const auto& s : settings)
    if (s.key == key)
      return &s;
  return nullptr;
}

/// Returns the environment variable of `key`: "data-dir" -> "FENCELOCK_DATA_DIR".
std::string env_name(std::string_view key) {
  std::string out{env_prefix};
  for (char c : key)
    out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool is_text(const setting& s) {
  return std::holds_alternative<std::string config::*>(s.field);
}

bool is_switch(const setting& s) {
  return std::holds_alternative<bool config::*>(s.field);
}

/// Whether `Member` points at an integer member of config (not text, not a switch).
template <class Member>
constexpr bool is_integer_member =
  !std::is_same_v<Member, std::string config::*> && !std::is_same_v<Member, bool config::*>;

std::string quoted(std::string_view x) {
  // Appended piecewise: GCC 12's -Wrestrict misfires on "\"" + std::string{x} at -O2.
  std::string out;
  out.reserve(x.size() + 2);
  out += '"';
  out += x;
  out += '"';
  return out;
}

/// Returns the value of `s` in `cfg` as it would be written in the INI file.
std::string value_text(const config& cfg, const setting& s) {
  return std::visit(
    [&](auto ptr) -> std::string {
      if constexpr (std::is_same_v<decltype(ptr), std::string config::*>)
        return cfg.*ptr;
      else if constexpr (std::is_same_v<decltype(ptr), bool config::*>)
        return cfg.*ptr ? "true" : "false";
      else
        return std::to_string(cfg.*ptr);
    },
    s.field);
}

std::string integer_rule(const setting& s) {
  return "must be an integer " + std::to_string(s.min) + ".." + std::to_string(s.max);
}

caf::error config_error(std::string msg) {
  return caf::make_error(caf::sec::invalid_argument, std::move(msg));
}

/// Marks what the command line got wrong: the message, then a tag that source_of() reads.
constexpr std::string_view usage_tag = "usage";

caf::error usage_error(std::string msg) {
  return caf::make_error(caf::sec::invalid_argument, std::move(msg), std::string{usage_tag});
}

/*
 * Stores `text` into the member of `s` in `cfg`, checking the setting's own rule (range or text
 * check; cross-field rules wait for validate()).
 * `origin`: where an environment or file value came from ("FENCELOCK_PORT", "file "/x.conf""),
 * appended to the error so a user can tell which hidden layer holds the bad value; "" for a
 * flag, which the user just typed.
 */
caf::error assign(config& cfg, const setting& s, const std::string& text,
                  const std::string& origin) {
  auto fail = [&](const std::string& why) {
    auto msg =
      std::string{s.key} + ": " + why + " (got " + quoted(s.shown ? s.shown(text) : text) + ")";
    if (origin.empty())
      return usage_error(std::move(msg)); // a flag: the user just typed it
    msg += "; set by " + origin;
    return config_error(std::move(msg));
  };
  if (auto text_field = std::get_if<std::string config::*>(&s.field)) {
    if (auto why = s.check ? s.check(text) : std::nullopt)
      return fail(*why);
    cfg.** text_field = text;
    return caf::none;
  }
  if (auto switch_field = std::get_if<bool config::*>(&s.field)) {
    // Exactly true or false: "ture" must not quietly mean either.
    if (text != "true" && text != "false")
      return fail("must be true or false");
    cfg.** switch_field = text == "true";
    return caf::none;
  }
  // Integers: parse as int64 (sign included) and range-check before narrowing, so that "-1" or
  // "99999999999999999999" is an error rather than a wrapped value.
  int64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || n < s.min
      || n > s.max)
    return fail(integer_rule(s));
  std::visit(
    [&](auto ptr) {
      if constexpr (is_integer_member<decltype(ptr)>)
        cfg.*ptr = static_cast<std::remove_reference_t<decltype(cfg.*ptr)>>(n);
    },
    s.field);
  return caf::none;
}

/// One value from one layer, waiting to be applied.
struct assignment {
  const setting* target;
  std::string text;
  std::string origin; // see assign()
};

/// The settings as Boost.Program_options options (the flags without --config and --help).
/// Each takes one raw token (untyped_value): converting and checking it is assign()'s job.
po::options_description file_options() {
  po::options_description desc;
  for (const auto& s : settings)
    desc.add_options()(std::string{s.key}.c_str(), new po::untyped_value(), "");
  return desc;
}

/// The flags: every setting plus --config and --help.
po::options_description flag_options() {
  auto desc = file_options();
  desc.add_options()("config", new po::untyped_value(), "")("help,h", "");
  return desc;
}

/// Returns the single value of a parsed option ("" for `key =` with nothing after it).
std::string single_value(const po::option& opt) {
  return opt.value.empty() ? std::string{} : opt.value.front();
}

/*
 * Parses the command line into `out`, and `config_path` when --config is given.
 * Each flag may appear once: a repeated flag is more likely a mistake than an override.
 */
caf::error parse_flags(const std::vector<std::string>& args, std::vector<assignment>& out,
                       std::optional<std::string>& config_path) {
  namespace style = po::command_line_style;
  const auto desc = flag_options(); // the parser keeps a pointer to it
  po::parsed_options parsed{nullptr};
  try {
    // No guessing: "--por" must not silently mean "--port".
    parsed = po::command_line_parser(args)
               .options(desc)
               .style(style::default_style & ~style::allow_guessing)
               .run();
  } catch (const po::unknown_option& e) {
    return usage_error(e.get_option_name() + ": unknown setting");
  } catch (const po::invalid_command_line_syntax& e) {
    if (e.get_option_name().empty()) // "--=..." names no flag at all (found by fuzz_config)
      return usage_error("command line: a flag has no name before its \"=\"");
    switch (e.kind()) {
      case po::invalid_syntax::missing_parameter:
      case po::invalid_syntax::empty_adjacent_parameter:
        return usage_error(e.get_option_name() + ": requires a value");
      case po::invalid_syntax::extra_parameter:
        return usage_error(e.get_option_name() + ": takes no value");
      default:
        return usage_error(e.get_option_name() + ": " + e.what());
    }
  } catch (const po::error& e) {
    return usage_error("command line: "s + e.what());
  }
  std::vector<std::string> seen;
  for (const auto& opt : parsed.options) {
    if (opt.string_key.empty()) // a positional token
      return usage_error(quoted(single_value(opt))
                         + ": unexpected argument (options are "
                           "--key value or --key=value)");
    auto flag = "--" + opt.string_key;
    if (std::find(seen.begin(), seen.end(), opt.string_key) != seen.end())
      return usage_error(flag + ": given more than once");
    seen.push_back(opt.string_key);
    if (opt.string_key == "config")
      config_path = single_value(opt);
    else if (auto s = find_setting(opt.string_key))
      out.push_back({s, single_value(opt), ""});
    // "help" was handled before parsing.
  }
  return caf::none;
}

/*
 * Reads the FENCELOCK_* entries of `env` ("KEY=VALUE") into `out`, and `config_path` from
 * FENCELOCK_CONFIG. Other variables are ignored; an unknown FENCELOCK_* is an error, because a
 * misspelt FENCELOCK_PORTT would otherwise leave the default in force without a word. The
 * client-side variables (client_env_names) are not the server's and are ignored.
 */
caf::error parse_env(const std::vector<std::string>& env, std::vector<assignment>& out,
                     std::optional<std::string>& config_path) {
  for (const auto& entry : env) {
    auto eq = entry.find('=');
    if (eq == std::string::npos || !entry.starts_with(env_prefix))
      continue;
    auto name = entry.substr(0, eq);
    auto value = entry.substr(eq + 1);
    if (name == env_name("config")) {
      config_path = value;
      continue;
    }
    if (std::find(std::begin(client_env_names), std::end(client_env_names), name)
        != std::end(client_env_names))
      continue;
    auto match = std::find_if(std::begin(settings), std::end(settings),
                              [&](const setting& s) { return env_name(s.key) == name; });
    if (match == std::end(settings))
      return config_error(name + ": unknown setting");
    out.push_back({&*match, value, name});
  }
  return caf::none;
}

/// Returns `x` without the blanks at either end.
std::string_view trimmed(std::string_view x) {
  constexpr std::string_view blanks = " \t\r";
  auto first = x.find_first_not_of(blanks);
  if (first == std::string_view::npos)
    return {};
  return x.substr(first, x.find_last_not_of(blanks) - first + 1);
}

/*
 * Reads the file at `path` into `out`: one "key = value" per line, keys as the flags without
 * "--", blanks around both ignored, "#" starting a comment (to the end of the line, as it did
 * with Boost.Program_options, which read this file before), blank lines ignored. Each error names
 * the file and the line. Keys may appear once. "[section]" headers are refused rather than
 * prefixed to the keys: every setting is top-level, and "[server]" then "port = 1" must not turn
 * into an unknown "server.port".
 */
caf::error parse_file(const std::string& path, std::vector<assignment>& out) {
  if (path.empty())
    return config_error("config: must name a file (got \"\")");
  std::ifstream in{path};
  if (!in)
    return config_error("config: cannot read " + quoted(path));
  auto where = [&](size_t line) { return quoted(path) + " line " + std::to_string(line); };
  std::vector<std::pair<const setting*, size_t>> seen; // setting, line
  std::string text;
  for (size_t number = 1; std::getline(in, text); ++number) {
    std::string_view line = text;
    line = trimmed(line.substr(0, line.find('#')));
    if (line.empty())
      continue;
    if (line.front() == '[')
      return config_error(std::string{line}
                          + ": sections are not supported; write every setting "
                            "as a top-level \"key = value\" line (in "
                          + where(number) + ")");
    auto eq = line.find('=');
    auto key = trimmed(line.substr(0, eq));
    if (eq == std::string_view::npos || key.empty())
      return config_error("config: " + where(number) + ": expected \"key = value\" (got "
                          + quoted(line) + ")");
    const auto* s = find_setting(key);
    if (s == nullptr)
      return config_error(std::string{key} + ": unknown setting (in " + where(number) + ")");
    auto before = std::find_if(seen.begin(), seen.end(), [&](auto& x) { return x.first == s; });
    if (before != seen.end())
      return config_error(std::string{key} + ": set more than once in " + quoted(path) + " (lines "
                          + std::to_string(before->second) + " and " + std::to_string(number)
                          + ")");
    seen.emplace_back(s, number);
    out.push_back({s, std::string{trimmed(line.substr(eq + 1))}, "file " + where(number)});
  }
  if (in.bad())
    return config_error("config: cannot read " + quoted(path));
  return caf::none;
}

std::string help_text() {
  std::string out =
    "Settings come from flags, FENCELOCK_* environment variables and an INI file, in that\n"
    "order of precedence; anything unset keeps its built-in default. Unknown settings and\n"
    "invalid values are errors. Flags take --key value or --key=value.\n"
    "\n"
    "  --config <path>  (FENCELOCK_CONFIG; default: none)\n"
    "      File of settings: one \"key = value\" per line, keys as the flags without \"--\",\n"
    "      # starts a comment, no [sections]. Errors name the line. The packaged file\n"
    "      /etc/fencelock/fencelock.conf documents every key.\n";
  const config defaults;
  for (const auto& s : settings) {
    auto arg = is_text(s)     ? std::string{s.arg}
               : is_switch(s) ? std::string{"true|false"}
                              : std::to_string(s.min) + ".." + std::to_string(s.max);
    out += "  --" + std::string{s.key} + " <" + arg + ">  (" + env_name(s.key)
           + "; default: " + value_text(defaults, s) + ")\n      " + std::string{s.help} + "\n";
  }
  out += "  -h, --help\n      Print this help and exit.\n";
  return out;
}

bool wants_help(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(),
                     [](const std::string& x) { return x == "--help" || x == "-h"; });
}

} // namespace

std::vector<setting_doc> setting_docs() {
  std::vector<setting_doc> out;
  const config defaults;
  for (const auto& s : settings) {
    auto arg = is_text(s)     ? std::string{s.arg}
               : is_switch(s) ? std::string{"true|false"}
                              : std::to_string(s.min) + ".." + std::to_string(s.max);
    out.push_back({std::string{s.key}, arg,
                   std::string{s.help} + " (" + env_name(s.key)
                     + "; default: " + value_text(defaults, s) + ")"});
  }
  return out;
}

error_source source_of(const caf::error& err) {
  const auto& ctx = err.context();
  if (ctx.size() >= 2 && ctx.match_element<std::string>(1)
      && ctx.get_as<std::string>(1) == usage_tag)
    return error_source::command_line;
  return error_source::configuration;
}

caf::expected<load_result> load(const std::vector<std::string>& args,
                                const std::vector<std::string>& env) {
  load_result result;
  // Help wins over everything, so that it works even with a broken environment or file.
  if (wants_help(args)) {
    result.help = true;
    result.help_text = help_text();
    return result;
  }
  std::vector<assignment> from_flags;
  std::vector<assignment> from_env;
  std::vector<assignment> from_file;
  std::optional<std::string> flag_config;
  std::optional<std::string> env_config;
  if (auto err = parse_flags(args, from_flags, flag_config))
    return err;
  if (auto err = parse_env(env, from_env, env_config))
    return err;
  if (auto path = flag_config ? flag_config : env_config)
    if (auto err = parse_file(*path, from_file))
      return err;
  // Apply the lowest layer first so that higher layers overwrite it.
  for (const auto* layer : {&from_file, &from_env, &from_flags})
    for (const auto& a : *layer)
      if (auto err = assign(result.cfg, *a.target, a.text, a.origin))
        return err;
  if (auto err = validate(result.cfg))
    return err;
  return result;
}

caf::error validate(const fencelock::config& cfg) {
  for (const auto& s : settings) {
    auto value = value_text(cfg, s);
    std::optional<std::string> why;
    if (is_switch(s))
      continue; // either value is valid
    if (is_text(s)) {
      if (s.check)
        why = s.check(value);
    } else {
      // Every integer member fits int64 (uint32 at most), so the comparison is exact.
      auto n = std::visit(
        [&](auto ptr) -> int64_t {
          if constexpr (is_integer_member<decltype(ptr)>)
            return static_cast<int64_t>(cfg.*ptr);
          else
            return 0;
        },
        s.field);
      if (n < s.min || n > s.max)
        why = integer_rule(s);
    }
    if (why)
      return config_error(std::string{s.key} + ": " + *why + " (got "
                          + quoted(s.shown ? s.shown(value) : value) + ")");
  }
  if (cfg.ttl_min_ms > cfg.ttl_max_ms)
    return config_error("ttl-min-ms: must not exceed ttl-max-ms (got "
                        + std::to_string(cfg.ttl_min_ms) + " > " + std::to_string(cfg.ttl_max_ms)
                        + ")");
  // Acquires are shed first, then reads, then everything: the thresholds must climb.
  if (cfg.shed_acquires_at > cfg.shed_reads_at)
    return config_error("shed-acquires-at: must not exceed shed-reads-at (got "
                        + std::to_string(cfg.shed_acquires_at) + " > "
                        + std::to_string(cfg.shed_reads_at) + ")");
  if (cfg.shed_reads_at > cfg.max_in_flight)
    return config_error("shed-reads-at: must not exceed max-in-flight (got "
                        + std::to_string(cfg.shed_reads_at) + " > "
                        + std::to_string(cfg.max_in_flight) + ")");
  if (cfg.tls_cert.empty() != cfg.tls_key.empty())
    return config_error(cfg.tls_cert.empty() ? "tls-cert: must be set with tls-key"
                                             : "tls-key: must be set with tls-cert");
  if (!cfg.tls_client_ca.empty() && cfg.tls_cert.empty())
    return config_error("tls-client-ca: needs tls-cert and tls-key (mutual TLS is TLS)");
  return caf::none;
}

} // namespace fencelock::config_loader
