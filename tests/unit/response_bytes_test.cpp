// net/response_bytes: a response is written byte for byte as Beast writes the same response built
// as a message, field by field (what http_session did before it wrote responses directly).

#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/serialize.hpp>

#include "net/response_bytes.hpp"

namespace http = boost::beast::http;
using fencelock::net::reply;
using fencelock::net::response_framing;
using fencelock::net::write_response;

namespace {

/// The reference: the reply as a Beast message, serialized by Beast.
std::string beast_bytes(const reply& r, const response_framing& f) {
  http::response<http::string_body> res;
  res.version(f.version);
  res.result(r.status);
  res.set(http::field::server, "fencelock");
  res.set(http::field::content_type, r.text_type.empty() ? "application/json" : r.text_type);
  res.set("x-request-id", f.request_id);
  if (r.retry_after_s != 0)
    res.set(http::field::retry_after, std::to_string(r.retry_after_s));
  if (!r.allow.empty())
    res.set(http::field::allow, r.allow);
  for (const auto& [name, value] : r.headers)
    res.set(name, value);
  res.body() = r.text_type.empty() ? boost::json::serialize(r.body) : r.text;
  res.keep_alive(f.keep_alive);
  res.prepare_payload();
  if (f.head) {
    auto length = res.body().size();
    res.body().clear();
    res.content_length(length);
  }
  if (r.status == http::status::not_modified)
    res.erase(http::field::content_length); // Beast writes "Content-Length: 0" for a 304
  std::ostringstream os;
  os << res;
  return os.str();
}

std::string ours(const reply& r, const response_framing& f) {
  std::string out = "left over from the last response";
  write_response(r, f, out);
  return out;
}

reply json_reply(http::status status) {
  reply r;
  r.status = status;
  r.body = boost::json::object{{"name", "a"}, {"token", 42}};
  return r;
}

response_framing framing(unsigned version = 11, bool keep_alive = true, bool head = false) {
  return response_framing{version, keep_alive, head, "0123456789abcdef"};
}

} // namespace

TEST_CASE("a JSON response is written as Beast writes it") {
  auto r = json_reply(http::status::ok);
  CHECK(ours(r, framing()) == beast_bytes(r, framing()));
  CHECK(ours(r, framing()).rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(ours(r, framing()).find("\r\n\r\n{\"name\":\"a\",\"token\":42}") != std::string::npos);
}

TEST_CASE("closing, HTTP/1.0 and error responses are written as Beast writes them") {
  for (auto status : {http::status::conflict, http::status::service_unavailable,
                      http::status::too_many_requests, http::status::not_found,
                      http::status::method_not_allowed, http::status::upgrade_required}) {
    for (unsigned version : {10u, 11u}) {
      for (bool keep_alive : {true, false}) {
        auto r = json_reply(status);
        r.retry_after_s = 1;
        r.allow = "GET, HEAD";
        r.headers.emplace_back("Upgrade", "websocket");
        auto f = framing(version, keep_alive);
        INFO(beast_bytes(r, f));
        CHECK(ours(r, f) == beast_bytes(r, f));
      }
    }
  }
}

TEST_CASE("a text response with headers of its own is written as Beast writes it") {
  reply page;
  page.text_type = "text/html; charset=utf-8";
  page.text = "<!doctype html><title>fencelock</title>";
  page.headers = {{"Cache-Control", "no-cache"}, {"ETag", "\"abc\""}};
  CHECK(ours(page, framing()) == beast_bytes(page, framing()));
  page.text.clear();
  CHECK(ours(page, framing()) == beast_bytes(page, framing())); // Content-Length: 0
}

TEST_CASE("bodiless responses are written as Beast writes them") {
  // A 304 without Content-Length or body, and a HEAD response: its length announced, no body.
  reply not_modified;
  not_modified.status = http::status::not_modified;
  not_modified.text_type = "text/html";
  not_modified.headers = {{"ETag", "\"abc\""}};
  CHECK(ours(not_modified, framing()) == beast_bytes(not_modified, framing()));
  CHECK(ours(not_modified, framing()).find("Content-Length") == std::string::npos);

  auto r = json_reply(http::status::ok);
  auto head = framing(11, true, true);
  CHECK(ours(r, head) == beast_bytes(r, head));
  auto length = boost::json::serialize(r.body).size();
  CHECK(ours(r, head).find("Content-Length: " + std::to_string(length) + "\r\n\r\n")
        == ours(r, head).size()
             - ("Content-Length: " + std::to_string(length) + "\r\n\r\n").size());
}
