// The command line of the fencelock binary, on CLI11: one App with a subcommand per command.
// Values are bound as text and converted after parsing, so that each message names the flag
// as the user can type it and says what is expected.

#include "client/cli/args.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>

#include "client/endpoint.hpp"

namespace fencelock::cli {

namespace {

using std::chrono::milliseconds;

/// Largest fencing token (2^53 - 1, exact in JSON).
constexpr uint64_t max_token = (uint64_t{1} << 53) - 1;

constexpr std::string_view duration_examples = "1h, 90s, 1m30s or 250ms";

constexpr std::string_view footer_text = R"(Environment:
  FENCELOCK_URL     The server(s) when --url is not given (default http://127.0.0.1:7070).
  FENCELOCK_AUTH_TOKEN  The bearer token when --auth-token-file is not given.

Durations: integers with units, largest first: 1h, 90s, 1m30s, 250ms; a bare number is
milliseconds. Output (-o): table on a terminal, JSON lines (one object each) otherwise.

Exit codes: 0 ok; 64 usage error, or the server refused the request as invalid;
69 server unreachable, no answer in time, store unavailable; 75 lock not acquired within
--wait; 76 lease lost (run: the command was stopped; release, renew: the lease had already
ended; check: the token is not current); 77 not permitted (a bearer token missing, wrong or
without the permission). serve: 69 store, 71 listener, 78 configuration.
See docs/cli.md or man fencelock.)";

/// One command: its name, what it does, and its synopsis.
struct command_info {
  std::string_view name;
  std::string_view summary;
  std::string_view usage;
  bool hidden = false;
};

constexpr command_info commands[] = {
  {"serve",
   "Run the lock service until SIGTERM or SIGINT; `fencelock serve --help` lists "
   "every setting.",
   "serve [--config FILE] [--<setting> VALUE...]"},
  {"run",
   "Hold a lock while a command runs: the command gets FENCELOCK_LOCK and "
   "FENCELOCK_TOKEN, the lease is renewed while it runs and released when it exits; a "
   "lost lease stops it (SIGTERM, SIGKILL after --grace).",
   "run <name> [options] -- <command> [args...]"},
  {"acquire", "Acquire a lease and print it (it is neither renewed nor released).",
   "acquire <name> [-O owner] [-t ttl] [-w wait]"},
  {"release", "Release a lease (or, as an admin, force-release whoever's with --force).",
   "release <name> -O owner -T token | release <name> --force [-T token]"},
  {"renew", "Renew a lease once, for --ttl from now (default: its own TTL), and print it.",
   "renew <name> -O owner -T token [-t ttl]"},
  {"status", "Print a lock's status.", "status <name>"},
  {"check", "Tell whether a token is the lock's current lease: exit 0 if it is, 76 if not.",
   "check <name> -T token"},
  {"list", "List the held locks whose names start with <prefix> (all without one).",
   "list [prefix]"},
  {"watch",
   "Print a lock's state (or every lock's under 'prefix*'), then every change, "
   "until SIGINT or SIGTERM.",
   "watch <name> | watch '<prefix>*'"},
  {"version", "Print the version.", "version [-o json|table]"},
  {"completion", "Print the completion script for bash or zsh.", "completion bash|zsh"},
  {"manpage", "Print the man page (troff), for the build to install.", "manpage", true},
};

/// Returns the synopsis of command `name` (after "fencelock "), or of the binary for "".
std::string_view usage_of(std::string_view name) {
  for (const auto& c : commands)
    if (c.name == name)
      return c.usage;
  return "<command> [options]  (fencelock <command> --help: its options)";
}

/// Returns `text` wrapped at `width` columns, words kept whole.
std::string wrap(std::string_view text, size_t width) {
  std::string out;
  size_t line = 0;
  while (!text.empty()) {
    auto space = text.find(' ');
    auto word = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view{} : text.substr(space + 1);
    if (line > 0 && line + 1 + word.size() > width) {
      out += '\n';
      line = 0;
    } else if (line > 0) {
      out += ' ';
      ++line;
    }
    out += word;
    line += word.size();
  }
  return out;
}

/// CLI11's help, laid out like the rest of the binary's texts: the synopsis first, then what
/// the command does, its options with wrapped descriptions, the footer.
class help_formatter final : public CLI::Formatter {
public:
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override {
    if (mode == CLI::AppFormatMode::Sub)
      return make_expanded(app);
    return make_usage(app, name) + "\n" + wrap(app->get_description(), 96) + "\n"
           + make_positionals(app) + make_groups(app, mode) + make_subcommands(app, mode) + "\n"
           + make_footer(app);
  }

