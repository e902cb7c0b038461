#!/usr/bin/env bash
# The one test command: starts the test engines (MariaDB, PostgreSQL, Redis, plus the
# juicefs binary), runs every test of the workspace against them, and always stops them.
#
#   scripts/test.sh                      # cargo test --workspace --all-targets
#   scripts/test.sh -- --nocapture       # extra arguments go to cargo test
#   scripts/test.sh -p metabench-engine  # one crate (drops --workspace)
#
# METABENCH_KEEP_ENGINES=1 leaves the engines running afterwards (scripts/engines.sh stop
# stops them); METABENCH_KEEP_ENGINE_DATA=1 keeps their data and logs when stopping.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
T0=$SECONDS

step() { echo "==> [test.sh +$((SECONDS - T0))s] $*"; }

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ "${METABENCH_KEEP_ENGINES:-0}" == 1 ]]; then
        step "leaving the engines running (METABENCH_KEEP_ENGINES=1)"
    else
        step "stopping the engines"
        scripts/engines.sh stop || rc=$((rc == 0 ? 1 : rc))
    fi
    if [[ $rc -eq 0 ]]; then
        step "done: all tests passed"
    else
        step "FAILED (exit $rc)"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "starting the engines (scripts/engines.sh start)"
scripts/engines.sh start
# shellcheck disable=SC1091
source "$TARGET/engines/env.sh"
step "engines: MySQL ${METABENCH_MYSQL_URL//metabench-test-pw/****}, PostgreSQL ${METABENCH_PG_URL//metabench-test-pw/****}, Redis ${METABENCH_REDIS_URL//metabench-test-pw/****}"
step "juicefs: $("$METABENCH_JUICEFS" version)"

# `-p CRATE` narrows the run to that crate (cargo would let --workspace win).
scope=(--workspace)
for a in "$@"; do
    [[ "$a" == -- ]] && break
    case "$a" in -p | -p* | --package | --package=*) scope=() ;; esac
done
# The whole workspace is built with the mpi feature (the MPI tests need it); a single
# crate (`-p`) is built as it is.
features=()
[[ ${#scope[@]} -gt 0 ]] && features=(--features mpi)
step "cargo test ${scope[*]} ${features[*]} --all-targets $*"
cargo test "${scope[@]}" "${features[@]}" --all-targets "$@"
