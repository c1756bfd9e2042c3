#!/usr/bin/env bash
# The sanitizer job (docs/reliability.md), apart from the Release build and kept lean: Debug
# builds of the tests only (no benchmarks), each in its own build directory.
#
#   1. AddressSanitizer + UndefinedBehaviorSanitizer: every unit and integration test, the
#      server binary they start included.
#   2. ThreadSanitizer: the fence guard's tests, and the integration tests with their own side
#      instrumented (the client library, the CLI, the test harness, the Redis store's I/O thread
#      in the lock-semantics labs) against the Release server of build/. Debian's libcaf_core
#      is not built for TSan, so TSan cannot see CAF's scheduler and mailbox hand-offs: a TSan
#      server reported every actor's start as a race, inside CAF. docs/reliability.md says more.
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
      # The server under test: the Release one (CI built it just before; a no-op then).
      cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFENCELOCK_BUILD_TESTS=ON >/dev/null
      cmake --build build -j"$(nproc)" --target fencelock
      build build-tsan thread fencelock_fence_tests fencelock_integration_tests \
        fencelock_fenced_store fencelock_test_holder
      export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$here/scripts/sanitizers/tsan.supp"
      export SERVER_UNDER_TEST=$here/build/fencelock
      build-tsan/tests/fencelock_fence_tests
      # Also left out here: the tests that run CAF's threaded scheduler in the test process (the
      # embed example, the service's stop and io-lag tests) or start the server by its own path
      # (the Python interop test), for the reason above; and two whose premise is a client that
      # is fast, which a TSan-instrumented one is not: a read flood from many client threads
      # (it starves the renewing holder of CPU) and a client that closes right after sending
      # (slowed, it closes after the grant was delivered, which rightly keeps the lease).
      in_process='embed_example|stop_answers_waiting|a lagging io_loop|a service destroyed|python_ws_interop'
      timing='a read flood|an acquire whose client vanished'
      ctest --test-dir build-tsan --output-on-failure -j2 --timeout 900 -R '^integration\.' \
        -E "$not_here|^integration\.($in_process|$timing)"
      ;;
    *)
      echo "usage: scripts/sanitize.sh [asan|tsan]..." >&2
      exit 64
      ;;
  esac
done
