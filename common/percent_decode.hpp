#pragma once

// Percent-decoding (RFC 3986 %XX escapes), shared by the HTTP routes (path and query) and the
// Redis store's URL (user and password).

#include <string>
#include <string_view>

namespace fencelock {

/// Returns the value of hex digit `c` (either case), or -1 when it is none.
int hex_value(char c) noexcept;

/// Decodes the %XX escapes of `in` into `out` (and '+' into ' ' when `plus_is_space`, as in
/// query strings); returns false on a malformed escape.
bool percent_decode(std::string_view in, bool plus_is_space, std::string& out);

} // namespace fencelock
