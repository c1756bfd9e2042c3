// net/response_bytes: the bytes of a response are those Beast's own serializer writes.

#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include <boost/beast/http/write.hpp>

#include "net/response_bytes.hpp"

namespace http = boost::beast::http;
using fencelock::net::serialize_response;

namespace {

using response = http::response<http::string_body>;

std::string beast_bytes(const response& res) {
  std::ostringstream os;
  os << res;
  return os.str();
}

std::string ours(const response& res) {
  std::string out = "left over from the last response";
  serialize_response(res, out);
  return out;
}

response json_response(http::status status, unsigned version, bool keep_alive,
                       std::string body = R"({"name":"a","token":42})") {
  response res{status, version};
  res.set(http::field::server, "fencelock");
  res.set(http::field::content_type, "application/json");
  res.set("x-request-id", "0123456789abcdef");
  res.body() = std::move(body);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

} // namespace

TEST_CASE("a JSON response is written as Beast writes it") {
  auto res = json_response(http::status::ok, 11, true);
  CHECK(ours(res) == beast_bytes(res));
  CHECK(ours(res).rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
}

TEST_CASE("closing, HTTP/1.0 and error responses are written as Beast writes them") {
  for (auto status : {http::status::conflict, http::status::service_unavailable,
                      http::status::too_many_requests, http::status::not_found}) {
    for (unsigned version : {10u, 11u}) {
      for (bool keep_alive : {true, false}) {
        auto res = json_response(status, version, keep_alive);
        res.set(http::field::retry_after, "1");
        INFO(beast_bytes(res));
        CHECK(ours(res) == beast_bytes(res));
      }
    }
  }
}

TEST_CASE("bodiless responses are written as Beast writes them") {
  // A 304 without Content-Length, and a HEAD response: its length announced, no body.
  auto not_modified = json_response(http::status::not_modified, 11, true, "");
  not_modified.erase(http::field::content_length);
  CHECK(ours(not_modified) == beast_bytes(not_modified));
  auto head = json_response(http::status::ok, 11, true);
  auto length = head.body().size();
  head.body().clear();
  head.content_length(length);
  CHECK(ours(head) == beast_bytes(head));
  CHECK(ours(head).find("Content-Length: " + std::to_string(length) + "\r\n") != std::string::npos);
}
