#pragma once

// Small pieces shared by the files of client_core (core.cpp, core_leases.cpp,
// core_watches.cpp): request bodies, a JSON integer reader, and the bounded wait on the strand.

#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "fencelock/client.hpp"

namespace fencelock::detail {

/// Returns the fields of a renew request (the connection adds the id).
inline boost::json::object renew_fields(std::string_view name, std::string_view owner,
                                        uint64_t token, std::chrono::milliseconds ttl) {
  return {{"op", "renew"}, {"lock", name}, {"owner", owner}, {"token", token},
          {"ttlMs", ttl.count()}};
}

/// Returns the fields of a release request.
inline boost::json::object release_fields(std::string_view name, std::string_view owner,
                                          uint64_t token) {
  return {{"op", "release"}, {"lock", name}, {"owner", owner}, {"token", token}};
}

/// Returns a JSON integer >= 1 as uint64, else 0 (also for null).
inline uint64_t positive(const boost::json::value* v) {
  if (v != nullptr && v->is_uint64())
    return v->get_uint64();
  if (v != nullptr && v->is_int64() && v->get_int64() > 0)
    return static_cast<uint64_t>(v->get_int64());
  return 0;
}

/// Returns "<code>: <message>" for logs and loss messages.
inline std::string describe(const client_error& e) {
  return e.code() + ": " + e.what();
}

/// Waits for `f`. The strand always fulfils it (every request is answered, timed out or
/// failed), so running out of `limit` means a bug, reported rather than hung on.
template <class T>
T wait_for(std::future<T>& f, std::chrono::milliseconds limit) {
  if (f.wait_for(limit) != std::future_status::ready)
    throw client_error("timeout", "the client's I/O thread did not answer in time");
  return f.get();
}

} // namespace fencelock::detail
