#!/usr/bin/env python3
"""metabench's generator against `redis-benchmark`, the tool a Redis user already has.

getattr is one GET of a ~60-byte value, so `metabench sweep --ops getattr` and
`redis-benchmark -t get` (its default single thread, a 60-byte value) issue the same
request stream at the same concurrency. At each level the two run alternately on the
same Redis, and the table gives throughput and client CPU per call of both and their
ratios (metabench / redis-benchmark): throughput at or above 1.0 and CPU at or below 1.0
mean metabench's own ceiling is no lower than redis-benchmark's.

    scripts/compare-redis-benchmark.py --host 127.0.0.1 --port 6379 --db 9 \\
        --levels 1,4,16,64,256 --duration 3

metabench runs its clients on its default client threads (one per core, less one when
Redis runs on this machine: one on a 2-core box, like redis-benchmark) unless
`--client-threads N` is given; the table's footer says how many. `--busy-poll` runs
metabench with `--busy-poll`: its client threads then poll instead of sleeping, so its
CPU per call counts the polling too (a whole core per thread whatever the load), while
redis-benchmark sleeps in `epoll_wait` between replies.

metabench's CPU per call is its own count for the timed window (`client.cpu_s` over
the calls in it); redis-benchmark's is the user+system time of its process over its
requests. metabench formats the empty database `--db` and removes what it wrote;
redis-benchmark writes one key, `key:__rand_int__`, in database 0 (as it always does),
which the script deletes afterwards. Needs `redis-benchmark` (Debian redis-tools).

`--cpus LIST` runs both clients under `taskset -c LIST`, nothing else changed. At one
client the throughput is one round trip after another, and on a VM where an idle vCPU
halts, where the kernel puts each client beside Redis decides how many of them wait for
a vCPU to wake: pin Redis yourself (start it as `taskset -c 0 redis-server …`) and both
clients to another CPU (`--cpus 1`) to compare the clients' own cost, and run it
unpinned for what a user gets on the machine. Give both. Unpinned, metabench binds its
client threads off the CPUs a local Redis is bound to (the table's footer says where
they ran), while the kernel places redis-benchmark, often on Redis's own CPU.

Two reference clients run beside them, in the same rounds, unless `--no-reference`:
scripts/minimal-get-client.c (built with `cc`), one thread that does nothing but send the
same GET and read its reply, in two patterns. `plain` registers each socket with epoll
once and makes one `sendto`, one `epoll_wait` and one `recvfrom` per GET, the fewest a
client that sleeps between replies can make; JuiceFS's Go client (the Go netpoller) and
metabench (tokio) register a socket once too. `ae` is redis-benchmark's own pattern (its
ae event loop with hiredis): the socket taken out of epoll and put back for each
direction, 5 `epoll_ctl` and 2 `epoll_wait` more per GET. With almost no work of their
own in user space, the two show what the pattern itself costs on this machine: where
`plain` is slower than redis-benchmark too, that part of metabench's gap is not
metabench's code. On a VM whose idle vCPUs halt, taking an item out of epoll frees it
through RCU, and a CPU with RCU callbacks pending keeps its scheduler tick on when it idles
(Linux's NO_HZ_IDLE): redis-benchmark's CPU then goes idle and wakes without stopping and
restarting the tick, which on such a VM made `ae` a tenth to a quarter faster per round
trip than `plain` at one client (the table in the README's redis-benchmark comparison).

Under `--busy-poll` a third reference client runs in the same rounds: `poll`, as `plain`
but its `epoll_wait` never sleeps (a zero timeout), so it uses its core whole as
metabench's polling thread does, and metabench is compared with it too.

`--no-idle-states` holds every CPU out of its idle states while the comparison runs: a
PM QoS request of 0 µs on /dev/cpu_dma_latency (Linux's documented interface, used by
latency benchmarks and tuned's latency-performance profile; needs root), dropped when the
script ends. An idle CPU then polls instead of halting, so no round trip waits for a
halted vCPU to wake, nor pays for the tick's stop and restart, on either side: what is
left is each client's own work and system calls. Run it both ways.

A second table gives, per level, the ratios' medians over the rounds and whether
metabench's rounds fall below redis-benchmark's (and the `plain` client's) in throughput,
or above them in CPU per call, beyond the rounds' noise (scripts/rounds.py, from 4
rounds).

`--instructions SECONDS` counts instead of timing: each client runs once per level under
Valgrind's callgrind (Debian `valgrind`), which counts the instructions it executes in
user space (the kernel's work, the same system calls on both sides, is not counted). It
counts for SECONDS once the GETs flow steadily, over all of the client's threads, and
divides by the GETs Redis answered meanwhile (`INFO commandstats`): instructions per call,
a figure no wake-up, placement or neighbour moves, where CPU time on a VM moves with all
three. Both clients run about 20 to 50 times slower under it, so the rates it prints are
not theirs.
"""