  std::string make_usage(const CLI::App* app, std::string) const override {
    auto name = app->get_parent() == nullptr ? std::string{} : app->get_name();
    return "Usage: fencelock " + std::string{usage_of(name)} + "\n";
  }

  std::string make_option_name(const CLI::Option* o, bool positional) const override {
    // One word at most is taken (more is an error), so no "..." after the name.
    return positional ? o->get_name() : CLI::Formatter::make_option_name(o, positional);
  }

  std::string make_option_opts(const CLI::Option* o) const override {
    return o->get_positional() ? std::string{} : CLI::Formatter::make_option_opts(o);
  }

  std::string make_option_desc(const CLI::Option* o) const override {
    return wrap(o->get_description(), 70);
  }

  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_name(), wrap(sub->get_description(), 70), column_width_);
    return out.str();
  }
};

/// Reads flags and positionals as text; every subcommand binds into the one it uses.
struct raw_values {
  std::string url;
  std::string auth_token_file;
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string output;
  std::string owner;
  std::string ttl;
  std::string wait;
  std::string grace;
  std::string token;
  std::string shell;
  std::vector<std::string> positionals;
  bool session = false;
  bool force = false;
};

/// The App and what its options bind to.
struct command_line {
  CLI::App app{"A distributed lock service with fencing tokens, served over HTTP/JSON and "
               "WebSocket. Commands other than serve are clients of a running server.",
               "fencelock"};
  raw_values v;
  std::map<std::string, CLI::App*, std::less<>> subs;
  std::map<std::string, std::vector<std::string>, std::less<>> choices; // by long flag name

  explicit command_line(const cli_context& ctx);

  CLI::Option* value(CLI::App* s, const std::string& names, std::string& into,
                     const std::string& type, const std::string& help) {
    auto* o = s->add_option(names, into, help)->type_name(type);
    o->multi_option_policy(CLI::MultiOptionPolicy::TakeAll); // repeats are refused later
    return o;
  }

  void url(CLI::App* s) {
    value(s, "-u,--url", v.url, "URL[,URL...]",
          "The server: http://host:port or ws://host:port, or several separated by commas "
          "(instances sharing one store; tried in turn). Default: $FENCELOCK_URL, else "
          "http://127.0.0.1:7070.");
    value(s, "--auth-token-file", v.auth_token_file, "FILE",
          "A file whose first line is the bearer token of this client's principal, for a server "
          "with an auth-file (docs/security.md). Default: $FENCELOCK_AUTH_TOKEN, else none.");
    value(s, "--ca-file", v.ca_file, "FILE",
          "For https:// and wss://: the CA certificates (PEM) the server's certificate must "
          "chain to. Default: the system's. The certificate must name the URL's host.");
    value(s, "--cert-file", v.cert_file, "FILE",
          "For a server that asks for a client certificate (mutual TLS): its PEM chain; with "
          "--key-file.");
    value(s, "--key-file", v.key_file, "FILE", "The private key (PEM) of --cert-file.");
  }

  void output(CLI::App* s) {
    value(s, "-o,--output", v.output, "json|table",
          "Output format: table (human times, local time) or json (one object per line). "
          "Default: table on a terminal, json otherwise.");
    choices["--output"] = {"json", "table"};
  }

  void owner(CLI::App* s, const std::string& help) {
    value(s, "-O,--owner", v.owner, "OWNER", help);
  }

  void token(CLI::App* s, const std::string& help) {
    value(s, "-T,--token", v.token, "TOKEN", help);
  }

