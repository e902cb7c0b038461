#!/usr/bin/env python3
"""metabench `ops --client-cache` against JuiceFS's own Go metadata benchmark.

Runs the two alternately on the same engine (every other round metabench first), the same
number of calls per operation, in the same minutes, and prints µs/op side by side with the
ratio metabench / Go:

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
client's threads land decides how often it pays it, and that changes from run to run
(each side's range over the rounds shows it). Pinning both clients (and, by the user, the
engine: e.g. `taskset -c 0 redis-server …`) to the same CPUs measures the clients' own
cost; the unpinned run measures what a user gets on this machine. Give both.

`--busy-poll` passes `--busy-poll` to metabench: its client thread polls instead of
sleeping while a call is in flight, so no round trip waits for the client's own CPU to
wake. The Go client sleeps, so metabench then measures less than the Go client pays on
such a machine.

The Go benchmark formats its database (`Init(..., force=true)`), so give it a database
of its own (`--go-meta`), never one that holds data. metabench formats `--meta` if it is
empty and removes what it wrote. The median over rounds is printed per operation, with
the range of the rounds beside it; ratios (of medians) marked * are outside ±10 %.
A ratio above 1.10 is also marked ‡ when metabench's rounds are above 1.10× Go's beyond
the rounds' noise (an exact one-sided rank test, p < 0.05: scripts/rounds.py); a ratio
over the line without ‡ is one the rounds cannot tell from noise. That takes at least
4 rounds.

Upstream brackets the set-up of rmdir, unlink and removexattr with
b.StopTimer()/b.StartTimer(). StartTimer calls runtime.ReadMemStats, which stops and
restarts the world just before each timed call, and no JuiceFS mount does that. It moves
the timed call's cost either way: on a 2-vCPU VM, the restart's wake-ups of runtime
threads spared Redis rmdir and removexattr some of the VM's vCPU wake-ups (1.15-1.4× less
time than the same calls timed by a clock), while SQLite removexattr took 1.6× longer
under StartTimer (83 against 52 µs); unlink moved neither way. When the binary has the Benchmark*Clock benchmarks that
scripts/build-go-bench.sh adds (the same calls, timed by a clock around the call alone),
each round runs them too, and the table gives their µs/op and a second ratio (marked †),
with a second tally that uses it for those three operations.

`--ops a,b` runs only those operations on both sides (the Go benchmark through its
sub-benchmark filter, `-test.bench=^BenchmarkX$/^(a|b)$`): more rounds of the few
operations a full run leaves in doubt, in the same minutes.

Stopped before the end (Ctrl-C, or SIGTERM from `timeout`), it prints the table of the
rounds that finished (each side's calls of the round under way are left out) and exits
with status 130; stopped before any round finished, it prints nothing but that.
"""

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rounds import beyond  # noqa: E402

# A Go benchmark result's tail: iterations, then "value unit" pairs (ns/op, clock-ns/op, ...).
GO_TAIL = re.compile(r"^\s*(\d+)\s+(\d[\d.]* \S+.*)$")
# The operations whose set-up upstream brackets with b.StopTimer()/b.StartTimer(), which
# scripts/build-go-bench.sh also times with a clock around the call (Benchmark*Clock).
CLOCKED = ("rmdir", "unlink", "removexattr")
# metabench names for the Go benchmark's operations (the same, minus its CPU suffix).
SKIP = {"resolve"}


def fmt_us(value):
    """µs to a tenth above 10 µs, to a hundredth above 1 µs, else to 0.1 ns: 2281.8, 3.21,
    0.0173."""
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}" if value >= 1 else f"{value:.4f}"


def spread(values):
    """The median of a side's rounds, and their range when there are several: "43.6",
    "43.6 (23.6–93.5)". On a VM where a reply may or may not find the client's vCPU awake,
    one side's rounds can differ by several times, and the median alone hides it."""
    median = fmt_us(statistics.median(values))
    return median if len(values) < 2 else f"{median} ({fmt_us(min(values))}–{fmt_us(max(values))})"


