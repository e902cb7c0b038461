//! Criterion micro-benchmarks of every operation of JuiceFS's Go benchmark, against the
//! embedded SQLite and, when `METABENCH_REDIS_URL` is set (e.g. `redis://:pw@host:6379/9`),
//! against Redis. Each operation gets the Go benchmark's untimed setup; only the call is
//! timed. An empty database is formatted and removed again; an existing volume is used
//! inside `/.metabench/<id>` only.
//!
//! A second group, `in_client`, measures what metabench's client logic costs where no
//! engine is involved: the calls a client answers from its own memory, on memkv.

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion};
use metabench_engine::namespace::Namespace;
use metabench_engine::{
    open, ClientProfile, Ctx, Engine, Meta, MetaUrl, SessionOptions, VolumeState,
};
use metabench_load::catalog::OpState;
use metabench_load::Op;
use metabench_schema::Format;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// The allocator the `metabench` binary uses (`src/main.rs`): the calls cost here what
/// they cost in `metabench ops` and `sweep`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Bench {
    name: &'static str,
    engine: Arc<dyn Engine>,
    formatted: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

async fn prepare(name: &'static str, url: &str, dir: Option<tempfile::TempDir>) -> Option<Bench> {
    let url = MetaUrl::parse(url).ok()?;
    let engine = match open(&url).await {
        Ok(e) => e,
        Err(e) => {
            eprintln!("skipping {name}: {e}");
            return None;
        }
    };
    let formatted = match engine.probe().await.ok()? {
        VolumeState::Empty => {
            let uuid = uuid::Uuid::new_v4().to_string();
            let f = Format::new("metabench-bench", &uuid, "/tmp/metabench-bench/", 0);
            engine.format(&f).await.ok()?;
            Some(uuid)
        }
        VolumeState::Volume(_) => None,
        VolumeState::Foreign(what) => {
            eprintln!("skipping {name}: {url} holds non-JuiceFS data ({what})");
            return None;
        }
    };
    Some(Bench {
        name,
        engine,
        formatted,
        _dir: dir,
    })
}

fn engines(rt: &Runtime) -> Vec<Bench> {
    let mut v = Vec::new();
    let dir = tempfile::tempdir().expect("temp dir");
    let sqlite = format!("sqlite3://{}", dir.path().join("bench.db").display());
    v.extend(rt.block_on(prepare("sqlite", &sqlite, Some(dir))));
    if let Ok(redis) = std::env::var("METABENCH_REDIS_URL") {
        let url = if redis.ends_with('/') {
            format!("{redis}9")
        } else {
            redis
        };
        v.extend(rt.block_on(prepare("redis", &url, None)));
    }
    v
}

/// A group with the settings every group here uses.
fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    group
}

/// A session of `bench`'s engine opened with `options`, and a namespace of its own.
fn open_session(
    rt: &Runtime,
    bench: &Bench,
    options: &SessionOptions,
) -> (Box<dyn Meta>, Namespace) {
    let mut meta = rt.block_on(bench.engine.session(options)).expect("session");
    let ns = rt
        .block_on(Namespace::create(meta.as_mut(), "criterion"))
        .expect("namespace");
    (meta, ns)
}

/// `op` with the Go benchmark's untimed setup, in a directory of its own in `ns`.
fn set_up(rt: &Runtime, meta: &mut dyn Meta, ns: &Namespace, op: Op) -> OpState {
    let dir = rt
        .block_on(meta.mkdir(&Ctx::root(), ns.dir, op.name().as_bytes(), 0o755, 0))
        .expect("op dir")
        .0;
    rt.block_on(OpState::setup(op, meta, dir, ""))
        .expect("setup")
}

/// Removes what a bench wrote: its namespace, and the volume if it formatted it.
fn clean_up(rt: &Runtime, bench: &Bench, mut meta: Box<dyn Meta>, ns: Namespace) {
    rt.block_on(ns.remove(meta.as_mut())).expect("cleanup");
    if let Some(uuid) = &bench.formatted {
        rt.block_on(bench.engine.destroy(uuid)).expect("destroy");
    }
}

fn ops(c: &mut Criterion) {
    let rt = Runtime::new().expect("runtime");
    let benches = engines(&rt);
    let mut group = group(c, "ops");
    for bench in &benches {
        let (mut meta, ns) = open_session(&rt, bench, &ClientProfile::Gobench.session_options());
        for op in Op::GOLANG.into_iter().filter(|o| *o != Op::Resolve) {
            let mut state = set_up(&rt, meta.as_mut(), &ns, op);
            group.bench_function(BenchmarkId::new(bench.name, op.name()), |b| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let mut timed = Duration::ZERO;
                        for _ in 0..iters {
                            state.prepare(meta.as_mut()).await.expect("prepare");
                            let t = Instant::now();
                            state.call(meta.as_mut()).await.expect("call");
                            timed += t.elapsed();
                        }
                        timed
                    })
                })
            });
            rt.block_on(meta.flush()).expect("flush");
        }
        clean_up(&rt, bench, meta, ns);
    }
    group.finish();
}

/// The calls a client with `--client-cache` answers from its own memory (newchunk from its
/// slice-id batch, a read of a cached chunk), on memkv, through the path `ops` and `sweep`
/// take ([`OpState::answer_in_client`], else the full call). Timed as JuiceFS's Go
/// benchmark times them, one clock around all `b.N` calls: one such call is shorter than
/// the two clock reads that `ops` spends on timing it alone. This is the client-CPU
/// figure to set beside `BenchmarkTKV` on `memkv://`
/// (`scripts/compare-go-bench.py --bench BenchmarkTKV`).
fn in_client(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let bench = rt
        .block_on(prepare("memkv", "memkv://criterion", None))
        .expect("memkv opens");
    let options = SessionOptions {
        client_cache: true,
        ..ClientProfile::Gobench.session_options()
    };
    let (mut meta, ns) = open_session(&rt, &bench, &options);
    let mut group = group(c, "in_client");
    for op in [Op::Newchunk, Op::Read1, Op::Read10] {
        let mut state = set_up(&rt, meta.as_mut(), &ns, op);
        // One untimed call first, as Go's first NewSlice fetches its batch and its first
        // Read fills the cache: the calls after it are answered in the client, even a
        // single one (`cargo test --benches` runs each bench once).
        rt.block_on(state.call(meta.as_mut())).expect("first call");
        let (mut timed, mut answered) = (0u64, 0u64);
        group.bench_function(BenchmarkId::new(bench.name, op.name()), |b| {
            b.iter_custom(|iters| {
                timed += iters;
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        if state.answer_in_client(meta.as_mut()) {
                            answered += 1;
                        } else {
                            state.call(meta.as_mut()).await.expect("call");
                        }
                    }
                    start.elapsed()
                })
            })
        });
        // `timed` stays 0 when a name filter left this bench out.
        assert!(
            timed == 0 || answered > 0,
            "{}: no call was answered in the client",
            op.name()
        );
    }
    group.finish();
    clean_up(&rt, &bench, meta, ns);
}

criterion_group!(benches, ops, in_client);
criterion_main!(benches);
