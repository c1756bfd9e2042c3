#include "client/endpoint.hpp"

#include <charconv>

namespace fencelock::detail {

namespace {

constexpr std::string_view ws_path = "/v1/ws";

bool valid_port(std::string_view p) {
  unsigned v = 0;
  auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
  return !p.empty() && ec == std::errc{} && ptr == p.data() + p.size() && v >= 1 && v <= 65535;
}

bool valid_host(std::string_view h) {
  if (h.empty())
    return false;
  for (char c : h)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.'
          || c == '-' || c == '_' || c == ':'))
      return false;
  return true;
}

} // namespace

std::string endpoint::host_header() const {
  auto h = host.find(':') == std::string::npos ? host : "[" + host + "]";
  return h + ":" + port;
}

std::optional<endpoint> parse_endpoint(std::string_view url, std::string& why) {
  auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    why = "expected http://host:port or ws://host:port (https:// or wss:// for TLS)";
    return std::nullopt;
  }
  auto scheme = url.substr(0, scheme_end);
  bool tls = scheme == "https" || scheme == "wss";
  if (scheme != "http" && scheme != "ws" && !tls) {
    why = "scheme " + std::string{scheme}
          + " is not supported (use http://, ws://, or https://, wss:// for TLS)";
    return std::nullopt;
  }
  auto rest = url.substr(scheme_end + 3);
  auto slash = rest.find('/');
  auto authority = rest.substr(0, slash);
  std::string path{slash == std::string_view::npos ? std::string_view{} : rest.substr(slash)};
  if (path.find_first_of("?# ") != std::string::npos) {
    why = "a query, fragment or space in the path is not supported";
    return std::nullopt;
  }

  endpoint ep;
  ep.tls = tls;
  std::string_view port = tls ? "443" : "80";
  if (authority.starts_with('[')) {
    auto close = authority.find(']');
    if (close == std::string_view::npos) {
      why = "unterminated [IPv6] address";
      return std::nullopt;
    }
    ep.host = authority.substr(1, close - 1);
    auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        why = "unexpected text after ]";
        return std::nullopt;
      }
      port = after.substr(1);
    }
  } else {
    auto colon = authority.rfind(':');
    ep.host = authority.substr(0, colon);
    if (colon != std::string_view::npos)
      port = authority.substr(colon + 1);
    if (ep.host.find(':') != std::string::npos) {
      why = "an IPv6 address needs brackets: http://[::1]:7070";
      return std::nullopt;
    }
  }
  if (!valid_host(ep.host)) {
    why = "missing or malformed host";
    return std::nullopt;
  }
  if (!valid_port(port)) {
    why = "port must be 1..65535";
    return std::nullopt;
  }
  ep.port = port;

  while (path.ends_with('/'))
    path.pop_back();
  ep.target = path.ends_with(ws_path) ? path : path + std::string{ws_path};
  return ep;
}

std::optional<std::vector<endpoint>> parse_endpoints(std::string_view urls, std::string& why) {
  std::vector<endpoint> out;
  for (;;) {
    auto comma = urls.find(',');
    auto one = urls.substr(0, comma);
    while (!one.empty() && (one.front() == ' ' || one.front() == '\t'))
      one.remove_prefix(1);
    while (!one.empty() && (one.back() == ' ' || one.back() == '\t'))
      one.remove_suffix(1);
    if (one.empty()) {
      why = "empty entry in the list of URLs";
      return std::nullopt;
    }
    auto ep = parse_endpoint(one, why);
    if (!ep) {
      why = std::string{one} + ": " + why;
      return std::nullopt;
    }
    out.push_back(std::move(*ep));
    if (comma == std::string_view::npos)
      return out;
    urls.remove_prefix(comma + 1);
  }
}

} // namespace fencelock::detail
