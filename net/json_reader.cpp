#include "net/json_reader.hpp"

#include <algorithm>
#include <limits>

#include <boost/json/parse.hpp>

#include "fencelock/types.hpp"
#include "fencelock/validate.hpp"
#include "net/json.hpp"

namespace fencelock::net {

object_reader::object_reader(std::string_view text, std::initializer_list<std::string_view> known) {
  boost::system::error_code ec;
  auto parsed = boost::json::parse(text, ec);
  if (ec) {
    error_ = invalid_field("body", "must be a JSON object (" + ec.message() + ")");
    return;
  }
  if (!parsed.is_object()) {
    error_ = invalid_field("body", "must be a JSON object");
    return;
  }
  object_ = std::move(parsed.as_object());
  check_known(known);
}

object_reader::object_reader(boost::json::object object,
                             std::initializer_list<std::string_view> known)
  : object_(std::move(object)) {
  check_known(known);
}

void object_reader::check_known(std::initializer_list<std::string_view> known) {
  for (const auto& field : object_) {
    if (std::find(known.begin(), known.end(), field.key()) == known.end()) {
      error_ = invalid_field(printable_excerpt(field.key()), "unknown field");
      return;
    }
  }
}

void object_reader::read(std::string_view key, std::string& out, presence p) {
  const auto* v = find(key, p);
  if (v == nullptr)
    return;
  if (!v->is_string())
    return fail(key, "must be a string");
  out.assign(v->get_string().begin(), v->get_string().end());
}

void object_reader::read(std::string_view key, int64_t& out, presence p) {
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

void object_reader::read(std::string_view key, bool& out, presence p) {
  const auto* v = find(key, p);
  if (v == nullptr)
    return;
  if (!v->is_bool())
    return fail(key, "must be true or false");
  out = v->get_bool();
}

void object_reader::read_token(std::string_view key, uint64_t& out, presence p) {
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

const boost::json::value* object_reader::find(std::string_view key, presence p) {
  if (error_)
    return nullptr;
  const auto* v = object_.if_contains(key);
  if (v == nullptr && p == presence::required)
    fail(key, "is required");
  return v;
}

void object_reader::fail(std::string_view key, std::string_view why) {
  error_ = invalid_field(key, why);
}

} // namespace fencelock::net
