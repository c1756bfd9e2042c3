#!/usr/bin/env python3
"""Checks which takeover bench/report.py judges: the server's own store's, and the memory store's
beside it only when run.sh started that second run (a server on its default store).

usage: report_test.py <scratch dir>; exits non-zero on a failed check."""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def takeover(store, overshoot_ms):
    return {"scenario": "takeover", "target": "fencelock", "store": store, "ttl_ms": 200,
            "samples": len(overshoot_ms), "late": 0, "errors": 0, "overshoot_ms": overshoot_ms,
            "p50_ms": overshoot_ms[0], "p99_ms": overshoot_ms[-1], "max_ms": overshoot_ms[-1]}


def render(scratch, name, command, rows):
    """Renders a run of `command` with `rows`; returns the report's text and its stderr."""
    results = os.path.join(scratch, name + ".jsonl")
    with open(results, "w") as f:
        for r in [{"scenario": "meta", "phase": "start", "command": command, "url": ""}] + rows:
            f.write(json.dumps(r) + "\n")
    out = os.path.join(scratch, name + ".md")
    assets = os.path.join(scratch, name + "-assets")
    os.makedirs(assets, exist_ok=True)
    run = subprocess.run([sys.executable, os.path.join(HERE, "report.py"), "--results", results,
                          "--out", out, "--assets", assets], capture_output=True, text=True)
    with open(out) as f:
        return f.read(), run.stderr


def missing(err):
    """Returns what the report found no results for (its stderr's list)."""
    for line in err.splitlines():
        if line.startswith("report: no results for: "):
            return line.split(": ", 2)[2].split(", ")
    return []


def takeover_target(text):
    return next(line for line in text.splitlines() if line.startswith("| Takeover after"))


def main():
    scratch = sys.argv[1]
    os.makedirs(scratch, exist_ok=True)
    failed = []

    def check(ok, what):
        print(("ok: " if ok else "FAILED: ") + what)
        if not ok:
            failed.append(what)

    # The default store, with the memory store's run beside it: the embedded one is the target.
    text, err = render(scratch, "default", "bench/run.sh",
                       [takeover("embedded", [3.0, 5.0]), takeover("memory", [1.0, 2.0])])
    row = takeover_target(text)
    check("5.00 ms (p50 3.00 ms, 2 samples)" in row, "the default store's takeover is the target")
    check("without the write (memory store): p50 1.00, p99 2.00 ms" in row,
          "the memory store's run is its reference")
    check("takeover without the write" not in missing(err), "the run without the write is found")

    # The user's own memory store: run.sh makes no second run, and this one is the target.
    text, err = render(scratch, "own-store",
                       "bench/run.sh --server-arg=--store --server-arg=memory",
                       [takeover("memory", [1.0, 2.0])])
    row = takeover_target(text)
    check("2.00 ms (p50 1.00 ms, 2 samples)" in row, "the user's memory store's takeover is the target")
    check("without the write" not in row, "no run without the write is claimed")
    check("takeover" not in missing(err), "the takeover is not reported missing")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
