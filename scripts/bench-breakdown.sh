#!/usr/bin/env bash
# Where the time goes, measured: the latency breakdown's unexplained share on each engine,
# a hot directory against one directory per worker, and what reading the engine's counters
# costs. Three parts, each in rounds (this VM's run-to-run spread is 5-15 %: one run proves
# little):
#
#  1. unexplained: per engine and round, a fresh database and one sweep of create,
#     getattr, lookup, rename and unlink at 1, 16 and 64 clients; the table gives, per
#     operation and level, the mean latency and the unexplained part's share of it
#     (median over the rounds, and its range).
#  2. hot-dir: on Redis, 16 workers of one client (--threads-per-client 16) creating in one
#     directory (--shared-dir) against the same run with one directory per worker,
#     alternating; the lock wait's share of the create's mean.
#  3. counters: on Redis and PostgreSQL, a sweep of getattr and create at 16 clients with
#     the engine's counters read (the default) and without (--no-engine-counters),
#     alternating which goes first; the throughput ratio per pair.
#
#   scripts/engines.sh start                       # PostgreSQL, MariaDB, etcd
#   scripts/bench-breakdown.sh [ROUNDS] [ENGINES] [PARTS]
#       ROUNDS=3, ENGINES="redis sqlite postgres mariadb etcd",
#       PARTS="unexplained hot-dir counters"
#   PG_LOG_STATEMENT=all scripts/bench-breakdown.sh …   # PostgreSQL logging every statement
#       (engines.sh's server does, for the tests; the benchmark's databases log none)
#
# Redis runs privately here (a redis-server on a free port, stopped by PID); PostgreSQL,
# MariaDB and etcd are scripts/engines.sh's, which keep their own statement time
# (pg_stat_statements, performance_schema, etcd --metrics extensive): each round gets a
# database of its own (dropped after), PostgreSQL's with CREATE EXTENSION
# pg_stat_statements. The JSON of every sweep is kept in target/bench-breakdown/.
# Needs target/release/metabench (cargo build --release).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS="${1:-3}"
ENGINES="${2:-redis sqlite postgres mariadb etcd}"
PARTS="${3:-unexplained hot-dir counters}"
BIN="$ROOT/target/release/metabench"
OUT="$ROOT/target/bench-breakdown"
[[ -x "$BIN" ]] || { echo "bench-breakdown: build it first: cargo build --release" >&2; exit 2; }
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "bench-breakdown: ROUNDS must be a positive number, not '$ROUNDS'" >&2; exit 2; }
rm -rf "$OUT"
mkdir -p "$OUT"
BENCH=bench-breakdown
# shellcheck source=scripts/bench-common.sh
source "$ROOT/scripts/bench-common.sh"

ENV="$ROOT/target/engines/env.sh"
needs_engines() {
    [[ -f "$ENV" ]] || { echo "bench-breakdown: $1 needs scripts/engines.sh start" >&2; exit 2; }
    # shellcheck disable=SC1090
    source "$ENV"
}
PW=metabench-test-pw
pg() { PGPASSWORD=$PW psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "${METABENCH_PG_PORT:-15432}" -U metabench "$@"; }
my() { MYSQL_PWD=$PW mariadb --no-defaults --protocol=TCP -h127.0.0.1 -P"${METABENCH_MYSQL_PORT:-13306}" -umetabench "$@"; }
REDIS_PORT=""
DBS=()
drop_dbs() {
    for d in "${DBS[@]}"; do
        case "$d" in
            pg:*) pg -d postgres -c "DROP DATABASE IF EXISTS ${d#pg:}" >/dev/null 2>&1 || true ;;
            my:*) my -e "DROP DATABASE IF EXISTS ${d#my:}" >/dev/null 2>&1 || true ;;
        esac
    done
}
trap 'drop_dbs; bench_cleanup' EXIT

# a fresh, empty database of engine $1 for run $2: prints its meta URL
fresh() {
    local db="bd_${2//[^a-z0-9]/_}_$$"
    case "$1" in
        redis)
            [[ -n "$REDIS_PORT" ]] || { echo "bench-breakdown: no private Redis" >&2; exit 2; }
            redis-cli -p "$REDIS_PORT" -n 1 flushdb >/dev/null
            echo "redis://127.0.0.1:$REDIS_PORT/1" ;;
        sqlite) echo "sqlite3://$TMP/$db.db" ;;
        postgres)
            pg -d postgres -c "CREATE DATABASE $db" >/dev/null
            pg -d "$db" -c "CREATE EXTENSION pg_stat_statements" >/dev/null
            # engines.sh's server logs every statement (log_statement=all, for the tests'
            # round-trip counts): about 20 µs of backend work per statement that no
            # counter times. The benchmark's databases log none, as a deployed server;
            # PG_LOG_STATEMENT=all measures what the logging costs.
            pg -d postgres -c "ALTER DATABASE $db SET log_statement = '${PG_LOG_STATEMENT:-none}'" >/dev/null
            echo "${METABENCH_PG_URL}$db" ;;
        mariadb)
            my -e "CREATE DATABASE $db"
            echo "${METABENCH_MYSQL_URL}$db" ;;
        etcd) echo "$METABENCH_ETCD_URL/$db" ;;
        *) echo "bench-breakdown: engine $1: redis, sqlite, postgres, mariadb or etcd" >&2; exit 2 ;;
    esac
}

sweep() { "$BIN" sweep --warmup 500ms --duration 2s "$@" > /dev/null; }

if [[ " $ENGINES $PARTS " == *" redis "* || " $PARTS " == *" hot-dir "* || " $PARTS " == *" counters "* ]]; then
    REDIS_PORT=$(start_redis)
fi
for e in $ENGINES; do
    case "$e" in postgres|mariadb|etcd) needs_engines "$e" ;; esac
