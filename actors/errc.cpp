#include "fencelock/errc.hpp"

#include <caf/message.hpp>

namespace fencelock {

const char* to_string(errc x) noexcept {
  switch (x) {
    case errc::invalid_request:
      return "invalid_request";
    case errc::lock_held:
      return "lock_held";
    case errc::lease_lost:
      return "lease_lost";
    case errc::too_many_waiters:
      return "too_many_waiters";
    case errc::overloaded:
      return "overloaded";
    case errc::store_unavailable:
      return "store_unavailable";
    case errc::shutting_down:
      return "shutting_down";
    case errc::unavailable:
      return "unavailable";
    case errc::cancelled:
      return "cancelled";
    case errc::unauthenticated:
      return "unauthenticated";
    case errc::forbidden:
      return "forbidden";
  }
  return "unknown";
}

bool as_errc(const caf::error& err, errc& out) noexcept {
  if (!err || err.category() != caf::atom("fencelock"))
    return false;
  out = static_cast<errc>(err.code());
  return true;
}

std::string error_message(const caf::error& err) {
  if (!err)
    return {};
  errc code;
  if (as_errc(err, code) && code == errc::lock_held)
    return "the lock is held by another owner"; // the context is (owner, expires_at_ms)
  const auto& ctx = err.context();
  for (size_t i = 0; i < ctx.size(); ++i)
    if (ctx.match_element<std::string>(i))
      return ctx.get_as<std::string>(i);
  return {};
}

} // namespace fencelock
