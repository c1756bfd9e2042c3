#include "common/json_writer.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace fencelock {

void append_json_string(std::string& out, std::string_view x) {
  out.reserve(out.size() + x.size() + 2);
  out += '"';
  std::size_t run = 0; // start of the characters not yet written that need no escape
  for (std::size_t i = 0; i < x.size(); ++i) {
    auto c = static_cast<unsigned char>(x[i]);
    if (c >= 0x20 && c != '"' && c != '\\')
      continue;
    out.append(x.data() + run, i - run);
    run = i + 1;
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
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 0xf];
      }
    }
  }
  out.append(x.data() + run, x.size() - run);
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
