#pragma once

// Boundary checks shared by every front end (HTTP, WebSocket, embedding API): nothing reaches an
// actor unless it passed these. Each failure is errc::invalid_request naming the field.

#include <string_view>

#include <caf/error.hpp>

#include "fencelock/config.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

/// Returns whether `x` is 1..200 chars of [A-Za-z0-9._:-].
bool valid_lock_name(std::string_view x) noexcept;

/// Returns whether `x` is 1..128 printable ASCII chars.
bool valid_owner(std::string_view x) noexcept;

/// Returns whether `x` is 1..64 chars of [A-Za-z0-9._-]: a principal's name (docs/security.md).
bool valid_principal_name(std::string_view x) noexcept;

/// Checks an acquire against `cfg`'s bounds; returns an invalid_request error naming the field.
caf::error validate(const acquire_request& x, const config& cfg);
caf::error validate(const renew_request& x, const config& cfg);
caf::error validate(const release_request& x, const config& cfg);
caf::error validate(const list_request& x, const config& cfg);
caf::error validate(const check_request& x, const config& cfg);
caf::error validate(const subscribe_request& x, const config& cfg);

/// Returns an invalid_request error whose message names `field`.
caf::error invalid_field(std::string_view field, std::string_view why);

} // namespace fencelock
