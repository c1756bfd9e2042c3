#!/usr/bin/env python3
"""Renders the benchmark report from the JSON lines of one run of bench/run.sh.

    bench/report.py --results DIR/bench/results.jsonl --out DIR/benchmarks.md --assets DIR/bench

Every figure is the median of the run's alternating rounds; every ratio is between figures
measured in the same run. Plots are PNGs made with gnuplot (Debian's gnuplot-nox); without it
the report says so and has none. Exits 1 when the results lack a scenario that was not reported
as skipped (the smoke test relies on that), never because of a speed.
Standard library only.
"""

import argparse
import datetime
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys


# --- reading ------------------------------------------------------------------------------------

def load(path):
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise SystemExit(f"report: {path}:{n}: not JSON: {e}")
    return rows


def pick(rows, scenario, **want):
    return [r for r in rows if r.get("scenario") == scenario
            and all(r.get(k) == v for k, v in want.items())]


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def med(rows, key):
    return median([r.get(key) for r in rows])


def lat(rows, key):
    return median([r.get("latency", {}).get(key) for r in rows])


# --- formatting ---------------------------------------------------------------------------------

def num(x, digits=0):
    if x is None:
        return "—"
    if digits == 0:
        return f"{x:,.0f}"
    return f"{x:,.{digits}f}"


def ms(us):
    return "—" if us is None else f"{us / 1000:.3f}"


def ratio(a, b, digits=2):
    if a is None or b in (None, 0):
        return None
    return a / b


def table(header, rows, align=None):
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


# --- the machine --------------------------------------------------------------------------------

def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except Exception:
        return ""


def machine():
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_kib = 0
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    except OSError:
        pass
    os_name = ""
    try:
        for line in open("/etc/os-release"):
            if line.startswith("PRETTY_NAME="):
                os_name = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    device = sh("df --output=source /tmp | tail -n1")
    fstype = sh("df --output=fstype /tmp | tail -n1")
    base = os.path.basename(device)
    parent = sh(f"lsblk -no PKNAME {device} 2>/dev/null | head -n1") or base
    model = sh(f"cat /sys/block/{parent}/device/model 2>/dev/null") or \
        sh(f"lsblk -dno MODEL /dev/{parent} 2>/dev/null")
    rota = sh(f"cat /sys/block/{parent}/queue/rotational 2>/dev/null")
    kind = {"0": "non-rotational", "1": "rotational"}.get(rota, "unknown kind")
    disk = f"{device} ({fstype}, {kind}{', ' + model if model else ''})"
    virt = sh("systemd-detect-virt 2>/dev/null") or ""
    return {
        "cores": os.cpu_count(),
        "cpu": cpu or platform.processor(),
        "kernel": platform.release(),
        "os": os_name,
        "memory": f"{mem_kib / 1024 / 1024:.0f} GiB" if mem_kib else "?",
        "disk": disk,
        "virt": virt if virt and virt != "none" else "",
    }


# --- plots --------------------------------------------------------------------------------------

def gnuplot(assets, name, script, notes):
    if not shutil.which("gnuplot"):
        notes.append(f"{name}.png: not drawn, gnuplot is missing (install gnuplot-nox)")
        return None
    path = os.path.join(assets, name + ".gp")
    with open(path, "w") as f:
        f.write(script)
    r = subprocess.run(["gnuplot", path], capture_output=True, text=True, cwd=assets)
    if r.returncode != 0:
        notes.append(f"{name}.png: gnuplot failed: {r.stderr.strip()[:300]}")
        return None
    return name + ".png"


PNG = "set terminal pngcairo size 900,520 font 'DejaVu Sans,10'\n"


def plot_throughput(assets, series, notes):
    """series: {title: [(connections, cycles/s)]}"""
    names = []
    for i, (title, points) in enumerate(series.items()):
        if not points:
            continue
        data = f"throughput_{i}.dat"
        with open(os.path.join(assets, data), "w") as f:
            for x, y in sorted(points):
                f.write(f"{x} {y}\n")
        names.append((data, title))
    if not names:
        return None
    plots = ", ".join(f"'{d}' using 1:2 with linespoints lw 2 pt 7 title '{t}'" for d, t in names)
    script = (PNG + "set output 'throughput.png'\n"
              "set title 'Acquire+release cycles per second against connections'\n"
              "set logscale x 2\nset logscale y 10\nset grid\nset key outside right top\n"
              "set xlabel 'connections'\nset ylabel 'cycles/s (median of rounds)'\n"
              f"plot {plots}\n")
    return gnuplot(assets, "throughput", script, notes)


def plot_handoff(assets, buckets, notes):
    """buckets: [(upper_us, count)] merged over rounds; drawn as a CDF."""
    if not buckets:
        return None
    total = sum(c for _, c in buckets)
    seen = 0
    with open(os.path.join(assets, "handoff.dat"), "w") as f:
        for upper, count in sorted(buckets):
            seen += count
            f.write(f"{upper / 1000:.4f} {seen / total:.6f}\n")
    script = (PNG + "set output 'handoff.png'\n"
              "set title 'Hand-off latency, one hot lock: release sent -> next grant received'\n"
              "set logscale x 10\nset grid\nset key off\nset yrange [0:1]\n"
              "set xlabel 'ms'\nset ylabel 'fraction of hand-offs at or below'\n"
              "plot 'handoff.dat' using 1:2 with steps lw 2\n")
    return gnuplot(assets, "handoff", script, notes)


