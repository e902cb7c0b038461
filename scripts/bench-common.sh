# What the benchmark scripts share, sourced after they set BENCH (their name): a temporary
# folder ($TMP) removed at exit, and private servers started in it and stopped by PID at
# exit. A server's PID goes in a file, not a shell variable: servers are often started
# inside `$(…)`, a subshell whose variables the script never sees.
#   source "$ROOT/scripts/bench-common.sh"
TMP="$(mktemp -d "/tmp/${BENCH:-bench}.XXXXXX")"
bench_cleanup() {
    if [[ -f "$TMP/pids" ]]; then
        while read -r p; do kill "$p" 2>/dev/null || true; done < "$TMP/pids"
    fi
    rm -rf "$TMP"
}
trap bench_cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Starts a private redis-server with any extra options ($@); prints its port. Its PID is
# in $TMP/redis-<port>.pid (and stopped at exit).
start_redis() {
    local port; port=$(free_port)
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$TMP" \
        --daemonize no "$@" > "$TMP/redis-$port.log" 2>&1 &
    echo $! | tee "$TMP/redis-$port.pid" >> "$TMP/pids"
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    echo "$port"
}

# Stops the private redis-server on port $1.
stop_redis() { kill "$(cat "$TMP/redis-$1.pid")" 2>/dev/null || true; sleep 0.5; }
