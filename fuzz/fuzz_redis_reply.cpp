// The Redis reply reader (actors/store/redis/reply_reader.cpp: hiredis's reader, values copied
// out) and what the Redis store makes of a reply: decode_lease and decode_list
// (actors/store/redis/scripts.cpp) and, for a channel message, parse_store_event
// (actors/store/redis/store_event.cpp). Input: the bytes Redis sent (RESP2), which are also
// read as a channel message's payload (JSON) on their own.
//
// hiredis is Debian's build, not instrumented; its allocations still go through ASan's malloc,
// so copying a reply out of them past its end is caught.

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "actors/store/redis/redis_store.hpp"
#include "actors/store/redis/reply_reader.hpp"
#include "actors/store/redis/scripts.hpp"
#include "fencelock/events.hpp"
#include "fencelock/types.hpp"
#include "fuzz/fuzz.hpp"

namespace fencelock::fuzz {

namespace {

constexpr std::string_view target_name = "fuzz_redis_reply";

void check(bool ok, std::string_view what) {
  if (!ok)
    violated(target_name, what);
}

bool same(const redis::value& a, const redis::value& b) {
  return a.type == b.type && a.integer == b.integer && a.str == b.str
         && std::equal(a.elements.begin(), a.elements.end(), b.elements.begin(),
                       b.elements.end(), same);
}

/// Reads `bytes` fed in pieces of `piece` bytes, as a connection receives them.
redis::read_result read_in_pieces(std::string_view bytes, size_t piece) {
  redis::read_result out;
  redis::reply_reader reader;
  while (!bytes.empty()) {
    if (!reader.feed(bytes.substr(0, piece))) {
      out.error = reader.error();
      return out;
    }
    bytes.remove_prefix(std::min(piece, bytes.size()));
    for (;;) {
      std::optional<redis::value> v;
      if (!reader.next(v)) {
        out.error = reader.error();
        return out;
      }
      if (!v)
        break;
      out.replies.push_back(std::move(*v));
    }
  }
  return out;
}

/// Decodes `payload` as a channel event and checks it against what lock_event promises
/// (include/fencelock/events.hpp).
void check_event(std::string_view payload) {
  auto ev = parse_store_event(payload);
  if (!ev)
    return;
  if (!ev->ends_lease())
    return;
  check(ev->expires_at_ms == 0, "an event that ends a lease has no deadline");
  using cause = lease_end_cause;
  bool by_release = ev->cause == cause::released || ev->cause == cause::session_closed;
  check(by_release == (ev->kind == lock_event_kind::released),
        "released comes with cause released or session_closed, expired with the others");
}

/// Decodes every string in `v` as a channel event, as the subscriber connection does with a
/// message's payload.
void check_events(const redis::value& v) {
  if (v.type == redis::value::kind::string) {
    check_event(v.str);
    return;
  }
  for (const auto& x : v.elements)
    check_events(x);
}

/// A decoded lease holds what the scripts can answer, so that the backend's arithmetic on it
/// (redis_runtime.cpp: a deadline `remaining_ms` from now) cannot overflow.
void check_lease(const redis::script_lease& x) {
  constexpr int64_t year_ms = 365LL * 24 * 3600 * 1000;
  check(x.token <= max_token && x.revision <= max_token, "a decoded token fits 2^53-1");
  check(x.ttl_ms >= 0 && x.ttl_ms <= year_ms && x.remaining_ms >= 0 && x.remaining_ms <= year_ms,
        "a decoded TTL and time left are within a year");
  check(x.deadline_ms >= 0, "a decoded deadline is not before 1970");
}

void check_decoders(const redis::value& v) {
  check(!redis::describe(v).empty(), "describe says something");
  std::string why;
  auto lease = redis::decode_lease(v, why);
  if (!lease && why.empty())
    violated(target_name, "decode_lease succeeds or says why: " + redis::describe(v));
  if (lease)
    check_lease(*lease);
  why.clear();
  auto list = redis::decode_list(v, why);
  if (!list && why.empty())
    violated(target_name, "decode_list succeeds or says why: " + redis::describe(v));
  if (list)
    for (const auto& x : *list) {
      check(x.status == "held", "a list entry is a held lease");
      check_lease(x);
    }
  check_events(v);
}

} // namespace

int fuzz_redis_reply(const uint8_t* data, size_t size) {
  std::string_view bytes{reinterpret_cast<const char*>(data), size};
  auto whole = redis::read_replies(bytes);
  // A connection gets the bytes in whatever pieces TCP makes: the replies must not depend on
  // where the pieces end.
  auto pieces = read_in_pieces(bytes, 1 + size % 13);
  check(whole.error.empty() == pieces.error.empty(), "an error does not depend on the pieces");
  check(std::equal(whole.replies.begin(), whole.replies.end(), pieces.replies.begin(),
                   pieces.replies.end(), same),
        "the replies do not depend on the pieces");
  for (const auto& v : whole.replies)
    check_decoders(v);
  // The input itself as a message's payload: the event parser without the RESP around it.
  check_event(bytes);
  return 0;
}

} // namespace fencelock::fuzz