def plot_memory(assets, points, notes):
    """points: [(held, rss MiB)]"""
    if not points:
        return None
    with open(os.path.join(assets, "memory.dat"), "w") as f:
        for x, y in sorted(points):
            f.write(f"{x} {y}\n")
    script = (PNG + "set output 'memory.png'\n"
              "set title 'Server resident memory against held leases'\n"
              "set logscale x 10\nset grid\nset key off\n"
              "set xlabel 'held leases'\nset ylabel 'RSS (MiB)'\n"
              "plot 'memory.dat' using 1:2 with linespoints lw 2 pt 7\n")
    return gnuplot(assets, "memory", script, notes)


# --- the report ---------------------------------------------------------------------------------

class report:
    def __init__(self, rows, quick):
        self.rows = rows
        self.quick = quick
        self.targets = []  # (what, measured, reference, ratio, needed, verdict)
        self.missing = []

    def target(self, what, measured, reference, got, needed, ok):
        if ok is None:
            verdict = "not measured"
        else:
            verdict = "**met**" if ok else "**missed**"
        self.targets.append((what, measured, reference, got, needed, verdict))


def render(rows, args):
    meta = {r.get("phase"): r for r in pick(rows, "meta")}
    start = meta.get("start", {})
    end = meta.get("end", {})
    quick = start.get("quick") == "1"
    rep = report(rows, quick)
    notes = []
    skipped = [r for r in rows if "skipped" in r]
    failures = pick(rows, "failure")
    out = []
    w = out.append
    mach = machine()

    w("# Benchmarks\n")
    w("Generated by `" + start.get("command", "bench/run.sh") + "` — do not edit by hand; run the "
      "command again. " + ("**This is a `--quick` smoke run: its figures are not measurements.**"
                           if quick else ""))
    w("")
    commit = start.get("commit", "unknown")
    w(f"- Commit: `{commit}`{' (with uncommitted changes)' if start.get('dirty') == 'yes' else ''};"
      f" build type {start.get('build_type') or 'unknown'}")
    w(f"- Date: {start.get('started', '?')}; the run took {end.get('seconds', '?')} s")
    w(f"- Machine: {mach['cores']} cores ({mach['cpu']}{', ' + mach['virt'] if mach['virt'] else ''}),"
      f" {mach['memory']}, {mach['os']}, kernel {mach['kernel']}")
    w(f"- Disk of the data dirs (/tmp): {mach['disk']}")
    w(f"- Load average (1, 5, 15 min) at the start: {', '.join(start.get('loadavg', []))}; at the "
      f"end: {', '.join(end.get('loadavg', []))}")
    w(f"- Plan: {start.get('rounds')} alternating rounds, {start.get('warmup')} s warm-up and "
      f"{start.get('duration')} s measured per trial; figures are medians of the rounds")
    if start.get("url"):
        w(f"- Server: {start.get('url')}, a server this run did not start: its ratios to the "
          "baselines hold only if it runs on this machine")
    w("")
    w("The machine is shared and noisy, and everything (servers, loader, baselines) shares its "
      "cores: read the ratios, which compare figures measured side by side in this run, rather "
      "than the absolute numbers. How to run it, and what each part measures: "
      "[below](#how-to-run-it).")
    w("")

    # --- gather -------------------------------------------------------------------------------
    unc = pick(rows, "uncontended")

    def unc_rows(target, transport, conns, pipeline=1):
        return [r for r in unc if r.get("target") == target and r.get("transport") == transport
                and r.get("connections") == conns and r.get("pipeline") == pipeline
                and not r.get("skipped")]

    fence_name = "fencelock"
    if start.get("url"):
        fence_name = next((r["target"] for r in unc if r.get("target") not in
                           ("baseline-http", "etcd")), start.get("url"))

    http_f = med(unc_rows(fence_name, "http", 64), "per_s")
    http_b = med(unc_rows("baseline-http", "http", 64), "per_s")
    http_e = med(unc_rows("etcd", "http", 64), "per_s")
    ws_f = med(unc_rows(fence_name, "ws", 1, 64), "per_s")

    caf = med(pick(rows, "caf_baseline", in_flight=1), "per_s")
    caf16 = med(pick(rows, "caf_baseline", in_flight=16), "per_s")
    inproc_mem = [r for r in pick(rows, "inproc") if r.get("store_wanted") == "memory"]
    inproc_best, inproc_best_clients = None, None
    for c in sorted({r["clients"] for r in inproc_mem}):
        v = med([r for r in inproc_mem if r["clients"] == c], "per_s")
        if v is not None and (inproc_best is None or v > inproc_best):
            inproc_best, inproc_best_clients = v, c
    fallback = next((r["store_fallback"] for r in inproc_mem if r.get("store_fallback")), None)
    inproc_store = next((r["store"] for r in inproc_mem), None)

    # Two sets of durable-write rounds: beside the hot lock's rounds (label "hot") and beside the
    # durable single client's; each target is judged against the writes measured next to it.
    def durable_writes(beside_hot):
        def of(target):
            xs = pick(rows, "fsync_baseline", target=target)
            near = [r for r in xs if (r.get("label") == "hot") == beside_hot]
            return near or xs
        return of("fdatasync"), of("sqlite_commit")
    fsync, commit_rows = durable_writes(False)
    fsync_us = med(fsync, "mean_us")
    commit_us = med(commit_rows, "mean_us")
    hot_fsync, hot_commit_rows = durable_writes(True)
    hot_fsync_us = med(hot_fsync, "mean_us")
    hot_commit_us = med(hot_commit_rows, "mean_us")
    durable1 = [r for r in pick(rows, "inproc", store="embedded", clients=1)
                if r.get("store_wanted") == "embedded"]
    durable1_rate = med(durable1, "per_s")
    cycle_us = 1e6 / durable1_rate if durable1_rate else None

    hot = pick(rows, "hot")
    hot_rate = med(hot, "grants_per_s")
    handoff_buckets = {}
    for r in hot:
        for upper, count in r.get("handoff", {}).get("buckets", []):
            handoff_buckets[upper] = handoff_buckets.get(upper, 0) + count

    def bucket_pct(buckets, p):
        total = sum(buckets.values())
        if not total:
            return None
        rank = max(1, -(-p * total // 100))
        seen = 0
        for upper in sorted(buckets):
            seen += buckets[upper]
            if seen >= rank:
                return upper
        return None

    handoff_p50 = bucket_pct(handoff_buckets, 50)
    handoff_p99 = bucket_pct(handoff_buckets, 99)
    handoff_p999 = bucket_pct(handoff_buckets, 99.9)
    handoff_max = max((r.get("handoff", {}).get("max_us", 0) for r in hot), default=None)
    jain_min = min((r["jain"] for r in hot), default=None)
    starved = sum(r.get("starved", 0) for r in hot) if hot else None

    # The target's takeover is the server's own store. run.sh adds the same path without the
    # durable write (the memory store) only beside a server it starts on its default store: when
    # the user chose the store, a memory store's takeover is the target itself.
    bare_run = not start.get("url") and "--server-arg=--store" not in start.get("command", "")
    take_all = pick(rows, "takeover")
    take_bare = [r for r in take_all if bare_run and r.get("store") == "memory"]
    take = [r for r in take_all if r not in take_bare]
    take_samples = [x for r in take for x in r.get("overshoot_ms", [])]

    def nearest(xs, p):
        if not xs:
            return None
        xs = sorted(xs)
        return xs[min(len(xs), max(1, math.ceil(p / 100 * len(xs)))) - 1]

    take_p50, take_p99 = nearest(take_samples, 50), nearest(take_samples, 99)
    bare_samples = [x for r in take_bare for x in r.get("overshoot_ms", [])]
    bare_p50, bare_p99 = nearest(bare_samples, 50), nearest(bare_samples, 99)
    take_ttl = take[0]["ttl_ms"] if take else None
    # One-row writes each made after a quiet spell as long as the TTL: what the expiry's write
    # costs (a lease nobody touched expires on an idle disk).
    idle_fsync = pick(rows, "fsync_baseline", target="fdatasync_after_idle")
    idle_commit = pick(rows, "fsync_baseline", target="sqlite_commit_after_idle")
    idle_ms = idle_commit[0].get("idle_ms") if idle_commit else None

    fills = pick(rows, "scale_fill")
    scale_probe = pick(rows, "scale")
    steps = sorted({r["held"] for r in fills})
    scale_rate = {n: med([r for r in scale_probe if r.get("held") == n], "per_s") for n in steps}

    red = pick(rows, "redis")
    red_pair = [r for r in red if r.get("target") == "fencelock-redis-x2"]
    red_rb = [r for r in red if r.get("target") == "redis-benchmark" and "skipped" not in r]
    evalsha = med(red_rb, "evalsha_per_s")
    red_best, red_best_w = None, None
    for wl in sorted({(r["transport"], r["connections"], r["pipeline"]) for r in red_pair}):
        v = med([r for r in red_pair if (r["transport"], r["connections"], r["pipeline"]) == wl],
                "per_s")
        if v is not None and (red_best is None or v > red_best):
            red_best, red_best_w = v, wl

    over = pick(rows, "overload")

    # --- targets ------------------------------------------------------------------------------
    r1 = ratio(http_f, http_b)
    rep.target("HTTP uncontended, 64 keep-alive connections",
               f"{num(http_f)} cycles/s", f"trivial Beast server {num(http_b)} cycles/s",
               num(r1, 2), "≥ 0.6", None if r1 is None else r1 >= 0.6)
    r2 = ratio(http_f, http_e)
    rep.target("HTTP uncontended against etcd", f"{num(http_f)} cycles/s",
               f"etcd 3.4 lock/unlock {num(http_e)} cycles/s", num(r2, 1), "≥ 30",
               None if r2 is None else r2 >= 30)
    r3 = ratio(ws_f, http_f)
    rep.target("WebSocket pipelined (64 cycles open on one socket)", f"{num(ws_f)} cycles/s",
               f"HTTP at 64 connections {num(http_f)} cycles/s", num(r3, 2), "≥ 2.5",
               None if r3 is None else r3 >= 2.5)
    r4 = ratio(inproc_best, caf)
    store_note = f"{inproc_store} store" + (" (**fallback**: `memory` refused)" if fallback else "")
    rep.target(f"In process, {store_note}, best of 1–256 clients ({inproc_best_clients})",
               f"{num(inproc_best)} cycles/s", f"CAF request/response {num(caf)}/s",
               num(r4, 3), "≥ 0.15", None if r4 is None else r4 >= 0.15)
    extra = None if cycle_us is None or commit_us is None else cycle_us - 2 * commit_us
    rep.target("One client, durable, in process: cycle − two one-row commits",
               f"{num(cycle_us)} µs per cycle", f"SQLite commit {num(commit_us)} µs",
               f"+{num(extra)} µs" if extra is not None else "—", "≤ +100 µs",
               None if extra is None else extra <= 100)
    bound = None if hot_commit_us is None else 1e6 / (hot_commit_us + 100)
    r6 = ratio(hot_rate, bound)
    rep.target("One hot lock, durable: grants/s", f"{num(hot_rate)} grants/s",
               f"1 / (commit + 100 µs) = {num(bound)}/s", num(r6, 2), "≥ 1",
               None if r6 is None else r6 >= 1)
    rep.target("One hot lock: fairness", f"Jain {num(jain_min, 4)} (lowest round), "
               f"{starved if starved is not None else '—'} starved", "", "",
               "Jain ≥ 0.99, none starved",
               None if jain_min is None else (jain_min >= 0.99 and starved == 0))
    rep.target("One hot lock: hand-off p50 over WebSocket", f"{ms(handoff_p50)} ms", "", "",
               "≤ 0.3 ms", None if handoff_p50 is None else handoff_p50 <= 300)
    rep.target("One hot lock: hand-off p99 over WebSocket", f"{ms(handoff_p99)} ms", "", "",
               "≤ 2 ms", None if handoff_p99 is None else handoff_p99 <= 2000)
    last = fills[-1] if fills else None
    bpl = last.get("bytes_per_lease") if last else None
    rep.target("Memory per held lease", f"{num(bpl)} bytes at {num(last['held']) if last else '—'}"
               " leases", "RSS growth ÷ leases", "", "≤ 2,048 bytes",
               None if bpl is None else bpl <= 2048)
    million = next((r for r in fills if r.get("wanted", 0) >= 1_000_000), None)
    rep.target("1,000,000 held leases on one instance",
               f"{num(million['held'])} held in {num(million['fill_seconds'], 1)} s"
               if million else "not run (fewer steps)", "", "", "all held",
               None if million is None else million["held"] >= 1_000_000)
    lo = scale_rate.get(steps[0]) if steps else None
    hi = scale_rate.get(steps[-1]) if steps else None
    r10 = ratio(hi, lo)
    big = steps[-1] if steps else None
    rep.target(f"Uncontended at {num(big)} held vs at {num(steps[0]) if steps else '—'}",
               f"{num(hi)} cycles/s", f"{num(lo)} cycles/s", num(r10, 2), "≥ 0.8",
               None if r10 is None or big is None or big < 1_000_000 else r10 >= 0.8)
    half = evalsha / 2 if evalsha else None
    r11 = ratio(red_best, half)
    red_w = f"{red_best_w[0]}:{red_best_w[1]}x{red_best_w[2]}" if red_best_w else ""
    rep.target(f"Redis store, two instances summed ({red_w})", f"{num(red_best)} cycles/s",
               f"redis-benchmark EVALSHA acquire {num(evalsha)}/s ÷ 2", num(r11, 2), "≥ 0.5",
               None if r11 is None else r11 >= 0.5)
    take_ref = "timed from the dead holder's acquire"
    if idle_commit:
        take_ref += (f"; SQLite commit after {idle_ms} ms idle: p50 "
                     f"{ms(lat(idle_commit, 'p50_us'))}, p99 {ms(lat(idle_commit, 'p99_us'))} ms")
    if bare_samples:
        take_ref += (f"; the same without the write (memory store): p50 {num(bare_p50, 2)}, "
                     f"p99 {num(bare_p99, 2)} ms")
    rep.target(f"Takeover after kill -9 (TTL {take_ttl} ms): grant − TTL, p99",
               f"{num(take_p99, 2)} ms (p50 {num(take_p50, 2)} ms, {len(take_samples)} samples)",
               take_ref, "", "≤ 2 ms",
               None if take_p99 is None else take_p99 <= 2)
    over_fail = sum(r.get("renewal_failures", 0) for r in over) if over else None
    rep.target("No renewal lost under the overload bench",
               f"{over_fail if over_fail is not None else '—'} renewal failures", "", "", "0",
               None if over_fail is None else over_fail == 0)
    if quick:
        rep.targets = [t[:5] + ("n/a (quick)",) for t in rep.targets]

    w("## Targets (issue 13)\n")
    w(table(["target", "measured", "reference, same run", "ratio", "needed", "result"],
            rep.targets, ["---", "---", "---", "---:", "---", "---"]))
    w("")
    met = sum(1 for t in rep.targets if t[5] == "**met**")
    missed = sum(1 for t in rep.targets if t[5] == "**missed**")
    w(f"{met} met, {missed} missed, {len(rep.targets) - met - missed} not measured.")
    if fallback:
        w("")
        w(f"The in-process scenario asked for the `memory` store and fell back: {fallback}.")
    w("")

    # --- uncontended ----------------------------------------------------------------------------
    w("## Uncontended: throughput against connections\n")
    w("`fencelock_loader uncontended` — acquire+release cycles, each connection (or pipelined "
      "slot) on a lock of its own, 10 s TTL; fencelock with its default durable store "
      "(SQLite, WAL, group commit), `--log-level warn`. Side by side, trial by trial: the "
      "trivial Beast JSON server (`bench/baseline_http.cpp`, same paths, two POSTs per cycle) and "
      "etcd 3.4 (one member on loopback, a lease per connection, `/v3/lock/lock` + "
      "`/v3/lock/unlock` through its JSON gateway). HTTP has one request in flight per "
      "connection; WebSocket rows keep `pipeline` cycles open per socket. Latency is per "
      "request (round trip), in ms; CPU is the share of one core over the window.\n")
    shapes = sorted({(r["transport"], r["connections"], r["pipeline"]) for r in unc
                     if "transport" in r}, key=lambda s: (s[0] != "http", s[1], s[2]))
    def per_cycle(rows, key, per="per_s", scale=1e6):
        """Median over the rounds of one field divided by another (CPU share per cycle/s, in
        µs by default; switches per cycle with per="cycles", scale=1)."""
        return median([r[key] * scale / r[per] if r.get(key) is not None and r.get(per)
                       else None for r in rows])

    def switches_per_cycle(rows):
        return per_cycle(rows, "server_switches", per="cycles", scale=1)

    trows, crows = [], []
    for tr, c, p in shapes:
        f = unc_rows(fence_name, tr, c, p)
        b = unc_rows("baseline-http", tr, c, p)
        e = unc_rows("etcd", tr, c, p)
        fr, br, er = med(f, "per_s"), med(b, "per_s"), med(e, "per_s")
        trows.append([f"{tr} {c}×{p}", num(fr), ms(lat(f, "p50_us")), ms(lat(f, "p99_us")),
                      ms(lat(f, "p999_us")), ms(lat(f, "max_us")),
                      num(med(f, "server_cpu"), 2), num(med(f, "loader_cpu"), 2),
                      num(med(f, "errors")), num(br), num(ratio(fr, br), 3), num(er),
                      num(ratio(fr, er), 1)])
        crows.append([f"{tr} {c}×{p}", num(per_cycle(f, "server_cpu")),
                      num(switches_per_cycle(f), 2), num(per_cycle(f, "loader_cpu")),
                      num(per_cycle(b, "server_cpu")), num(switches_per_cycle(b), 2),
                      num(per_cycle(e, "server_cpu")), num(switches_per_cycle(e), 2)])
    w(table(["workload", "fencelock cycles/s", "p50", "p99", "p99.9", "max", "server CPU",
             "loader CPU", "errors", "Beast baseline cycles/s", "÷ baseline", "etcd cycles/s",
             "÷ etcd"], trows))
    w("")
    w("What each cycle costs the server, trial by trial (medians of the rounds): its CPU time "
      "per cycle, and how often its threads were switched out per cycle: once each time a thread "
      "slept and was woken (a hand-off that found the thread asleep) or was preempted. Read from "
      "`/proc/<pid>` (all threads) over the measured window; a server this run did not start "
      "shows — unless its pid was given (`--server-pid`). The loader's own CPU per cycle is "
      "beside them.\n")
    w(table(["workload", "fencelock CPU µs/cycle", "switches/cycle", "loader CPU µs/cycle",
             "Beast baseline CPU µs/cycle", "switches/cycle", "etcd CPU µs/cycle",
             "switches/cycle"], crows))
    w("")
    series = {
        "fencelock, HTTP": [(c, med(unc_rows(fence_name, "http", c), "per_s"))
                            for (tr, c, p) in shapes if tr == "http"],
        "trivial Beast server, HTTP": [(c, med(unc_rows("baseline-http", "http", c), "per_s"))
                                       for (tr, c, p) in shapes if tr == "http"],
        "etcd 3.4, HTTP": [(c, med(unc_rows("etcd", "http", c), "per_s"))
                           for (tr, c, p) in shapes if tr == "http"],
        "fencelock, WebSocket (pipelined)": [(c, med(unc_rows(fence_name, "ws", c, p), "per_s"))
                                             for (tr, c, p) in shapes if tr == "ws"],
    }
    series = {k: [(x, y) for x, y in v if y] for k, v in series.items()}
    png = plot_throughput(args.assets, series, notes)
    if png:
        w(f"![Cycles per second against connections](bench/{png})\n")

    # --- hot lock -------------------------------------------------------------------------------
    w("## One hot lock: FIFO hand-off\n")
    w("`fencelock_loader hot --clients 16` — 16 WebSocket clients queue for one lock with "
      "`waitMs`; each releases the moment it is granted and queues again once the release is "
      "answered, so 15 wait at all times. Hand-off: from the holder's release leaving the loader "
      "to the next holder's `granted` arriving (one loader thread, one clock). Before each round, "
      "what one durable write costs on the same disk at that moment (`baseline_fsync`); the "
      "bound uses these rounds.\n")
    hrows = []
    for i, r in enumerate(hot):  # one loader run per round, each beside its durable writes
        h = r.get("handoff", {})
        hrows.append([i, num(r.get("grants_per_s")), ms(h.get("p50_us")),
                      ms(h.get("p99_us")), ms(h.get("p999_us")), ms(h.get("max_us")),
                      num(r.get("jain"), 4), r.get("starved"), num(r.get("longest_wait_ms"), 1),
                      num(r.get("server_cpu"), 2), num(r.get("errors"))])
    hrows.append(["median / all", num(hot_rate), ms(handoff_p50), ms(handoff_p99),
                  ms(handoff_p999), ms(handoff_max), num(jain_min, 4), starved, "", "", ""])
    w(table(["round", "grants/s", "hand-off p50", "p99", "p99.9", "max", "Jain", "starved",
             "longest wait (ms)", "server CPU", "errors"], hrows))
    w("")
    w(table(["durable write on /tmp", "mean (µs)", "p50 (µs)", "p99 (µs)", "per second"],
            [["fdatasync of 512 bytes", num(hot_fsync_us), num(lat(hot_fsync, "p50_us")),
              num(lat(hot_fsync, "p99_us")), num(med(hot_fsync, "per_s"))],
             ["SQLite WAL commit of one row (synchronous=FULL)", num(hot_commit_us),
              num(lat(hot_commit_rows, "p50_us")), num(lat(hot_commit_rows, "p99_us")),
              num(med(hot_commit_rows, "per_s"))],
             ["bound: 1 / (commit + 100 µs)", "", "", "", num(bound)]]))
    w("")
    png = plot_handoff(args.assets, list(handoff_buckets.items()), notes)
    if png:
        w(f"![Hand-off latency distribution](bench/{png})\n")

    # --- takeover -------------------------------------------------------------------------------
    w("## Takeover after `kill -9`\n")
    w("`fencelock_loader takeover` — a child process acquires a lock over HTTP with a "
      f"{take_ttl} ms TTL and is killed with SIGKILL; a waiter queued on a WebSocket gets the "
      "lock when the lease expires. Overshoot: the waiter's grant received − the dead holder's "
      "acquire sent − TTL (both on CLOCK_MONOTONIC).\n")
    trow = []
    for r in take + take_bare:
        trow.append([r.get("store") or "—", r.get("ttl_ms"), r.get("samples"),
                     num(r.get("p50_ms"), 2), num(r.get("p99_ms"), 2), num(r.get("max_ms"), 2),
                     r.get("late"), r.get("errors")])
    w(table(["store", "TTL (ms)", "samples", "overshoot p50 (ms)", "p99 (ms)", "max (ms)",
             "late waiters (dropped)", "errors"], trow))
    w("")
    if take_bare:
        w("The memory store's row is the same scenario on a server that writes nothing durable: "
          "what the expiry's timer, the thread wake-ups on the way (the watchdog's worker, the "
          "WebSocket's I/O thread, the loader's) and the loopback hops cost on their own on this "
          "machine, after the quiet spell of the TTL. The target is the durable store's.\n")
    if idle_commit:
        w("The expiry and the grant that follows it are one durable write, made after the lock "
          "sat untouched for the TTL. What such a write costs on the same disk, measured in this "
          f"run (`baseline_fsync --idle-writes N --idle-ms {idle_ms}`: each write after a pause "
          "with no I/O, the two kinds alternating):\n")
        w(table(["durable write on /tmp after a pause", "writes", "p50 (ms)", "p99 (ms)",
                 "max (ms)", "right after another, p50 (ms)"],
                [["fdatasync of 512 bytes", num(sum(r.get("ops", 0) for r in idle_fsync)),
                  ms(lat(idle_fsync, "p50_us")), ms(lat(idle_fsync, "p99_us")),
                  ms(lat(idle_fsync, "max_us")), ms(lat(fsync, "p50_us"))],
                 ["SQLite WAL commit of one row", num(sum(r.get("ops", 0) for r in idle_commit)),
                  ms(lat(idle_commit, "p50_us")), ms(lat(idle_commit, "p99_us")),
                  ms(lat(idle_commit, "max_us")), ms(lat(commit_rows, "p50_us"))]]))
        w("")

    # --- scale ----------------------------------------------------------------------------------
    w("## Scale: held leases\n")
    w("`fencelock_loader scale` — one server with the default `max-locks` (raised only for a "
      "step beyond it) filled step by step "
      "with leases of 1 h TTL over 4 pipelined WebSockets; after each step its RSS "
      "(`/proc/<pid>/status`) and the uncontended HTTP throughput at 64 connections on other "
      "names. Per lease: RSS growth over the server after a warm-up with no lease held.\n")
    base = pick(rows, "scale_base")
    srows = []
    mem_points = []
    if base and base[0].get("rss_kib", -1) > 0:
        mem_points.append((0.5, base[0]["rss_kib"] / 1024))
    for r in fills:
        n = r["held"]
        rate = scale_rate.get(n)
        rss = r.get("rss_kib", -1)
        if rss > 0:
            mem_points.append((n, rss / 1024))
        srows.append([num(n), num(r.get("fill_seconds"), 1), num(r.get("fill_per_s")),
                      num(rss / 1024, 1) if rss > 0 else "—", num(r.get("bytes_per_lease")),
                      num(rate), num(ratio(rate, lo), 2)])
    w(table(["held leases", "fill time (s)", "fill rate (leases/s)", "RSS (MiB)",
             "bytes per lease", "cycles/s, 64 conns", "÷ at smallest"], srows))
    w("")
    if base:
        w(f"RSS with no lease held, after the warm-up: {num(base[0].get('rss_kib', 0) / 1024, 1)} MiB.\n")
    png = plot_memory(args.assets, [p for p in mem_points if p[0] >= 1], notes)
    if png:
        w(f"![RSS against held leases](bench/{png})\n")

    # --- in process -----------------------------------------------------------------------------
    w("## In process: the embedding API\n")
    w("`fencelock_loader inproc` — `fencelock::service` in the loader's own actor system, each "
      "client a chain of acquire → release calls on its own lock (the next call made from the "
      "previous callback). Beside it, in alternating rounds: `baseline_caf`, request/response "
      "between two trivial event-based actors in an actor system set up as the server's "
      "(one request in flight, and 16).\n")
    irows = []
    for c in sorted({r["clients"] for r in inproc_mem}):
        rs = [r for r in inproc_mem if r["clients"] == c]
        v = med(rs, "per_s")
        irows.append([c, rs[0]["store"], num(v), ms(lat(rs, "p50_us")), ms(lat(rs, "p99_us")),
                      num(ratio(v, caf), 3)])
    w(table(["clients", "store", "cycles/s", "call p50 (ms)", "call p99 (ms)",
             "÷ CAF request/response"], irows))
    w("")
    w(f"CAF request/response between two trivial actors: {num(caf)}/s with one request in "
      f"flight, {num(caf16)}/s with 16.")
    if fallback:
        w(f" The memory store was refused, so these rows ran on the embedded store: {fallback}.")
    w("")
    w("Durable, one client: `inproc --store embedded --clients 1` (SQLite in /tmp) against "
      "`baseline_fsync` on the same disk, alternating.\n")
    w(table(["", "µs"], [["acquire+release cycle, one client, durable", num(cycle_us)],
                         ["two one-row SQLite commits", num(2 * commit_us if commit_us else None)],
                         ["two fdatasync of 512 bytes", num(2 * fsync_us if fsync_us else None)],
                         ["cycle − two commits", num(extra)]], ["---", "---:"]))
    w("")

    # --- redis ----------------------------------------------------------------------------------
    w("## The Redis store: two instances\n")
    w("`fencelock_loader redis` — a redis-server with `appendonly yes`, `appendfsync always` "
      "(docs/redis.md), two `fencelock serve --store redis://...` instances, the load split "
      "between them. In alternating rounds on the same redis-server: `redis-benchmark` (50 "
      "clients) running EVALSHA of the real acquire script (actors/store/redis/scripts.cpp) "
      "with random keys (`-r`), so each call grants a fresh lock, bumps the shared token counter "
      "and publishes its event to two subscribers. A cycle takes two scripts (acquire, release), "
      "hence the ÷ 2.\n")
    rrows = []
    for wl in sorted({(r["transport"], r["connections"], r["pipeline"]) for r in red_pair}):
        rs = [r for r in red_pair if (r["transport"], r["connections"], r["pipeline"]) == wl]
        bs = [r for r in red_rb if (r["transport"], r["connections"], r["pipeline"]) == wl]
        v, e = med(rs, "per_s"), med(bs, "evalsha_per_s")
        rrows.append([f"{wl[0]} {wl[1]}×{wl[2]}", num(v), ms(lat(rs, "p50_us")),
                      ms(lat(rs, "p99_us")), num(med(rs, "server_cpu"), 2),
                      num(med(rs, "redis_cpu"), 2), num(e), num(med(bs, "redis_cpu"), 2),
                      num(ratio(v, e / 2 if e else None), 2)])
    w(table(["workload", "2 instances cycles/s", "p50", "p99", "instances CPU", "Redis CPU",
             "EVALSHA acquire/s", "Redis CPU", "÷ (EVALSHA ÷ 2)"], rrows))
    w("")

    # --- overload -------------------------------------------------------------------------------
    w("## Overload: renewals under a flood\n")
    w("`overload_bench` run short (docs/overload.md describes the full run and its reading): 8 "
      "holders renew back to back while 8 sockets flood acquires, per shedding configuration. "
      "Its full output is in `bench/overload.txt`.\n")
    orows = []
    for r in over:
        for c in r.get("configs", []):
            orows.append([c["config"], num(c["base_p50_ms"], 2), num(c["flood_p50_ms"], 2),
                          num(c["base_p99_ms"], 2), num(c["flood_p99_ms"], 2),
                          num(c["flood_max_ms"], 1), num(c["granted_per_s"]),
                          num(c["shed_per_s"]), c["renewal_failures"]])
    w(table(["configuration", "renewal p50 base (ms)", "flood", "p99 base (ms)", "flood",
             "flood max", "granted acquires/s", "shed/s", "renewal failures"], orows))
    w("")

    # --- how --------------------------------------------------------------------------------
    w("## How to run it\n")
    w("```sh\n"
      "bench/run.sh            # builds (Release), runs everything, rewrites this file and docs/bench/\n"
      "bench/run.sh --quick    # every mode for a moment, into build/bench-quick/ (the CI smoke run)\n"
      "bench/run.sh --url http://10.0.0.5:7070   # drive your own deployment\n"
      "bench/run.sh --url http://127.0.0.1:7070 --server-pid $(pgrep -f 'fencelock serve')\n"
      "                        # one on this machine: its CPU, context switches and memory too\n"
      "```\n")
    w("It needs the build dependencies plus `gnuplot-nox` (plots), `etcd-server` (the etcd "
      "baseline: a benchmark peer, never needed by the server) and `redis-server` with "
      "`redis-tools` (redis-benchmark): `bench/run.sh` installs what is missing through "
      "`scripts/install-deps.sh --bench` (as root or with sudo), and reports as skipped what "
      "it could not. Everything runs on loopback with its data in /tmp. The raw results "
      "are `bench/results.jsonl` (one JSON object per trial), the programs' messages "
      "`bench/log.txt`.\n")
    w("The parts, each usable alone (`--help`):\n")
    w("- `fencelock_loader <mode>` (bench/loader/): the load generator. Asynchronous I/O on one "
      "thread (`--threads`) with many connections, its own lean HTTP/1.1 and WebSocket "
      "framing, a warm-up, a fixed window, log-bucketed latency histograms (p50/p99/p99.9/max, "
      "1.6 % resolution), its own CPU share reported beside the server's. Modes `uncontended`, "
      "`hot`, `takeover`, `scale`, `inproc`, `redis`; `--url` drives a server it did not start, "
      "`--targets fencelock,baseline-http,etcd` starts and alternates those.")
    w("- `baseline_http`, `baseline_caf`, `baseline_fsync` (bench/): the ceilings and floors "
      "named above; `overload_bench`: renewals under a flood.")
    w("- `bench/run.sh` runs them all; `bench/report.py` renders this file from the results.")
    w("")
    w("Method: baselines run in the same run as what they bound, alternating trial by trial "
      "(servers) or round by round (programs), and each figure is the median over the rounds. "
      "The server, the loader (which hosts the in-process scenario) and the Beast and CAF "
      "baselines are linked with the same allocator (jemalloc, unless built with "
      "`-DFENCELOCK_JEMALLOC=OFF`: docs/architecture.md), so that no ratio compares two "
      "allocators. No test asserts a speed; CTest runs `bench/run.sh --quick` as "
      "`integration.bench_smoke`, which checks that every mode runs and the report is produced.")
    w("")
    if skipped or failures or notes:
        w("## Skipped and failed parts\n")
        for r in skipped:
            w(f"- {r.get('scenario')} {r.get('target', '')}: skipped, {r['skipped']}")
        for r in failures:
            w(f"- {r.get('step')}: failed (see bench/log.txt)")
        for n in notes:
            w(f"- {n}")
        w("")
    steps_taken = pick(rows, "step")
    if steps_taken:
        w("Time per part: " + "; ".join(f"{s['step']} {s['seconds']} s" for s in steps_taken) + ".")
        w("")

    # What must be there for the report to count as produced (the smoke test's check).
    need = {"uncontended": bool(unc), "hot": bool(hot), "takeover": bool(take),
            "inproc": bool(inproc_mem), "durable single client": bool(durable1),
            "caf_baseline": caf is not None, "fsync_baseline": commit_us is not None,
            "fsync_after_idle": bool(idle_commit),
            "scale": bool(fills), "overload": bool(over) or bool(start.get("url"))}
    if not start.get("url"):
        need["redis"] = bool(red_pair) or any(r.get("scenario") == "redis" for r in skipped)
        need["baseline-http"] = http_b is not None
        if bare_run:
            need["takeover without the write"] = bool(take_bare)
        need["server context switches"] = all(r.get("server_switches") is not None
                                               for r in unc if r.get("per_s"))
    return "\n".join(out), [k for k, v in need.items() if not v], failures


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--assets", required=True)
    p.add_argument("--root", default=".")
    args = p.parse_args()
    rows = load(args.results)
    text, missing, failures = render(rows, args)
    with open(args.out, "w") as f:
        f.write(text)
    print(f"report: wrote {args.out}")
    if missing:
        print("report: no results for: " + ", ".join(missing), file=sys.stderr)
    if failures:
        print("report: failed steps: " + ", ".join(f["step"] for f in failures), file=sys.stderr)
    return 1 if missing or failures else 0


if __name__ == "__main__":
    sys.exit(main())
