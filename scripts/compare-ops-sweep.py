#!/usr/bin/env python3
"""metabench against itself: `ops` and `sweep --conc 1` must time a call the same way.

Runs `metabench ops` and `metabench sweep --conc 1` on the same engine, both with the Go
benchmark's client (`--profile gobench --client-cache`), one operation at a time: each
round runs every operation of JuiceFS's Go benchmark once in each command, the two runs of
an operation back to back (which goes first alternates from one operation and one round
to the next). It prints each operation's mean µs per call in each command (the median over
the rounds, and their range) and the ratio sweep / ops: the median of the rounds' own
ratios, each of two runs a second or two apart.

    scripts/compare-ops-sweep.py --meta redis://127.0.0.1:6379/3 --rounds 6

Why pairs: on this project's VM one command's figure for an operation moves by a third
from one minute to the next, with the machine (how often a client's vCPU must be woken).
When each command ran all its operations before the other (half a minute apart), two runs
of the same code half an hour apart gave 9 and 18 of 25 operations within ±10 %, one of
them with 22 of 25 leaning one way. A pair's two runs share the machine's minute, so its
drift falls out of their ratio.

Both make untimed calls for --warmup, then time the operation for --duration, so they make
about as many calls, id-batch refills included, and what the first calls pay falls outside
both. A first round, not counted, runs `ops` on every operation: it names the operations
and warms the engine. A ratio outside ±10 % is marked *, and also ‡ when the pairs show it
beyond their noise: the rounds' ratios above 1.10 (or below 0.90) by an exact one-sided
Wilcoxon signed-rank test at p < 0.05 (scripts/rounds.py; it takes at least 5 rounds).
The footer also says how many operations came out faster in `sweep` and how many in
`ops`, with a sign test: many leaning one way, each by less than 10 %, is a difference
between the two commands too. metabench formats --meta if it is empty and removes what it
wrote. `--ops a,b` compares only those operations.

`--control` runs `ops` in place of `sweep --conc 1` (the same pairs, alternation and
tests: `ops` against itself): how far two runs of one command come apart on this machine,
the noise a sweep / ops ratio must be read against. On calls the client answers from its
own memory (tens of ns: newchunk, readlink and the cached reads) two processes differ by a
few ns in their code and heap layout, and that alone moves a ratio by 10 % or more.

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
from rounds import leaning, paired_beyond  # noqa: E402


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


def run_ops(args, ops=None):
    """`ops` on the given operations (all of them by default): mean µs per call by name."""
    command = ["ops", "--warmup", args.warmup, "--duration", args.duration]
    if ops:
        command += ["--ops", ",".join(ops)]
    run = metabench(args, command)
    return {r["op"]: r["mean_us"] for r in run["results"] if not r.get("skipped")}


def run_sweep(args, op):
    """`sweep --conc 1` on one operation: its mean µs per call."""
    run = metabench(args, ["sweep", "--conc", "1", "--ops", op,
                           "--warmup", args.warmup, "--duration", args.duration])
    return {o["op"]: o["mean_us"] for o in run["levels"][0]["ops"]}.get(op)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--meta", required=True, help="meta URL (an empty database, or one metabench formatted)")
    p.add_argument("--metabench", default="target/release/metabench")
    p.add_argument("--warmup", default="200ms", help="untimed calls per operation before its timed ones, both commands")
    p.add_argument("--duration", default="1s", help="timed time per operation, both commands")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--ops", help="only these operations, comma-separated (default: every one `ops` runs)")
    p.add_argument("--busy-poll", action="store_true", help="run both with --busy-poll")
    p.add_argument("--control", action="store_true",
                   help="run `ops` in place of `sweep --conc 1`: the comparison's own noise")
    args = p.parse_args()
    other = "ops (control)" if args.control else "sweep --conc 1"

    def run_other(name):
        return run_ops(args, [name]).get(name) if args.control else run_sweep(args, name)

    names = list(run_ops(args, args.ops.split(",") if args.ops else None))
    print(f"warm-up round done: {len(names)} operations", file=sys.stderr)
    ops, sweep = {n: [] for n in names}, {n: [] for n in names}
    for i in range(args.rounds):
        for k, name in enumerate(names):
            # Which command goes first alternates by operation and by round, so a drift
            # within a pair does not always fall on the same one.
            if (i + k) % 2 == 0:
                o = run_ops(args, [name]).get(name)
                s = run_other(name)
            else:
                s = run_other(name)
                o = run_ops(args, [name]).get(name)
            if o is not None and s is not None:
                ops[name].append(o)
                sweep[name].append(s)
        print(f"round {i + 1}/{args.rounds} done", file=sys.stderr)

    ratio_name = "ops / ops" if args.control else "sweep / ops"
    print(f"| op | ops µs/op | (rounds) | {other} µs/op | (rounds) | {ratio_name} | (rounds) |")
    print("|---|---:|---:|---:|---:|---:|---:|")

    def spread(rounds, digits=4):
        return f"{min(rounds):.{digits}g}–{max(rounds):.{digits}g}"

    ratios, verdicts = [], []
    for name in names:
        if not ops[name]:
            continue
        pairs = [s / o for o, s in zip(ops[name], sweep[name]) if o > 0]
        ratio = statistics.median(pairs)
        ratios.append(ratio)
        mark = "" if 0.9 <= ratio <= 1.1 else " *"
        high, low = paired_beyond(pairs, 1.10), paired_beyond(pairs, 0.90)
        verdict = None if high is None else high or low
        verdicts.append(verdict)
        print(f"| {name} | {statistics.median(ops[name]):.4f} | {spread(ops[name])} "
              f"| {statistics.median(sweep[name]):.4f} | {spread(sweep[name])} "
              f"| {ratio:.2f}{mark}{' ‡' if verdict else ''} | {spread(pairs, 3)} |")
    within = sum(0.9 <= r <= 1.1 for r in ratios)
    if any(v is None for v in verdicts):
        noise = "too few rounds (5 pairs) to tell a miss from noise"
    else:
        noise = f"{sum(verdicts)} outside ±10 % beyond the pairs' noise ‡"
    print(f"\n{len(ratios)} operations: {within} within ±10 %; median ratio "
          f"{statistics.median(ratios):.2f}; {noise} ({args.rounds} rounds of pairs, median "
          "of each operation's pair ratios; * outside ±10 %"
          + ("; both busy-polling)" if args.busy_poll else ")"))
    faster = sum(1 for r in ratios if r < 1)
    slower = sum(1 for r in ratios if r > 1)
    print(f"faster in {other}: {faster}, in ops: {slower}; sign test p = {leaning(ratios):.3f} "
          "(below 0.05: one command is systematically faster)")


if __name__ == "__main__":
    main()
