#include "fencelock/validate.hpp"

#include <algorithm>
#include <string>

#include "fencelock/errc.hpp"
#include "fencelock/owner.hpp"

namespace fencelock {

namespace {

bool name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.'
         || c == '_' || c == ':' || c == '-';
}

caf::error check_common(std::string_view name, std::string_view owner) {
  if (!valid_lock_name(name))
    return invalid_field("name", "must be 1..200 characters of [A-Za-z0-9._:-]");
  // A front end with authentication qualified the owner by its principal (fencelock/owner.hpp).
  auto at = owner.find(principal_separator);
  bool valid = at == std::string_view::npos
                 ? valid_owner(owner)
                 : valid_principal_name(owner.substr(0, at)) && valid_owner(owner.substr(at + 1));
  if (!valid)
    return invalid_field("owner", "must be 1..128 printable ASCII characters");
  return caf::none;
}

caf::error check_token(uint64_t token) {
  if (token < 1 || token > max_token)
    return invalid_field("token", "must be an integer between 1 and 9007199254740991");
  return caf::none;
}

caf::error check_range(std::string_view field, int64_t x, int64_t lo, int64_t hi) {
  if (x < lo || x > hi)
    return invalid_field(field, "must be an integer between " + std::to_string(lo) + " and "
                                  + std::to_string(hi));
  return caf::none;
}

} // namespace

bool valid_lock_name(std::string_view x) noexcept {
  if (x.empty() || x.size() > 200)
    return false;
  for (char c : x)
    if (!name_char(c))
      return false;
  return true;
}

bool valid_owner(std::string_view x) noexcept {
  if (x.empty() || x.size() > 128)
    return false;
  for (char c : x)
    if (c < 0x20 || c > 0x7e)
      return false;
  return true;
}

bool valid_principal_name(std::string_view x) noexcept {
  return !x.empty() && x.size() <= 64
         && std::all_of(x.begin(), x.end(), [](char c) { return c != ':' && name_char(c); });
}

caf::error invalid_field(std::string_view field, std::string_view why) {
  std::string msg{field};
  msg += ": ";
  msg += why;
  return caf::make_error(errc::invalid_request, std::move(msg));
}

caf::error validate(const acquire_request& x, const config& cfg) {
  if (auto err = check_common(x.name, x.owner))
    return err;
  if (auto err = check_range("ttlMs", x.ttl_ms, cfg.ttl_min_ms, cfg.ttl_max_ms))
    return err;
  return check_range("waitMs", x.wait_ms, 0, cfg.wait_max_ms);
}

caf::error validate(const renew_request& x, const config& cfg) {
  if (auto err = check_common(x.name, x.owner))
    return err;
  if (auto err = check_token(x.token))
    return err;
  if (x.ttl_ms == 0) // keep the lease's own TTL
    return caf::none;
  return check_range("ttlMs", x.ttl_ms, cfg.ttl_min_ms, cfg.ttl_max_ms);
}

caf::error validate(const release_request& x, const config&) {
  if (x.force) { // an admin's: whoever holds it, or the lease `token` when one is given
    if (!valid_lock_name(x.name))
      return invalid_field("name", "must be 1..200 characters of [A-Za-z0-9._:-]");
    return x.token == 0 ? caf::none : check_token(x.token);
  }
  if (auto err = check_common(x.name, x.owner))
    return err;
  return check_token(x.token);
}

caf::error validate(const check_request& x, const config&) {
  if (!valid_lock_name(x.name))
    return invalid_field("name", "must be 1..200 characters of [A-Za-z0-9._:-]");
  return check_token(x.token);
}

namespace {

caf::error check_prefix(const std::string& prefix) {
  if (prefix.size() > 200 || !std::all_of(prefix.begin(), prefix.end(), name_char))
    return invalid_field("prefix", "must be at most 200 characters of [A-Za-z0-9._:-]");
  return caf::none;
}

} // namespace

caf::error validate(const subscribe_request& x, const config&) {
  if (!x.exact)
    return check_prefix(x.prefix);
  if (!valid_lock_name(x.prefix))
    return invalid_field("lock", "must be 1..200 characters of [A-Za-z0-9._:-]");
  return caf::none;
}

caf::error validate(const list_request& x, const config& cfg) {
  if (auto err = check_prefix(x.prefix))
    return err;
  if (!x.cursor.empty() && !valid_lock_name(x.cursor))
    return invalid_field("cursor", "must be a lock name from a previous page's nextCursor");
  if (x.limit < 1 || x.limit > cfg.list_limit_max)
    return invalid_field("limit",
                         "must be an integer between 1 and " + std::to_string(cfg.list_limit_max));
  return caf::none;
}

} // namespace fencelock
