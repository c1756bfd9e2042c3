#!/usr/bin/env bash
# The benchmark suite in one command: builds the benchmark programs (Release), runs every
# scenario with its baselines in the same run, and renders the report with its plots.
#
#   bench/run.sh                 the full suite (a few minutes); rewrites docs/benchmarks.md and
#                                docs/bench/ (plots, results.jsonl, log.txt)
#   bench/run.sh --quick         every mode for a moment (seconds), into build/bench-quick/: a
#                                smoke run, not a measurement
#   bench/run.sh --url http://host:7070 [--server-pid PID]
#                                drive your own server: the scenarios that need no local process
#                                of it (uncontended, hot lock, takeover, scale without memory);
#                                the baselines still run here. With the pid of a server on this
#                                machine, its CPU, context switches and memory are reported too
#
# Options: --out DIR (the report goes to DIR/benchmarks.md, its files to DIR/bench/),
# --build-dir DIR (default build), --no-build, --rounds N, --duration S, --warmup S,
# --leases LIST (held-lease steps of the scale scenario), --server-arg=ARG (repeatable, added to
# every `fencelock serve` the suite starts). Everything runs on loopback; servers, redis-server
# and etcd are started on free ports with their data in /tmp and stopped at the end.
set -euo pipefail

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
command_line="bench/run.sh${*:+ $*}"

quick=0
url=""
server_pid=""
out=""
build_dir="$root/build"
do_build=1
rounds=""
duration=""
warmup=""
leases=""
server_args=()
while (($#)); do
  case "$1" in
    --quick) quick=1 ;;
    --url) url=$2; shift ;;
    --server-pid) server_pid=$2; shift ;;
    --out) out=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    --no-build) do_build=0 ;;
    --rounds) rounds=$2; shift ;;
    --duration) duration=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --leases) leases=$2; shift ;;
    --server-arg=*) server_args+=("$1") ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "bench/run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [[ -n "$server_pid" && -z "$url" ]]; then
  echo "bench/run.sh: --server-pid goes with --url" >&2
  exit 2
fi

if ((quick)); then
  : "${rounds:=1}" "${duration:=0.3}" "${warmup:=0.1}" "${leases:=1000,10000}"
  : "${out:=$build_dir/bench-quick}"
  samples=3
  overload_args=(0.4 1)
else
  : "${rounds:=3}" "${duration:=2}" "${warmup:=0.5}" "${leases:=1000,100000,1000000}"
  : "${out:=$root/docs}"
  samples=100 # a p99 needs 100: of 30, the "p99" is the worst one
  overload_args=(1.5 1)
fi
assets="$out/bench"
mkdir -p "$assets"
results="$assets/results.jsonl"
log="$assets/log.txt"
# Read before the run touches its own output, which may be tracked (docs/bench/).
commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | head -c1)
: >"$results"
: >"$log"

say() { echo "bench: $*" | tee -a "$log" >&2; }

# The suite's peers (etcd, gnuplot) and the build's own packages; without root or sudo, what is
# missing is reported as skipped instead.
if ! "$root/scripts/install-deps.sh" --bench >>"$log" 2>&1; then
  say "could not install the suite's packages (see $log): parts that need them are skipped"
fi

if ((do_build)); then
  say "building the benchmark programs (Release) in $build_dir"
  if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
    cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >>"$log"
  fi
  cmake --build "$build_dir" -j"$(nproc)" --target fencelock_bench >>"$log"
fi
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
bin="$build_dir/bench"
for program in fencelock_loader baseline_http baseline_caf baseline_fsync overload_bench; do
  [[ -x "$bin/$program" ]] || { echo "bench/run.sh: $bin/$program is missing; build first" >&2; exit 1; }
done

# One JSON line about the run itself, for the report's header.
meta() {
  python3 - "$@" <<'EOF' >>"$results"
import json, os, sys
kv = dict(a.split("=", 1) for a in sys.argv[1:])
kv["scenario"] = "meta"
kv["loadavg"] = open("/proc/loadavg").read().split()[:3]
print(json.dumps(kv))
EOF
}
meta "phase=start" "command=$command_line" "commit=$commit" "dirty=${dirty:+yes}" \
     "quick=$quick" "url=$url" "build_type=$build_type" "rounds=$rounds" \
     "duration=$duration" "warmup=$warmup" "started=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
started=$(date +%s)

common=(--rounds "$rounds" --duration "$duration" --warmup "$warmup")
target_args=()
if [[ -n "$url" ]]; then
  target_args=(--url "$url")
  [[ -n "$server_pid" ]] && target_args+=(--server-pid "$server_pid")
fi