  void duration(CLI::App* s, const std::string& names, std::string& into, const std::string& help) {
    value(s, names, into, "DURATION", help);
  }

  void positional(CLI::App* s, const std::string& name, const std::string& help) {
    s->add_option(name, v.positionals, help)->type_name("");
  }
};

command_line::command_line(const cli_context& ctx) {
  app.formatter(std::make_shared<help_formatter>());
  app.set_help_flag("-h,--help", "Print this help and exit.");
  app.set_version_flag("--version", ctx.version, "Print the version and exit.");
  app.footer(std::string{footer_text});
  app.allow_extras(); // unknown commands are reported by us, in words
  for (const auto& c : commands) {
    auto* s = app.add_subcommand(std::string{c.name}, std::string{c.summary});
    s->allow_extras();
    s->set_help_flag("-h,--help", "Print this help and exit.");
    s->set_version_flag("--version", ctx.version, "Print the version and exit.");
    if (c.hidden)
      s->group("");
    subs.emplace(c.name, s);
  }
  app.require_subcommand(0, 1);
  subs["serve"]->prefix_command(); // the configuration loader parses its arguments

  auto* run = subs["run"];
  positional(run, "name", "The lock.");
  duration(run, "-t,--ttl", v.ttl, "Lease TTL (default 30s); renewed every third of it.");
  duration(run, "-w,--wait", v.wait,
           "How long to wait for the lock in the server's queue (default 0: try once).");
  owner(run, "Owner name (default <hostname>:<pid>:<random hex>).");
  duration(run, "-g,--grace", v.grace,
           "Time between SIGTERM and SIGKILL after the lease is lost (default 5s).");
  run
    ->add_flag("-s,--session", v.session,
               "Bind the lease to the connection: it ends when the connection drops (and "
               "then counts as lost) instead of surviving a reconnect.")
    ->disable_flag_override();
  url(run);

  auto* acquire = subs["acquire"];
  positional(acquire, "name", "The lock.");
  owner(acquire, "Owner name (default <hostname>:<pid>:<random hex>; printed).");
  duration(acquire, "-t,--ttl", v.ttl, "Lease TTL (default 30s).");
  duration(acquire, "-w,--wait", v.wait,
           "How long to wait for the lock in the server's queue (default 0: try once).");
  url(acquire);
  output(acquire);

  auto* release = subs["release"];
  positional(release, "name", "The lock.");
  owner(release, "The owner the lease was granted to (required without --force).");
  token(release, "The lease's fencing token (required without --force; with it, only that "
                 "lease is ended).");
  release
    ->add_flag(
      "-f,--force", v.force,
      "An admin's force-release: end the lock's lease whoever holds it (docs/security.md); "
      "its holder is told lease_lost (revoked).")
    ->disable_flag_override();
  url(release);
  output(release);

  auto* renew = subs["renew"];
  positional(renew, "name", "The lock.");
  owner(renew, "The owner the lease was granted to (required).");
  token(renew, "The lease's fencing token (required).");
  duration(renew, "-t,--ttl", v.ttl, "New TTL from now (default: the lease's own TTL).");
  url(renew);
  output(renew);

  auto* status = subs["status"];
  positional(status, "name", "The lock.");
  url(status);
  output(status);

  auto* check = subs["check"];
  positional(check, "name", "The lock.");
  token(check, "The fencing token to check (required).");
  url(check);
  output(check);

  auto* list = subs["list"];
  positional(list, "prefix", "Only locks whose names start with it.");
  url(list);
  output(list);

  auto* watch = subs["watch"];
  positional(watch, "name", "A lock, or a prefix ending in * ('*' alone: every lock).");
  url(watch);
  output(watch);

  output(subs["version"]);

  auto* completion = subs["completion"];
  completion->add_option("shell", v.shell, "bash or zsh.")->type_name("");
  choices["shell"] = {"bash", "zsh"};
}

/// Returns the option named `flag` ("--ttl") of `s`, or null.
const CLI::Option* find_option(const CLI::App* s, std::string_view flag) {
  for (const auto* o : s->get_options())
    for (const auto& l : o->get_lnames())
      if ("--" + l == flag)
        return o;
  return nullptr;
}