import argparse
import csv
import io
import json
import os
import resource
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rounds import beyond  # noqa: E402


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def auth_args(args):
    return ["-a", args.password] if args.password else []


def meta_url(args):
    """metabench's meta URL for `--db` on this Redis."""
    return f"redis://{':' + args.password + '@' if args.password else ''}{args.host}:{args.port}/{args.db}"


def pinned(args):
    """The command prefix that runs a client on `--cpus` (none without it)."""
    return ["taskset", "-c", args.cpus] if args.cpus else []


def redis_benchmark(args, clients, requests):
    cmd = [*pinned(args), "redis-benchmark", "-h", args.host, "-p", str(args.port), *auth_args(args),
           "-c", str(clients), "-n", str(requests), "-d", "60", "-t", "get", "--csv"]
    env = dict(os.environ)
    cpu0, t0 = children_cpu(), time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    cpu = children_cpu() - cpu0
    if out.returncode != 0:
        sys.exit(f"compare-redis-benchmark: redis-benchmark failed: {out.stderr.strip()}")
    rows = list(csv.reader(io.StringIO(out.stdout)))
    rps = next(float(r[1]) for r in rows if r and r[0] == "GET")
    return rps, cpu * 1e6 / requests, time.monotonic() - t0


def hold_idle_states_off():
    """Opens /dev/cpu_dma_latency and asks for 0 µs: no CPU enters an idle state with an exit
    latency while the returned descriptor is open (the kernel drops the request when it is
    closed, by this script or by its exit)."""
    try:
        fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
        os.write(fd, struct.pack("i", 0))
    except OSError as e:
        sys.exit(f"compare-redis-benchmark: --no-idle-states: /dev/cpu_dma_latency: {e.strerror} "
                 "(it needs root and a kernel with PM QoS)")
    return fd


