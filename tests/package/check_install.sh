#!/usr/bin/env bash
# Installs fencelock into a staging directory (DESTDIR, under the configured prefix) and uses
# that installation as its users would. Run by CTest:
#
#   check_install.sh embed <build dir> <source dir>
#       the layout; public headers only; examples/embed built as an outside project with
#       find_package(fencelock) (CMAKE_PREFIX_PATH) and run; a client and fence guard program
#       built with find_package(... COMPONENTS client fence_guard) and with pkg-config, and run
#   check_install.sh unit <build dir> <source dir>
#       the installed systemd unit checked by systemd-analyze verify (and its sandboxing by
#       systemd-analyze security), the man page it names included
#
# Prints "SKIPPED: <why>" (CTest reports a skip) when a tool it needs is missing.
set -euo pipefail

mode=$1
build=$(readlink -f "$2")
src=$(readlink -f "$3")
work=$(mktemp -d /tmp/fencelock-install-XXXXXX)
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
cache() { # the value of a CMake cache variable of the build
  sed -n "s|^$1:[A-Z]*=||p" "$build/CMakeCache.txt"
}

prefix=$(cache CMAKE_INSTALL_PREFIX)
libdir=$(cache CMAKE_INSTALL_LIBDIR)
stage=$work/stage
root=$stage$prefix
DESTDIR=$stage cmake --install "$build" >"$work/install.log" || {
  cat "$work/install.log" >&2
  fail "cmake --install"
}
conf=$(find "$stage" -path '*/fencelock/fencelock.conf' -print -quit)
[[ -n "$conf" ]] || fail "no fencelock/fencelock.conf installed"
if [[ "$prefix" == /usr ]]; then
  [[ "$conf" == "$stage/etc/fencelock/fencelock.conf" ]] || fail "configuration at ${conf#"$stage"}"
fi
unit=$root/lib/systemd/system/fencelock.service

if [[ "$mode" == unit ]]; then
  command -v systemd-analyze >/dev/null ||
    { echo "SKIPPED: no systemd-analyze (Debian's systemd package; install-deps installs it)"; exit 0; }
  [[ -f "$unit" ]] || fail "no unit installed"
  grep -qx "ExecStart=$prefix/bin/fencelock serve --config ${conf#"$stage"}" "$unit" ||
    fail "ExecStart does not name the installed binary and configuration: $(grep ExecStart "$unit")"
  for key in Type=notify User=fencelock StateDirectory=fencelock KillSignal=SIGTERM \
             NoNewPrivileges=yes ProtectSystem=strict; do
    grep -qx "$key" "$unit" || fail "the unit lacks $key"
  done
  # The drain: drain-timeout-ms (10 s) plus the service's stop (5 s) must fit in TimeoutStopSec.
  stop=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)s$/\1/p' "$unit")
  [[ -n "$stop" && "$stop" -gt 15 ]] || fail "TimeoutStopSec=$stop does not leave room for the drain"
  # verify checks that ExecStart is executable: point it at the staged binary, nothing else.
  mkdir "$work/verify"
  sed "s|^ExecStart=$prefix/bin/fencelock|ExecStart=$root/bin/fencelock|" "$unit" \
    >"$work/verify/fencelock.service"
  # Documentation=man:fencelock(1) is looked up too: in the staged man pages.
  if ! MANPATH=$root/share/man systemd-analyze verify "$work/verify/fencelock.service" \
         >"$work/verify.log" 2>&1 || [[ -s "$work/verify.log" ]]; then
    cat "$work/verify.log" >&2
    fail "systemd-analyze verify"
  fi
  # The sandboxing, as systemd rates it (0 = fully locked down, 10 = not at all).
  mkdir -p "$work/sroot/etc/systemd/system"
  cp "$unit" "$work/sroot/etc/systemd/system/"
  systemd-analyze security --offline=yes --root="$work/sroot" fencelock.service \
    >"$work/security.log" 2>&1 || true
  exposure=$(sed -n 's/.*Overall exposure level for fencelock.service: \([0-9.]*\).*/\1/p' "$work/security.log")
  [[ -n "$exposure" ]] || { cat "$work/security.log" >&2; fail "no exposure level"; }
  echo "systemd-analyze security: exposure $exposure"
  awk -v x="$exposure" 'BEGIN { exit !(x <= 2.0) }' ||
    { cat "$work/security.log" >&2; fail "exposure $exposure above 2.0: sandboxing got weaker"; }
  echo "unit ok"
  exit 0
fi

