#include "net/json.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "fencelock/validate.hpp"

namespace fencelock::net {

namespace {

enum class presence { required, optional };

/// Reads the fields of one JSON object body, keeping the first error. Every read after an error
/// does nothing, so a parser is a straight list of reads followed by error().
class body_reader {
public:
  /// Parses `body` and rejects any field outside `known`.
  body_reader(std::string_view body, std::initializer_list<std::string_view> known) {
    boost::system::error_code ec;
    auto parsed = boost::json::parse(body, ec);
    if (ec) {
      error_ = invalid_field("body", "must be a JSON object (" + ec.message() + ")");
      return;
    }
    if (!parsed.is_object()) {
      error_ = invalid_field("body", "must be a JSON object");
      return;
    }
    object_ = std::move(parsed.as_object());
    for (const auto& field : object_) {
      if (std::find(known.begin(), known.end(), field.key()) == known.end()) {
        error_ = invalid_field(printable_excerpt(field.key()), "unknown field");
        return;
      }
    }
  }

  /// Reads a string field.
  void read(std::string_view key, std::string& out, presence p) {
    const auto* v = find(key, p);
    if (v == nullptr)
      return;
    if (!v->is_string())
      return fail(key, "must be a string");
    out.assign(v->get_string().begin(), v->get_string().end());
  }

  /// Reads a signed integer field; values beyond int64 saturate.
  void read(std::string_view key, int64_t& out, presence p) {
    const auto* v = find(key, p);
    if (v == nullptr)
      return;
    if (v->is_int64())
      out = v->get_int64();
    else if (v->is_uint64()) // Boost.JSON uses uint64 only above INT64_MAX
      out = std::numeric_limits<int64_t>::max();
    else
      fail(key, "must be an integer");
  }

  /// Reads a fencing token: an integer in 1..2^53-1.
  void read_token(std::string_view key, uint64_t& out, presence p) {
    const auto* v = find(key, p);
    if (v == nullptr)
      return;
    uint64_t x = 0;
    if (v->is_int64() && v->get_int64() > 0)
      x = static_cast<uint64_t>(v->get_int64());
    else if (v->is_uint64())
      x = v->get_uint64();
    if (x == 0 || x > max_token)
      return fail(key, "must be an integer between 1 and " + std::to_string(max_token));
    out = x;
  }

  /// Returns the first error, or none when every read succeeded.
  caf::error error() const {
    return error_;
  }

private:
  /// Returns the value of `key`, or null when it is absent (an error when it is required).
  const boost::json::value* find(std::string_view key, presence p) {
    if (error_)
      return nullptr;
    const auto* v = object_.if_contains(key);
    if (v == nullptr && p == presence::required)
      fail(key, "is required");
    return v;
  }

  void fail(std::string_view key, std::string_view why) {
    error_ = invalid_field(key, why);
  }

  boost::json::object object_;
  caf::error error_;
};

} // namespace

caf::error parse_acquire_body(std::string_view body, acquire_request& out) {
  body_reader in{body, {"owner", "ttlMs", "waitMs"}};
  in.read("owner", out.owner, presence::required);
  in.read("ttlMs", out.ttl_ms, presence::required);
  in.read("waitMs", out.wait_ms, presence::optional);
  return in.error();
}

caf::error parse_renew_body(std::string_view body, renew_request& out) {
  body_reader in{body, {"owner", "token", "ttlMs"}};
  in.read("owner", out.owner, presence::required);
  in.read_token("token", out.token, presence::required);
  in.read("ttlMs", out.ttl_ms, presence::optional);
  return in.error();
}

caf::error parse_release_body(std::string_view body, release_request& out) {
  body_reader in{body, {"owner", "token"}};
  in.read("owner", out.owner, presence::required);
  in.read_token("token", out.token, presence::required);
  return in.error();
}

caf::error parse_check_body(std::string_view body, check_request& out) {
  body_reader in{body, {"token"}};
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

boost::json::object to_json(const lease& x) {
  return {{"name", x.name},
          {"owner", x.owner},
          {"token", x.token},
          {"ttlMs", x.ttl_ms},
          {"expiresAt", x.expires_at_ms}};
}

boost::json::object to_json(const lock_status& x) {
  boost::json::object result{{"name", x.name}, {"held", x.held}};
  if (x.held) {
    result["owner"] = x.owner;
    result["token"] = x.token;
    result["expiresAt"] = x.expires_at_ms;
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