def build_reference(workdir):
    """Builds scripts/minimal-get-client.c into `workdir` and returns the binary's path."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        sys.exit("compare-redis-benchmark: the reference clients need a C compiler (cc), "
                 "or pass --no-reference")
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "minimal-get-client.c")
    binary = os.path.join(workdir, "minimal-get-client")
    try:
        out = subprocess.run([cc, "-O2", "-o", binary, source], capture_output=True, text=True)
    except OSError as e:
        sys.exit(f"compare-redis-benchmark: the C compiler {cc}: {e.strerror}")
    if out.returncode != 0:
        sys.exit(f"compare-redis-benchmark: building {source} failed: {out.stderr.strip()}")
    return binary


def reference_client(args, clients, pattern):
    """The minimal client's GETs per second and CPU µs per GET at `clients` connections,
    waiting in `pattern` (plain, ae or poll)."""
    cmd = [*pinned(args), args.reference_binary, args.host, str(args.port), str(clients),
           str(args.duration), pattern]
    env = dict(os.environ)
    if args.password:
        env["REDIS_PASSWORD"] = args.password
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if out.returncode != 0:
        sys.exit(f"compare-redis-benchmark: the {pattern} reference client failed: {out.stderr.strip()}")
    run = json.loads(out.stdout)
    return run["calls"] / run["seconds"], run["cpu_us_per_call"]


def metabench_level(args, clients):
    url = meta_url(args)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "sweep.json")
        # The Go benchmark's client: no background work in the window beside the GETs.
        cmd = [*pinned(args), args.metabench, "sweep", "--meta", url, "--profile", "gobench", "--conc", str(clients),
               "--ops", "getattr", "--warmup", "500ms", "--duration", f"{args.duration}s", "--json", path]
        if args.client_threads:
            cmd += ["--client-threads", str(args.client_threads)]
        if args.busy_poll:
            cmd += ["--busy-poll"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            sys.exit(f"compare-redis-benchmark: metabench failed: {out.stderr.strip()}")
        with open(path) as f:
            run = json.load(f)
    level = run["levels"][0]
    op = level["ops"][0]
    client = level["client"]
    # Results files from before metabench reported CPU per call carry only cpu_s.
    cpu = client.get("cpu_us_per_op") or client["cpu_s"] * 1e6 / max(1, op["count"])
    host = run["host"]
    threads = str(host.get("client_threads", 0))
    if host.get("client_cpus"):
        threads += f" on CPU {','.join(map(str, host['client_cpus']))}"
    if host.get("engine_cpus"):
        threads += f" (Redis bound to CPU {','.join(map(str, host['engine_cpus']))})"
    return op["ops_per_s"], cpu, client["client_bound"], threads


def get_calls(args):
    """GETs this Redis has answered so far (its `INFO commandstats`)."""
    out = subprocess.run(["redis-cli", "-h", args.host, "-p", str(args.port), *auth_args(args),
                          "INFO", "commandstats"], capture_output=True, text=True, check=True).stdout
    line = next((l for l in out.splitlines() if l.startswith("cmdstat_get:")), "cmdstat_get:calls=0,")
    return int(line.split("calls=", 1)[1].split(",", 1)[0])


def counted(args, cmd):
    """Runs `cmd` under callgrind with counting off, turns it on for `--instructions`
    seconds once Redis answers GETs steadily, and returns (user-space instructions over all
    of the client's threads, GETs answered meanwhile)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "callgrind.out")
        # taskset outside: callgrind follows no exec.
        proc = subprocess.Popen([*pinned(args), "valgrind", "--tool=callgrind", "--instr-atstart=no",
                                 f"--callgrind-out-file={out}", *cmd],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            before, deadline = get_calls(args), time.monotonic() + 300
            while True:
                time.sleep(1)
                now = get_calls(args)
                if now - before > 200:
                    break
                if proc.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"compare-redis-benchmark: {cmd[0]} sent no GETs under valgrind: "
                             f"{proc.stderr.read().strip()[-500:]}")
                before = now
            time.sleep(2)  # past the client's first calls
            def control(*a):
                r = subprocess.run(["callgrind_control", *a, str(proc.pid)], capture_output=True,
                                   text=True)
                if r.returncode != 0 or "Error" in r.stdout:
                    sys.exit(f"compare-redis-benchmark: callgrind_control {' '.join(a)}: {r.stdout.strip()}")
            control("-z")
            control("-i", "on")
            first = get_calls(args)
            time.sleep(args.instructions)
            last = get_calls(args)
            control("-d")
            control("-i", "off")
        finally:
            # Both would go on (redis-benchmark for its 10^8 requests): Ctrl-C, after
            # which metabench removes its volume as it always does.
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=600)
        total = 0
        for name in os.listdir(d):
            with open(os.path.join(d, name)) as f:
                total += sum(int(l.split()[1]) for l in f if l.startswith("totals:"))
        return total, last - first


