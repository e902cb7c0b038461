//! The CI regression gate on deterministic figures: `metabench ops --iterations 20` of every
//! operation (the Go benchmark's, NNBench's, truncate and fallocate) on
//! every engine the tests run (SQLite, Redis, a three-primary Redis Cluster, MariaDB,
//! PostgreSQL, etcd, the TiKV stand-in, memkv), gated with
//! `metabench gate --round-trips-only` against the committed baselines in
//! `configs/baselines/<engine>.json`. Timings are not gated here: on a shared 2-core
//! machine they are noise.
//!
//! After a deliberate change of an operation's round trips, regenerate the baselines with
//! `METABENCH_WRITE_BASELINES=1 scripts/test.sh -p metabench --test it baselines` and commit
//! them with the change.

use crate::metabench;
use metabench_testkit::{fresh_database, output_text, Kind, RedisCluster};
use std::path::{Path, PathBuf};

/// The engines gated: the testkit's kinds plus the TKV engines.
#[derive(Clone, Copy)]
enum Gated {
    Db(Kind),
    /// A private three-primary Redis Cluster, through its seed list.
    RedisCluster,
    Etcd,
    Tikv,
    Memkv,
}

impl Gated {
    const ALL: [Gated; 8] = [
        Gated::Db(Kind::Sqlite),
        Gated::Db(Kind::Redis),
        Gated::RedisCluster,
        Gated::Db(Kind::Mysql),
        Gated::Db(Kind::Postgres),
        Gated::Etcd,
        Gated::Tikv,
        Gated::Memkv,
    ];

    fn name(self) -> &'static str {
        match self {
            Gated::Db(kind) => kind.name(),
            Gated::RedisCluster => "redis-cluster",
            Gated::Etcd => "etcd",
            Gated::Tikv => "tikv-standin",
            Gated::Memkv => "memkv",
        }
    }
}

fn baseline(engine: Gated) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("configs/baselines")
        .join(format!("{}.json", engine.name()))
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Runs the ops benchmark on a fresh, empty database of `engine` into `out`.
fn ops_run(engine: Gated, out: &Path) {
    let unique = metabench_testkit::unique_name("mb-baseline");
    let mut _cluster = None;
    let (url, _db) = match engine {
        Gated::Db(kind) => {
            let db = fresh_database(kind);
            (db.url().to_owned(), Some(db))
        }
        Gated::RedisCluster => {
            let cluster = RedisCluster::start();
            let url = cluster.url(1);
            _cluster = Some(cluster);
            (url, None)
        }
        Gated::Etcd | Gated::Tikv => {
            let var = match engine {
                Gated::Etcd => "METABENCH_ETCD_URL",
                _ => "METABENCH_TIKV_URL",
            };
            let base = std::env::var(var).unwrap_or_else(|_| {
                panic!("{var} is set by scripts/test.sh (run the tests with it)")
            });
            (format!("{}/{unique}", base.trim_end_matches('/')), None)
        }
        Gated::Memkv => (format!("memkv://{unique}"), None),
    };
    let ops: Vec<&str> = metabench_load::Op::ALL.iter().map(|o| o.name()).collect();
    let o = metabench(&[
        "ops",
        "--meta",
        &url,
        "--ops",
        &ops.join(","),
        "--iterations",
        "20",
        "--json",
        p(out),
    ]);
    assert!(o.status.success(), "{}: {}", engine.name(), output_text(&o));
}

#[test]
fn round_trips_per_operation_match_the_committed_baselines() {
    let _phase = crate::phase(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let write = std::env::var("METABENCH_WRITE_BASELINES").is_ok_and(|v| v == "1");
    let mut failed = Vec::new();
    for engine in Gated::ALL {
        let current = dir.path().join(format!("{}.json", engine.name()));
        ops_run(engine, &current);
        if write {
            std::fs::copy(&current, baseline(engine)).unwrap();
            eprintln!("wrote {}", baseline(engine).display());
            continue;
        }
        let o = metabench(&[
            "gate",
            "--baseline",
            p(&baseline(engine)),
            "--current",
            p(&current),
            "--round-trips-only",
        ]);
        eprintln!("{}: {}", engine.name(), output_text(&o));
        if o.status.code() != Some(0) {
            failed.push(format!("{}: {}", engine.name(), output_text(&o)));
        }
    }
    assert!(
        failed.is_empty(),
        "round-trip gate failed:\n{}",
        failed.join("\n")
    );
}

#[test]
fn one_round_trip_more_than_the_baseline_fails_the_gate() {
    let _phase = crate::phase(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let current = dir.path().join("current.json");
    ops_run(Gated::Db(Kind::Sqlite), &current);
    // A baseline where mkdir took one round trip fewer: the current run has one more.
    let mut base: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&current).unwrap()).unwrap();
    let mkdir = base["results"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["op"] == "mkdir")
        .unwrap();
    let rt = mkdir["round_trips_per_op"].as_f64().unwrap();
    mkdir["round_trips_per_op"] = serde_json::json!(rt - 1.0);
    let tampered = dir.path().join("baseline.json");
    std::fs::write(&tampered, base.to_string()).unwrap();
    let o = metabench(&[
        "gate",
        "--baseline",
        p(&tampered),
        "--current",
        p(&current),
        "--round-trips-only",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    let t = output_text(&o);
    assert!(
        t.contains(&format!(
            "mkdir: round trips per operation increased from {:.2} to {rt:.2}",
            rt - 1.0
        )),
        "{t}"
    );
    // The run against itself passes.
    let o = metabench(&[
        "gate",
        "--baseline",
        p(&current),
        "--current",
        p(&current),
        "--round-trips-only",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
}
