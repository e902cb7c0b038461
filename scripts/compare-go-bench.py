#!/usr/bin/env python3
"""metabench `ops --client-cache` against JuiceFS's own Go metadata benchmark.

Runs the two alternately on the same engine, the same number of calls per operation,
in the same minutes, and prints µs/op side by side with the ratio metabench / Go:

    scripts/compare-go-bench.py --go-bench ./meta.test --bench BenchmarkRedis \\
        --go-meta redis://127.0.0.1:6379/1 --meta redis://127.0.0.1:6379/2 \\
        --iterations 20000 --rounds 3

`--go-bench` is a test binary of JuiceFS's `pkg/meta` whose BenchmarkRedis / BenchmarkSQL /
BenchmarkTKV take their meta URL from the environment variable `JFS_BENCH_META` (upstream
hard-codes `redis://127.0.0.1/1`, a temporary SQLite file and a temporary Badger store).
`scripts/build-go-bench.sh JUICEFS_CHECKOUT` makes it from a JuiceFS clone at release-1.4.
Without `--go-meta` the binary uses its built-in address. This script builds nothing.

`--cpus LIST` runs both clients under `taskset -c LIST` (and nothing else changes). On a VM
a loopback round trip between two idle vCPUs costs tens of µs of wake-up, and where each
client's threads land decides how often it pays it: Go's scheduler keeps more threads
awake than metabench's one client thread. Pinning both clients (and, by the user, the
engine: e.g. `taskset -c 0 redis-server …`) to the same CPUs measures the clients' own
cost; the unpinned run measures what a user gets on this machine. Give both.

`--busy-poll` passes `--busy-poll` to metabench: its client thread polls instead of
sleeping while a call is in flight, so no round trip waits for the client's own CPU to
wake. The Go client sleeps (its scheduler sometimes wakes a spare thread that spins a
little), so metabench then measures less than the Go client pays on such a machine.

The Go benchmark formats its database (`Init(..., force=true)`), so give it a database
of its own (`--go-meta`), never one that holds data. metabench formats `--meta` if it is
empty and removes what it wrote. The median over rounds is printed per operation; rows
marked * are outside ±10 %.

`--ops a,b` runs only those operations on both sides (the Go benchmark through its
sub-benchmark filter, `-test.bench=^BenchmarkX$/^(a|b)$`): more rounds of the few
operations a full run leaves in doubt, in the same minutes.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

GO_LINE = re.compile(r"^Benchmark\w+/(\S+?)(?:-\d+)?\s+(\d+)\s+([\d.]+) ns/op")
# metabench names for the Go benchmark's operations (the same, minus its CPU suffix).
SKIP = {"resolve"}


def fmt_us(value):
    """µs to a tenth above 10 µs, to a hundredth above 1 µs, else to 0.1 ns: 2281.8, 3.21,
    0.0173."""
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}" if value >= 1 else f"{value:.4f}"


def pinned(args):
    """The command prefix that runs a client on `--cpus` (none without it)."""
    return ["taskset", "-c", args.cpus] if args.cpus else []


def run_go(args):
    env = dict(os.environ)
    if args.go_meta:
        env["JFS_BENCH_META"] = args.go_meta
    cmd = pinned(args) + [
        args.go_bench,
        "-test.run=^$",
        f"-test.bench=^{args.bench}$" + (f"/^({'|'.join(args.ops)})$" if args.ops else ""),
        f"-test.benchtime={args.iterations}x",
    ]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    got = {}
    # Log lines may interleave with a benchmark's name; match per line and also the
    # "name" / "N ns/op" split the Go runner prints when a log line comes in between.
    pending = None
    for line in out.stdout.splitlines():
        m = GO_LINE.match(line.strip())
        if m:
            got[m.group(1)] = float(m.group(3)) / 1000.0
            pending = None
            continue
        name = re.match(r"^Benchmark\w+/(\S+?)(?:-\d+)?\s*$", line.strip())
        if name:
            pending = name.group(1)
            continue
        tail = re.match(r"^\s*(\d+)\s+([\d.]+) ns/op", line)
        if tail and pending:
            got[pending] = float(tail.group(2)) / 1000.0
            pending = None
    if not got:
        sys.exit(f"compare-go-bench: no benchmark lines from {args.go_bench}:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return got


def run_metabench(args):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ops.json")
        cmd = pinned(args) + [
            args.metabench,
            "ops",
            "--meta",
            args.meta,
            "--client-cache",
        ] + (["--busy-poll"] if args.busy_poll else []) + (
            ["--ops", ",".join(args.ops)] if args.ops else []
        ) + [
            "--iterations",
            str(args.iterations),
            "--json",
            path,
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        if out.returncode != 0:
            sys.exit(f"compare-go-bench: metabench failed: {out.stderr.strip()}")
        with open(path) as f:
            run = json.load(f)
    got = {r["op"]: r["mean_us"] for r in run["results"] if not r.get("skipped")}
    return got, run.get("floor")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--go-bench", required=True, help="JuiceFS pkg/meta test binary")
    p.add_argument("--bench", default="BenchmarkRedis", help="BenchmarkRedis | BenchmarkSQL | BenchmarkTKV")
    p.add_argument("--go-meta", help="meta URL for the Go benchmark (JFS_BENCH_META)")
    p.add_argument("--meta", required=True, help="meta URL for metabench")
    p.add_argument("--metabench", default="target/release/metabench")
    p.add_argument("--iterations", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--cpus", help="run both clients under taskset -c CPUS (e.g. 0)")
    p.add_argument("--busy-poll", action="store_true", help="run metabench with --busy-poll")
    p.add_argument("--ops", type=lambda s: [o for o in s.split(",") if o], help="only these operations, e.g. getxattr,listxattr_1")
    args = p.parse_args()

    go, mb, floors = {}, {}, []
    for i in range(args.rounds):
        for op, us in run_go(args).items():
            go.setdefault(op, []).append(us)
        got, floor = run_metabench(args)
        for op, us in got.items():
            mb.setdefault(op, []).append(us)
        if floor:
            floors.append(floor)
        print(f"round {i + 1}/{args.rounds} done", file=sys.stderr)

    ops = [op for op in go if op in mb and op not in SKIP]
    print(f"| op | Go µs/op | metabench µs/op | metabench / Go |")
    print(f"|---|---:|---:|---:|")
    ratios = []
    for op in ops:
        g, m = statistics.median(go[op]), statistics.median(mb[op])
        r = m / g if g > 0 else float("nan")
        ratios.append(r)
        mark = "" if r <= 1.10 and r >= 0.90 else " *"
        print(f"| {op} | {fmt_us(g)} | {fmt_us(m)} | {r:.2f}{mark} |")
    within = sum(1 for r in ratios if 0.90 <= r <= 1.10)
    at_most = sum(1 for r in ratios if r <= 1.10)
    print()
    print(
        f"{len(ratios)} operations: {at_most} at or below 1.10× Go, {within} within ±10 %; "
        f"median ratio {statistics.median(ratios):.2f} ({args.rounds} rounds of {args.iterations} calls, median per op"
        + (f"; both clients on CPUs {args.cpus}" if args.cpus else "; unpinned")
        + ("; metabench busy-polling)" if args.busy_poll else ")")
    )
    if floors:
        f = floors[-1]
        polling = f.get("polling_p50_us")
        polling = f"; p50 {polling:.1f} µs with the client polling" if polling is not None else ""
        print(f"metabench floor ({f['request']}): p50 {f['p50_us']:.1f} µs, p99 {f['p99_us']:.1f} µs{polling}")


if __name__ == "__main__":
    main()
