#include "net/response_bytes.hpp"

#include <boost/json/serialize.hpp>

namespace fencelock::net {

namespace {

namespace http = boost::beast::http;

void add_field(std::string& out, std::string_view name, std::string_view value) {
  out += name;
  out += ": ";
  out += value;
  out += "\r\n";
}

bool has_no_body(http::status status) {
  return http::to_status_class(status) == http::status_class::informational
         || status == http::status::no_content || status == http::status::not_modified;
}

} // namespace

void write_response(const reply& r, const response_framing& framing, std::string& out) {
  std::string json; // the body, when the reply gives it as a value
  if (r.text_type.empty())
    json = boost::json::serialize(r.body);
  std::string_view body = r.text_type.empty() ? std::string_view{json} : r.text;

  out.clear();
  out.reserve(256 + body.size());
  out += "HTTP/";
  out += static_cast<char>('0' + framing.version / 10);
  out += '.';
  out += static_cast<char>('0' + framing.version % 10);
  out += ' ';
  out += std::to_string(static_cast<unsigned>(r.status));
  out += ' ';
  out += http::obsolete_reason(r.status);
  out += "\r\n";
  add_field(out, "Server", "fencelock");
  add_field(out, "Content-Type", r.text_type.empty() ? "application/json" : r.text_type);
  add_field(out, "x-request-id", framing.request_id);
  if (r.retry_after_s != 0)
    add_field(out, "Retry-After", std::to_string(r.retry_after_s));
  if (!r.allow.empty())
    add_field(out, "Allow", r.allow);
  for (const auto& [name, value] : r.headers)
    add_field(out, name, value);
  // HTTP/1.1 keeps a connection open unless told otherwise; HTTP/1.0 closes it unless told.
  if (framing.version >= 11 && !framing.keep_alive)
    add_field(out, "Connection", "close");
  if (framing.version < 11 && framing.keep_alive)
    add_field(out, "Connection", "keep-alive");
  if (has_no_body(r.status)) {
    out += "\r\n";
    return;
  }
  add_field(out, "Content-Length", std::to_string(body.size()));
  out += "\r\n";
  if (!framing.head)
    out += body;
}

} // namespace fencelock::net