/// Returns whether the user gave `flag` to `s`.
bool given(const CLI::App* s, std::string_view flag) {
  const auto* o = find_option(s, flag);
  return o != nullptr && o->count() > 0;
}

bool printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

/// Converts what the user typed, checking each value; returns a usage error or "".
class converter {
public:
  converter(const CLI::App* s, const raw_values& v) : s_(s), v_(v) {
  }

  /// Checks that no flag was given twice (CLI11 takes them all; we refuse).
  std::string repeats() const {
    for (const auto* o : s_->get_options())
      if (!o->get_positional() && o->get_lnames().size() == 1 && o->get_expected_min() > 0
          && o->count() > 1)
        return "--" + o->get_lnames().front() + ": given more than once";
    return {};
  }

  std::string duration(std::string_view flag, const std::string& text, milliseconds& out,
                       bool positive) const {
    if (!given(s_, flag))
      return {};
    auto d = parse_duration(text);
    if (!d || (positive && d->count() == 0))
      return std::string{flag} + ": expected " + (positive ? "a positive" : "a")
             + " duration such as " + std::string{duration_examples} + " (got \"" + text + "\")";
    out = *d;
    return {};
  }

  std::string owner(std::string& out, bool required) const {
    if (!given(s_, "--owner")) {
      if (required)
        return "--owner: required (the owner the lease was granted to)";
      return {};
    }
    if (v_.owner.empty())
      return "--owner: must not be empty (leave --owner out for a generated owner)";
    if (v_.owner.size() > 128 || !printable(v_.owner))
      return "--owner: must be 1..128 printable ASCII characters";
    out = v_.owner;
    return {};
  }

  std::string token(uint64_t& out) const {
    const auto& t = v_.token;
    auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    if (!given(s_, "--token") || t.empty() || ec != std::errc{} || ptr != t.data() + t.size()
        || out == 0 || out > max_token)
      return "--token: required, a positive integer (the lease's fencing token)"
             + (given(s_, "--token") ? " (got \"" + t + "\")" : std::string{});
    return {};
  }

  std::string common(const cli_context& ctx, common_args& out) const {
    if (find_option(s_, "--url") != nullptr) {
      std::string origin = "--url";
      out.url = v_.url;
      if (!given(s_, "--url")) {
        out.url = ctx.env_url.empty() ? std::string{default_url} : ctx.env_url;
        origin = "FENCELOCK_URL";
      }
      std::string why;
      if (!detail::parse_endpoints(out.url, why))
        return origin + ": " + why + " (expected http://host:port or ws://host:port, https:// or "
               + "wss:// for TLS, or several separated by commas)";
      out.bearer_token = ctx.env_auth_token;
      if (given(s_, "--auth-token-file")) {
        // A file rather than a flag: a flag's value shows in `ps` to every user.
        std::ifstream in{v_.auth_token_file};
        std::getline(in, out.bearer_token);
        if (!in && !in.eof())
          return "--auth-token-file: cannot read \"" + v_.auth_token_file + "\"";
        while (!out.bearer_token.empty()
               && (out.bearer_token.back() == '\r' || out.bearer_token.back() == ' '))
          out.bearer_token.pop_back();
        if (out.bearer_token.empty())
          return "--auth-token-file: \"" + v_.auth_token_file + "\" has no token on its first line";
      }
      out.tls_ca_file = v_.ca_file;
      out.tls_cert_file = v_.cert_file;
      out.tls_key_file = v_.key_file;
      if (given(s_, "--cert-file") != given(s_, "--key-file"))
        return std::string{given(s_, "--cert-file") ? "--cert-file" : "--key-file"}
               + ": give --cert-file and --key-file together (a client certificate)";
      if (!printable(out.bearer_token))
        return std::string{given(s_, "--auth-token-file") ? "--auth-token-file"
                                                          : "FENCELOCK_AUTH_TOKEN"}
               + ": the token must be printable ASCII";
    }
    out.output = ctx.stdout_is_tty ? output_format::table : output_format::json;
    if (given(s_, "--output")) {
      if (v_.output == "json")
        out.output = output_format::json;
      else if (v_.output == "table")
        out.output = output_format::table;
      else
        return "--output: expected json or table (got \"" + v_.output + "\")";
    }
    return {};
  }

