#!/usr/bin/env bash
# The fuzzing job (docs/reliability.md, "Fuzzing"): builds the libFuzzer targets of fuzz/ with
# clang-14, ASan and UBSan into build-fuzz/, and runs each for a bounded time, starting from a
# copy of its committed seed corpus (fuzz/corpus/<target>/ is never written to).
#   scripts/fuzz.sh [seconds per target]     default 30, or FENCELOCK_FUZZ_SECONDS
#   FENCELOCK_FUZZ_TARGETS="fuzz_config ..."  runs only those targets
# Exits non-zero if any target crashes, breaks an invariant, runs out of memory or hangs, and
# prints the path of the input that did it (build-fuzz/artifacts/<target>/). Reproduce with
# `build-fuzz/fuzz/<target> <input>`; the fix goes in with the input in
# fuzz/regressions/<target>/, which the unit tests replay on every build.
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

seconds=${1:-${FENCELOCK_FUZZ_SECONDS:-30}}
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh [seconds per target]" >&2
  exit 2
fi
read -r -a targets <<<"${FENCELOCK_FUZZ_TARGETS:-fuzz_http_route fuzz_ws_frame fuzz_json_reader fuzz_config fuzz_redis_reply}"

# -O1 and line tables only: quick to build, still fast to run and symbolized.
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++-14 -DFENCELOCK_FUZZ=ON \
  -DFENCELOCK_BUILD_TESTS=OFF -DFENCELOCK_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"

work=$(mktemp -d "${TMPDIR:-/tmp}/fencelock-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=()
for target in "${targets[@]}"; do
  corpus="$work/$target"
  artifacts="build-fuzz/artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
  cp fuzz/corpus/"$target"/* "$corpus"/
  seeds=$(find "$corpus" -type f | wc -l)
  log="$artifacts/fuzz.log"
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: 2 GiB is a leak or a bomb.
  if build-fuzz/fuzz/"$target" "$corpus" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1; then
    stats=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true)
    echo "fuzz: $target: ${seconds}s, $seeds seeds -> $(find "$corpus" -type f | wc -l) inputs; ${stats:-no stats}"
  else
    failed+=("$target")
    echo "fuzz: $target FAILED; the end of its log ($log):" >&2
    tail -n 40 "$log" >&2
    grep -h -E 'Test unit written to|artifact_prefix' "$log" | sed 's/^/fuzz: reproducer: /' >&2 || true
  fi
done

if ((${#failed[@]} > 0)); then
  echo "fuzz: ${#failed[@]} of ${#targets[@]} targets failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${seconds}s each without a finding"
