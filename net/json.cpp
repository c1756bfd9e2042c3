#include "net/json.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "common/json_writer.hpp"
#include "fencelock/owner.hpp"
#include "fencelock/validate.hpp"
#include "net/json_reader.hpp"

namespace fencelock::net {

caf::error parse_acquire_body(std::string_view body, acquire_request& out) {
  object_reader in{body, {"owner", "ttlMs", "waitMs"}};
  in.read("owner", out.owner, presence::required);
  in.read("ttlMs", out.ttl_ms, presence::required);
  in.read("waitMs", out.wait_ms, presence::optional);
  return in.error();
}

caf::error parse_renew_body(std::string_view body, renew_request& out) {
  object_reader in{body, {"owner", "token", "ttlMs"}};
  in.read("owner", out.owner, presence::required);
  in.read_token("token", out.token, presence::required);
  in.read("ttlMs", out.ttl_ms, presence::optional);
  return in.error();
}

caf::error parse_release_body(std::string_view body, release_request& out) {
  object_reader in{body, {"owner", "token", "force"}};
  in.read("force", out.force, presence::optional);
  // A force-release names no owner, and a token only to end that lease and no later one.
  auto needed = out.force ? presence::optional : presence::required;
  in.read("owner", out.owner, needed);
  in.read_token("token", out.token, needed);
  return in.error();
}

caf::error parse_check_body(std::string_view body, check_request& out) {
  object_reader in{body, {"token"}};
  in.read_token("token", out.token, presence::required);
  return in.error();
}

boost::json::object to_json(const check_result& x) {
  boost::json::object result{{"current", x.current}};
  if (x.token != 0) {
    result["token"] = x.token;
    result["expiresAt"] = x.expires_at_ms;
  } else {
    result["token"] = nullptr;
  }
  return result;
}

void put_owner(boost::json::object& out, std::string_view owner) {
  out["owner"] = owner_label(owner);
  if (auto who = owner_principal(owner); !who.empty())
    out["principal"] = who;
}

std::string lease_json(const lease& x) {
  std::string out;
  out.reserve(96 + x.name.size() + x.owner.size());
  json_object_writer w{out};
  w.field("name", x.name);
  // As put_owner() writes them.
  w.field("owner", owner_label(x.owner));
  if (auto who = owner_principal(x.owner); !who.empty())
    w.field("principal", who);
  w.field("token", x.token).field("ttlMs", x.ttl_ms).field("expiresAt", x.expires_at_ms);
  w.close();
  return out;
}

boost::json::object to_json(const lock_status& x) {
  boost::json::object result{{"name", x.name}, {"held", x.held}};
  if (x.held) {
    put_owner(result, x.owner);
    result["token"] = x.token;
    result["expiresAt"] = x.expires_at_ms;
    result["revision"] = x.revision;
  }
  result["waiters"] = x.waiters;
  result["lastToken"] = x.last_token;
  return result;
}

boost::json::object to_json(const lock_list& x) {
  boost::json::array locks;
  locks.reserve(x.locks.size());
  for (const auto& status : x.locks)
    locks.emplace_back(to_json(status));
  boost::json::value next = nullptr;
  if (!x.next_cursor.empty())
    next = x.next_cursor;
  return {{"locks", std::move(locks)}, {"nextCursor", std::move(next)}};
}

std::string printable_excerpt(std::string_view x, std::size_t max) {
  std::string result{x.substr(0, max)};
  for (auto& c : result) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte > 0x7e)
      c = '?';
  }
  return result;
}

} // namespace fencelock::net