def instructions_table(args):
    print("| clients | metabench GETs counted | metabench instructions/call "
          "| redis-benchmark GETs counted | redis-benchmark instructions/call | ratio |")
    print("|---:|---:|---:|---:|---:|---:|")
    url = meta_url(args)
    for c in [int(x) for x in args.levels.split(",")]:
        mb, mb_calls = counted(args, [args.metabench, "sweep", "--meta", url,
                                      "--profile", "gobench", "--conc", str(c), "--ops", "getattr",
                                      "--warmup", "0", "--duration", f"{4 * args.instructions + 30}s"])
        rb, rb_calls = counted(args, ["redis-benchmark", "-h", args.host,
                                      "-p", str(args.port), *auth_args(args), "-c", str(c),
                                      "-n", "100000000", "-d", "60", "-t", "get", "-q"])
        mb_per, rb_per = mb / max(1, mb_calls), rb / max(1, rb_calls)
        print(f"| {c} | {mb_calls} | {mb_per:.0f} | {rb_calls} | {rb_per:.0f} | {mb_per / rb_per:.2f} |",
              flush=True)


def reference_patterns(args):
    """The reference clients this run compares: none under `--no-reference`, `plain` and
    `ae`, and `poll` too under `--busy-poll`."""
    if not args.reference:
        return []
    return ["plain", "ae"] + (["poll"] if args.busy_poll else [])


def print_summary(summary, patterns):
    """Per level: the ratios' medians over the rounds, and whether metabench's rounds are
    below the other client's in throughput, or above them in CPU per call, beyond the
    rounds' noise (`rounds.beyond`: an exact one-sided rank test, p < 0.05; it takes at
    least 4 rounds). A median past 1.0 without such a verdict is one the rounds cannot tell
    from noise. With the reference clients, metabench is also compared with `plain`, and
    `plain` and `ae` with redis-benchmark: how much of a gap the system-call pattern makes
    by itself. Under `--busy-poll`, metabench is compared with the polling `poll` client as
    well, and `poll` with redis-benchmark."""
    def column(rounds, client, i):
        """One client's throughput (i = 0) or CPU per call (i = 1) over the rounds."""
        return [r[client][i] for r in rounds]

    def median_ratio(rounds, client, other, i):
        return statistics.median(a / b for a, b in zip(column(rounds, client, i), column(rounds, other, i)))

    def verdict(side, base):
        v = beyond(side, base, 1.0)
        return "too few rounds" if v is None else ("yes" if v else "no")

    against = ["redis-benchmark"] + [p for p in patterns if p != "ae"]
    print("\n| clients | rounds | metabench against | median throughput ratio | below beyond noise "
          "| median CPU ratio | above beyond noise |")
    print("|---:|---:|---|---:|---|---:|---|")
    for c, rounds in summary:
        for other in against:
            slower = verdict(column(rounds, other, 0), column(rounds, "metabench", 0))
            costlier = verdict(column(rounds, "metabench", 1), column(rounds, other, 1))
            print(f"| {c} | {len(rounds)} | {other} | {median_ratio(rounds, 'metabench', other, 0):.2f} "
                  f"| {slower} | {median_ratio(rounds, 'metabench', other, 1):.2f} | {costlier} |")
    if not patterns:
        return
    print("\n| clients | rounds | " + " | ".join(f"{p} / redis-benchmark {what}" for p in patterns
                                               for what in ("throughput", "CPU")) + " |")
    print("|---:|---:|" + "---:|" * (2 * len(patterns)))
    for c, rounds in summary:
        cells = [median_ratio(rounds, pattern, "redis-benchmark", i) for pattern in patterns for i in (0, 1)]
        print(f"| {c} | {len(rounds)} | " + " | ".join(f"{x:.2f}" for x in cells) + " |")


