#pragma once

// The bodies of fencelock's libFuzzer targets (docs/reliability.md, "Fuzzing"). Each feeds one
// input to the real code of one surface and checks what that code promises, aborting through
// violated() when a promise is broken. fuzz/main.cpp turns each into a libFuzzer program
// (clang, -DFENCELOCK_FUZZ=ON); tests/unit/fuzz_regressions_test.cpp calls the same functions
// with every committed corpus and regression input, in the ordinary build.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

namespace fencelock::fuzz {

/// Routes "METHOD TARGET\nBODY" over two configs and checks the result: a reply with a real
/// status, or a service call that passes fencelock::validate. Returns 0 (libFuzzer's contract).
int fuzz_http_route(const uint8_t* data, size_t size);

/// Parses the input as a WebSocket request frame and checks the request or the rejection.
int fuzz_ws_frame(const uint8_t* data, size_t size);

/// Reads the input as a JSON request body with object_reader and the body parsers.
int fuzz_json_reader(const uint8_t* data, size_t size);

/// Loads a config from "INI FILE\0FLAGS\0ENVIRONMENT" (flags and variables one per line).
int fuzz_config(const uint8_t* data, size_t size);

/// Reads the input as Redis replies (at once and in two pieces) and decodes each as the store
/// does: lease, list, channel event.
int fuzz_redis_reply(const uint8_t* data, size_t size);

/// Reports that `target` broke the promise `what` and aborts: a crash for libFuzzer, a failed
/// test (SIGABRT) for Catch2.
[[noreturn]] void violated(std::string_view target, std::string_view what);

/// Returns whether `x` is valid UTF-8 (shortest forms, no surrogates, at most U+10FFFF).
bool valid_utf8(std::string_view x) noexcept;

/// Returns whether every byte of `x` is printable ASCII.
bool printable_ascii(std::string_view x) noexcept;

/// Splits `x` at the first `separator`: what is before it, and what is after it (empty when
/// there is no separator). How the targets cut one input into the parts of a request.
std::pair<std::string_view, std::string_view> split_once(std::string_view x,
                                                         char separator) noexcept;

} // namespace fencelock::fuzz
