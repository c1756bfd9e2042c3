#pragma once

// Who is asking, and what they may do (docs/security.md). An auth file names the principals:
// for each, the SHA-256 of its bearer token (or `cert`: a client certificate with its name as
// subject CN, over mutual TLS) and its permissions per lock-name prefix. The
// front ends authenticate every HTTP request and every WebSocket frame against the file in
// force, which SIGHUP reloads, and authorize each operation before it reaches the service.
// Without an auth file nothing is checked, as before.

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "fencelock/types.hpp"

namespace fencelock::net {

/// What a principal may do on a lock; each level includes the ones below it.
enum class access : uint8_t {
  /// status, check, list, subscribe.
  read = 1,
  /// acquire, renew, release (of its own leases).
  lock = 2,
  /// /metrics, and everything else.
  admin = 3,
};

/// Returns "read", "lock" or "admin".
const char* to_string(access x) noexcept;

/// One principal of the auth file.
struct principal {
  std::string name;
  /// Levels per lock-name prefix; the prefix "" (written `*`) covers every lock.
  std::vector<std::pair<access, std::string>> grants;
  /// `rate:N`: requests per second over all its connections, renewals and releases aside
  /// (0 = no limit; net/principal_limits.hpp).
  uint32_t max_rate = 0;
  /// `waiters:N`: acquires that may wait at once over all locks (0 = no limit).
  uint32_t max_waiting = 0;

  /// Returns whether this principal may do `need` on the lock named `lock`.
  bool may(access need, std::string_view lock) const noexcept;

  /// Returns whether it may do `need` on every lock whose name starts with `prefix`.
  bool may_all(access need, std::string_view prefix) const noexcept;
};

/// The SHA-256 of a bearer token, as the auth file keeps it.
using token_hash = std::array<unsigned char, 32>;

/// Returns the SHA-256 of `token`.
token_hash hash_token(std::string_view token);

/// Returns `x` as 64 lowercase hex digits.
std::string to_hex(const token_hash& x);

/// The principals of one auth file.
class auth_table {
public:
  /// Reads an auth file's text; an error names the line and what is wrong with it.
  static caf::expected<auth_table> parse(std::string_view text);

  /// Reads the auth file at `path`.
  static caf::expected<auth_table> load(const std::string& path);

  /// Returns the principal whose token hashes to `hash`, or null. Compares with every entry in
  /// constant time, so that the time taken tells nothing about which bytes matched.
  const principal* find(const token_hash& hash) const noexcept;

  /// Returns the principal named `name` that authenticates with a client certificate (its line
  /// says `cert`), or null.
  const principal* find_certified(std::string_view name) const noexcept;

  /// Returns the number of principals.
  std::size_t size() const noexcept {
    return entries_.size();
  }

private:
  struct entry {
    /// The token's hash; none for a principal that authenticates with a client certificate.
    std::optional<token_hash> hash;
    principal who;
  };
  std::vector<entry> entries_;
};

/// The auth file in force, shared by every session; reload() swaps it (SIGHUP). Thread-safe.
class authenticator {
public:
  /// Reads the file at `path`; an empty path turns authentication off.
  static caf::expected<std::shared_ptr<authenticator>> open(std::string path);

  /// Returns whether requests must authenticate.
  bool enabled() const noexcept {
    return !path_.empty();
  }

  /// Reads the file again. On an error the table in force stays, and the error is returned.
  caf::error reload();

  /// Returns the principal with the token whose hash is `hash` in the table in force, or
  /// null. The pointer keeps that table alive: a reload meanwhile does not invalidate it.
  std::shared_ptr<const principal> find(const token_hash& hash) const;

  /// Returns the certificate principal named `name` in the table in force, or null.
  std::shared_ptr<const principal> find_certified(std::string_view name) const;

  /// Returns who a request is from: the principal of its bearer `token` when it carries one (a
  /// wrong token is not made up for by a certificate), else the principal named by the subject
  /// CN of the connection's verified client certificate, else null.
  std::shared_ptr<const principal> identify(std::string_view token,
                                            std::string_view certificate_name) const;

  /// Returns the number of principals in force.
  std::size_t size() const;

private:
  explicit authenticator(std::string path) : path_(std::move(path)) {
  }

  const std::string path_;
  mutable std::mutex mutex_;
  std::shared_ptr<const auth_table> table_;
};

/// Returns the token of an Authorization header value "Bearer <token>", or "" when it is none.
std::string_view bearer_token(std::string_view authorization) noexcept;

/// Checks that `who` may make the request, and qualifies its owner by `who` (fencelock/owner.hpp):
/// errc::forbidden otherwise, naming what was refused.
caf::error authorize(const principal& who, acquire_request& x);
caf::error authorize(const principal& who, renew_request& x);
caf::error authorize(const principal& who, release_request& x);
caf::error authorize(const principal& who, const check_request& x);
caf::error authorize(const principal& who, const list_request& x);
caf::error authorize(const principal& who, const subscribe_request& x);

/// Checks that `who` may read the lock named `lock` (status).
caf::error authorize_read(const principal& who, std::string_view lock);

/// Checks that `who` is an admin of every lock (/metrics).
caf::error authorize_admin(const principal& who);

/// The error of a request without valid credentials.
caf::error unauthenticated_error();

} // namespace fencelock::net
