#pragma once

// A token bucket per connection: up to `rate` requests per second, in bursts of up to `rate`.
// Used on the connection's strand only, so it needs no lock.

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace fencelock::net {

class rate_limiter {
public:
  using clock = std::chrono::steady_clock;

  /// Allows `rate` requests per second; 0 allows everything.
  explicit rate_limiter(uint32_t rate) noexcept : rate_(rate), tokens_(rate) {
  }

  /// Returns whether one more request may go through at `now`, taking a token if so.
  bool admit(clock::time_point now = clock::now()) noexcept {
    if (rate_ == 0)
      return true;
    if (last_ != clock::time_point{}) {
      auto elapsed = std::chrono::duration<double>(now - last_).count();
      tokens_ = std::min<double>(rate_, tokens_ + elapsed * rate_);
    }
    last_ = now;
    if (tokens_ < 1.0)
      return false;
    tokens_ -= 1.0;
    return true;
  }

private:
  uint32_t rate_;
  double tokens_;
  clock::time_point last_{};
};

} // namespace fencelock::net
