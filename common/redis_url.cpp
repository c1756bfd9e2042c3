#include "common/redis_url.hpp"

#include <charconv>

#include "common/percent_decode.hpp"

namespace fencelock::redis {

namespace {

constexpr std::string_view scheme = "redis://";

std::optional<std::string> decoded(std::string_view in) {
  std::string out;
  if (!percent_decode(in, false, out))
    return std::nullopt;
  return out;
}

template <class T>
bool parse_number(std::string_view s, T& out) {
  if (s.empty())
    return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && ptr == s.data() + s.size();
}

} // namespace

bool is_redis_url(std::string_view store) noexcept {
  return store.substr(0, scheme.size()) == scheme;
}

std::optional<endpoint> parse_url(std::string_view url, std::string& why) {
  if (!is_redis_url(url)) {
    why = "must start with redis://";
    return std::nullopt;
  }
  auto rest = url.substr(scheme.size());
  endpoint ep;
  // Credentials end at the last '@': an unencoded '@' in a password still parses.
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    auto creds = rest.substr(0, at);
    rest = rest.substr(at + 1);
    auto colon = creds.find(':');
    auto user = decoded(creds.substr(0, colon));
    auto password = colon == std::string_view::npos ? std::optional<std::string>{""}
                                                    : decoded(creds.substr(colon + 1));
    if (!user || !password) {
      why = "bad percent-encoding in the credentials";
      return std::nullopt;
    }
    if (colon == std::string_view::npos) {
      // redis://secret@host: a lone credential is the password, as redis-cli reads it.
      ep.password = std::move(*user);
    } else {
      ep.user = std::move(*user);
      ep.password = std::move(*password);
    }
  }
  std::string_view db;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    db = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  std::string_view port;
  bool has_port = false;
  if (!rest.empty() && rest.front() == '[') { // [::1]:6379
    auto close = rest.find(']');
    if (close == std::string_view::npos) {
      why = "unclosed '[' in the host";
      return std::nullopt;
    }
    ep.host = std::string{rest.substr(1, close - 1)};
    rest = rest.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        why = "expected ':' after the host";
        return std::nullopt;
      }
      port = rest.substr(1);
      has_port = true;
    }
  } else {
    auto colon = rest.find(':');
    ep.host = std::string{rest.substr(0, colon)};
    if (colon != std::string_view::npos) {
      port = rest.substr(colon + 1);
      has_port = true;
    }
  }
  if (ep.host.empty()) {
    why = "the host is missing";
    return std::nullopt;
  }
  if (has_port && (!parse_number(port, ep.port) || ep.port == 0)) {
    why = "the port must be a number in 1..65535";
    return std::nullopt;
  }
  if (!db.empty() && (!parse_number(db, ep.db) || ep.db > 1'000'000)) {
    why = "the database must be a number";
    return std::nullopt;
  }
  return ep;
}

std::string redacted_text(std::string_view text) {
  auto start = text.find("://");
  auto at = text.rfind('@');
  if (start == std::string_view::npos || at == std::string_view::npos || at < start)
    return std::string{text};
  return std::string{text.substr(0, start + 3)} + "***" + std::string{text.substr(at)};
}

std::string redacted(const endpoint& where) {
  std::string out{scheme};
  if (!where.user.empty() || !where.password.empty()) {
    out += where.user;
    if (!where.password.empty())
      out += ":***";
    out += "@";
  }
  bool v6 = where.host.find(':') != std::string::npos;
  out += v6 ? "[" + where.host + "]" : where.host;
  out += ":" + std::to_string(where.port) + "/" + std::to_string(where.db);
  return out;
}

} // namespace fencelock::redis