# Runs one program, keeping its JSON lines and logging the rest; a failure is logged and the
# suite goes on (the report shows what is missing).
run() {
  local what=$1
  shift
  say "$what"
  local t0=$SECONDS
  if "$@" >>"$results" 2>>"$log"; then
    :
  else
    say "$what: exit status $? (see $log)"
    echo "{\"scenario\":\"failure\",\"step\":\"$what\"}" >>"$results"
  fi
  echo "{\"scenario\":\"step\",\"step\":\"$what\",\"seconds\":$((SECONDS - t0))}" >>"$results"
}

# 1. Uncontended: fencelock against the trivial Beast server and etcd, alternating per trial.
run "uncontended: fencelock, baseline-http, etcd" \
  "$bin/fencelock_loader" uncontended "${common[@]}" "${target_args[@]}" "${server_args[@]}" \
  --targets fencelock,baseline-http,etcd \
  --workloads http:1x1,http:16x1,http:64x1,http:256x1,ws:1x64,ws:16x4,ws:64x1,ws:256x1

# 2. One hot lock, FIFO hand-off between 16 WebSocket clients (the durable store), each round
# beside a round of one-row commits on the same disk: its bound is the commit cost of the moment
# (after the uncontended trials, writeback from etcd's and the servers' data dirs can slow the
# disk for a while; measured later, the commits would be faster than what the hand-offs met).
for ((r = 0; r < rounds; r++)); do
  run "fdatasync and SQLite commit in /tmp, beside the hot lock (round $r)" \
    "$bin/baseline_fsync" --dir /tmp --duration "$duration" --warmup "$warmup" --label hot
  run "hot lock: 16 clients (round $r)" \
    "$bin/fencelock_loader" hot --rounds 1 --duration "$duration" --warmup "$warmup" \
    "${target_args[@]}" "${server_args[@]}" --clients 16
done

# 3. Takeover after kill -9 of the holder, and beside it what its one write costs: a write made
# after the disk sat idle for the TTL.
run "fdatasync and SQLite commit in /tmp, each after 200 ms idle" \
  "$bin/baseline_fsync" --dir /tmp --idle-writes "$samples" --idle-ms 200
run "takeover: $samples holders killed" \
  "$bin/fencelock_loader" takeover "${target_args[@]}" "${server_args[@]}" \
  --samples "$samples" --ttl-ms 200
# Beside it, the same takeover without the durable write (the memory store): what the expiry's
# timer, the thread wake-ups and the loopback hops cost on their own on this machine.
if [[ -z "$url" && " ${server_args[*]} " != *" --server-arg=--store"* ]]; then
  run "takeover without the durable write (memory store): $samples holders killed" \
    "$bin/fencelock_loader" takeover "${server_args[@]}" --server-arg=--store \
    --server-arg=memory --samples "$samples" --ttl-ms 200
fi

# 4. In process against CAF request/response, and the durable single client against bare
# commits on the same disk: alternating rounds of separate programs.
for ((r = 0; r < rounds; r++)); do
  run "CAF request/response (round $r)" \
    "$bin/baseline_caf" --in-flight 1,16 --duration "$duration" --warmup "$warmup"
  run "in process, memory store (round $r)" \
    "$bin/fencelock_loader" inproc --clients 1,16,64,256 --store memory \
    --duration "$duration" --warmup "$warmup"
  run "fdatasync and SQLite commit in /tmp (round $r)" \
    "$bin/baseline_fsync" --dir /tmp --duration "$duration" --warmup "$warmup"
  run "in process, durable, one client (round $r)" \
    "$bin/fencelock_loader" inproc --clients 1 --store embedded \
    --duration "$duration" --warmup "$warmup"
done

# 5. The Redis store: two instances against redis-benchmark EVALSHA of the acquire script.
if [[ -z "$url" ]]; then
  run "redis: two instances, redis-benchmark" \
    "$bin/fencelock_loader" redis "${common[@]}" "${server_args[@]}" \
    --workloads http:64x1,ws:2x32
fi

# 6. Scale: held leases, memory and throughput.
run "scale: $leases held leases" \
  "$bin/fencelock_loader" scale "${common[@]}" "${target_args[@]}" "${server_args[@]}" \
  --leases "$leases" --probe http:64x1

# 7. Overload: renewals under a flood (short).
if [[ -z "$url" ]]; then
  say "overload: ${overload_args[*]}"
  t0=$SECONDS
  if ! "$bin/overload_bench" "${overload_args[@]}" >"$assets/overload.txt" 2>>"$log"; then
    say "overload_bench: exit status $? (renewal failures, or it failed: $assets/overload.txt)"
  fi
  grep '^{"scenario"' "$assets/overload.txt" >>"$results" || true
  echo "{\"scenario\":\"step\",\"step\":\"overload\",\"seconds\":$((SECONDS - t0))}" >>"$results"
fi

meta "phase=end" "seconds=$(($(date +%s) - started))"
say "rendering $out/benchmarks.md"
python3 "$root/bench/report.py" --results "$results" --out "$out/benchmarks.md" \
  --assets "$assets" --root "$root"
say "done in $(($(date +%s) - started)) s: $out/benchmarks.md"
