#!/usr/bin/env bash
# The sanitizer job (docs/reliability.md), apart from the Release build and kept lean: Debug
# builds of the tests only (no benchmarks), each in its own build directory.
#
#   1. AddressSanitizer + UndefinedBehaviorSanitizer: every unit and integration test, the
#      server binary they start included.
#   2. ThreadSanitizer: the fence guard's, unit and integration tests, the server binary
#      included, against a CAF built for TSan here from Debian's source package (Debian's
#      libcaf_core is not instrumented, and TSan cannot see the hand-offs inside a scheduler it
#      does not see: a server on it reported every actor's start as a race). When that source
#      cannot be fetched, the job says so and drives the Release server instead, as before.
#      docs/reliability.md says more.
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

build() { # <dir> <sanitizers> <CAF prefix, or "" for Debian's> <targets...>
  local dir=$1 sanitizers=$2 caf=$3
  shift 3
  local caf_args=()
  [[ -z $caf ]] ||
    caf_args=(-DCAF_INCLUDE_DIR="$caf/include" -DCAF_CORE_LIBRARY="$caf/lib/libcaf_core.so")
  # -O0 -g1: ASan+UBSan at -O1 compiled a Beast-heavy file 5.6 times slower (237 s against 42 s)
  # and full debug info adds half again; line tables are all a report's stack needs.
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" \
    -DFENCELOCK_SANITIZE="$sanitizers" -DFENCELOCK_BUILD_TESTS=ON -DFENCELOCK_BUILD_BENCH=OFF \
    "${caf_args[@]}" >/dev/null
  cmake --build "$dir" -j"$(nproc)" --target "$@"
}

# Fetches the upstream tarball of CAF 0.17.6 (the version of Debian's libcaf-dev) from Debian's
# source package into $1, checked against the SHA-256 that the package's signed index names.
# Returns non-zero when it cannot.
fetch_caf_source() { # <dir>
  local dir=$1
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
  printf '%s\n' 'Types: deb-src' 'URIs: http://deb.debian.org/debian' 'Suites: bookworm' \
    'Components: main' 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' \
    >"$dir/debian-src.sources"
  local apt=(-o Dir::Etc::SourceList="$dir/debian-src.sources" -o Dir::Etc::SourceParts=/dev/null
             -o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache")
  apt-get "${apt[@]}" -qq update || return 1
  local line url file sha
  # Lines of the form: 'URL' FILE SIZE SHA256:HASH
  line=$(cd "$dir" && apt-get "${apt[@]}" source --print-uris actor-framework |
         grep -F ' actor-framework_0.17.6.orig.tar.gz ') || return 1
  read -r url file _ sha <<<"$line"
  url=${url//\'/}
  curl -fsSL --retry 3 -o "$dir/$file" "$url" || return 1
  echo "${sha#SHA256:}  $dir/$file" | sha256sum -c --quiet - || return 1
  tar -xzf "$dir/$file" -C "$dir"
}

# Builds libcaf_core with -fsanitize=thread into <prefix> (core only: nothing here links
# libcaf_io). About 2 minutes, once per build directory.
build_tsan_caf() { # <prefix> <source dir>
  local prefix=$1 src=$2
  cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS="-fsanitize=thread -g1" -DCMAKE_CXX_FLAGS_RELEASE="-O1" \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCAF_NO_IO=yes -DCAF_NO_EXAMPLES=yes -DCAF_NO_TOOLS=yes \
    -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_OPENCL=yes -DCAF_NO_OPENSSL=yes -DCAF_NO_PYTHON=yes \
    -DCAF_NO_SUMMARY=yes >/dev/null
  cmake --build "$src/build" -j"$(nproc)" >/dev/null
  cmake --install "$src/build" >/dev/null
}

for job in "${jobs[@]}"; do
  case "$job" in
    asan)
      build build-asan address,undefined "" fencelock_unit_tests fencelock_integration_tests \
        "${programs[@]}"
      export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1"
      export LSAN_OPTIONS="suppressions=$here/scripts/sanitizers/lsan.supp:print_suppressions=0"
      export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$here/scripts/sanitizers/ubsan.supp"
      # Sanitized code runs a few times slower: generous timeouts, never assertions on speed.
      ctest --test-dir build-asan --output-on-failure -j2 --timeout 900 -R '^(unit|integration)\.' \
        -E "$not_here"
      ;;
    tsan)
      export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$here/scripts/sanitizers/tsan.supp"
      # Left out: three tests whose premise is speed that TSan takes away: a read flood from
      # many client threads (it starves the renewing holder of CPU), a client that closes right
      # after sending (slowed, it closes after the grant was delivered, which rightly keeps the
      # lease), and a renewal flood meant to fill a subscriber's socket buffers within 120 s
      # (a TSan server renews about 150 times a second, and filling the kernel's autotuned
      # buffers at that pace can take longer).
      timing='a read flood|an acquire whose client vanished|ws_a_subscriber_that_does_not_read'
      caf=$here/build-tsan/caf-0.17.6-tsan
      caf_src=$here/build-tsan/caf-source
      have_caf=1
      if [[ ! -f $caf/lib/libcaf_core.so ]]; then
        rm -rf "$caf_src"
        if fetch_caf_source "$caf_src"; then
          build_tsan_caf "$caf" "$caf_src/actor-framework-0.17.6"
        else
          have_caf=0
        fi
      fi
      if ((have_caf)); then
        build build-tsan thread "$caf" fencelock_fence_tests fencelock_unit_tests \
          fencelock_integration_tests "${programs[@]}"
        build-tsan/tests/fencelock_fence_tests
        ctest --test-dir build-tsan --output-on-failure -j2 --timeout 900 -R '^(unit|integration)\.' \
          -E "$not_here|^integration\.($timing)"
      else
        echo "sanitize.sh: SKIPPED TSan of the server's actors: CAF's source could not be" \
          "fetched from deb.debian.org; the integration tests run instrumented against the" \
          "Release server instead." >&2
        cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFENCELOCK_BUILD_TESTS=ON >/dev/null
        cmake --build build -j"$(nproc)" --target fencelock
        build build-tsan thread "" fencelock_fence_tests fencelock_integration_tests \
          fencelock_fenced_store fencelock_test_holder
        export SERVER_UNDER_TEST=$here/build/fencelock
        build-tsan/tests/fencelock_fence_tests
        # Also left out here: the tests that run CAF's threaded scheduler in the test process
        # or start the server by its own path, which an uninstrumented CAF makes report races.
        in_process='embed_example|stop_answers_waiting|a lagging io_loop|a service destroyed|python_ws_interop'
        ctest --test-dir build-tsan --output-on-failure -j2 --timeout 900 -R '^integration\.' \
          -E "$not_here|^integration\.($in_process|$timing)"
      fi
      ;;
    *)
      echo "usage: scripts/sanitize.sh [asan|tsan]..." >&2
      exit 64
      ;;
  esac
done