done
case " $PARTS " in *" counters "*) needs_engines counters ;; esac

# 1. the unexplained share
if [[ " $PARTS " == *" unexplained "* ]]; then
    for r in $(seq "$ROUNDS"); do
        for e in $ENGINES; do
            url=$(fresh "$e" "$e$r")
            case "$e" in postgres) DBS+=("pg:bd_${e}${r}_$$") ;; mariadb) DBS+=("my:bd_${e}${r}_$$") ;; esac
            echo "unexplained: round $r/$ROUNDS, $e" >&2
            sweep --meta "$url" --ops create,getattr,lookup,rename,unlink --conc 1,16,64 \
                --json "$OUT/unexplained-$e-$r.json"
        done
    done
fi

# 2. a hot directory against one directory per worker (Redis, 16 workers of one client)
if [[ " $PARTS " == *" hot-dir "* ]]; then
    for r in $(seq "$ROUNDS"); do
        for layout in hot sharded; do
            [[ $((r % 2)) == 0 ]] && layout=$([[ $layout == hot ]] && echo sharded || echo hot)
            url=$(fresh redis "hot$r")
            flag=(); [[ $layout == hot ]] && flag=(--shared-dir)
            echo "hot-dir: round $r/$ROUNDS, $layout" >&2
            sweep --meta "$url" --ops create --conc 16 --threads-per-client 16 "${flag[@]}" \
                --json "$OUT/hotdir-$layout-$r.json"
        done
    done
fi

# 3. what reading the engine's counters costs
if [[ " $PARTS " == *" counters "* ]]; then
    for r in $(seq "$ROUNDS"); do
        for e in redis postgres; do
            for reading in on off; do
                [[ $((r % 2)) == 0 ]] && reading=$([[ $reading == on ]] && echo off || echo on)
                url=$(fresh "$e" "ctr$e$r$reading")
                [[ $e == postgres ]] && DBS+=("pg:bd_ctr${e}${r}${reading}_$$")
                flag=(); [[ $reading == off ]] && flag=(--no-engine-counters)
                echo "counters: round $r/$ROUNDS, $e, $reading" >&2
                sweep --meta "$url" --ops getattr,create --conc 16 "${flag[@]}" \
                    --json "$OUT/counters-$e-$reading-$r.json"
            done
        done
    done
fi

python3 - "$OUT" "$ROUNDS" "$ENGINES" "$PARTS" <<'PY'
import json, statistics, sys, glob, os
out, rounds, engines, parts = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
load = lambda p: json.load(open(p))
def ops_of(run):
    for level in run["levels"]:
        for o in level["ops"]:
            yield level["clients"], o
def rng(xs, fmt):
    xs = sorted(xs)
    med = statistics.median(xs)
    return fmt(med) if len(xs) == 1 else f"{fmt(med)} ({fmt(xs[0])} to {fmt(xs[-1])})"
pct = lambda x: f"{x:+.0f}%"
if "unexplained" in parts:
    print("\n## The unexplained part: its share of the mean, median (range) over", rounds, "rounds\n")
    print("| engine | op | clients | mean µs | unexplained | engine part from |")
    print("|---|---|---|---|---|---|")
    for e in engines:
        rows = {}
        source = ""
        for p in sorted(glob.glob(f"{out}/unexplained-{e}-*.json")):
            for clients, o in ops_of(load(p)):
                b = o.get("breakdown")
                if not b or not b["mean_us"]:
                    continue
                rows.setdefault((o["op"], clients), []).append((b["mean_us"], 100 * b["unexplained_us"] / b["mean_us"]))
                source = b["engine_source"].split(":")[0]
        for (op, clients), xs in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            print(f"| {e} | {op} | {clients} | {rng([m for m, _ in xs], lambda v: f'{v:,.0f}')} "
                  f"| {rng([u for _, u in xs], pct)} | {source} |")
if "hot-dir" in parts:
    print("\n## Redis, 16 workers of one client creating: one hot directory against one each\n")
    print("| layout | create ops/s | mean µs | lock wait µs | lock wait share |")
    print("|---|---|---|---|---|")
    for layout in ["hot", "sharded"]:
        got = []
        for p in sorted(glob.glob(f"{out}/hotdir-{layout}-*.json")):
            for clients, o in ops_of(load(p)):
                b = o["breakdown"]
                got.append((o["ops_per_s"], b["mean_us"], b["lock_wait_us"], 100 * b["lock_wait_us"] / b["mean_us"]))
        if got:
            print(f"| {layout} | {rng([g[0] for g in got], lambda v: f'{v:,.0f}')} | {rng([g[1] for g in got], lambda v: f'{v:,.0f}')} "
                  f"| {rng([g[2] for g in got], lambda v: f'{v:,.0f}')} | {rng([g[3] for g in got], lambda v: f'{v:.0f}%')} |")
if "counters" in parts:
    print("\n## Reading the engine's counters: throughput with them read / without, per pair\n")
    print("| engine | op | ratio, median (range) | pairs |")
    print("|---|---|---|---|")
    for e in ["redis", "postgres"]:
        ratios = {}
        for r in range(1, rounds + 1):
            on, off = f"{out}/counters-{e}-on-{r}.json", f"{out}/counters-{e}-off-{r}.json"
            if not (os.path.exists(on) and os.path.exists(off)):
                continue
            a = {o["op"]: o["ops_per_s"] for _, o in ops_of(load(on))}
            b = {o["op"]: o["ops_per_s"] for _, o in ops_of(load(off))}
            for op in a:
                ratios.setdefault(op, []).append(a[op] / b[op])
        for op, xs in sorted(ratios.items()):
            print(f"| {e} | {op} | {rng(xs, lambda v: f'{v:.3f}')} | {len(xs)} |")
PY
