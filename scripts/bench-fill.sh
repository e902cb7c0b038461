#!/usr/bin/env bash
# Fill speed against `juicefs load`, side by side, on each engine: metabench fill writes N
# files into an empty database; juicefs dump takes that volume out; juicefs load writes the
# same dump into another empty database of the same engine. Both are timed in the same
# minutes. Also prints what the engine holds per file after the fill, and for Redis its own
# pipelined ingest rate (redis-benchmark -P 100 on SET and HSET).
#
#   scripts/engines.sh start                 # the shared test engines (PostgreSQL, MariaDB)
#   scripts/bench-fill.sh [FILES] [ENGINES]  # FILES=1M, ENGINES="redis sqlite postgres mariadb etcd"
#   scripts/bench-fill.sh 1M "redis sqlite postgres:300k mariadb:300k etcd:100k"   # sizes per engine
#
# Redis and etcd run privately here (a redis-server and an etcd on free ports, data in a
# temp folder, stopped by PID), so their memory and database size are the fill's alone.
# Needs target/release/metabench (cargo build --release; METABENCH_BIN names another build)
# and juicefs on PATH.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FILES="${1:-1M}"
ENGINES="${2:-redis sqlite postgres mariadb etcd}"
BIN="${METABENCH_BIN:-$ROOT/target/release/metabench}"
# shellcheck disable=SC1091
source "$ROOT/target/engines/env.sh"
[[ -x "$BIN" ]] || { echo "bench-fill: build it first: cargo build --release" >&2; exit 2; }
BENCH=bench-fill
# shellcheck source=scripts/bench-common.sh
source "$ROOT/scripts/bench-common.sh"

secs() { python3 -c "import time; print(time.time())"; }

# bytes the engine holds for the volume at URL $2 of engine $1
held() {
    local url="$2"
    case "$1" in
        redis) local port=${url#redis://127.0.0.1:}; port=${port%/*}
               redis-cli -p "$port" info memory | awk -F: '/^used_memory:/{print $2}' | tr -d '\r' ;;
        sqlite) local f=${url#sqlite3://}; stat -c %s "$f" ;;
        postgres) local db=${url##*/}; db=${db%%\?*}; pg "SELECT pg_database_size('$db')" ;;
        mariadb) local db=${url##*/}; my "SELECT SUM(data_length+index_length) FROM information_schema.tables WHERE table_schema='$db'" ;;
        etcd) local port=${url#etcd://127.0.0.1:}; port=${port%%/*}
              curl -s "http://127.0.0.1:$port/metrics" | awk '/^etcd_mvcc_db_total_size_in_use_in_bytes /{printf "%d\n", $2}' ;;
    esac
}

printf '%-9s %10s %14s %12s %14s %8s %12s %14s\n' engine files "fill files/s" "fill s" "load files/s" "load s" "load÷fill" "bytes/file"
for spec in $ENGINES; do
    e=${spec%%:*}; files=$FILES; [[ $spec == *:* ]] && files=${spec#*:}
    a=$(fresh_db "$e"); b=$(fresh_db "$e")
    [[ $e == redis || $e == etcd ]] && base=$(held "$e" "$a") || base=0
    t0=$(secs)
    "$BIN" fill --meta "$a" --files "$files" --bucket "$TMP/bucket" > "$TMP/fill.out"
    t1=$(secs)
    n=$(python3 -c "import re,sys; t=open('$TMP/fill.out').read(); m=re.search(r': ([\d,]+) files, ([\d,]+) symlinks, ([\d,]+) hard links', t); print(sum(int(x.replace(',','')) for x in m.groups()))")
    bytes=$(( $(held "$e" "$a") - base ))
    fast=(--fast); [[ $e == redis ]] && fast=()   # --fast: the same JSON, read in one pass
    juicefs dump "$a" "$TMP/dump.json" "${fast[@]}" > /dev/null 2>&1
    t2=$(secs)
    juicefs load "$b" "$TMP/dump.json" > /dev/null 2>&1
    t3=$(secs)
    python3 - "$e" "$n" "$t0" "$t1" "$t2" "$t3" "$bytes" <<'EOF'
import sys
e, n, t0, t1, t2, t3, b = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:7]), int(sys.argv[7])
fill, load = t1 - t0, t3 - t2
print(f"{e:<9} {n:>10,} {n/fill:>14,.0f} {fill:>12.1f} {n/load:>14,.0f} {load:>8.1f} {load/fill:>11.2f}x {b/n:>14,.0f}")
EOF
    drop_db "$e" "$a"; drop_db "$e" "$b"; rm -f "$TMP/dump.json"
done
if [[ " $ENGINES " == *" redis"* ]]; then
    port=$(start_redis)
    echo "redis-benchmark -P 100 (the engine's own pipelined ingest, one client):"
    redis-benchmark -p "$port" -P 100 -c 1 -n 1000000 -r 1000000 -t set,hset -q | tr "\r" "\n" | grep "requests per second"
fi
