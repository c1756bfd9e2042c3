#include "client/cli/args.hpp"

#include <algorithm>
#include <charconv>
#include <map>

namespace fencelock::cli {

namespace {

using std::chrono::milliseconds;

struct flag {
  std::string_view name;  // without the leading "--"
  bool takes_value;
};

// What scan() found: flag values by name ("" for a flag without value), positional arguments
// in order, and the words after "--".
struct scanned {
  std::map<std::string, std::string, std::less<>> values;
  std::vector<std::string> positional;
  std::vector<std::string> rest;
  bool help = false;
};

/*
 * Splits `args` by the flags in `known`. `allow_rest`: whether "--" may end the options (its
 * words go to `rest`). Returns a usage error, or "" on success.
 */
std::string scan(const std::vector<std::string>& args, const std::vector<flag>& known,
                 bool allow_rest, scanned& out) {
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& arg = args[i];
    if (arg == "--") {
      if (!allow_rest)
        return "unexpected \"--\"";
      out.rest.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      return {};
    }
    if (arg == "-h" || arg == "--help") {
      out.help = true;
      continue;
    }
    if (!arg.starts_with("-") || arg == "-") {
      out.positional.push_back(arg);
      continue;
    }
    if (!arg.starts_with("--"))
      return arg + ": unknown option";
    auto eq = arg.find('=');
    auto name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    auto f = std::find_if(known.begin(), known.end(),
                          [&](const flag& k) { return k.name == name; });
    if (f == known.end())
      return "--" + name + ": unknown option";
    if (out.values.contains(name))
      return "--" + name + ": given more than once";
    if (!f->takes_value) {
      if (eq != std::string::npos)
        return "--" + name + ": takes no value";
      out.values[name] = "";
      continue;
    }
    if (eq != std::string::npos) {
      out.values[name] = arg.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      out.values[name] = args[++i];
    } else {
      return "--" + name + ": requires a value";
    }
  }
  return {};
}

std::string pick_url(const scanned& s, std::string_view env_url) {
  if (auto it = s.values.find("url"); it != s.values.end())
    return it->second;
  return std::string{env_url.empty() ? default_url : env_url};
}

// Reads duration flag `name` into `out` if given; returns a usage error or "".
std::string read_duration(const scanned& s, std::string_view name, milliseconds& out,
                          bool positive) {
  auto it = s.values.find(name);
  if (it == s.values.end())
    return {};
  auto d = parse_duration(it->second);
  if (!d || (positive && d->count() == 0))
    return "--" + std::string{name} + ": expected " + (positive ? "a positive" : "a")
           + " duration such as 500, 500ms, 30s or 5m (got \"" + it->second + "\")";
  out = *d;
  return {};
}

std::string value_or(const scanned& s, std::string_view name, std::string fallback = {}) {
  auto it = s.values.find(name);
  return it == s.values.end() ? fallback : it->second;
}

// Fills the common part (help, one lock name) of `p`; returns false when `p.error` was set.
template <class Args>
bool one_name(const scanned& s, parsed<Args>& p, std::string& name, std::string_view what) {
  p.help = s.help;
  if (s.help)
    return false;
  if (s.positional.empty()) {
    p.error = "missing " + std::string{what};
    return false;
  }
  if (s.positional.size() > 1) {
    p.error = "unexpected argument \"" + s.positional[1] + "\"";
    return false;
  }
  name = s.positional.front();
  return true;
}

} // namespace

std::optional<milliseconds> parse_duration(std::string_view text) {
  int64_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || ptr == text.data() || n < 0)
    return std::nullopt;
  std::string_view unit{ptr, static_cast<size_t>(text.data() + text.size() - ptr)};
  int64_t scale = 0;
  if (unit.empty() || unit == "ms")
    scale = 1;
  else if (unit == "s")
    scale = 1000;
  else if (unit == "m")
    scale = 60'000;
  if (scale == 0 || n > INT64_MAX / scale / 1000) // keep far from overflow in later sums
    return std::nullopt;
  return milliseconds{n * scale};
}

parsed<run_args> parse_run(const std::vector<std::string>& args, std::string_view env_url) {
  parsed<run_args> p;
  scanned s;
  p.error = scan(args,
                 {{"ttl", true}, {"wait", true}, {"owner", true}, {"grace", true},
                  {"url", true}, {"session", false}},
                 true, s);
  if (!p.error.empty() || !one_name(s, p, p.args.name, "lock name"))
    return p;
  p.args.url = pick_url(s, env_url);
  p.args.owner = value_or(s, "owner");
  p.args.session = s.values.contains("session");
  for (auto e : {read_duration(s, "ttl", p.args.ttl, true),
                 read_duration(s, "wait", p.args.wait, false),
                 read_duration(s, "grace", p.args.grace, false)})
    if (p.error.empty() && !e.empty())
      p.error = e;
  if (p.error.empty() && s.rest.empty())
    p.error = "missing the command to run after \"--\"";
  p.args.command = s.rest;
  return p;
}

parsed<acquire_args> parse_acquire(const std::vector<std::string>& args,
                                   std::string_view env_url) {
  parsed<acquire_args> p;
  scanned s;
  p.error = scan(args, {{"ttl", true}, {"wait", true}, {"owner", true}, {"url", true}}, false, s);
  if (!p.error.empty() || !one_name(s, p, p.args.name, "lock name"))
    return p;
  p.args.url = pick_url(s, env_url);
  p.args.owner = value_or(s, "owner");
  for (auto e : {read_duration(s, "ttl", p.args.ttl, true),
                 read_duration(s, "wait", p.args.wait, false)})
    if (p.error.empty() && !e.empty())
      p.error = e;
  return p;
}

parsed<release_args> parse_release(const std::vector<std::string>& args,
                                   std::string_view env_url) {
  parsed<release_args> p;
  scanned s;
  p.error = scan(args, {{"owner", true}, {"token", true}, {"url", true}}, false, s);
  if (!p.error.empty() || !one_name(s, p, p.args.name, "lock name"))
    return p;
  p.args.url = pick_url(s, env_url);
  p.args.owner = value_or(s, "owner");
  if (p.args.owner.empty()) {
    p.error = "--owner: required (the owner the lease was granted to)";
    return p;
  }
  auto token = value_or(s, "token");
  auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), p.args.token);
  if (token.empty() || ec != std::errc{} || ptr != token.data() + token.size()
      || p.args.token == 0)
    p.error = "--token: required, a positive integer (the lease's fencing token)";
  return p;
}

parsed<status_args> parse_status(const std::vector<std::string>& args, std::string_view env_url) {
  parsed<status_args> p;
  scanned s;
  p.error = scan(args, {{"url", true}}, false, s);
  if (!p.error.empty() || !one_name(s, p, p.args.name, "lock name"))
    return p;
  p.args.url = pick_url(s, env_url);
  return p;
}

parsed<watch_args> parse_watch(const std::vector<std::string>& args, std::string_view env_url) {
  parsed<watch_args> p;
  scanned s;
  p.error = scan(args, {{"url", true}}, false, s);
  if (!p.error.empty() || !one_name(s, p, p.args.target, "lock name or 'prefix*'"))
    return p;
  p.args.url = pick_url(s, env_url);
  if (p.args.target.ends_with('*')) {
    p.args.target.pop_back();
    p.args.prefix = true;
  }
  return p;
}

} // namespace fencelock::cli
