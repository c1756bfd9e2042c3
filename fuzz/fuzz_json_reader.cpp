// The JSON request reader (net/json_reader.cpp) and the HTTP body parsers built on it
// (net/json.cpp). Input: the body's text.
//
// What the reader promises: its one-pass parse reads what Boost.JSON's does; a body that is not
// one JSON object, or that has a field outside the known ones, is refused; a string field read is
// the JSON string (so valid UTF-8: Boost.JSON refuses invalid UTF-8); an integer field is an
// integer (1.5, 1e3 and "1" are refused) and saturates beyond int64; a token is an integer in
// 1..2^53-1; every error is invalid_request naming the field, in printable ASCII.

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "fencelock/errc.hpp"
#include "fuzz/fuzz.hpp"
#include "net/json.hpp"
#include "net/json_reader.hpp"

namespace fencelock::fuzz {

namespace {

constexpr std::string_view target_name = "fuzz_json_reader";

void check(bool ok, std::string_view what) {
  if (!ok)
    violated(target_name, what);
}

void check_error(const caf::error& err) {
  if (!err)
    return;
  errc code{};
  check(as_errc(err, code) && code == errc::invalid_request, "a refusal is invalid_request");
  auto message = error_message(err);
  check(message.find(": ") != std::string::npos, "a refusal names the field");
  check(printable_ascii(message), "a refusal's message is printable ASCII");
}

/// What an independent parse says a field holds.
struct expected_field {
  bool present = false;
  bool is_integer = false;    // an int64 or uint64 value
  bool fits_int64 = false;
  int64_t as_int64 = 0;
  uint64_t as_uint64 = 0;
};

expected_field look_up(const boost::json::value& doc, std::string_view key) {
  expected_field out;
  if (!doc.is_object())
    return out;
  const auto* v = doc.as_object().if_contains(key);
  if (v == nullptr)
    return out;
  out.present = true;
  if (v->is_int64()) {
    out.is_integer = out.fits_int64 = true;
    out.as_int64 = v->get_int64();
    out.as_uint64 = out.as_int64 > 0 ? static_cast<uint64_t>(out.as_int64) : 0;
  } else if (v->is_uint64()) {
    out.is_integer = true;
    out.as_uint64 = v->get_uint64();
  }
  return out;
}

} // namespace

int fuzz_json_reader(const uint8_t* data, size_t size) {
  std::string_view text{reinterpret_cast<const char*>(data), size};
  boost::system::error_code ec;
  auto doc = boost::json::parse(text, ec);
  bool is_object = !ec && doc.is_object();

  // The one-pass fast path gives boost::json::parse's value exactly when the text is JSON and no
  // object in it names a key twice.
  auto distinct = net::parse_distinct(text, {});
  bool repeats = !ec && net::duplicate_key(text).has_value();
  check(distinct.has_value() == (!ec && !repeats), "parse_distinct succeeds exactly on JSON "
                                                   "with distinct keys");
  // Compared as text: Boost.JSON reads 0e999 as NaN, which is unequal to itself as a value.
  if (distinct)
    check(boost::json::serialize(*distinct) == boost::json::serialize(doc),
          "parse_distinct reads what boost::json::parse reads");

  // Every field of every body, all optional: what a read gives when it succeeds.
  net::object_reader in{text, {"owner", "ttlMs", "waitMs", "token", "session"}};
  std::string owner;
  int64_t ttl_ms = -1;
  uint64_t token = 0;
  bool session = false;
  in.read("owner", owner, net::presence::optional);
  in.read("ttlMs", ttl_ms, net::presence::optional);
  in.read_token("token", token, net::presence::optional);
  in.read("session", session, net::presence::optional);
  check_error(in.error());
  if (!in.error()) {
    check(is_object, "only a JSON object is accepted");
    check(valid_utf8(owner), "a string read is valid UTF-8");
    auto ttl = look_up(doc, "ttlMs");
    if (ttl.present)
      check(ttl.is_integer
              && ttl_ms == (ttl.fits_int64 ? ttl.as_int64 : std::numeric_limits<int64_t>::max()),
            "an integer read is the integer, saturated beyond int64");
    auto tok = look_up(doc, "token");
    if (tok.present)
      check(tok.is_integer && token == tok.as_uint64 && token >= 1 && token <= max_token,
            "a token read is the integer, in 1..2^53-1");
  }

  acquire_request acquire;
  check_error(net::parse_acquire_body(text, acquire));
  renew_request renew;
  auto renew_err = net::parse_renew_body(text, renew);
  check_error(renew_err);
  if (!renew_err)
    check(renew.token >= 1 && renew.token <= max_token && valid_utf8(renew.owner),
          "a renew body has a token in range and a UTF-8 owner");
  release_request release;
  check_error(net::parse_release_body(text, release));
  check_request check_body;
  auto check_err = net::parse_check_body(text, check_body);
  check_error(check_err);
  // {"token": n} alone is a valid check body exactly when n is an integer in range. A body that
  // names "token" twice parses to one key here (the last wins) but is refused by the reader.
  bool named_twice = check_err && error_message(check_err).ends_with(": given more than once");
  if (is_object && doc.as_object().size() == 1 && !named_twice) {
    auto tok = look_up(doc, "token");
    if (tok.present)
      check(!check_err == (tok.is_integer && tok.as_uint64 >= 1 && tok.as_uint64 <= max_token),
            "a check body is accepted exactly when its token is in range");
  }
  return 0;
}

} // namespace fencelock::fuzz