  /// Takes the single positional argument named `what` into `out`.
  std::string one_positional(std::string_view what, std::string& out, bool required) const {
    if (v_.positionals.size() > 1)
      return "unexpected argument \"" + v_.positionals[1] + "\""
             + (s_->get_name() == "run" ? " (the command to run comes after \"--\")" : "");
    if (v_.positionals.empty())
      return required ? "missing " + std::string{what} : std::string{};
    out = v_.positionals.front();
    return {};
  }

private:
  const CLI::App* s_;
  const raw_values& v_;
};

/// Turns what CLI11 left over (remaining()) into a message: an unknown option or argument.
std::string leftover_error(const std::vector<std::string>& rest) {
  const auto& x = rest.front();
  if (x.starts_with("-") && x != "-") {
    auto name = x.substr(0, x.find('='));
    return name + ": unknown option";
  }
  return "unexpected argument \"" + x + "\"";
}

/// Builds the command of subcommand `name` from the parsed values of `s`; `after_dashes`: the
/// words after "--" (run only). Returns the command, or sets `error`.
std::optional<cli_command> build(const std::string& name, const CLI::App* s, const raw_values& v,
                                 const cli_context& ctx, std::vector<std::string> after_dashes,
                                 std::string& error) {
  converter c{s, v};
  std::vector<std::string> errors{c.repeats()};
  auto result = [&](auto args) -> std::optional<cli_command> {
    error.clear();
    for (const auto& e : errors)
      if (!e.empty() && error.empty())
        error = e;
    if (!error.empty())
      return std::nullopt;
    return cli_command{std::move(args)};
  };
  auto with_common = [&](common_args& a) { errors.push_back(c.common(ctx, a)); };
  if (name == "run") {
    run_args a;
    errors.push_back(c.one_positional("lock name", a.name, true));
    with_common(a);
    errors.push_back(c.owner(a.owner, false));
    errors.push_back(c.duration("--ttl", v.ttl, a.ttl, true));
    errors.push_back(c.duration("--wait", v.wait, a.wait, false));
    errors.push_back(c.duration("--grace", v.grace, a.grace, false));
    a.session = v.session;
    a.command = std::move(after_dashes);
    if (a.command.empty())
      errors.push_back("missing the command to run after \"--\" (fencelock run <name> -- "
                       "<command> [args...])");
    return result(std::move(a));
  }
  if (name == "acquire") {
    acquire_args a;
    errors.push_back(c.one_positional("lock name", a.name, true));
    with_common(a);
    errors.push_back(c.owner(a.owner, false));
    errors.push_back(c.duration("--ttl", v.ttl, a.ttl, true));
    errors.push_back(c.duration("--wait", v.wait, a.wait, false));
    return result(std::move(a));
  }
  if (name == "release" && v.force) {
    release_args r;
    errors.push_back(c.one_positional("lock name", r.name, true));
    with_common(r);
    r.force = true;
    if (given(s, "--owner"))
      errors.push_back("--owner: not with --force (a force-release ends whoever's lease)");
    if (given(s, "--token"))
      errors.push_back(c.token(r.token));
    return result(std::move(r));
  }
  if (name == "release" || name == "renew") {
    renew_args a;
    errors.push_back(c.one_positional("lock name", a.name, true));
    with_common(a);
    errors.push_back(c.owner(a.owner, true));
    errors.push_back(c.token(a.token));
    if (name == "release") {
      release_args r;
      static_cast<common_args&>(r) = a;
      r.name = a.name;
      r.owner = a.owner;
      r.token = a.token;
      return result(std::move(r));
    }
    errors.push_back(c.duration("--ttl", v.ttl, a.ttl, true));
    return result(std::move(a));
  }
  if (name == "status") {
    status_args a;
    errors.push_back(c.one_positional("lock name", a.name, true));
    with_common(a);
    return result(std::move(a));
  }
  if (name == "check") {
    check_args a;
    errors.push_back(c.one_positional("lock name", a.name, true));
    with_common(a);
    errors.push_back(c.token(a.token));
    return result(std::move(a));
  }
  if (name == "list") {
    list_args a;
    errors.push_back(c.one_positional("prefix", a.prefix, false));
    with_common(a);
    return result(std::move(a));
  }
  if (name == "watch") {
    watch_args a;
    errors.push_back(c.one_positional("lock name or 'prefix*'", a.target, true));
    with_common(a);
    if (a.target.ends_with('*')) {
      a.target.pop_back();
      a.prefix = true;
    }
    return result(std::move(a));
  }
  if (name == "version") {
    common_args common;
    errors.push_back(c.common(ctx, common));
    return result(version_args{common.output});
  }
  if (name == "completion") {
    if (v.shell != "bash" && v.shell != "zsh")
      errors.push_back(v.shell.empty() ? std::string{"missing the shell: bash or zsh"}
                                       : "expected bash or zsh (got \"" + v.shell + "\")");
    return result(completion_args{v.shell});
  }
  if (name == "manpage")
    return result(manpage_args{});
  error = "unknown command \"" + name + "\"";
  return std::nullopt;
}

} // namespace

