#pragma once

// The OpenAPI 3 description of the HTTP API, docs/openapi.json, compiled into the binary by
// cmake/openapi.cmake and served at GET /v1/openapi.json (routes.cpp).

#include <span>
#include <string_view>

#include "net/dashboard.hpp" // dashboard_asset: a compiled-in file

namespace fencelock::net {

/// Returns the compiled-in files (docs/openapi.json alone); defined in the generated
/// openapi_files.cpp.
std::span<const dashboard_asset> openapi_files() noexcept;

/// Returns the text of docs/openapi.json as it was at build time.
std::string_view openapi_document() noexcept;

} // namespace fencelock::net
