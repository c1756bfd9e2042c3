#pragma once

// Bearer tokens for the tests with an auth file (header-only): the hash an auth file keeps, and
// the header a request carries.

#include <openssl/evp.h>

#include <string>

#include "support/http_client.hpp"

namespace fencelock::test {

/// The SHA-256 of `token` in hex, as `sha256sum` prints it and the auth file keeps it.
inline std::string sha256_hex(const std::string& token) {
  unsigned char digest[32];
  unsigned int size = 0;
  EVP_Digest(token.data(), token.size(), digest, &size, EVP_sha256(), nullptr);
  std::string out;
  constexpr char hex[] = "0123456789abcdef";
  for (unsigned i = 0; i < size; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 0xf]);
  }
  return out;
}

/// The Authorization header of `token`.
inline header_list bearer(const std::string& token) {
  return {{"Authorization", "Bearer " + token}};
}

} // namespace fencelock::test
