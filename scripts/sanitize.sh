#!/usr/bin/env bash
# The sanitizer job, kept lean: builds only the code whose concurrency the sanitizer is for,
# into its own build directory, and runs it.
#   - ThreadSanitizer over the fence guard, whose callers are concurrent resource handlers
#     (tests/unit/fence_guard_test.cpp starts threads on purpose).
# Actors and sockets stay out: CAF's and Asio's internals make TSan builds of them slow and
# noisy without telling us more than the integration tests do.
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFENCELOCK_SANITIZE=thread \
  -DFENCELOCK_BUILD_TESTS=ON -DFENCELOCK_BUILD_BENCH=OFF >/dev/null
cmake --build build-tsan -j"$(nproc)" --target fencelock_fence_tests
# halt_on_error: any report fails the job, not just a crash.
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/fencelock_fence_tests
