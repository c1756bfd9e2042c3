#include "net/json_reader.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value_stack.hpp>

#include "fencelock/types.hpp"
#include "fencelock/validate.hpp"
#include "net/json.hpp"

namespace fencelock::net {

namespace {

/// A Boost.JSON SAX handler that only remembers the keys of each open object, and stops at the
/// first key an object names twice. Bodies and frames are small (body-limit, ws-max-frame), so
/// a linear search per key is cheaper than hashing. The keys of all open objects share one
/// buffer, each written as its length and its bytes, and each open object starts at an offset
/// into it: a few allocations per document rather than one per object and per key (this runs
/// on every request, on the I/O thread).
struct key_tracker {
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);

  using error_code = boost::json::error_code;
  using string_view = boost::json::string_view;

  std::string keys;                // the keys of the open objects, length-prefixed
  std::vector<std::size_t> open;   // where each open object's keys begin in `keys`
  std::string key;                 // the key being read, when it comes in parts
  std::optional<std::string> duplicate;

  /// Returns whether the innermost open object has `k` already.
  bool seen(std::string_view k) const {
    std::size_t at = open.back();
    while (at < keys.size()) {
      std::size_t n = 0;
      std::memcpy(&n, keys.data() + at, sizeof n);
      at += sizeof n;
      if (std::string_view{keys.data() + at, n} == k)
        return true;
      at += n;
    }
    return false;
  }

  bool on_document_begin(error_code&) {
    return true;
  }
  bool on_document_end(error_code&) {
    return true;
  }
  bool on_array_begin(error_code&) {
    return true;
  }
  bool on_array_end(std::size_t, error_code&) {
    return true;
  }
  bool on_object_begin(error_code&) {
    open.push_back(keys.size());
    return true;
  }
  bool on_object_end(std::size_t, error_code&) {
    keys.resize(open.back()); // its keys are done with
    open.pop_back();
    return true;
  }
  bool on_string_part(string_view, std::size_t, error_code&) {
    return true;
  }
  bool on_string(string_view, std::size_t, error_code&) {
    return true;
  }
  bool on_key_part(string_view s, std::size_t, error_code&) {
    key.append(s.data(), s.size());
    return true;
  }
  bool on_key(string_view s, std::size_t, error_code& ec) {
    std::string_view k{s.data(), s.size()};
    if (!key.empty()) { // it came in parts
      key.append(s.data(), s.size());
      k = key;
    }
    if (seen(k)) {
      duplicate = std::string{k};
      ec = boost::json::error::exception; // any error stops the parser; `duplicate` says why
      return false;
    }
    std::size_t n = k.size();
    keys.append(reinterpret_cast<const char*>(&n), sizeof n);
    keys.append(k.data(), k.size());
    key.clear();
    return true;
  }
  bool on_number_part(string_view, error_code&) {
    return true;
  }
  bool on_int64(int64_t, string_view, error_code&) {
    return true;
  }
  bool on_uint64(uint64_t, string_view, error_code&) {
    return true;
  }
  bool on_double(double, string_view, error_code&) {
    return true;
  }
  bool on_bool(bool, error_code&) {
    return true;
  }
  bool on_null(error_code&) {
    return true;
  }
  bool on_comment_part(string_view, error_code&) {
    return true;
  }
  bool on_comment(string_view, error_code&) {
    return true;
  }
};

/// Builds the value as boost::json::parse does (Boost's own handler is a value_stack fed the
/// same way), while a key_tracker watches the keys: one pass over the text instead of two.
struct distinct_value_builder {
  static constexpr std::size_t max_array_size = boost::json::array::max_size();
  static constexpr std::size_t max_object_size = boost::json::object::max_size();
  static constexpr std::size_t max_string_size = boost::json::string::max_size();
  static constexpr std::size_t max_key_size = boost::json::string::max_size();

  using error_code = boost::json::error_code;
  using string_view = boost::json::string_view;

  key_tracker keys;
  boost::json::value_stack st;

  distinct_value_builder(boost::json::storage_ptr temp, unsigned char* buffer, std::size_t size)
    : st(std::move(temp), buffer, size) {
  }

