#!/usr/bin/env bash
# Runs the fault suite (tests/chaos) for a long time, not in CI, and samples the resident memory
# and open file descriptors of the processes under test every few seconds into a CSV. Prints,
# for each process that lived through the whole run, the first sample after the warm-up, the
# last one and the maximum after the warm-up: flat means no leak.
#
#   scripts/soak.sh [--minutes 30] [--store both|embedded|redis] [--build-dir build]
#                   [--interval 5] [--warmup-minutes 2] [--out DIR]
#
# The drivers run with --spare-instance: every fault of the suite happens, except that
# instance 0 is never killed (in Redis mode instance 1 still is), so its memory can be followed
# over the whole run. Both stores run at once by default. The CSV (samples.csv), the histories
# and the reports go to --out (default /tmp/fencelock-soak-<date>). Exit 1 when a run failed its
# checks.
set -euo pipefail

minutes=30
store=both
build_dir=build
interval=5
warmup_minutes=2
out=""
while (($#)); do
  case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --store) store=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --interval) interval=$2; shift 2 ;;
    --warmup-minutes) warmup_minutes=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--minutes N] [--store both|embedded|redis] [--build-dir DIR] [--interval S] [--warmup-minutes N] [--out DIR]" >&2; exit 2 ;;
  esac
done
case "$store" in
  both) stores=(embedded redis) ;;
  embedded|redis) stores=("$store") ;;
  *) echo "soak: --store must be both, embedded or redis" >&2; exit 2 ;;
esac
driver="$build_dir/tests/chaos/fencelock_chaos_driver"
[[ -x "$driver" ]] || { echo "soak: $driver not built (cmake --build $build_dir --target fencelock_chaos_driver)" >&2; exit 1; }
out=${out:-/tmp/fencelock-soak-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
csv="$out/samples.csv"
echo "elapsed_s,store,role,pid,rss_kb,fds" >"$csv"

pids=()
for s in "${stores[@]}"; do
  "$driver" --store "$s" --duration $((minutes * 60)) --spare-instance --keep \
    --history "$out/history-$s" >"$out/driver-$s.log" 2>&1 &
  pids+=($!)
done
echo "soak: ${stores[*]} for $minutes min; samples every ${interval}s in $csv"
# Ctrl-C or a TERM ends the drivers' runs early: they stop their children and check what ran.
trap 'kill -TERM "${pids[@]}" 2>/dev/null || true' INT TERM

start=$(date +%s)
running() {
  local p
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done
  return 1
}
while running; do
  now=$(($(date +%s) - start))
  for s in "${stores[@]}"; do
    f="$out/history-$s/pids"
    [[ -r "$f" ]] || continue
    while read -r role pid; do
      [[ -r "/proc/$pid/status" ]] || continue
      rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
      fds=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
      [[ -n "$rss" ]] && echo "$now,$s,$role,$pid,$rss,$fds" >>"$csv"
    done <"$f"
  done
  sleep "$interval"
done

status=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    echo "soak: the ${stores[$i]} run failed: see $out/driver-${stores[$i]}.log" >&2
    status=1
  fi
  tail -n 8 "$out/driver-${stores[$i]}.log"
done

# One line per process that lived from the warm-up's end to the run's end (first sample after
# the warm-up, last sample, maximum after the warm-up), and one line per kind of process that the
# faults restarted (how many, and their maxima).
echo
echo "soak summary (after a ${warmup_minutes}-minute warm-up; RSS in MiB):"
awk -F, -v warm=$((warmup_minutes * 60)) -v slack=$((interval * 3)) '
  NR > 1 && $1 >= warm {
    k = $2 " " $3 " (pid " $4 ")"
    if (!(k in first_t)) { first_t[k] = $1; first_rss[k] = $5; first_fd[k] = $6; order[++n] = k; kind[k] = $2 " " $3 }
    last_t[k] = $1; last_rss[k] = $5; last_fd[k] = $6
    if ($5 > max_rss[k]) max_rss[k] = $5
    if ($6 > max_fd[k]) max_fd[k] = $6
    if ($1 > end) end = $1
  }
  END {
    printf "%-36s %7s %7s  %-22s  %s\n", "process", "from_s", "to_s", "rss first/last/max", "fds first/last/max"
    for (i = 1; i <= n; i++) {
      k = order[i]
      if (first_t[k] <= warm + slack && last_t[k] >= end - slack) {
        printf "%-36s %7d %7d  %6.1f/%6.1f/%6.1f    %4d/%4d/%4d\n", k, first_t[k], last_t[k],
          first_rss[k] / 1024, last_rss[k] / 1024, max_rss[k] / 1024, first_fd[k], last_fd[k], max_fd[k]
      } else {
        c = kind[k]; count[c]++
        if (max_rss[k] > kmax_rss[c]) kmax_rss[c] = max_rss[k]
        if (max_fd[k] > kmax_fd[c]) kmax_fd[c] = max_fd[k]
        if (!(c in seen)) { seen[c] = 1; korder[++m] = c }
      }
    }
    for (i = 1; i <= m; i++) {
      c = korder[i]
      printf "%-36s restarted by faults: %d processes, max rss %.1f MiB, max fds %d\n", c, count[c], kmax_rss[c] / 1024, kmax_fd[c]
    }
  }' "$csv"
echo "soak: samples in $csv, histories and reports in $out"
exit $status
