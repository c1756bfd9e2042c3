// The running average of store write latency that sheds new acquires (docs/overload.md), with
// time passed in by the test.

#include <catch2/catch.hpp>

#include "actors/latency_watch.hpp"

using fencelock::latency_watch;
using namespace std::chrono_literals;

TEST_CASE("the store latency average follows its samples and forgets an idle store",
          "[unit][overload]") {
  latency_watch w;
  auto t0 = latency_watch::clock::time_point{} + 1h;
  CHECK(w.average_ms(t0, 5s) == 0.0); // nothing measured yet

  w.add(1000ms, t0); // the first sample sets the average
  CHECK(w.average_ms(t0, 5s) == Approx(1000.0));

  // Fast writes pull it down by a fifth of the distance each.
  w.add(0ms, t0 + 10ms);
  CHECK(w.average_ms(t0 + 10ms, 5s) == Approx(800.0));
  w.add(0ms, t0 + 20ms);
  CHECK(w.average_ms(t0 + 20ms, 5s) == Approx(640.0));
  // One slow write raises it, without taking it all the way.
  w.add(2000ms, t0 + 30ms);
  CHECK(w.average_ms(t0 + 30ms, 5s) == Approx(0.8 * 640.0 + 0.2 * 2000.0));

  // No write for longer than max_age: the store is idle, not slow.
  CHECK(w.average_ms(t0 + 30ms + 5s, 5s) > 0.0);
  CHECK(w.average_ms(t0 + 30ms + 5s + 1ms, 5s) == 0.0);
}