  bool on_document_begin(error_code&) {
    return true;
  }
  bool on_document_end(error_code&) {
    return true;
  }
  bool on_object_begin(error_code& ec) {
    return keys.on_object_begin(ec);
  }
  bool on_object_end(std::size_t n, error_code& ec) {
    st.push_object(n);
    return keys.on_object_end(n, ec);
  }
  bool on_array_begin(error_code&) {
    return true;
  }
  bool on_array_end(std::size_t n, error_code&) {
    st.push_array(n);
    return true;
  }
  bool on_key_part(string_view s, std::size_t n, error_code& ec) {
    st.push_chars(s);
    return keys.on_key_part(s, n, ec);
  }
  bool on_key(string_view s, std::size_t n, error_code& ec) {
    if (!keys.on_key(s, n, ec))
      return false;
    st.push_key(s);
    return true;
  }
  bool on_string_part(string_view s, std::size_t, error_code&) {
    st.push_chars(s);
    return true;
  }
  bool on_string(string_view s, std::size_t, error_code&) {
    st.push_string(s);
    return true;
  }
  bool on_number_part(string_view, error_code&) {
    return true;
  }
  bool on_int64(int64_t i, string_view, error_code&) {
    st.push_int64(i);
    return true;
  }
  bool on_uint64(uint64_t u, string_view, error_code&) {
    st.push_uint64(u);
    return true;
  }
  bool on_double(double d, string_view, error_code&) {
    st.push_double(d);
    return true;
  }
  bool on_bool(bool b, error_code&) {
    st.push_bool(b);
    return true;
  }
  bool on_null(error_code&) {
    st.push_null();
    return true;
  }
  bool on_comment_part(string_view, error_code&) {
    return true;
  }
  bool on_comment(string_view, error_code&) {
    return true;
  }
};

} // namespace

std::optional<boost::json::value> parse_distinct(std::string_view text,
                                                 boost::json::storage_ptr sp) {
  unsigned char temp[BOOST_JSON_STACK_BUFFER_SIZE]; // as boost::json::parse: its working stack
  boost::json::basic_parser<distinct_value_builder> parser{boost::json::parse_options{},
                                                           boost::json::storage_ptr{}, temp,
                                                           sizeof temp};
  auto& handler = parser.handler();
  handler.keys.keys.reserve(256);
  handler.keys.open.reserve(4);
  handler.st.reset(std::move(sp));
  boost::json::error_code ec;
  std::size_t used = parser.write_some(false, text.data(), text.size(), ec);
  if (ec || used != text.size()) // not JSON, a key given twice, or something after the value
    return std::nullopt;
  return handler.st.release();
}

std::optional<std::string> duplicate_key(std::string_view text) {
  boost::json::basic_parser<key_tracker> parser{boost::json::parse_options{}};
  parser.handler().keys.reserve(256);
  parser.handler().open.reserve(4);
  boost::json::error_code ec;
  parser.write_some(false, text.data(), text.size(), ec);
  return std::move(parser.handler().duplicate);
}

object_reader::object_reader(std::string_view text, std::initializer_list<std::string_view> known) {
  // The usual case in one pass; anything else goes the long way below, which says what is wrong.
  if (auto parsed = parse_distinct(text, parsed_.storage()); parsed && parsed->is_object()) {
    parsed_ = std::move(parsed->as_object()); // the same storage: moved, not copied
    check_known(known);
    return;
  }
  boost::system::error_code ec;
  auto parsed = boost::json::parse(text, ec, parsed_.storage());
  if (ec) {
    error_ = invalid_field("body", "must be a JSON object (" + ec.message() + ")");
    return;
  }
  if (!parsed.is_object()) {
    error_ = invalid_field("body", "must be a JSON object");
    return;
  }
  if (auto key = duplicate_key(text)) {
    error_ = invalid_field(printable_excerpt(*key), "given more than once");
    return;
  }
  parsed_ = std::move(parsed.as_object()); // the same storage: moved, not copied
  check_known(known);
}

object_reader::object_reader(const boost::json::object& object,
                             std::initializer_list<std::string_view> known)
  : object_(&object) {
  check_known(known);
}

void object_reader::check_known(std::initializer_list<std::string_view> known) {
  for (const auto& field : *object_) {
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
  const auto* v = object_->if_contains(key);
  if (v == nullptr && p == presence::required)
    fail(key, "is required");
  return v;
}

void object_reader::fail(std::string_view key, std::string_view why) {
  error_ = invalid_field(key, why);
}

} // namespace fencelock::net
