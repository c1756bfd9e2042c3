// net/poll_window: the I/O thread's polling window grows while the gaps between events are
// below its limit and shrinks to nothing when they are not, so that an idle server never polls.

#include <catch2/catch.hpp>

#include <chrono>

#include "net/poll_window.hpp"

using fencelock::net::poll_window;
using namespace std::chrono_literals;

TEST_CASE("a new poll window does not poll", "[poll_window]") {
  poll_window w{500us};
  CHECK(w.current() == 0us);
}

TEST_CASE("gaps within the limit grow the window up to the limit", "[poll_window]") {
  poll_window w{500us};
  w.slept(300us);
  CHECK(w.current() == poll_window::initial);
  w.slept(300us);
  CHECK(w.current() == 2 * poll_window::initial);
  for (int i = 0; i < 20; ++i)
    w.slept(499us);
  CHECK(w.current() == 500us);
  w.slept(500us); // at the limit: polling that long would have caught it
  CHECK(w.current() == 500us);
}

TEST_CASE("a gap beyond the limit halves the window, down to nothing", "[poll_window]") {
  poll_window w{160us};
  for (int i = 0; i < 10; ++i)
    w.slept(100us);
  REQUIRE(w.current() == 160us);
  w.slept(161us);
  CHECK(w.current() == 80us);
  w.slept(10ms);
  CHECK(w.current() == 40us);
  w.slept(10ms);
  CHECK(w.current() == 20us);
  w.slept(10ms);
  CHECK(w.current() == poll_window::initial);
  w.slept(10ms);
  CHECK(w.current() == 0us); // an idle server sleeps at once
  w.slept(10ms);
  CHECK(w.current() == 0us);
}

TEST_CASE("a limit of zero never polls", "[poll_window]") {
  poll_window w{0us};
  w.slept(1us);
  w.slept(0us);
  CHECK(w.current() == 0us);
}
