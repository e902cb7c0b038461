//! Criterion micro-benchmarks of every operation of JuiceFS's Go benchmark, against the
//! embedded SQLite and, when `METABENCH_REDIS_URL` is set (e.g. `redis://:pw@host:6379/9`),
//! against Redis. Each operation gets the Go benchmark's untimed setup; only the call is
//! timed. An empty database is formatted and removed again; an existing volume is used
//! inside `/.metabench/<id>` only.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use metabench_engine::namespace::Namespace;
use metabench_engine::{open, ClientProfile, Ctx, Engine, MetaUrl, VolumeState};
use metabench_load::catalog::OpState;
use metabench_load::Op;
use metabench_schema::Format;
use std::sync::Arc;
use std::time::{Duration, Instant};

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

fn engines(rt: &tokio::runtime::Runtime) -> Vec<Bench> {
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

fn ops(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let benches = engines(&rt);
    let mut group = c.benchmark_group("ops");
    group
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    for bench in &benches {
        let mut meta = rt
            .block_on(
                bench
                    .engine
                    .session(&ClientProfile::Gobench.session_options()),
            )
            .expect("session");
        let ns = rt
            .block_on(Namespace::create(meta.as_mut(), "criterion"))
            .expect("namespace");
        for op in Op::GOLANG.into_iter().filter(|o| *o != Op::Resolve) {
            let dir = rt
                .block_on(meta.mkdir(&Ctx::root(), ns.dir, op.name().as_bytes(), 0o755, 0))
                .expect("op dir")
                .0;
            let mut state = rt
                .block_on(OpState::setup(op, meta.as_mut(), dir, ""))
                .expect("setup");
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
        rt.block_on(ns.remove(meta.as_mut())).expect("cleanup");
        if let Some(uuid) = &bench.formatted {
            rt.block_on(bench.engine.destroy(uuid)).expect("destroy");
        }
    }
    group.finish();
}

criterion_group!(benches, ops);
criterion_main!(benches);
