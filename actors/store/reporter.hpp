#pragma once

// What a store reports while it works. The service passes one in and turns the reports into
// metrics and log lines, so that stores know neither.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <boost/json/object.hpp>

#include "common/log.hpp"

namespace fencelock {

class store_reporter {
public:
  virtual ~store_reporter() = default;

  /// Records one lease write's round trip to the store (queueing and commit included); the
  /// average sheds new acquires while the store is slow. Any thread.
  virtual void write_took(std::chrono::steady_clock::duration elapsed) = 0;

  /// Records one group commit of the embedded store: how long it took (the fsync included) and
  /// how many writes it made durable together. Any thread; other stores never call it.
  virtual void commit_done(std::chrono::steady_clock::duration took, std::size_t writes) = 0;

  /// Sets the number of leases held in the store, as its event source counts them. Any thread.
  virtual void locks_held(int64_t n) = 0;

  /// Counts an expiry put off because the lease's deadline fell into a stall of the process.
  virtual void expiry_deferred() = 0;

  /// Reports what an operator should know (a connection lost or back, writes failing or
  /// succeeding again) as a log event. Any thread.
  virtual void note(log_level level, std::string_view event, const boost::json::object& fields) = 0;
};

} // namespace fencelock
