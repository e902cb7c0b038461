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

# The shared test engines' password (scripts/engines.sh), for the fresh databases below.
PW=metabench-test-pw
pg() { PGPASSWORD=$PW psql -h 127.0.0.1 -p 15432 -U metabench -d "${2:-postgres}" -tAc "$1"; }
my() { mysql -h 127.0.0.1 -P 13306 -u metabench -p$PW -N -e "$1" 2>/dev/null; }

# Starts a private single-member etcd (8 GiB backend quota); prints its port. Its PID is in
# $TMP/etcd-<port>.pid (and stopped at exit). The etcd 3.5 of scripts/engines.sh
# ($METABENCH_ETCD_BIN, in its env file), else the etcd on PATH.
start_etcd() {
    local port peer; port=$(free_port); peer=$(free_port)
    "${METABENCH_ETCD_BIN:-etcd}" --name "b$port" --data-dir "$TMP/etcd-$port" \
        --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
        --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
        --initial-cluster "b$port=http://127.0.0.1:$peer" --quota-backend-bytes 8589934592 \
        > "$TMP/etcd-$port.log" 2>&1 &
    echo $! | tee "$TMP/etcd-$port.pid" >> "$TMP/pids"
    for _ in $(seq 100); do grep -q "ready to serve" "$TMP/etcd-$port.log" && break; sleep 0.1; done
    grep -q "ready to serve" "$TMP/etcd-$port.log" || { echo "$BENCH: etcd did not start: $TMP/etcd-$port.log" >&2; return 1; }
    echo "$port"
}

# A fresh empty database of engine $1 (redis, sqlite, postgres, mariadb, etcd): prints its
# meta URL, or fails. Redis and etcd are private servers started here; PostgreSQL and
# MariaDB are new databases on the shared test engines (scripts/engines.sh start). Called
# as url=$(fresh_db e), where set -e does not reach: each step returns on failure.
fresh_db() {
    local name="b_$$_$RANDOM" port
    case "$1" in
        redis) port=$(start_redis) || return 1; echo "redis://127.0.0.1:$port/1" ;;
        sqlite) echo "sqlite3://$TMP/$name.db" ;;
        postgres) pg "CREATE DATABASE $name" >/dev/null || return 1; echo "postgres://metabench:$PW@127.0.0.1:15432/$name?sslmode=disable" ;;
        mariadb) my "CREATE DATABASE $name" || { echo "$BENCH: cannot create a MariaDB database (scripts/engines.sh start)" >&2; return 1; }
                 echo "mysql://metabench:$PW@(127.0.0.1:13306)/$name" ;;
        etcd) port=$(start_etcd) || return 1; echo "etcd://127.0.0.1:$port/$name" ;;
        *) echo "$BENCH: engine $1: redis, sqlite, postgres, mariadb or etcd" >&2; return 2 ;;
    esac
}

# Removes the database of engine $1 at meta URL $2 that fresh_db made: drops the SQL
# database, stops the private server, removes the SQLite file.
drop_db() {
    local url="$2" db port
    case "$1" in
        redis) port=${url#redis://127.0.0.1:}; stop_redis "${port%/*}" ;;
        sqlite) rm -f "${url#sqlite3://}"* ;;
        postgres) db=${url##*/}; db=${db%%\?*}; pg "DROP DATABASE $db" >/dev/null ;;
        mariadb) db=${url##*/}; my "DROP DATABASE $db" ;;
        etcd) port=${url#etcd://127.0.0.1:}; port=${port%%/*}
              kill "$(cat "$TMP/etcd-$port.pid")" 2>/dev/null || true; sleep 0.5; rm -rf "$TMP/etcd-$port" || true ;;
    esac
}
