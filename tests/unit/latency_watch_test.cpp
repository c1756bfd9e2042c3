// The running average of store write latency that sheds new acquires (docs/overload.md), with
// time passed in by the test.

#include <catch2/catch.hpp>

#include <cmath>

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

  // Fast writes pull it down by a fifth of the distance each (all at one instant here, so that
  // nothing fades in between).
  w.add(0ms, t0);
  CHECK(w.average_ms(t0, 5s) == Approx(800.0));
  w.add(0ms, t0);
  CHECK(w.average_ms(t0, 5s) == Approx(640.0));
  // One slow write raises it, without taking it all the way.
  w.add(2000ms, t0 + 30ms);
  CHECK(w.average_ms(t0 + 30ms, 5s) == Approx(0.8 * 640.0 * std::exp2(-0.03) + 0.2 * 2000.0));

  // No write for longer than max_age: the store is idle, not slow.
  CHECK(w.average_ms(t0 + 30ms + 5s, 5s) > 0.0);
  CHECK(w.average_ms(t0 + 30ms + 5s + 1ms, 5s) == 0.0);
}

TEST_CASE("a shed decision on store latency ends by itself while it is in force",
          "[unit][overload]") {
  // Shedding acquires starves the average of the fast writes that would bring it down: it fades
  // with time instead, by half every second.
  latency_watch w;
  auto t0 = latency_watch::clock::time_point{} + 1h;
  w.add(2000ms, t0);
  CHECK(w.average_ms(t0, 5s) == Approx(2000.0));
  CHECK(w.average_ms(t0 + 1s, 5s) == Approx(1000.0));
  CHECK(w.average_ms(t0 + 2s, 5s) == Approx(500.0));
  // A new sample joins the faded average.
  w.add(0ms, t0 + 1s);
  CHECK(w.average_ms(t0 + 1s, 5s) == Approx(800.0));
}

TEST_CASE("a round trip that overlapped a stall of the process is not a slow store",
          "[unit][overload]") {
  latency_watch w;
  auto t0 = latency_watch::clock::time_point{} + 1h;
  w.add(2ms, t0);
  // The process stood still from t0 + 10 ms to t0 + 2.5 s: writes in flight across it took
  // that long, but the store did not.
  w.stalled(t0 + 10ms, t0 + 2500ms);
  w.add(2495ms, t0 + 2500ms); // sent at t0 + 5 ms
  w.add(1000ms, t0 + 2600ms); // sent during the stall
  CHECK(w.average_ms(t0 + 2600ms, 5s) < 1.0);
  // A slow write after the stall counts.
  w.add(1000ms, t0 + 4000ms); // sent at t0 + 3 s
  CHECK(w.average_ms(t0 + 4000ms, 5s) > 100.0);
}

TEST_CASE("a round trip that finished in a stall the watchdog has not seen yet is not a slow "
          "store",
          "[unit][overload]") {
  latency_watch w;
  auto t0 = latency_watch::clock::time_point{} + 1h;
  // Heartbeats every 250 ms; one 2 s late is a stall.
  w.beat(t0, 2250ms);
  w.add(2ms, t0 + 100ms);
  // The process stands still from t0 + 200 ms to t0 + 3 s. On waking, a write in flight across
  // it finishes before the watchdog has run.
  w.add(2850ms, t0 + 3000ms);
  CHECK(w.average_ms(t0 + 3000ms, 5s) < 1.0);
  // The watchdog runs: it records the stall and beats again. A slow write after that counts.
  w.stalled(t0, t0 + 3010ms);
  w.beat(t0 + 3010ms, 2250ms);
  w.add(1000ms, t0 + 4500ms); // sent at t0 + 3.5 s
  CHECK(w.average_ms(t0 + 4500ms, 5s) > 100.0);
}
