#!/usr/bin/env bash
# The README's quick start, from any working directory:
#   scripts/quickstart.sh serve [serve flags...]   build, then run the server in the foreground
#   scripts/quickstart.sh test                     build, then run every test
# Both install missing Debian packages first and build into build/ (Release, tests on).
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

usage() {
  echo "usage: scripts/quickstart.sh serve [fencelock serve flags...] | test" >&2
  exit 2
}

build() {
  # `test` also installs the benchmark suite's peers: its smoke run is one of the tests.
  scripts/install-deps.sh "$@"
  # Prefix /usr: what `cmake --install` and the Debian packages (cpack) lay out, with the
  # configuration in /etc/fencelock (docs/deployment.md).
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFENCELOCK_BUILD_TESTS=ON \
    -DCMAKE_INSTALL_PREFIX=/usr
  cmake --build build -j"$(nproc)"
}

(($# >= 1)) || usage
mode=$1
shift
case "$mode" in
  serve)
    build
    exec build/fencelock serve "$@"
    ;;
  test)
    (($# == 0)) || usage
    build --bench
    # Tests pick their own free ports and temp dirs, so they may run in parallel.
    ctest --test-dir build --output-on-failure -j2 --timeout 600
    ;;
  *)
    usage
    ;;
esac
