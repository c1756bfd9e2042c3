#pragma once

// The Lua scripts that are the Redis store: every change of a lease (acquire, renew, release,
// expire) is one script, so Redis applies it atomically with respect to every instance. Each
// script publishes the lock event of its change on the store's channel, in the same atomic step.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "actors/store/redis/value.hpp"

namespace fencelock::redis {

enum class script_id { acquire, renew, release, expire, peek, list };

struct script {
  const char* name;
  std::string body;
};

/// Returns the script `id` (its text is what EVAL runs; EVALSHA names it by SHA-1).
const script& script_for(script_id id);

/// One lease as a script answered it.
struct script_lease {
  /// acquire: granted, refreshed, held; renew and release: ok, lost; expire: alive, ended, gone,
  /// missing; peek: held, free.
  std::string status;
  std::string name;  // list entries only
  std::string owner;
  uint64_t token = 0;
  int64_t ttl_ms = 0;
  /// Time left until the deadline on Redis's clock, rounded up.
  int64_t remaining_ms = 0;
  uint64_t revision = 0;
  /// The deadline on Redis's clock, in ms since the Unix epoch: the expiresAt every instance
  /// reports for this lease.
  int64_t deadline_ms = 0;
  /// acquire, granted: the token of the lease the grant replaced in the store (0 = none).
  uint64_t replaced = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, script_lease& x) {
  return f(caf::meta::type_name("fencelock::redis::script_lease"), x.status, x.name, x.owner,
           x.token, x.ttl_ms, x.remaining_ms, x.revision, x.deadline_ms, x.replaced);
}

/// Decodes the reply of acquire, renew, release, expire or peek; on failure sets `why` (a Redis
/// error reply's text, or what did not parse).
std::optional<script_lease> decode_lease(const value& v, std::string& why);

/// Decodes the reply of list.
std::optional<std::vector<script_lease>> decode_list(const value& v, std::string& why);

} // namespace fencelock::redis
