#!/usr/bin/env bash
# Builds the Debian packages with CPack from a built tree and checks their metadata and
# contents with dpkg-deb, as apt would see them. Run by CTest:
#
#   check_deb.sh <build dir> <source dir>
#
# Prints "SKIPPED: <why>" (CTest reports a skip) without dpkg-deb or dpkg-shlibdeps (dpkg-dev),
# or when the build was not configured for /usr (packages describe a /usr installation).
set -euo pipefail

build=$(readlink -f "$1")
work=$(mktemp -d /tmp/fencelock-deb-XXXXXX)
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
for tool in dpkg-deb dpkg-shlibdeps cpack; do
  command -v "$tool" >/dev/null || { echo "SKIPPED: no $tool (install-deps installs dpkg-dev)"; exit 0; }
done
prefix=$(sed -n 's|^CMAKE_INSTALL_PREFIX:PATH=||p' "$build/CMakeCache.txt")
[[ "$prefix" == /usr ]] ||
  { echo "SKIPPED: the build's prefix is $prefix; packages are made from -DCMAKE_INSTALL_PREFIX=/usr"; exit 0; }

cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; fail "cpack -G DEB"; }
runtime=$(find "$work" -maxdepth 1 -name 'fencelock_*.deb' -print -quit)
dev=$(find "$work" -maxdepth 1 -name 'fencelock-dev_*.deb' -print -quit)
[[ -n "$runtime" && -n "$dev" ]] || { ls -l "$work" >&2; fail "expected fencelock and fencelock-dev packages"; }

field() { dpkg-deb --field "$1" "$2"; }
expect_field() { # package, field, extended regular expression
  local value
  value=$(field "$1" "$2")
  [[ "$value" =~ $3 ]] || fail "$(basename "$1"): $2 is \"$value\", expected /$3/"
}

# --- fencelock: metadata ----------------------------------------------------------------------
version=$(sed -n 's|^CMAKE_PROJECT_VERSION:STATIC=||p' "$build/CMakeCache.txt")
expect_field "$runtime" Package '^fencelock$'
expect_field "$runtime" Version "^$version"
expect_field "$runtime" Architecture "^$(dpkg --print-architecture)$"
expect_field "$runtime" Section '^net$'
# Depends: what dpkg-shlibdeps found in the binary, and what the maintainer scripts run.
for dep in libc6 libstdc\\+\\+6 libcaf-core libsqlite3-0 libhiredis libsystemd0 libjemalloc2 \
           libboost-json1.81 adduser init-system-helpers; do
  expect_field "$runtime" Depends "(^|, )$dep"
done
expect_field "$runtime" Suggests 'redis-server'

# --- fencelock: contents and maintainer scripts -----------------------------------------------
dpkg-deb --contents "$runtime" >"$work/contents"
for path in ./usr/bin/fencelock ./usr/lib/systemd/system/fencelock.service \
            ./etc/fencelock/fencelock.conf ./usr/share/man/man1/fencelock.1.gz \
            ./usr/share/bash-completion/completions/fencelock \
            ./usr/share/zsh/vendor-completions/_fencelock ./usr/share/doc/fencelock/README.md; do
  grep -q " $path\$" "$work/contents" || fail "fencelock: $path is missing"
done
if grep -v ' root/root ' "$work/contents"; then
  fail "fencelock: files not owned by root"
fi
if grep -E ' \./usr/(include|lib/[^/]*/(libfencelock|cmake|pkgconfig))' "$work/contents"; then
  fail "fencelock: development files belong in fencelock-dev"
fi
mkdir "$work/control"
dpkg-deb --control "$runtime" "$work/control"
grep -qx /etc/fencelock/fencelock.conf "$work/control/conffiles" ||
  fail "/etc/fencelock/fencelock.conf is not a conffile"
for script in postinst prerm postrm; do
  [[ -x "$work/control/$script" ]] || fail "no executable $script"
  sh -n "$work/control/$script" || fail "$script: syntax"
done
grep -q 'adduser --system --group --home /var/lib/fencelock' "$work/control/postinst" ||
  fail "postinst does not create the system user"
grep -q "deb-systemd-helper enable 'fencelock.service'" "$work/control/postinst" ||
  fail "postinst does not enable the unit"

# The packaged files work as installed: the binary runs, the unit names them.
dpkg-deb -x "$runtime" "$work/root"
"$work/root/usr/bin/fencelock" --version >/dev/null || fail "the packaged binary does not run"
grep -qx 'ExecStart=/usr/bin/fencelock serve --config /etc/fencelock/fencelock.conf' \
  "$work/root/usr/lib/systemd/system/fencelock.service" || fail "the unit names other paths"
grep -qx 'data-dir = /var/lib/fencelock' "$work/root/etc/fencelock/fencelock.conf" ||
  fail "the packaged configuration does not use the state directory"

# --- fencelock-dev ----------------------------------------------------------------------------
expect_field "$dev" Package '^fencelock-dev$'
expect_field "$dev" Section '^libdevel$'
for dep in libcaf-dev libboost-json1.81-dev libsqlite3-dev prometheus-cpp-dev libhiredis-dev \
           libspdlog-dev; do
  expect_field "$dev" Depends "(^|, )$dep"
done
dpkg-deb --contents "$dev" >"$work/dev-contents"
for pattern in ' \./usr/include/fencelock/service\.hpp$' ' \./usr/include/fencelock/client\.hpp$' \
               '/libfencelock_core\.a$' '/cmake/fencelock/fencelock-config\.cmake$' \
               '/cmake/fencelock/FindCAF\.cmake$' '/pkgconfig/fencelock-client\.pc$'; do
  grep -qE "$pattern" "$work/dev-contents" || fail "fencelock-dev: nothing matches $pattern"
done
if grep -E ' \./(usr/bin|etc)/' "$work/dev-contents"; then
  fail "fencelock-dev: runtime files belong in fencelock"
fi
echo "packages ok: $(basename "$runtime") $(basename "$dev")"
dpkg-deb --field "$runtime" Depends
