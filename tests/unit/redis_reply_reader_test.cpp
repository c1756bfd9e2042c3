// The Redis reply reader on its own: bytes in, values out, whatever pieces they come in, and a
// bound on what an array's count may make it allocate. No Redis and no sockets.

#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "actors/store/redis/reply_reader.hpp"

using fencelock::redis::max_reply_elements;
using fencelock::redis::read_replies;
using fencelock::redis::reply_reader;
using fencelock::redis::value;

TEST_CASE("the reply reader reads every kind of reply", "[redis]") {
  auto r = read_replies("+OK\r\n:-7\r\n$3\r\nabc\r\n-ERR no\r\n$-1\r\n*2\r\n:1\r\n*1\r\n$0\r\n\r\n");
  REQUIRE(r.error.empty());
  REQUIRE(r.replies.size() == 6);
  CHECK(r.replies[0].type == value::kind::status);
  CHECK(r.replies[0].str == "OK");
  CHECK(r.replies[1].integer == -7);
  CHECK(r.replies[2].is("abc"));
  CHECK(r.replies[3].is_error());
  CHECK(r.replies[4].type == value::kind::nil);
  REQUIRE(r.replies[5].elements.size() == 2);
  CHECK(r.replies[5].elements[1].elements.at(0).is(""));
}

TEST_CASE("the reply reader waits for a reply's last byte", "[redis]") {
  std::string bytes = "*2\r\n$5\r\nhello\r\n:42\r\n";
  reply_reader reader;
  std::optional<value> v;
  for (size_t i = 0; i + 1 < bytes.size(); ++i) {
    REQUIRE(reader.feed(bytes.substr(i, 1)));
    REQUIRE(reader.next(v));
    REQUIRE_FALSE(v);
  }
  REQUIRE(reader.feed(bytes.substr(bytes.size() - 1)));
  REQUIRE(reader.next(v));
  REQUIRE(v);
  CHECK(v->elements.at(0).is("hello"));
  CHECK(v->elements.at(1).integer == 42);
}

TEST_CASE("the reply reader reports a protocol error", "[redis]") {
  auto r = read_replies("+OK\r\n?\r\n");
  CHECK(r.replies.size() == 1);
  CHECK_FALSE(r.error.empty());
}

TEST_CASE("an array count beyond the bound is an error, not an allocation", "[redis]") {
  // hiredis allocates the element pointers when it reads the count: 8 GB for this one.
  auto r = read_replies("*1001000000\r\n");
  CHECK(r.replies.empty());
  CHECK(r.error == "array of more than " + std::to_string(max_reply_elements) + " elements");
  CHECK(read_replies("*" + std::to_string(max_reply_elements) + "\r\n").error.empty());
}
