#include "fencelock/events.hpp"

namespace fencelock {

std::string_view to_string(lease_end_cause x) noexcept {
  switch (x) {
    case lease_end_cause::released:
      return "released";
    case lease_end_cause::expired:
      return "expired";
    case lease_end_cause::undelivered:
      return "undelivered";
    case lease_end_cause::session_closed:
      return "session_closed";
    case lease_end_cause::store_lost:
      return "store_lost";
    case lease_end_cause::revoked:
      return "revoked";
  }
  return "unknown";
}

std::string_view to_string(lock_event_kind x) noexcept {
  switch (x) {
    case lock_event_kind::acquired:
      return "acquired";
    case lock_event_kind::renewed:
      return "renewed";
    case lock_event_kind::released:
      return "released";
    case lock_event_kind::expired:
      return "expired";
  }
  return "unknown";
}

} // namespace fencelock
