#!/usr/bin/env bash
# Builds JuiceFS's own metadata benchmark (`pkg/meta/benchmarks_test.go`) as a test binary
# whose BenchmarkRedis / BenchmarkSQL / BenchmarkTKV take their meta URL from the
# environment variable JFS_BENCH_META, for scripts/compare-go-bench.py:
#
#   scripts/build-go-bench.sh JUICEFS_CHECKOUT [OUTPUT]      # OUTPUT defaults to ./meta.test
#
# JUICEFS_CHECKOUT is a clone of github.com/juicedata/juicefs at branch release-1.4 (the
# source is not part of metabench). The script edits that clone's
# pkg/meta/benchmarks_test.go in place, once (a second run finds the edit and leaves it):
# each `NewClient(addr, nil)` of the three benchmarks becomes `NewClient(benchMeta(addr),
# nil)`, and benchMeta returns $JFS_BENCH_META when it is set, else upstream's address
# (redis://127.0.0.1/1, a temporary SQLite file, a temporary Badger store). Then
# `go test -c ./pkg/meta`; its dependencies come from the Go module proxy.
#
# Then, for example:
#   JFS_BENCH_META=redis://127.0.0.1:6379/1 ./meta.test -test.run='^$' \
#       -test.bench='^BenchmarkRedis$' -test.benchtime=1000x
# The benchmark formats the database it is given (force): give it one of its own.
set -euo pipefail

src="${1:?usage: scripts/build-go-bench.sh JUICEFS_CHECKOUT [OUTPUT]}"
out="$(realpath -m "${2:-meta.test}")"
bench="$src/pkg/meta/benchmarks_test.go"
[[ -f "$bench" ]] || { echo "build-go-bench: $bench not found: give a JuiceFS checkout (release-1.4)" >&2; exit 2; }
command -v go >/dev/null || { echo "build-go-bench: go is not on PATH" >&2; exit 2; }

if ! grep -q 'func benchMeta(' "$bench"; then
    n=$(grep -c 'NewClient(\(redisAddr\|addr\), nil)' "$bench" || true)
    if [[ "$n" != 3 ]]; then
        echo "build-go-bench: expected the three NewClient calls of BenchmarkRedis/SQL/TKV in $bench, found $n: not release-1.4?" >&2
        exit 2
    fi
    sed -i -e 's/NewClient(\(redisAddr\|addr\), nil)/NewClient(benchMeta(\1), nil)/' \
        -e 's/^import (/import (\n\tbenchos "os"/' "$bench"
    cat >>"$bench" <<'GO'

// benchMeta is the meta URL in JFS_BENCH_META when it is set, else def (added by
// metabench's scripts/build-go-bench.sh).
func benchMeta(def string) string {
	if u := benchos.Getenv("JFS_BENCH_META"); u != "" {
		return u
	}
	return def
}
GO
    echo "build-go-bench: $bench now reads JFS_BENCH_META"
fi

cd "$src"
echo "build-go-bench: go test -c -o $out ./pkg/meta (in $src)"
go test -c -o "$out" ./pkg/meta
echo "build-go-bench: built $out ($(cd "$src" && git describe --tags --always 2>/dev/null || echo 'unknown commit'))"