def mark(ratio):
    """" *" for a ratio outside ±10 %."""
    return "" if 0.90 <= ratio <= 1.10 else " *"


def slower(mb_rounds, go_rounds):
    """Whether metabench's rounds are above 1.10× Go's beyond their noise (None: too few
    rounds to tell)."""
    return beyond(mb_rounds, go_rounds, 1.10)


def tally(ratios, verdicts):
    """"N at or below 1.10× Go, M within ±10 %; median ratio R; K above 1.10× beyond the
    rounds' noise", from the ratios of medians and `slower`'s verdicts."""
    within = sum(1 for r in ratios if 0.90 <= r <= 1.10)
    at_most = sum(1 for r in ratios if r <= 1.10)
    if any(v is None for v in verdicts):
        noise = "too few rounds (4 a side) to tell a miss from noise"
    else:
        noise = f"{sum(verdicts)} above 1.10× beyond the rounds' noise ‡"
    return (f"{at_most} at or below 1.10× Go, {within} within ±10 %; median ratio "
            f"{statistics.median(ratios):.2f}; {noise}")


def pinned(args):
    """The command prefix that runs a client on `--cpus` (none without it)."""
    return ["taskset", "-c", args.cpus] if args.cpus else []


def metrics(text):
    """{"ns/op": 1017085.0, "clock-ns/op": 583393.0} from "1017085 ns/op  583393 clock-ns/op"."""
    words = text.split()
    return {unit: float(value) for value, unit in zip(words[::2], words[1::2])}