std::optional<milliseconds> parse_duration(std::string_view text) {
  if (text.empty())
    return std::nullopt;
  // A bare number: milliseconds, as before units were required.
  int64_t bare = 0;
  auto [bare_end, bare_ec] = std::from_chars(text.data(), text.data() + text.size(), bare);
  if (bare_ec == std::errc{} && bare_end == text.data() + text.size())
    return bare < 0 || bare > std::numeric_limits<int64_t>::max() / 1'000'000
             ? std::nullopt
             : std::optional<milliseconds>{bare};
  struct unit {
    std::string_view name;
    int64_t ms;
  };
  // Largest first; a unit may appear once, after every larger one ("1m30s", not "30s1m").
  static constexpr unit units[] = {{"h", 3'600'000}, {"m", 60'000}, {"s", 1'000}, {"ms", 1}};
  constexpr int64_t limit = std::numeric_limits<int64_t>::max() / 1'000'000;
  int64_t total = 0;
  size_t next_unit = 0;
  while (!text.empty()) {
    int64_t n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc{} || end == text.data() || n < 0)
      return std::nullopt;
    text.remove_prefix(static_cast<size_t>(end - text.data()));
    size_t letters = 0;
    while (letters < text.size() && text[letters] >= 'a' && text[letters] <= 'z')
      ++letters;
    auto name = text.substr(0, letters);
    text.remove_prefix(letters);
    size_t u = next_unit;
    while (u < std::size(units) && units[u].name != name)
      ++u;
    if (u == std::size(units) || n > limit / units[u].ms)
      return std::nullopt;
    total += n * units[u].ms;
    if (total > limit)
      return std::nullopt;
    next_unit = u + 1;
  }
  return milliseconds{total};
}

std::string format_duration(milliseconds d) {
  if (d.count() <= 0)
    return "0s";
  std::string out;
  auto ms = d.count();
  for (auto [name, size] :
       {std::pair<const char*, int64_t>{"h", 3'600'000}, {"m", 60'000}, {"s", 1'000}, {"ms", 1}}) {
    if (ms >= size) {
      out += std::to_string(ms / size) + name;
      ms %= size;
    }
  }
  return out;
}

std::string_view help_footer() noexcept {
  return footer_text;
}