def timing_tables(args):
    """The timed comparison: a row per level and round, then the summary over rounds."""
    patterns = reference_patterns(args)
    clients = ["metabench", "redis-benchmark"] + patterns
    header = ["clients"] + [f"{name} {'ops/s' if name == 'metabench' else 'calls/s'}" for name in clients] \
        + [f"{name} CPU µs/call" for name in clients] \
        + ["throughput / redis-benchmark", "CPU / redis-benchmark", "metabench client-bound"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---:|" * (len(header) - 1) + "---|")
    threads = set()
    summary = []
    for c in [int(x) for x in args.levels.split(",")]:
        rounds = []
        requests = None
        for i in range(args.rounds):
            # Each round starts one client later (A B C D, B C D A, ...), so a drift of the
            # machine over a round does not always fall on the same client. redis-benchmark
            # runs a count of requests, taken from the rate last measured at this level.
            order = clients[i % len(clients):] + clients[:i % len(clients)]
            got = {}
            for name in order:
                if name == "metabench":
                    ops, cpu, bound, mb_threads = metabench_level(args, c)
                    threads.add(mb_threads)
                    got[name] = (ops, cpu)
                elif name == "redis-benchmark":
                    rps, cpu, _ = redis_benchmark(args, c, requests or 20000)
                    got[name] = (rps, cpu)
                else:
                    got[name] = reference_client(args, c, name)
                requests = max(20000, int(got[name][0] * args.duration))
            rounds.append(got)
            mb, rb = got["metabench"], got["redis-benchmark"]
            cells = [f"{got[name][0]:.0f}" for name in clients] + [f"{got[name][1]:.1f}" for name in clients]
            print(f"| {c} | " + " | ".join(cells) + f" | {mb[0] / rb[0]:.2f} | {mb[1] / rb[1]:.2f} "
                  f"| {'yes' if bound else 'no'} |", flush=True)
        summary.append((c, rounds))
    print_summary(summary, patterns)
    print(f"\nmetabench ran its clients on {'; '.join(sorted(threads))} client "
          "thread(s) (its results' host.client_threads, client_cpus and engine_cpus)"
          + (", busy-polling" if args.busy_poll else "") + "; redis-benchmark on its one thread"
          + ("; the reference clients on one thread each" if args.reference else "")
          + (f"; all clients on CPUs {args.cpus}" if args.cpus else "; unpinned")
          + ("; CPU idle states held off (PM QoS 0 µs)." if args.no_idle_states else "; CPUs free to idle."))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=6379)
    p.add_argument("--password", default=os.environ.get("REDIS_PASSWORD"))
    p.add_argument("--db", type=int, default=9, help="an empty database for metabench")
    p.add_argument("--levels", default="1,4,16,64,256")
    p.add_argument("--duration", type=float, default=3.0, help="seconds per run")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--metabench", default="target/release/metabench")
    p.add_argument("--client-threads", type=int,
                   help="metabench's --client-threads (default: its own choice, one per core "
                        "less one for a Redis on this machine)")
    p.add_argument("--busy-poll", action="store_true", help="run metabench with --busy-poll")
    p.add_argument("--cpus", help="run both clients under taskset -c CPUS (e.g. 1)")
    p.add_argument("--instructions", type=float, metavar="SECONDS",
                   help="count user-space instructions per call under callgrind for this long "
                        "per client and level, instead of timing")
    p.add_argument("--no-idle-states", action="store_true",
                   help="hold the CPUs out of their idle states while comparing (PM QoS 0 µs on "
                        "/dev/cpu_dma_latency; needs root): no round trip waits for a halted CPU")
    p.add_argument("--no-reference", dest="reference", action="store_false",
                   help="leave out the two minimal reference clients (scripts/minimal-get-client.c)")
    args = p.parse_args()

    workdir = tempfile.mkdtemp(prefix="compare-redis-benchmark-")
    idle_request = None
    try:
        # Everything that can fail on the machine comes before the first write to Redis.
        if args.no_idle_states:
            idle_request = hold_idle_states_off()
        if args.reference and not args.instructions:
            args.reference_binary = build_reference(workdir)
        # The value redis-benchmark's GETs read: 60 bytes, like an inode attribute.
        subprocess.run(["redis-benchmark", "-h", args.host, "-p", str(args.port), *auth_args(args),
                        "-n", "1", "-d", "60", "-t", "set", "-q"], capture_output=True, check=True)
        try:
            (instructions_table if args.instructions else timing_tables)(args)
        finally:
            subprocess.run(["redis-cli", "-h", args.host, "-p", str(args.port), *auth_args(args),
                            "DEL", "key:__rand_int__"], capture_output=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if idle_request is not None:
            os.close(idle_request)


if __name__ == "__main__":
    main()
