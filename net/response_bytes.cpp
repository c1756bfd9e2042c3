#include "net/response_bytes.hpp"

namespace fencelock::net {

void serialize_response(
  const boost::beast::http::response<boost::beast::http::string_body>& res, std::string& out) {
  out.clear();
  const auto& body = res.body();
  out.reserve(256 + body.size());
  out += "HTTP/";
  out += static_cast<char>('0' + res.version() / 10);
  out += '.';
  out += static_cast<char>('0' + res.version() % 10);
  out += ' ';
  out += std::to_string(res.result_int());
  out += ' ';
  auto reason = res.reason();
  out.append(reason.data(), reason.size());
  out += "\r\n";
  for (const auto& field : res) {
    auto name = field.name_string();
    auto value = field.value();
    out.append(name.data(), name.size());
    out += ": ";
    out.append(value.data(), value.size());
    out += "\r\n";
  }
  out += "\r\n";
  out += body;
}

} // namespace fencelock::net
