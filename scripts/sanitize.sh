#!/usr/bin/env bash
# The sanitizer job (docs/reliability.md), apart from the Release build and kept lean: Debug
# builds of the tests only (no benchmarks), each in its own build directory.
#
#   1. AddressSanitizer + UndefinedBehaviorSanitizer: every unit and integration test, the
#      server binary they start included.
#   2. ThreadSanitizer: the tests whose code runs on several threads: the fence guard's, and the
#      integration tests of the actors, the HTTP/WebSocket front end and the client library.
#
# Any report fails the job (halt_on_error). Suppressions live in scripts/sanitizers/, each with
# the reason it is there.
#
#   scripts/sanitize.sh [asan|tsan]...      (default: both)
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
here=$PWD
jobs=("$@")
((${#jobs[@]} > 0)) || jobs=(asan tsan)

# What the integration tests run besides their own binary.
programs=(fencelock fencelock_embed_example fencelock_fenced_store fencelock_test_holder)

# Not in the sanitizer jobs: the install and package tests (they build and install the tree
# itself, and a consumer linked without the sanitizer runtime cannot use a sanitized library);
# the browser test of the dashboard page (it tests the page in Chromium; the server side it
# drives is the WebSocket API, which the integration tests cover under both sanitizers); and
# the haproxy recipe, whose health checks (one 503 from /readyz takes an instance out for
# 400 ms) see instances slowed several times by the sanitizers shed load and take both out.
# All of them run in the Release job.
not_here='^integration\.(install_|package_|dashboard_browser|haproxy_)'

build() { # <dir> <sanitizers> <targets...>
  local dir=$1 sanitizers=$2
  shift 2
  # -O0 -g1: ASan+UBSan at -O1 compiled a Beast-heavy file 5.6 times slower (237 s against 42 s)
  # and full debug info adds half again; line tables are all a report's stack needs.
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" \
    -DFENCELOCK_SANITIZE="$sanitizers" -DFENCELOCK_BUILD_TESTS=ON -DFENCELOCK_BUILD_BENCH=OFF \
    >/dev/null
  cmake --build "$dir" -j"$(nproc)" --target "$@"
}

for job in "${jobs[@]}"; do
  case "$job" in
    asan)
      build build-asan address,undefined fencelock_unit_tests fencelock_integration_tests \
        "${programs[@]}"
      export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1"
      export LSAN_OPTIONS="suppressions=$here/scripts/sanitizers/lsan.supp:print_suppressions=0"
      export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$here/scripts/sanitizers/ubsan.supp"
      # Sanitized code runs a few times slower: generous timeouts, never assertions on speed.
      ctest --test-dir build-asan --output-on-failure -j2 --timeout 900 -R '^(unit|integration)\.' \
        -E "$not_here"
      ;;
    tsan)
      build build-tsan thread fencelock_fence_tests fencelock_integration_tests "${programs[@]}"
      export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$here/scripts/sanitizers/tsan.supp"
      build-tsan/tests/fencelock_fence_tests
      ctest --test-dir build-tsan --output-on-failure -j2 --timeout 900 -R '^integration\.' \
        -E "$not_here"
      ;;
    *)
      echo "usage: scripts/sanitize.sh [asan|tsan]..." >&2
      exit 64
      ;;
  esac
done
