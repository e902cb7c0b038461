#!/usr/bin/env bash
# The scale curve: what the same sweep costs as the volume grows, and what the engine holds
# per file. For each size, a fresh empty database of the engine is filled with
# `metabench fill` (one tree of that many files, one very large directory among them),
# then one sweep measures getattr, lookup, create and unlink at 1 and 16 clients, its reads
# drawing from the whole tree (`--tree`, zipfian); `ops --ops listdir` lists the very large
# directory. Size 0 is a freshly formatted volume, measured as metabench measures by
# default (its own few entries). Prints one table: bytes the engine holds per file (beside
# the JuiceFS docs' rules of thumb: about 300 bytes of Redis memory, about 600 bytes of
# storage on SQL engines), the fill's peak RSS, each operation's p50/p99 and the listing's
# entries per second.
#
#   scripts/engines.sh start                       # for postgres and mariadb
#   scripts/bench-scale.sh [SIZES] [ENGINES]       # SIZES="0 1M 10M", ENGINES="redis sqlite"
#   scripts/bench-scale.sh "0 1M" "postgres mariadb etcd"
#   LISTINGS=1 scripts/bench-scale.sh 10M etcd    # one listing of the very large directory
#
# Redis and etcd run privately here (a server on a free port, data in a temp folder, stopped
# by PID), so what they hold is the volume's alone; PostgreSQL and MariaDB get a new
# database on the shared test engines, dropped after each size. etcd is the etcd 3.5 of
# scripts/engines.sh when its env file is there, else the one on PATH. The JSON of every sweep, and a row per size
# (rows.jsonl, from which the table is printed), are kept in target/bench-scale/. Needs target/release/metabench (cargo build --release).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SIZES="${1:-0 1M 10M}"
ENGINES="${2:-redis sqlite}"
BIN="$ROOT/target/release/metabench"
# listings of the very large directory per size (etcd reads the rest of the directory for
# each page: a directory of 1M entries takes a minute to list there)
LISTINGS="${LISTINGS:-5}"
OUT="$ROOT/target/bench-scale"
[[ -x "$BIN" ]] || { echo "bench-scale: build it first: cargo build --release" >&2; exit 2; }
mkdir -p "$OUT"
# the shared engines' env file, when they run: $METABENCH_ETCD_BIN, the etcd 3.5 started here
# shellcheck disable=SC1091
[[ -f "$ROOT/target/engines/env.sh" ]] && source "$ROOT/target/engines/env.sh"
BENCH=bench-scale
# shellcheck source=scripts/bench-common.sh
source "$ROOT/scripts/bench-common.sh"

amount() { python3 -c "import sys; s=sys.argv[1]; m={'k':10**3,'K':10**3,'M':10**6,'G':10**9}; print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))" "$1"; }

# bytes the engine at URL $1 holds, by metabench's own reading (`info --json`: Redis
# used_memory, the SQLite file and its WAL after a checkpoint)
held() {
    "$BIN" info --meta "$1" --json | python3 -c '
import json, sys
f = json.load(sys.stdin)["footprint"]
if f["bytes"] is None:
    sys.exit("bench-scale: the engine did not say what it holds: " + f["what"])
print(f["bytes"])'
}

ROWS="$OUT/rows.jsonl"
: > "$ROWS"
for e in $ENGINES; do
    for size in $SIZES; do
        n=$(amount "$size")
        url=$(fresh_db "$e")
        tag="$e-$size"
        tree=() rss=0 empty=0
        if (( n > 0 )); then
            "$BIN" format --meta "$url" >/dev/null 2>&1 || true
            empty=$(held "$url")
            # start from an empty database again: fill formats it itself
            drop_db "$e" "$url"; url=$(fresh_db "$e")
            big=$(( n / 10 )); (( big > 1000000 )) && big=1000000
            /usr/bin/time -f '%M' -o "$TMP/rss" "$BIN" fill --meta "$url" --files "$n" \
                --big-dirs 1 --big-dir-files "$big" > "$TMP/fill.out" 2>&1
            rss=$(( $(cat "$TMP/rss") * 1024 ))
            path=$(grep -o '^filled /fill-[^ ]*' "$TMP/fill.out" | cut -d' ' -f2)
            tree=(--existing --tree "$path")
            held_now=$(held "$url")
            "$BIN" ops --meta "$url" --existing --tree "$path/big0" --ops listdir --iterations "$LISTINGS" \
                --op-timeout 1h --json "$OUT/$tag-listdir.json" > /dev/null 2>&1
        else
            "$BIN" format --meta "$url" >/dev/null 2>&1
            held_now=$(held "$url"); empty=$held_now
            tree=(--existing)
            "$BIN" ops --meta "$url" --existing --ops listdir --iterations 20 \
                --json "$OUT/$tag-listdir.json" > /dev/null 2>&1
        fi
        "$BIN" sweep --meta "$url" "${tree[@]}" --ops getattr,lookup,create,unlink --conc 1,16 \
            --warmup 1s --duration 3s --json "$OUT/$tag.json" > /dev/null 2>&1
        python3 - "$e" "$n" "$empty" "$held_now" "$rss" "$OUT/$tag.json" "$OUT/$tag-listdir.json" >> "$ROWS" <<'EOF'
import json, sys
e, n, empty, held, rss, sweep, listdir = sys.argv[1:]
s = json.load(open(sweep)); l = json.load(open(listdir))
ops = {}
for lv in s["levels"]:
    for o in lv["ops"]:
        ops[f'{o["op"]}@{lv["clients"]}'] = (o["p50_us"], o["p99_us"], o["ops_per_s"])
r = l["results"][0]
print(json.dumps({"engine": e, "files": int(n), "bytes_per_file": (int(held) - int(empty)) / int(n) if int(n) else None,
                  "fill_rss": int(rss), "ops": ops, "listdir_entries": r.get("entries_per_call"),
                  "listdir_mean_us": r["mean_us"] if r["count"] else None, "listdir_errors": r.get("errors")}))
EOF
        drop_db "$e" "$url"
        echo "bench-scale: $tag done" >&2
    done
done
python3 - "$ROWS" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rule = {"redis": 300, "sqlite": 600, "postgres": 600, "mariadb": 600}
ops = ["getattr", "lookup", "create", "unlink"]
head = ["engine", "files", "B/file (docs)", "fill RSS MiB"] + [f"{o} p50/p99 µs @1, @16" for o in ops] + ["listdir entries, entries/s"]
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for r in rows:
    docs = rule.get(r["engine"], "-")
    bpf = "-" if r["bytes_per_file"] is None else f'{r["bytes_per_file"]:.0f} ({docs})'
    rss = "-" if not r["fill_rss"] else f'{r["fill_rss"] / 2**20:.0f}'
    cells = [r["engine"], f'{r["files"]:,}', bpf, rss]
    for o in ops:
        a, b = r["ops"].get(f"{o}@1"), r["ops"].get(f"{o}@16")
        f = lambda x: "-" if x is None else f"{x[0]:.0f}/{x[1]:.0f}"
        cells.append(f"{f(a)}, {f(b)}")
    n = r["listdir_entries"] or 0
    if r["listdir_mean_us"]:
        cells.append(f'{n:,.0f}, {n / (r["listdir_mean_us"] / 1e6):,.0f}/s')
    else:
        cells.append(f'{n:,.0f}, no listing finished: {r.get("listdir_errors")}')
    print("| " + " | ".join(cells) + " |")
EOF
