#include "common/json_writer.hpp"

#include <cstdint>
#include <cstring>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace fencelock {

namespace {

constexpr uint64_t every_byte(uint8_t b) {
  return 0x0101010101010101ULL * b;
}

/// Whether some byte of the word `w` needs an escape: below 0x20, '"' or '\\'. Exact for the
/// word as a whole (the classic "has a byte less than n" test, n <= 128); bytes of 0x80 and
/// above, as in UTF-8, never match.
constexpr bool word_needs_escape(uint64_t w) {
  constexpr uint64_t high = every_byte(0x80);
  auto below = [](uint64_t v, uint8_t n) { return (v - every_byte(n)) & ~v & high; };
  return (below(w, 0x20) | below(w ^ every_byte('"'), 1) | below(w ^ every_byte('\\'), 1)) != 0;
}

constexpr bool needs_escape(unsigned char c) {
  return c < 0x20 || c == '"' || c == '\\';
}

/// The length of the longest prefix of `x` that needs no escape. Log lines and frames are
/// written on every request and nearly never need one, so this looks at eight bytes at a time,
/// the last eight overlapping the word before, and at single bytes only where a word needs an
/// escape or the string is shorter than a word.
std::size_t clean_prefix(std::string_view x) {
  constexpr std::size_t word = sizeof(uint64_t);
  auto bytewise = [&](std::size_t from) {
    while (from < x.size() && !needs_escape(static_cast<unsigned char>(x[from])))
      ++from;
    return from;
  };
  if (x.size() < word)
    return bytewise(0);
  auto clean_word = [&](std::size_t at) {
    uint64_t w;
    std::memcpy(&w, x.data() + at, word);
    return !word_needs_escape(w);
  };
  std::size_t i = 0;
  for (; i + word <= x.size(); i += word)
    if (!clean_word(i))
      return bytewise(i);
  if (i == x.size() || clean_word(x.size() - word))
    return x.size();
  return bytewise(i);
}

void append_escaped(std::string& out, unsigned char c) {
  switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default: {
      constexpr const char* hex = "0123456789abcdef";
      const char u[] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf]};
      out.append(u, sizeof u);
    }
  }
}

} // namespace

void append_json_string(std::string& out, std::string_view x) {
  out.reserve(out.size() + x.size() + 2);
  out += '"';
  for (;;) {
    auto clean = clean_prefix(x);
    out.append(x.data(), clean);
    if (clean == x.size())
      break;
    append_escaped(out, static_cast<unsigned char>(x[clean]));
    x.remove_prefix(clean + 1);
  }
  out += '"';
}

void json_object_writer::begin(std::string_view key) {
  if (!first_)
    out_ += ',';
  first_ = false;
  append_json_string(out_, key);
  out_ += ':';
}

json_object_writer& json_object_writer::field(std::string_view key, std::string_view value) {
  begin(key);
  append_json_string(out_, value);
  return *this;
}

json_object_writer& json_object_writer::field(std::string_view key, bool value) {
  begin(key);
  out_ += value ? "true" : "false";
  return *this;
}

json_object_writer& json_object_writer::value(std::string_view key,
                                              const boost::json::value& value) {
  if (value.is_string())
    return field(key, std::string_view{value.get_string()});
  begin(key);
  out_ += boost::json::serialize(value);
  return *this;
}

json_object_writer& json_object_writer::raw(std::string_view key, std::string_view json) {
  begin(key);
  out_ += json;
  return *this;
}

} // namespace fencelock