def run_child(cmd, env=None):
    """`subprocess.run(cmd, capture_output=True, text=True)` with an hour's limit, except
    that a stop (KeyboardInterrupt) sends the child SIGINT and gives it 30 s to clean up
    (metabench removes what it wrote to --meta) before it is killed."""
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=3600)
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
            raise
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def run_go(args, bench, ops, metric):
    """{op: µs} from `metric` of `bench`'s sub-benchmarks `ops` (all when None)."""
    env = dict(os.environ)
    if args.go_meta:
        env["JFS_BENCH_META"] = args.go_meta
    cmd = pinned(args) + [
        args.go_bench,
        "-test.run=^$",
        f"-test.bench=^{bench}$" + (f"/^({'|'.join(ops)})$" if ops else ""),
        f"-test.benchtime={args.iterations}x",
    ]
    out = run_child(cmd, env=env)
    got = {}
    # Log lines may interleave with a benchmark's name; match per line and also the
    # "name" / "N ns/op" split the Go runner prints when a log line comes in between.
    line_of = re.compile(rf"^{bench}/(\S+?)(?:-\d+)?\s+(\d+\s+\d.*)$")
    name_of = re.compile(rf"^{bench}/(\S+?)(?:-\d+)?\s*$")
    pending = None
    for line in out.stdout.splitlines():
        name, values = None, None
        if m := line_of.match(line.strip()):
            name, values = m.group(1), GO_TAIL.match(m.group(2)).group(2)
        elif alone := name_of.match(line.strip()):
            pending = alone.group(1)
            continue
        elif (tail := GO_TAIL.match(line)) and pending:
            name, values = pending, tail.group(2)
        if name is not None:
            value = metrics(values).get(metric)
            if value is not None:
                got[name] = value / 1000.0
            pending = None
    if not got:
        sys.exit(f"compare-go-bench: no {metric} from {bench} in {args.go_bench}:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return got


def has_clock(args):
    """Whether the Go binary has scripts/build-go-bench.sh's clock-timed benchmarks."""
    out = subprocess.run([args.go_bench, f"-test.list=^{args.bench}Clock$"], capture_output=True, text=True)
    return f"{args.bench}Clock" in out.stdout.split()


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
        out = run_child(cmd)
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

    clocked = [op for op in CLOCKED if not args.ops or op in args.ops]
    if clocked and not has_clock(args):
        print(f"compare-go-bench: {args.go_bench} has no {args.bench}Clock (built before "
              "scripts/build-go-bench.sh added it): no clock-timed Go column", file=sys.stderr)
        clocked = []
    go, go_clock, mb, floors = {}, {}, {}, []

    def go_side():
        for op, us in run_go(args, args.bench, args.ops, "ns/op").items():
            go.setdefault(op, []).append(us)
        if clocked:
            for op, us in run_go(args, args.bench + "Clock", clocked, "clock-ns/op").items():
                go_clock.setdefault(op, []).append(us)

    def metabench_side():
        got, floor = run_metabench(args)
        for op, us in got.items():
            mb.setdefault(op, []).append(us)
        if floor:
            floors.append(floor)

    def interrupted(_signum, _frame):
        raise KeyboardInterrupt

    # `timeout` sends SIGTERM: take it as Ctrl-C, so the rounds that finished still print.
    signal.signal(signal.SIGTERM, interrupted)
    rounds = 0
    try:
        for i in range(args.rounds):
            # Every other round starts with metabench (A B, B A, ...), so a drift of the
            # machine over a round does not always fall on the same side.
            for side in (go_side, metabench_side) if i % 2 == 0 else (metabench_side, go_side):
                side()
            rounds = i + 1
            print(f"round {rounds}/{args.rounds} done", file=sys.stderr)
    except KeyboardInterrupt:
        if rounds == 0:
            sys.exit("compare-go-bench: stopped before the first round finished")
        print(f"compare-go-bench: stopped during round {rounds + 1}; the table covers the "
              f"{rounds} round(s) that finished", file=sys.stderr)
        for side in (go, go_clock, mb):
            for op in side:
                del side[op][rounds:]
        del floors[rounds:]

    ops = [op for op in go if op in mb and op not in SKIP]
    clock_header = (" Go µs/op, timed by a clock † | metabench / Go (clock) |", "---:|---:|") if go_clock else ("", "")
    print(f"| op | Go µs/op | metabench µs/op | metabench / Go |{clock_header[0]}")
    print(f"|---|---:|---:|---:|{clock_header[1]}")
    ratios, fair, verdicts, fair_verdicts = [], [], [], []

    def judged(ratio, mb_rounds, go_rounds, into):
        verdict = slower(mb_rounds, go_rounds)
        into.append(verdict)
        return f"{ratio:.2f}{mark(ratio)}{' ‡' if verdict else ''}"

    for op in ops:
        g, m = statistics.median(go[op]), statistics.median(mb[op])
        r = m / g if g > 0 else float("nan")
        ratios.append(r)
        row = f"| {op} | {spread(go[op])} | {spread(mb[op])} | {judged(r, mb[op], go[op], verdicts)} |"
        if op in go_clock:
            c = statistics.median(go_clock[op])
            rc = m / c if c > 0 else float("nan")
            fair.append(rc)
            row += f" {spread(go_clock[op])} | {judged(rc, mb[op], go_clock[op], fair_verdicts)} |"
        else:
            fair.append(r)
            fair_verdicts.append(verdicts[-1])
            row += " | |" if go_clock else ""
        print(row)
    print()
    setting = (
        f"{rounds} rounds of {args.iterations} calls, median per op"
        + (f"; both clients on CPUs {args.cpus}" if args.cpus else "; unpinned")
        + ("; metabench busy-polling)" if args.busy_poll else ")")
    )
    print(f"{len(ratios)} operations: {tally(ratios, verdicts)} ({setting}")
    if go_clock:
        print(
            f"against the Go client's clock-timed {', '.join(sorted(go_clock))} †: {tally(fair, fair_verdicts)}\n"
            "† upstream brackets these calls' set-up with b.StopTimer()/b.StartTimer(); StartTimer "
            "calls runtime.ReadMemStats, which stops and restarts the world just before each timed "
            "call (scripts/build-go-bench.sh)"
        )
    if floors:
        f = floors[-1]
        polling = f.get("polling_p50_us")
        polling = f"; p50 {polling:.1f} µs with the client polling" if polling is not None else ""
        print(f"metabench floor ({f['request']}): p50 {f['p50_us']:.1f} µs, p99 {f['p99_us']:.1f} µs{polling}")
    if rounds < args.rounds:
        sys.exit(130)


if __name__ == "__main__":
    main()
