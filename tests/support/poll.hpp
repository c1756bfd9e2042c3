#pragma once

// Waiting on a condition with a deadline instead of sleeping a guessed time.

#include <chrono>
#include <thread>

namespace fencelock::test {

/// Calls `pred` every `interval` until it returns true or `timeout` passed; returns the last
/// result (so a condition that turns true at the deadline still counts).
template <class Pred>
bool eventually(Pred&& pred, std::chrono::milliseconds timeout,
                std::chrono::milliseconds interval = std::chrono::milliseconds{20}) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred())
      return true;
    if (std::chrono::steady_clock::now() >= deadline)
      return pred();
    std::this_thread::sleep_for(interval);
  }
}

} // namespace fencelock::test
