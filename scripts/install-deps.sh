#!/usr/bin/env bash
# Installs the Debian 12 packages fencelock needs to build and test, and only those missing.
# Runs apt-get (as root, or through sudo when available); does nothing when all are present.
#   scripts/install-deps.sh           what building, serving and testing need
#   scripts/install-deps.sh --bench   that, plus the benchmark suite's peers (bench/run.sh)
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

packages=(
  g++                                # C++20 compiler (GCC 12)
  cmake                              # build system (3.25)
  make                               # CMake's default generator
  pkg-config                         # lets CMake find system libraries
  libcaf-dev                         # C++ Actor Framework 0.17: the lock actors
  libboost1.81-dev                   # Boost headers: Asio and Beast for the HTTP front end
  libboost-json1.81-dev              # Boost.JSON: request/response bodies and log lines
  libboost-program-options1.81-dev   # Boost.Program_options: the flags of `fencelock serve`
  libcli11-dev                       # CLI11: the command line of the fencelock binary
  libspdlog-dev                      # spdlog: JSON log lines on stdout
  catch2                             # Catch2 2.13: unit and integration tests
  libsqlite3-dev                     # SQLite: the embedded lease store
  prometheus-cpp-dev                 # Prometheus client, core library only: GET /metrics
  libhiredis-dev                     # hiredis: the Redis store's reply parser (and the tests')
  libsystemd-dev                     # sd_notify: readiness for the systemd unit (Type=notify)
  libssl-dev                         # OpenSSL's libcrypto: hashes of bearer tokens (auth-file)
  libjemalloc-dev                    # jemalloc: the server binary's allocator
  redis-server                       # a real Redis for the Redis store's tests, which start
                                     # their own on a free port; none uses the system service
  haproxy                            # the load balancer of the two-instance deployment test
                                     # (tests start their own; the system service is not used)
  python3                            # helper scripts
  zsh                                # checks the zsh completion script (`fencelock completion zsh`)
  python3-websockets                 # an independent WebSocket client for the Python interop
                                     # test (tests/integration/python); system python3 only
  dpkg-dev                           # dpkg-shlibdeps: the Depends of the Debian package (cpack)
  systemd                            # systemd-analyze verify: the unit's test (not run as init)
  chromium                           # the browser of the dashboard test (tests/browser), driven
                                     # headless by playwright-core; it never downloads its own
  clang-14                           # the compiler of the libFuzzer targets (fuzz/, scripts/fuzz.sh)
  libclang-rt-14-dev                 # libFuzzer and clang-14's ASan and UBSan runtimes
  llvm-14                            # llvm-symbolizer: source lines in the fuzzers' crash reports
)

# The benchmark suite's own needs (docs/benchmarks.md): never needed by the server, so only
# with --bench (bench/run.sh, and the test command, whose smoke run of the suite uses them).
bench=0
case "${1:-}" in
  --bench) bench=1 ;;
  "") ;;
  *) echo "usage: scripts/install-deps.sh [--bench]" >&2; exit 2 ;;
esac
if ((bench)); then
  packages+=(
    etcd-server                      # etcd 3.4: the lock baseline the suite runs side by side
    gnuplot-nox                      # the report's PNG plots
  )
fi

# Node.js and npm run the dashboard test, which installs playwright-core with `npm ci` from its
# lock file. Debian's packages only when there is no node or npm at all: a Node.js from
# elsewhere (NodeSource's package contains npm) must not be replaced. playwright-core needs
# Node.js 20; with Debian 12's 18 the test reports itself skipped.
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages are installed; nothing to do"
  exit 0
fi

sudo=()
if ((EUID != 0)); then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
