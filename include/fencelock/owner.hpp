#pragma once

// Whose a lease is. With authentication (docs/security.md) the front end qualifies every owner
// by the principal that sent the request: the principal's name, a unit separator, then the
// client's label. The separator is a control character, which valid_owner() refuses in a label,
// so no label can pass for another principal's lease. Without authentication the owner is the
// label alone. The core compares owners as opaque strings; only the lock actor looks inside, to
// tell "another principal's lease" (forbidden) from "not your lease any more" (lease_lost), and
// the front ends split an owner again for display.

#include <string>
#include <string_view>

namespace fencelock {

inline constexpr char principal_separator = '\x1f';

/// Returns `label` qualified by `principal` (the label alone when `principal` is empty).
inline std::string qualified_owner(std::string_view principal, std::string_view label) {
  if (principal.empty())
    return std::string{label};
  std::string result;
  result.reserve(principal.size() + 1 + label.size());
  result.append(principal).push_back(principal_separator);
  result.append(label);
  return result;
}

/// Returns the principal that `owner` belongs to ("" when it is not qualified).
inline std::string_view owner_principal(std::string_view owner) noexcept {
  auto at = owner.find(principal_separator);
  return at == std::string_view::npos ? std::string_view{} : owner.substr(0, at);
}

/// Returns the client's label of `owner`: what clients sent and are shown.
inline std::string_view owner_label(std::string_view owner) noexcept {
  auto at = owner.find(principal_separator);
  return at == std::string_view::npos ? owner : owner.substr(at + 1);
}

} // namespace fencelock