parsed_command parse_command_line(const std::vector<std::string>& args, const cli_context& ctx) {
  parsed_command out;
  if (args.empty()) {
    out.error = "missing command";
    return out;
  }
  auto words = args;
  if (words.front() == "help") { // `fencelock help [command]`, as `--help`
    words.erase(words.begin());
    words.emplace_back("--help");
  }
  // serve belongs to the configuration loader: its flags are the settings (config/load.hpp).
  if (words.front() == "serve") {
    out.name = "serve";
    if (std::find(words.begin() + 1, words.end(), "--version") != words.end()) {
      out.print = ctx.version + "\n";
      return out;
    }
    out.cmd = serve_args{{words.begin() + 1, words.end()}};
    return out;
  }
  // run: what follows "--" is the command, whatever it looks like; CLI11 never sees it.
  std::vector<std::string> after_dashes;
  if (words.front() == "run") {
    auto dashes = std::find(words.begin(), words.end(), "--");
    if (dashes != words.end()) {
      after_dashes.assign(dashes + 1, words.end());
      words.erase(dashes, words.end());
    }
  }
  command_line cl{ctx};
  std::reverse(words.begin(), words.end()); // CLI11 takes the arguments last first
  try {
    cl.app.parse(words);
  } catch (const CLI::CallForHelp&) {
    out.print = cl.app.help();
    return out;
  } catch (const CLI::CallForAllHelp&) {
    out.print = cl.app.help("", CLI::AppFormatMode::All);
    return out;
  } catch (const CLI::CallForVersion& e) {
    out.print = std::string{e.what()} + "\n";
    return out;
  } catch (const CLI::ParseError& e) {
    // CLI11's words, except where ours name the flag better.
    out.error = e.what();
    constexpr std::string_view override_text = " was given a disallowed flag override";
    if (auto at = out.error.find(override_text); at != std::string::npos)
      out.error = "--" + out.error.substr(0, at) + ": takes no value";
    auto first = args.front() == "help" && args.size() > 1 ? args[1] : args.front();
    if (std::any_of(std::begin(commands), std::end(commands),
                    [&](const command_info& c) { return c.name == first; }))
      out.name = first;
    return out;
  }
  auto parsed = cl.app.get_subcommands();
  if (parsed.empty()) {
    auto rest = cl.app.remaining();
    out.error = rest.empty()                    ? "missing command"
                : rest.front().starts_with("-") ? leftover_error(rest)
                                                : "unknown command \"" + rest.front() + "\"";
    return out;
  }
  const auto* sub = parsed.front();
  out.name = sub->get_name();
  if (auto rest = sub->remaining(); !rest.empty()) {
    out.error = leftover_error(rest);
    if (out.name == "run" && !rest.front().starts_with("-"))
      out.error += " (the command to run comes after \"--\")";
    return out;
  }
  out.cmd = build(out.name, sub, cl.v, ctx, std::move(after_dashes), out.error);
  return out;
}

std::vector<command_doc> describe_commands(const cli_context& ctx) {
  command_line cl{ctx};
  std::vector<command_doc> out;
  for (const auto& info : commands) {
    const auto* s = cl.subs.find(info.name)->second;
    command_doc doc;
    doc.name = std::string{info.name};
    doc.summary = std::string{info.summary};
    doc.usage = std::string{info.usage};
    doc.hidden = info.hidden;
    for (const auto* o : s->get_options()) {
      if (o->get_positional()) {
        doc.positionals.push_back(o->get_name());
        continue;
      }
      option_doc od;
      for (const auto& n : o->get_snames())
        od.names.push_back("-" + n);
      for (const auto& n : o->get_lnames())
        od.names.push_back("--" + n);
      od.arg = o->get_expected_min() > 0 ? o->get_type_name() : "";
      od.help = o->get_description();
      if (auto it = cl.choices.find(od.names.back()); it != cl.choices.end())
        od.choices = it->second;
      doc.options.push_back(std::move(od));
    }
    if (info.name == "completion")
      doc.positional_choices = cl.choices.at("shell");
    if (info.name == "serve") {
      doc.options.push_back({{"--config"},
                             "FILE",
                             "The configuration file (FENCELOCK_CONFIG): key = value lines.",
                             {}});
      for (const auto& f : ctx.serve_flags)
        doc.options.push_back({{"--" + f.name}, f.arg, f.help, {}});
    }
    out.push_back(std::move(doc));
  }
  return out;
}

} // namespace fencelock::cli
