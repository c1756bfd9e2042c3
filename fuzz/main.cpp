// libFuzzer's entry point for one target: fuzz/CMakeLists.txt compiles this file once per
// target with FENCELOCK_FUZZ_ENTRY naming its body (fuzz/fuzz.hpp).

#include "fuzz/fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fencelock::fuzz::FENCELOCK_FUZZ_ENTRY(data, size);
}
