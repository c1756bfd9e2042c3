#include "client/cli/output.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>

#include <boost/json.hpp>

#include "client/cli/args.hpp"

namespace fencelock::cli {

namespace json = boost::json;

namespace {

json::object status_object(const lock_info& info) {
  json::object o;
  o["name"] = info.name;
  o["held"] = info.held;
  if (info.held) {
    o["owner"] = info.owner;
    o["token"] = info.token;
    o["expiresAt"] = info.expires_at_ms;
  }
  o["waiters"] = info.waiters;
  o["lastToken"] = info.last_token;
  return o;
}

/// Returns `rows` under `header` in columns two spaces apart, the last one unpadded.
std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  };
  measure(header);
  for (const auto& r : rows)
    measure(r);
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size())
        line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  };
  emit(header);
  for (const auto& r : rows)
    emit(r);
  return out;
}

/// Returns `x` with one decimal ("12.3") for seconds below a minute.
std::string tenths(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%lld.%lld", static_cast<long long>(ms / 1000),
                static_cast<long long>(ms % 1000 / 100));
  return buf;
}

/// Returns `at_ms` in the local time zone: with the date, or the time of day alone.
std::string local(int64_t at_ms, bool with_date) {
  auto secs = static_cast<std::time_t>(at_ms / 1000 - (at_ms % 1000 < 0 ? 1 : 0));
  std::tm tm{};
  if (::localtime_r(&secs, &tm) == nullptr)
    return "?";
  char buf[64];
  auto n = with_date ? std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm)
                     : std::strftime(buf, sizeof(buf), "%H:%M:%S", &tm);
  return n == 0 ? std::string{"?"} : std::string{buf, n};
}

/// The request fields of the wire protocol and the flags that set them.
struct field_flag {
  std::string_view field;
  std::string_view flag;
  bool duration;
};

constexpr field_flag field_flags[] = {
  {"ttlMs", "--ttl", true},         {"waitMs", "--wait", true},
  {"owner", "--owner", false},      {"token", "--token", false},
  {"lock", "the lock name", false}, {"prefix", "the prefix", false},
  {"name", "the lock name", false},
};

/// Rewrites "must be an integer between A and B" as durations: "must be between 100ms and 1h".
std::string duration_range(std::string_view why) {
  constexpr std::string_view head = "must be an integer between ";
  if (!why.starts_with(head))
    return std::string{why};
  auto rest = why.substr(head.size());
  auto and_at = rest.find(" and ");
  if (and_at == std::string_view::npos)
    return std::string{why};
  int64_t lo = 0;
  int64_t hi = 0;
  auto a = rest.substr(0, and_at);
  auto b = rest.substr(and_at + 5);
  if (std::from_chars(a.data(), a.data() + a.size(), lo).ec != std::errc{}
      || std::from_chars(b.data(), b.data() + b.size(), hi).ec != std::errc{})
    return std::string{why};
  return "must be between " + format_duration(std::chrono::milliseconds{lo}) + " and "
         + format_duration(std::chrono::milliseconds{hi});
}

} // namespace

lease_info info_of(const held_lease& lease) {
  return lease_info{lease.name(), lease.owner(), lease.token(), lease.ttl(), lease.expires_at_ms()};
}

std::string lease_json(const lease_info& lease) {
  json::object o;
  o["name"] = lease.name;
  o["owner"] = lease.owner;
  o["token"] = lease.token;
  o["ttlMs"] = lease.ttl.count();
  o["expiresAt"] = lease.expires_at_ms;
  return json::serialize(o);
}

std::string lease_table(const lease_info& lease, int64_t now_ms) {
  return table({"NAME", "OWNER", "TOKEN", "TTL", "EXPIRES"},
               {{lease.name, lease.owner, std::to_string(lease.token), format_duration(lease.ttl),
                 human_time(lease.expires_at_ms, now_ms)}});
}

std::string status_json(const lock_info& info) {
  return json::serialize(status_object(info));
}

std::string status_table(const std::vector<lock_info>& locks, int64_t now_ms) {
  if (locks.empty())
    return "(no locks)\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& l : locks)
    rows.push_back({l.name, l.held ? "yes" : "no", l.held ? l.owner : "-",
                    l.held ? std::to_string(l.token) : "-",
                    l.held ? human_time(l.expires_at_ms, now_ms) : "-", std::to_string(l.waiters),
                    std::to_string(l.last_token)});
  return table({"NAME", "HELD", "OWNER", "TOKEN", "EXPIRES", "WAITERS", "LAST-TOKEN"}, rows);
}

