#include "net/routes.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <utility>

#include <boost/json/object.hpp>

#include "common/percent_decode.hpp"
#include "fencelock/validate.hpp"
#include "net/error_mapping.hpp"
#include "net/json.hpp"
#include "net/openapi.hpp"

namespace fencelock::net {

namespace http = boost::beast::http;

namespace {

// --- paths -------------------------------------------------------------------------------------

enum class endpoint {
  acquire,
  renew,
  release,
  check,
  status,
  list,
  healthz,
  readyz,
  metrics,
  openapi,
  websocket
};

struct path_match {
  endpoint where;
  /// The {name} segment as sent, still percent-encoded (empty for routes without one).
  std::string_view raw_name;
};

/// Returns the endpoint `path` names, or nothing when it names none.
std::optional<path_match> match_path(std::string_view path) {
  if (path == "/healthz")
    return path_match{endpoint::healthz, {}};
  if (path == "/readyz")
    return path_match{endpoint::readyz, {}};
  if (path == "/metrics")
    return path_match{endpoint::metrics, {}};
  if (path == "/v1/openapi.json")
    return path_match{endpoint::openapi, {}};
  if (path == "/v1/ws")
    return path_match{endpoint::websocket, {}}; // upgrades are taken before routing
  constexpr std::string_view locks = "/v1/locks";
  if (!path.starts_with(locks))
    return std::nullopt;
  auto rest = path.substr(locks.size());
  if (rest.empty())
    return path_match{endpoint::list, {}};
  if (rest.front() != '/')
    return std::nullopt;
  rest.remove_prefix(1);
  auto slash = rest.find('/');
  if (slash == std::string_view::npos)
    return path_match{endpoint::status, rest};
  auto name = rest.substr(0, slash);
  auto operation = rest.substr(slash + 1);
  if (operation == "acquire")
    return path_match{endpoint::acquire, name};
  if (operation == "renew")
    return path_match{endpoint::renew, name};
  if (operation == "release")
    return path_match{endpoint::release, name};
  if (operation == "check")
    return path_match{endpoint::check, name};
  return std::nullopt;
}

bool is_post(endpoint x) noexcept {
  return x == endpoint::acquire || x == endpoint::renew || x == endpoint::release
         || x == endpoint::check;
}

// --- request parts -----------------------------------------------------------------------------

/// Decodes the {name} path segment into `out` and checks it.
caf::error decode_lock_name(std::string_view raw, std::string& out) {
  if (!percent_decode(raw, false, out) || !valid_lock_name(out))
    return invalid_field("name", "must be 1..200 characters of [A-Za-z0-9._:-]");
  return {};
}

/// Parses a non-empty run of decimal digits, saturating at UINT32_MAX so that validate() reports
/// a huge value with the allowed range.
bool parse_limit(std::string_view text, uint32_t& out) {
  if (text.empty())
    return false;
  uint64_t x = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    x = std::min<uint64_t>(x * 10 + static_cast<uint64_t>(c - '0'),
                           std::numeric_limits<uint32_t>::max());
  }
  out = static_cast<uint32_t>(x);
  return true;
}

/// Reads prefix, limit and cursor from the query string of GET /v1/locks; anything else, a
/// repeated parameter or a malformed escape is an error.
caf::error parse_list_query(std::string_view query, const config& cfg, list_request& out) {
  // The default page must itself be valid when the operator lowered the maximum.
  out.limit = std::min(out.limit, cfg.list_limit_max);
  bool seen_prefix = false;
  bool seen_limit = false;
  bool seen_cursor = false;
  std::string key;
  std::string value;
  while (!query.empty()) {
    auto amp = query.find('&');
    auto param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (param.empty())
      continue;
    auto eq = param.find('=');
    auto raw_value = eq == std::string_view::npos ? std::string_view{} : param.substr(eq + 1);
    if (!percent_decode(param.substr(0, eq), true, key) || !percent_decode(raw_value, true, value))
      return invalid_field("query", "malformed percent-encoding");
    bool* seen = key == "prefix"   ? &seen_prefix
                 : key == "limit"  ? &seen_limit
                 : key == "cursor" ? &seen_cursor
                                   : nullptr;
    if (seen == nullptr)
      return invalid_field(printable_excerpt(key), "unknown query parameter");
    if (*seen)
      return invalid_field(key, "given more than once");
    *seen = true;
    if (key == "prefix")
      out.prefix = value;
    else if (key == "cursor")
      out.cursor = value;
    else if (!parse_limit(value, out.limit))
      return invalid_field("limit", "must be a positive integer");
  }
  return {};
}

// --- routes ------------------------------------------------------------------------------------

reply ok(boost::json::value body) {
  reply result;
  result.body = std::move(body);
  return result;
}

/// Checks an operation on one lock: its name, its body (read by `parse_body`), then its ranges.
template <class Request>
route_result lock_operation(std::string_view raw_name, std::string_view body, const config& cfg,
                            caf::error (*parse_body)(std::string_view, Request&)) {
  Request req;
  if (auto err = decode_lock_name(raw_name, req.name))
    return error_reply(err);
  if (auto err = parse_body(body, req))
    return error_reply(err);
  if (auto err = validate(req, cfg))
    return error_reply(err);
  return service_call{std::move(req)};
}

route_result status_route(std::string_view raw_name) {
  status_query query;
  if (auto err = decode_lock_name(raw_name, query.name))
    return error_reply(err);
  return service_call{std::move(query)};
}

route_result list_route(std::string_view query, const config& cfg) {
  list_request req;
  if (auto err = parse_list_query(query, cfg, req))
    return error_reply(err);
  if (auto err = validate(req, cfg))
    return error_reply(err);
  return service_call{std::move(req)};
}

route_result readiness(bool ready) {
  auto result = ok(boost::json::object{{"ready", ready}});
  if (!ready)
    result.status = http::status::service_unavailable;
  return result;
}

} // namespace

