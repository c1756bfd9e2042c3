#pragma once

// Reads Redis replies (RESP2) out of the bytes a connection receives, with hiredis's reply reader,
// and copies each into a redis::value. No socket here: bytes in, values out, so that the parsing
// can be tested and fuzzed on its own (fuzz/fuzz_redis_reply.cpp).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/store/redis/value.hpp"

struct redisReader;

namespace fencelock::redis {

/// Most elements one array of a reply may announce. hiredis allocates an array's element
/// pointers as soon as it reads the count, before any element arrives, so a count of 2^31 from
/// a broken or hostile peer would cost 16 GiB at once. The largest array fencelock asks for is a
/// list page: 7 values per lock, at most 100,000 locks per page (list-limit-max).
inline constexpr std::size_t max_reply_elements = std::size_t{1} << 20;

/// Turns a stream of RESP bytes, fed in pieces as they arrive, into replies. Not thread-safe.
class reply_reader {
public:
  reply_reader();
  ~reply_reader();

  reply_reader(const reply_reader&) = delete;
  reply_reader& operator=(const reply_reader&) = delete;

  /// Appends `bytes` to what is buffered; returns false on failure (see error()).
  bool feed(std::string_view bytes);

  /// Takes the next complete reply into `out`: returns true with `out` set, true with `out`
  /// empty when no reply is complete yet, and false on a protocol error (see error()), after
  /// which the reader is unusable.
  bool next(std::optional<value>& out);

  /// Returns why the last feed() or next() failed ("" when none did).
  const std::string& error() const noexcept {
    return error_;
  }

private:
  redisReader* reader_;
  std::string error_;
  bool too_large_ = false; // set by the array hook when a count exceeds max_reply_elements
};

/// What read_replies() found in a piece of bytes.
struct read_result {
  /// The complete replies, in order.
  std::vector<value> replies;
  /// Why reading stopped early ("" when every complete reply was read; an incomplete one at the
  /// end is no error).
  std::string error;
};

/// Reads every complete reply in `bytes` (a pure function over reply_reader).
read_result read_replies(std::string_view bytes);

} // namespace fencelock::redis
