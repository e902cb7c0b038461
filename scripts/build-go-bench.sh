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
# (redis://127.0.0.1/1, a temporary SQLite file, a temporary Badger store). It also adds
# pkg/meta/metabench_clock_test.go (BenchmarkRedisClock / BenchmarkSQLClock /
# BenchmarkTKVClock: three of upstream's calls timed by a clock, see below). Then
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

# A second edit, in a file of its own: BenchmarkRedisClock / BenchmarkSQLClock /
# BenchmarkTKVClock time upstream's three calls whose set-up is bracketed by
# b.StopTimer()/b.StartTimer() (rmdir, unlink, removexattr) with a clock around the call
# alone, and report it as clock-ns/op. testing.B's StartTimer calls runtime.ReadMemStats,
# which stops and restarts the world just before each timed call; no JuiceFS mount does
# that, and it moves the call's cost either way. The restart (startTheWorldWithSema) wakes
# runtime threads (sysmon, and a spare thread through wakep) that are still awake when the
# call begins: on a 2-vCPU VM that halts idle vCPUs, that spared Redis rmdir and
# removexattr some vCPU wake-ups (1.15-1.4× less time than timed by a clock, rmdir only
# with GOMAXPROCS > 1), while SQLite removexattr took 1.6× longer under StartTimer.
# The file is metabench's own, so it is written afresh on every run.
clock="$src/pkg/meta/metabench_clock_test.go"
cat >"$clock" <<'GO'
// Added by metabench's scripts/build-go-bench.sh: upstream's rmdir, unlink and
// removexattr, with the untimed set-up call left out by a clock around the timed call
// instead of b.StopTimer()/b.StartTimer() (whose runtime.ReadMemStats stops and restarts
// the world before every timed call). ns/op counts the set-up too; clock-ns/op does not.

package meta

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func BenchmarkRedisClock(b *testing.B) {
	benchmarkClock(b, NewClient(benchMeta(redisAddr), nil))
}

func BenchmarkSQLClock(b *testing.B) {
	benchmarkClock(b, NewClient(benchMeta("sqlite3://"+filepath.Join(b.TempDir(), "juicefs.db")), nil))
}

func BenchmarkTKVClock(b *testing.B) {
	benchmarkClock(b, NewClient(benchMeta("badger://"+filepath.Join(b.TempDir(), "test_db")), nil))
}

// benchmarkClock runs each call after its untimed set-up call, times the call alone and
// reports the mean as clock-ns/op. set-up and call share inode, zero at the start of a run.
func benchmarkClock(b *testing.B, m Meta) {
	_ = m.Init(&Format{Name: "benchmarkAll", DirStats: true}, true)
	_ = m.NewSession(false)
	clocked := func(name string, setUp, call func(ctx Context, parent Ino, inode *Ino) syscall.Errno) {
		b.Run(name, func(b *testing.B) {
			var parent, inode Ino
			if err := prepareParent(m, "benchClock_"+name, &parent); err != nil {
				b.Fatal(err)
			}
			ctx := Background()
			var timed time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := setUp(ctx, parent, &inode); err != 0 {
					b.Fatalf("%s set-up: %s", name, err)
				}
				start := time.Now()
				err := call(ctx, parent, &inode)
				timed += time.Since(start)
				if err != 0 {
					b.Fatalf("%s: %s", name, err)
				}
			}
			b.ReportMetric(float64(timed.Nanoseconds())/float64(b.N), "clock-ns/op")
		})
	}
	clocked("rmdir",
		func(ctx Context, parent Ino, inode *Ino) syscall.Errno {
			return m.Mkdir(ctx, parent, "dir", 0755, 0, 0, inode, nil)
		},
		func(ctx Context, parent Ino, _ *Ino) syscall.Errno { return m.Rmdir(ctx, parent, "dir") })
	clocked("unlink",
		func(ctx Context, parent Ino, inode *Ino) syscall.Errno {
			return m.Create(ctx, parent, "file", 0644, 022, 0, inode, nil)
		},
		func(ctx Context, parent Ino, _ *Ino) syscall.Errno { return m.Unlink(ctx, parent, "file") })
	clocked("removexattr",
		func(ctx Context, parent Ino, inode *Ino) syscall.Errno {
			if *inode == 0 {
				if err := m.Create(ctx, parent, "fxattr", 0644, 022, 0, inode, nil); err != 0 {
					return err
				}
			}
			return m.SetXattr(ctx, *inode, "key", []byte("value"), 0)
		},
		func(ctx Context, _ Ino, inode *Ino) syscall.Errno { return m.RemoveXattr(ctx, *inode, "key") })
}
GO
echo "build-go-bench: wrote $clock (BenchmarkRedisClock, BenchmarkSQLClock, BenchmarkTKVClock)"

cd "$src"
echo "build-go-bench: go test -c -o $out ./pkg/meta (in $src)"
go test -c -o "$out" ./pkg/meta
echo "build-go-bench: built $out ($(cd "$src" && git describe --tags --always 2>/dev/null || echo 'unknown commit'))"