std::string snapshot_json(const std::vector<lock_info>& locks) {
  json::array arr;
  for (const auto& l : locks)
    arr.push_back(status_object(l));
  return json::serialize(json::object{{"type", "snapshot"}, {"locks", std::move(arr)}});
}

std::string event_json(const watch_event& e) {
  json::object o;
  o["type"] = "lock_event";
  o["event"] = e.event;
  o["lock"] = e.lock;
  o["owner"] = e.owner;
  o["token"] = e.token;
  if (e.expires_at_ms)
    o["expiresAt"] = *e.expires_at_ms;
  o["revision"] = e.revision;
  o["at"] = e.at_ms;
  if (!e.cause.empty())
    o["cause"] = e.cause;
  return json::serialize(o);
}

std::string event_line(const watch_event& e, int64_t now_ms) {
  auto ms = e.at_ms % 1000;
  char frac[8];
  std::snprintf(frac, sizeof(frac), ".%03lld", static_cast<long long>(ms < 0 ? 0 : ms));
  std::string line = local(e.at_ms, false) + frac + "  " + e.event + "  " + e.lock
                     + "  owner=" + e.owner + " token=" + std::to_string(e.token);
  if (e.expires_at_ms)
    line += " expires " + human_time(*e.expires_at_ms, now_ms);
  if (!e.cause.empty() && e.cause != e.event)
    line += " cause=" + e.cause;
  return line;
}

std::string check_json(std::string_view name, uint64_t token, const token_check& c) {
  json::object o;
  o["name"] = name;
  o["token"] = token;
  o["current"] = c.current;
  if (c.token != 0) {
    o["currentToken"] = c.token;
    o["expiresAt"] = c.expires_at_ms;
  } else {
    o["currentToken"] = nullptr;
  }
  return json::serialize(o);
}

std::string check_text(std::string_view name, uint64_t token, const token_check& c,
                       int64_t now_ms) {
  auto head = "token " + std::to_string(token) + " of " + std::string{name};
  if (c.current)
    return head + " is current (expires " + human_time(c.expires_at_ms, now_ms) + ")";
  if (c.token == 0)
    return head + " is not current: the lock is free";
  return head + " is not current: the current token is " + std::to_string(c.token);
}

std::string released_json() {
  return R"({"released":true})";
}

std::string released_text(std::string_view name, uint64_t token) {
  if (token == 0) // a force-release of whatever lease the lock had
    return "released " + std::string{name};
  return "released " + std::string{name} + " (token " + std::to_string(token) + ")";
}

std::string human_duration(int64_t ms) {
  if (ms < 0)
    ms = -ms;
  if (ms < 60'000)
    return tenths(ms) + "s";
  auto s = ms / 1000;
  if (s < 3600)
    return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
  if (s < 86'400)
    return std::to_string(s / 3600) + "h" + std::to_string(s % 3600 / 60) + "m";
  return std::to_string(s / 86'400) + "d" + std::to_string(s % 86'400 / 3600) + "h";
}

std::string human_time(int64_t at_ms, int64_t now_ms) {
  auto when = local_time(at_ms);
  if (at_ms >= now_ms)
    return "in " + human_duration(at_ms - now_ms) + " (" + when + ")";
  return human_duration(now_ms - at_ms) + " ago (" + when + ")";
}

std::string local_time(int64_t at_ms) {
  return local(at_ms, true);
}

int64_t wall_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

void print_line(const std::string& text) {
  std::cout << text;
  if (text.empty() || text.back() != '\n')
    std::cout << '\n';
  std::cout.flush();
}

void complain(std::string_view command, std::string_view message) {
  std::cerr << "fencelock " << command << ": " << message << '\n';
}

void complain(std::string_view command, const client_error& e) {
  std::string msg =
    e.code() + ": " + (e.code() == "invalid_request" ? in_flag_terms(e.what()) : e.what());
  if (e.holder())
    msg += " (held by " + e.holder()->owner + ")";
  complain(command, msg);
}

std::string in_flag_terms(std::string_view message) {
  auto colon = message.find(": ");
  if (colon == std::string_view::npos)
    return std::string{message};
  auto field = message.substr(0, colon);
  auto why = message.substr(colon + 2);
  for (const auto& f : field_flags)
    if (f.field == field)
      return std::string{f.flag} + ": " + (f.duration ? duration_range(why) : std::string{why});
  return std::string{message};
}

} // namespace fencelock::cli