route_result route(http::verb method, std::string_view target, std::string_view body,
                   const config& cfg, bool ready) {
  auto question = target.find('?');
  auto path = target.substr(0, question);
  auto query =
    question == std::string_view::npos ? std::string_view{} : target.substr(question + 1);
  auto match = match_path(path);
  if (!match)
    return error_reply(http::status::not_found, "not_found", "no such route");
  auto allowed = is_post(match->where) ? http::verb::post : http::verb::get;
  if (method != allowed) {
    auto result = error_reply(http::status::method_not_allowed, "method_not_allowed",
                              is_post(match->where) ? "use POST" : "use GET");
    result.allow = is_post(match->where) ? "POST" : "GET";
    return result;
  }
  switch (match->where) {
    case endpoint::acquire:
      return lock_operation<acquire_request>(match->raw_name, body, cfg, parse_acquire_body);
    case endpoint::renew:
      return lock_operation<renew_request>(match->raw_name, body, cfg, parse_renew_body);
    case endpoint::release:
      return lock_operation<release_request>(match->raw_name, body, cfg, parse_release_body);
    case endpoint::check:
      return lock_operation<check_request>(match->raw_name, body, cfg, parse_check_body);
    case endpoint::status:
      return status_route(match->raw_name);
    case endpoint::list:
      return list_route(query, cfg);
    case endpoint::healthz:
      return ok(boost::json::object{{"status", "ok"}});
    case endpoint::readyz:
      return readiness(ready);
    case endpoint::metrics:
      return service_call{metrics_query{}};
    case endpoint::openapi: {
      reply doc;
      doc.text_type = "application/json";
      doc.text = std::string{openapi_document()};
      return doc;
    }
    case endpoint::websocket: {
      auto result = error_reply(http::status::upgrade_required, "invalid_request",
                                "GET /v1/ws needs a WebSocket upgrade (Connection: Upgrade, "
                                "Upgrade: websocket)");
      result.headers.emplace_back("Upgrade", "websocket");
      return result;
    }
  }
  return error_reply(http::status::not_found, "not_found", "no such route");
}

bool needs_credentials(std::string_view target, const config& cfg) noexcept {
  auto path = target.substr(0, target.find('?'));
  if (path == "/healthz" || path == "/v1/openapi.json")
    return false;
  if (path == "/readyz")
    return !cfg.open_readyz;
  if (path == "/metrics")
    return !cfg.open_metrics;
  return true;
}

caf::error authorize(const principal& who, service_call& call, const config& cfg) {
  return std::visit(
    [&](auto& x) -> caf::error {
      using T = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<T, status_query>)
        return authorize_read(who, x.name);
      else if constexpr (std::is_same_v<T, metrics_query>)
        return cfg.open_metrics ? caf::error{} : authorize_admin(who);
      else
        return net::authorize(who, x);
    },
    call);
}

reply unauthenticated_reply() {
  auto result = error_reply(unauthenticated_error());
  result.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"fencelock\"");
  return result;
}

bool valid_request_id(std::string_view x) noexcept {
  return !x.empty() && x.size() <= 128
         && std::all_of(x.begin(), x.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

std::string make_request_id() {
  // A random per-process seed plus a counter, scrambled by the SplitMix64 finalizer: a bijection,
  // so ids never repeat within a process, and distinct processes rarely share one.
  static const uint64_t seed = [] {
    try {
      std::random_device rd;
      return (uint64_t{rd()} << 32) ^ rd();
    } catch (...) {
      return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    }
  }();
  static std::atomic<uint64_t> counter{0};
  uint64_t z = seed + counter.fetch_add(1, std::memory_order_relaxed) * 0x9e3779b97f4a7c15;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  z ^= z >> 31;
  constexpr char digits[] = "0123456789abcdef";
  std::string result(16, '0');
  for (auto i = result.rbegin(); i != result.rend(); ++i, z >>= 4)
    *i = digits[z & 0xf];
  return result;
}

} // namespace fencelock::net
