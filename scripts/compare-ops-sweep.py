#!/usr/bin/env python3
"""metabench against itself: `ops` and `sweep --conc 1` must time a call the same way.

Runs `metabench ops` and `metabench sweep --conc 1 --workload golang` (every operation of
JuiceFS's Go benchmark, each its own phase) alternately on the same engine, both with the
Go benchmark's client (`--profile gobench --client-cache`), and prints each operation's
mean µs per call side by side (the median over the rounds, and the rounds' range) with the
ratio sweep / ops:

    scripts/compare-ops-sweep.py --meta redis://127.0.0.1:6379/3 --rounds 3

Every other round runs `sweep` first. Both make untimed calls for --warmup, then time each
operation for --duration, so they make about as many calls, id-batch refills included, and
what the first calls pay falls outside both. With 200 ms of warm-up in `sweep` and none in
`ops`, 19 of 25 operations on SQLite came out faster in `sweep`, its writes by up to a
third. A ratio (of medians over the rounds) outside ±10 % is marked *, and also ‡ when
the rounds show it beyond their noise: one command's rounds above 1.10× (or below 0.90×)
the other's, by an exact one-sided rank test at p < 0.05 (scripts/rounds.py; it takes
at least 4 rounds). The footer also says how many operations came out faster in `sweep`
and how many in `ops`, with a sign test: many leaning one way, each by less than 10 %, is
a difference between the two commands too. metabench formats --meta if it is empty and
removes what it wrote.

`--busy-poll` passes `--busy-poll` to both commands: their client thread polls instead of
sleeping while a call is in flight. `ops` and `sweep` build their clients from the same
options, so they must agree in that mode too.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rounds import beyond, leaning  # noqa: E402


def metabench(args, command):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "run.json")
        cmd = [args.metabench, *command, "--meta", args.meta, "--profile", "gobench",
               "--client-cache", "--json", path] + (["--busy-poll"] if args.busy_poll else [])
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        if out.returncode != 0:
            sys.exit(f"compare-ops-sweep: metabench {command[0]} failed: {out.stderr.strip()}")
        with open(path) as f:
            return json.load(f)


def run_ops(args):
    run = metabench(args, ["ops", "--warmup", args.warmup, "--duration", args.duration])
    return {r["op"]: r["mean_us"] for r in run["results"] if not r.get("skipped")}


def run_sweep(args):
    run = metabench(args, ["sweep", "--conc", "1", "--workload", "golang",
                           "--warmup", args.warmup, "--duration", args.duration])
    return {o["op"]: o["mean_us"] for o in run["levels"][0]["ops"]}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--meta", required=True, help="meta URL (an empty database, or one metabench formatted)")
    p.add_argument("--metabench", default="target/release/metabench")
    p.add_argument("--warmup", default="200ms", help="untimed calls per operation before its timed ones, both commands")
    p.add_argument("--duration", default="1s", help="timed time per operation (ops) and window per phase (sweep)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--busy-poll", action="store_true", help="run both with --busy-poll")
    args = p.parse_args()

    ops, sweep = {}, {}
    sides = [(run_ops, ops), (run_sweep, sweep)]
    for i in range(args.rounds):
        # Every other round starts with the other command (A B, B A, ...), so a drift of the
        # machine over a round does not always fall on the same one.
        for run, into in sides if i % 2 == 0 else reversed(sides):
            for name, us in run(args).items():
                into.setdefault(name, []).append(us)
        print(f"round {i + 1}/{args.rounds} done", file=sys.stderr)

    print("| op | ops µs/op | (rounds) | sweep --conc 1 µs/op | (rounds) | sweep / ops |")
    print("|---|---:|---:|---:|---:|---:|")

    def spread(rounds):
        return f"{min(rounds):.4g}–{max(rounds):.4g}"

    ratios, verdicts = [], []
    for name in ops:
        if name not in sweep:
            continue
        o, s = statistics.median(ops[name]), statistics.median(sweep[name])
        ratio = s / o if o > 0 else float("nan")
        ratios.append(ratio)
        mark = "" if 0.9 <= ratio <= 1.1 else " *"
        high, low = beyond(sweep[name], ops[name], 1.10), beyond(sweep[name], ops[name], 0.90)
        verdict = None if high is None else high or low
        verdicts.append(verdict)
        print(f"| {name} | {o:.4f} | {spread(ops[name])} | {s:.4f} | {spread(sweep[name])} "
              f"| {ratio:.2f}{mark}{' ‡' if verdict else ''} |")
    within = sum(0.9 <= r <= 1.1 for r in ratios)
    if any(v is None for v in verdicts):
        noise = "too few rounds (4 a side) to tell a miss from noise"
    else:
        noise = f"{sum(verdicts)} outside ±10 % beyond the rounds' noise ‡"
    print(f"\n{len(ratios)} operations: {within} within ±10 %; median ratio "
          f"{statistics.median(ratios):.2f}; {noise} ({args.rounds} rounds, median per op; "
          "* outside ±10 %" + ("; both busy-polling)" if args.busy_poll else ")"))
    faster = sum(1 for r in ratios if r < 1)
    slower = sum(1 for r in ratios if r > 1)
    print(f"faster in sweep: {faster}, in ops: {slower}; sign test p = {leaning(ratios):.3f} "
          "(below 0.05: one command is systematically faster)")


if __name__ == "__main__":
    main()
