#include "net/openapi.hpp"

namespace fencelock::net {

std::string_view openapi_document() noexcept {
  auto files = openapi_files();
  return files.empty() ? std::string_view{} : files.front().body;
}

} // namespace fencelock::net