[[ "$mode" == embed ]] || fail "unknown mode $mode"

# --- the layout ------------------------------------------------------------------------------
for f in bin/fencelock "$libdir/libfencelock_core.a" "$libdir/libfencelock_common.a" \
         "$libdir/libfencelock_client.a" "$libdir/libfencelock_fence.a" \
         "$libdir/cmake/fencelock/fencelock-config.cmake" \
         "$libdir/cmake/fencelock/fencelock-config-version.cmake" \
         "$libdir/cmake/fencelock/FindCAF.cmake" \
         "$libdir/pkgconfig/fencelock-client.pc" "$libdir/pkgconfig/fencelock-service.pc" \
         "$libdir/pkgconfig/fencelock-fence-guard.pc" \
         lib/systemd/system/fencelock.service share/man/man1/fencelock.1.gz \
         share/bash-completion/completions/fencelock share/zsh/vendor-completions/_fencelock \
         share/doc/fencelock/README.md share/doc/fencelock/openapi.json; do
  [[ -e "$root/$f" ]] || fail "not installed: $prefix/$f"
done
"$root/bin/fencelock" --version >/dev/null || fail "the installed binary does not run"
grep -qx 'data-dir = /var/lib/fencelock' "$conf" || fail "fencelock.conf: data-dir is not the unit's"

# Public headers only: exactly include/fencelock/, each including nothing of ours but
# fencelock/ (no actors/, net/, Beast, hiredis or sqlite).
diff <(cd "$src/include/fencelock" && ls) <(cd "$root/include/fencelock" && ls) ||
  fail "the installed headers differ from include/fencelock"
if grep -hE '#include [<"](actors|net|common|client|config|app|boost/beast|hiredis|sqlite3)' \
     "$root"/include/fencelock/*.hpp; then
  fail "a public header includes a private one"
fi

# --- find_package: the embedding example as an outside project -------------------------------
cmake -S "$src/examples/embed" -B "$work/embed" -DCMAKE_PREFIX_PATH="$root" \
  -DCMAKE_BUILD_TYPE=Release >"$work/embed-configure.log" 2>&1 ||
  { cat "$work/embed-configure.log" >&2; fail "configure examples/embed against the installation"; }
cmake --build "$work/embed" -j2 >"$work/embed-build.log" 2>&1 ||
  { cat "$work/embed-build.log" >&2; fail "build examples/embed against the installation"; }
"$work/embed/fencelock_embed_example" "$work/embed-data" >"$work/embed-run.log" 2>&1 ||
  { cat "$work/embed-run.log" >&2; fail "the embedding example failed"; }
grep -q "all checks passed" "$work/embed-run.log" || fail "the embedding example did not finish"

# An unknown component is refused with a message.
mkdir "$work/bad" && cat >"$work/bad/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(bad LANGUAGES CXX)
find_package(fencelock CONFIG REQUIRED COMPONENTS nonsense)
CMAKE
if cmake -S "$work/bad" -B "$work/bad/build" -DCMAKE_PREFIX_PATH="$root" >"$work/bad.log" 2>&1; then
  fail "find_package accepted an unknown component"
fi
grep -q "unknown component nonsense" "$work/bad.log" || { cat "$work/bad.log" >&2; fail "no word about the component"; }

# --- the client and the fence guard: CMake components, then pkg-config ------------------------
cmake -S "$src/tests/package/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$root" \
  >"$work/consumer.log" 2>&1 && cmake --build "$work/consumer" >>"$work/consumer.log" 2>&1 ||
  { cat "$work/consumer.log" >&2; fail "build the client consumer with find_package"; }
"$work/consumer/fencelock_consumer" || fail "the client consumer (CMake) failed"

command -v pkg-config >/dev/null || { echo "SKIPPED: no pkg-config"; exit 0; }
export PKG_CONFIG_PATH=$root/$libdir/pkgconfig
[[ "$(pkg-config --modversion fencelock-client)" == "$(cache CMAKE_PROJECT_VERSION)" ]] ||
  fail "fencelock-client.pc has the wrong version"
pkg-config --exists fencelock-service || fail "fencelock-service.pc does not resolve its Requires"
# shellcheck disable=SC2046 # word splitting of the flags is the point
c++ -std=c++20 -o "$work/consumer-pc" "$src/tests/package/consumer/main.cpp" \
  $(pkg-config --cflags --libs fencelock-client fencelock-fence-guard) ||
  fail "build the client consumer with pkg-config"
"$work/consumer-pc" || fail "the client consumer (pkg-config) failed"
echo "install ok"
