#!/usr/bin/env bash
# Thousands of clients from one process: `sweep --conc 1..10000` under the mount profile
# against a private Redis whose maxclients takes them, timed, with metabench's peak RSS
# (/usr/bin/time -v and the JSON's peak_rss_bytes), the heartbeats each level sent and the
# engine's own session writes (cmdstat_zadd: registrations and heartbeats).
#
#   scripts/bench-clients.sh [CONC] [DURATION]   # CONC=1..10000, DURATION=1s (30s shows heartbeats)
#
# The redis-server runs privately here (a free port, data in a temp folder, stopped by PID).
# Needs target/release/metabench (cargo build --release), redis-server, /usr/bin/time.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONC="${1:-1..10000}"
DURATION="${2:-1s}"
BIN="${METABENCH_BIN:-$ROOT/target/release/metabench}"
[[ -x "$BIN" ]] || { echo "bench-clients: build it first: cargo build --release" >&2; exit 2; }
BENCH=bench-clients
# shellcheck source=scripts/bench-common.sh
source "$ROOT/scripts/bench-common.sh"

port=$(start_redis --maxclients 15000)
echo "redis-server on port $port: maxclients $(redis-cli -p "$port" config get maxclients | tail -1)"

start=$(date +%s)
/usr/bin/time -v "$BIN" -v sweep --meta "redis://127.0.0.1:$port/1" --conc "$CONC" \
    --profile mount --ops getattr --warmup 0 --duration "$DURATION" \
    --json "$TMP/clients.json" > "$TMP/out.txt" 2> "$TMP/err.txt" || {
    echo "bench-clients: the sweep failed:" >&2
    grep -v '^\s' "$TMP/err.txt" >&2
    exit 1
}
echo "wall time: $(( $(date +%s) - start )) s"
grep -E 'Maximum resident' "$TMP/err.txt"
python3 - "$TMP/clients.json" <<'EOF'
import json, sys
run = json.load(open(sys.argv[1]))
print(f"peak RSS (JSON): {run['peak_rss_bytes'] / 2**20:.1f} MiB")
print("clients  ops/s  p50 µs  p99 µs  heartbeats (due)  client-bound")
for level in run["levels"]:
    op = level["ops"][0]
    b = level.get("background") or {}
    due = level["clients"] * b.get("window_s", 0) / 12
    print(f"{level['clients']:>7} {op['ops_per_s']:>6.0f} {op['p50_us']:>7.0f} {op['p99_us']:>7.0f}"
          f"  {b.get('heartbeats', 0):>10} ({due:.0f})  {level['client']['client_bound']}")
EOF
redis-cli -p "$port" info commandstats | grep -E 'cmdstat_(zadd|watch|exec):' | sed 's/,usec_per_call.*//'
