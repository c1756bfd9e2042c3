#include "fuzz/fuzz.hpp"

#include <cstdio>
#include <cstdlib>

namespace fencelock::fuzz {

void violated(std::string_view target, std::string_view what) {
  std::fprintf(stderr, "%.*s: invariant violated: %.*s\n", static_cast<int>(target.size()),
               target.data(), static_cast<int>(what.size()), what.data());
  std::abort();
}

bool valid_utf8(std::string_view x) noexcept {
  size_t i = 0;
  while (i < x.size()) {
    auto c = static_cast<unsigned char>(x[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
      cp = c & 0x1fu;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      cp = c & 0x0fu;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      cp = c & 0x07u;
    } else {
      return false;
    }
    if (x.size() - i <= n)
      return false;
    for (size_t k = 1; k <= n; ++k) {
      auto d = static_cast<unsigned char>(x[i + k]);
      if ((d & 0xc0u) != 0x80u)
        return false;
      cp = (cp << 6) | (d & 0x3fu);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff
        || (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += n + 1;
  }
  return true;
}

bool printable_ascii(std::string_view x) noexcept {
  for (char c : x)
    if (c < 0x20 || c > 0x7e)
      return false;
  return true;
}

std::pair<std::string_view, std::string_view> split_once(std::string_view x,
                                                         char separator) noexcept {
  auto at = x.find(separator);
  if (at == std::string_view::npos)
    return {x, {}};
  return {x.substr(0, at), x.substr(at + 1)};
}

} // namespace fencelock::fuzz
