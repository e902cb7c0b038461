//! HDFS and S3 beside JuiceFS (NNBench's comparison): `sweep --workload nnbench` on the
//! real NameNode and DataNode and on the S3 server that `scripts/engines.sh` starts
//! (`METABENCH_HDFS_URL`, `METABENCH_S3_URL`), their cleanup (also after Ctrl-C), bad
//! input, and one `matrix` over SQLite, Redis, HDFS and S3 whose report holds all four.

use crate::metabench_cmd;
use metabench_report::SweepResults;
use metabench_testkit::{fresh_database, output_text, Kind};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The sweeps here run one at a time (two cores, and servers shared with them).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run the tests through scripts/test.sh, which starts HDFS and S3")
    })
}

/// A fresh directory of this test's below the test NameNode: `hdfs://…/it-<tag>-<uuid>`.
fn hdfs_url(tag: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{}/it-{tag}-{}", env("METABENCH_HDFS_URL"), &id[..8])
}

/// A fresh prefix of this test's in the test bucket, and the prefix alone.
fn s3_url(tag: &str) -> (String, String) {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let prefix = format!("it-{tag}-{}", &id[..8]);
    let base = env("METABENCH_S3_URL");
    let (bucket, query) = base.split_once('?').expect("the S3 URL has its endpoint");
    (format!("{bucket}/{prefix}?{query}"), prefix)
}

/// `metabench` with the S3 server's keys in the usual variables.
fn metabench() -> Command {
    let mut c = metabench_cmd();
    c.env("AWS_ACCESS_KEY_ID", env("METABENCH_S3_ACCESS_KEY"))
        .env("AWS_SECRET_ACCESS_KEY", env("METABENCH_S3_SECRET_KEY"));
    c
}

fn run(args: &[&str]) -> Output {
    metabench().args(args).output().unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The NameNode's view of `path` (below the test NameNode's URL): whether it exists.
fn hdfs_exists(url: &str) -> bool {
    let (namenode, path) = split_hdfs(url);
    runtime().block_on(async {
        let client = hdfs_native::ClientBuilder::new()
            .with_url(&namenode)
            .build()
            .unwrap();
        match client.get_file_info(&path).await {
            Ok(_) => true,
            Err(hdfs_native::HdfsError::FileNotFound(_)) => false,
            Err(e) => panic!("getFileInfo {path}: {e}"),
        }
    })
}

fn split_hdfs(url: &str) -> (String, String) {
    let rest = url.strip_prefix("hdfs://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    (format!("hdfs://{host}"), format!("/{path}"))
}

/// The test bucket, with the S3 server's keys.
fn test_bucket() -> object_store::aws::AmazonS3 {
    // reqwest's TLS provider, as metabench installs it.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let base = env("METABENCH_S3_URL");
    let endpoint = base
        .split("endpoint=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap();
    let bucket = base
        .strip_prefix("s3://")
        .unwrap()
        .split(['?', '/'])
        .next()
        .unwrap();
    object_store::aws::AmazonS3Builder::new()
        .with_bucket_name(bucket)
        .with_endpoint(endpoint)
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_access_key_id(env("METABENCH_S3_ACCESS_KEY"))
        .with_secret_access_key(env("METABENCH_S3_SECRET_KEY"))
        .build()
        .unwrap()
}

/// The keys below `prefix/` in the test bucket.
fn s3_keys(prefix: &str) -> Vec<String> {
    use futures_util::TryStreamExt;
    use object_store::ObjectStore;
    runtime().block_on(async {
        test_bucket()
            .list(Some(&object_store::path::Path::from(prefix)))
            .map_ok(|m| m.location.to_string())
            .try_collect()
            .await
            .unwrap()
    })
}

/// Puts one key in the test bucket, as another user of it would.
fn put_key(key: &str) {
    use object_store::ObjectStoreExt;
    runtime().block_on(async {
        test_bucket()
            .put(
                &object_store::path::Path::from(key),
                b"theirs".to_vec().into(),
            )
            .await
            .unwrap();
    });
}

/// A short nnbench sweep on `url`: its results, after checking every operation ran at
/// every level without an error.
fn nnbench_sweep(url: &str, dir: &Path) -> (SweepResults, String) {
    let json = dir.join("sweep.json");
    // -v: the system's documented differences are part of the full report.
    let o = metabench()
        .args([
            "-v",
            "sweep",
            "--meta",
            url,
            "--workload",
            "nnbench",
            "--conc",
            "1,2",
        ])
        .args(["--warmup", "200ms", "--duration", "1s", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let text = output_text(&o);
    assert!(o.status.success(), "{text}");
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(run.levels.len(), 2, "{text}");
    for level in &run.levels {
        let ops: Vec<&str> = level.ops.iter().map(|o| o.op.as_str()).collect();
        assert_eq!(ops, ["create_write", "open", "rename", "unlink"], "{text}");
        for op in &level.ops {
            assert!(op.latency.count > 0 && op.ops_per_s > 0.0, "{op:?}");
            assert!(op.errors.is_empty(), "{}: {:?}", op.op, op.errors);
        }
    }
    (run, text)
}

/// Every level's round trips per call of each op: the requests its calls name.
fn assert_round_trips(run: &SweepResults, want: [(&str, f64); 4]) {
    for level in &run.levels {
        let got: Vec<(&str, f64)> = level
            .ops
            .iter()
            .map(|o| (o.op.as_str(), o.round_trips_per_op))
            .collect();
        assert_eq!(got, want, "{} clients", level.clients);
    }
}

#[test]
fn nnbench_on_hdfs_runs_every_op_and_leaves_nothing() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let url = hdfs_url("sweep");
    let (run, text) = nnbench_sweep(&url, dir.path());
    assert_eq!(run.header.engine.kind, "hdfs");
    let floor = run.floor.as_ref().expect("a floor");
    assert_eq!(floor.request, "getFileInfo (absent)");
    assert!(floor.count > 0 && floor.p50_us > 0.0, "{floor:?}");
    assert!(
        text.contains("open = getFileInfo + getBlockLocations"),
        "{text}"
    );
    // NameNode RPCs: create + addBlock + complete; getFileInfo + getBlockLocations.
    assert_round_trips(
        &run,
        [
            ("create_write", 3.0),
            ("open", 2.0),
            ("rename", 1.0),
            ("unlink", 1.0),
        ],
    );
    // metabench made the directory: it is gone with everything below it.
    assert!(!hdfs_exists(&url), "{url} left behind");
}

/// Both output pipes closed at once, with the client library's debug log on: the log's
/// writer once panicked on the closed stderr (tracing-subscriber's report of its own
/// failed write), and the run died before its cleanup. A closed pipe is not a failed run.
#[test]
fn closed_pipes_with_debug_logging_on_hdfs_still_clean_up() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let url = hdfs_url("pipes");
    let json = dir.path().join("sweep.json");
    let status = crate::status_with_closed_pipes(
        metabench()
            .args(["sweep", "--meta", &url, "--workload", "nnbench"])
            .args([
                "--conc",
                "1",
                "--warmup",
                "200ms",
                "--duration",
                "1s",
                "--json",
            ])
            .arg(&json)
            .env("RUST_LOG", "hdfs_native=debug"),
    );
    assert_eq!(status.code(), Some(0), "a closed pipe is not a failed run");
    assert!(!hdfs_exists(&url), "{url} left behind");
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(run.levels.len(), 1);
}

#[test]
fn nnbench_on_s3_runs_every_op_is_labelled_a_stand_in_and_leaves_nothing() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let (url, prefix) = s3_url("sweep");
    let (run, text) = nnbench_sweep(&url, dir.path());
    assert_eq!(run.header.engine.kind, "s3");
    assert_eq!(
        run.floor.as_ref().map(|f| f.request.as_str()),
        Some("HEAD (absent key)")
    );
    assert!(
        run.header
            .engine
            .fidelity_notes
            .iter()
            .any(|n| n.starts_with("Stand-in: an S3-compatible server")),
        "{:?}",
        run.header.engine.fidelity_notes
    );
    assert!(text.contains("rename = COPY + DELETE"), "{text}");
    // HTTP requests: PUT; HEAD + GET; COPY + DELETE; DELETE.
    assert_round_trips(
        &run,
        [
            ("create_write", 1.0),
            ("open", 2.0),
            ("rename", 2.0),
            ("unlink", 1.0),
        ],
    );
    assert!(!text.contains(&env("METABENCH_S3_SECRET_KEY")), "{text}");
    assert_eq!(s3_keys(&prefix), Vec::<String>::new());
}

#[test]
fn ctrl_c_mid_sweep_on_hdfs_cleans_up() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let url = hdfs_url("ctrlc");
    let log = dir.path().join("stderr.txt");
    let child = metabench()
        .args(["sweep", "--meta", &url, "--workload", "nnbench"])
        .args(["--conc", "1,2,4,8", "--warmup", "100ms", "--duration", "1s"])
        .stderr(std::fs::File::create(&log).unwrap())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    crate::wait_for_log(&log, "ops/s");
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(!hdfs_exists(&url), "{url} left behind: {stderr}");
}

/// `metabench tree`: parity's mdtest-shaped trees, every phase, on HDFS and on S3 (its
/// directories as `dir/` markers), with two tasks; nothing left afterwards. On a JuiceFS
/// meta URL it points to `parity`.
#[test]
fn mdtest_trees_run_on_hdfs_and_s3_and_leave_nothing() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let hdfs = hdfs_url("tree");
    let (s3, prefix) = s3_url("tree");
    for url in [&hdfs, &s3] {
        let o = run(&["tree", "--meta", url, "--scale", "small", "--tasks", "2"]);
        let t = output_text(&o);
        assert!(o.status.success(), "{t}");
        for tree in ["metadata", "small-files"] {
            assert!(t.contains(&format!("{tree}\n| phase |")), "{t}");
        }
        for phase in [
            "Tree creation",
            "Directory creation",
            "Directory stat",
            "Directory removal",
            "File creation",
            "File stat",
            "File read",
            "File removal",
            "Tree removal",
        ] {
            assert!(t.contains(&format!("| {phase} | ")), "{phase}: {t}");
        }
    }
    assert!(!hdfs_exists(&hdfs), "{hdfs} left behind");
    assert!(s3_keys(&prefix).is_empty());
    refused(
        &run(&["tree", "--meta", "sqlite3:///tmp/x.db"]),
        2,
        "metabench parity",
    );
}

/// Asserts `o` failed with `code` and one line saying `says`.
fn refused(o: &Output, code: i32, says: &str) {
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains(says), "{stderr}");
}

#[test]
fn bad_input_on_hdfs_and_s3_is_one_line_and_writes_nothing() {
    let _phase = crate::phase(module_path!());
    let sweep = |url: &str, extra: &[&str]| {
        let mut args = vec!["sweep", "--meta", url, "--conc", "1", "--duration", "1s"];
        args.extend(extra);
        run(&args)
    };
    // A JuiceFS operation: refused before the system is touched.
    let url = hdfs_url("refused");
    refused(
        &sweep(&url, &["--ops", "getxattr"]),
        2,
        "--workload nnbench",
    );
    assert!(!hdfs_exists(&url));
    let (url, prefix) = s3_url("refused");
    refused(
        &sweep(&url, &["--workload", "golang"]),
        2,
        "--workload nnbench",
    );
    assert!(s3_keys(&prefix).is_empty());
    // Commands other than sweep need a JuiceFS volume.
    refused(
        &run(&["ops", "--meta", &url]),
        2,
        "metabench sweep --workload nnbench",
    );
    // Malformed URLs.
    refused(&sweep("hdfs://127.0.0.1:1/", &[]), 2, "bad HDFS URL");
    refused(&sweep("s3://", &["--workload", "nnbench"]), 2, "S3");
    // Unreachable systems: one line, and quick.
    let started = Instant::now();
    refused(
        &sweep("hdfs://127.0.0.1:1/x", &["--workload", "nnbench"]),
        1,
        "hdfs",
    );
    refused(
        &sweep(
            "s3://metabench-test/x?endpoint=http://127.0.0.1:1&region=us-east-1",
            &["--workload", "nnbench"],
        ),
        1,
        "cannot reach the endpoint",
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    // Wrong keys, and a bucket that does not exist.
    let (url, _) = s3_url("keys");
    let o = metabench_cmd()
        .env("AWS_ACCESS_KEY_ID", env("METABENCH_S3_ACCESS_KEY"))
        .env("AWS_SECRET_ACCESS_KEY", "not-the-secret")
        .args([
            "sweep",
            "--meta",
            &url,
            "--workload",
            "nnbench",
            "--conc",
            "1",
        ])
        .output()
        .unwrap();
    refused(&o, 1, "SignatureDoesNotMatch");
    let nobucket = url.replacen("metabench-test", "no-such-bucket-metabench", 1);
    refused(
        &sweep(&nobucket, &["--workload", "nnbench"]),
        1,
        "NoSuchBucket",
    );
}

#[test]
fn someone_elses_data_is_refused_unless_existing_and_left_alone() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let (url, prefix) = s3_url("theirs");
    // Someone else's key, put with the S3 API directly.
    put_key(&format!("{prefix}/their-file"));
    let put = run(&[
        "sweep",
        "--meta",
        &url,
        "--workload",
        "nnbench",
        "--conc",
        "1",
    ]);
    refused(&put, 1, "--existing");
    assert_eq!(s3_keys(&prefix), [format!("{prefix}/their-file")]);
    // With --existing: the run works below a prefix of its own and leaves theirs.
    let json = dir.path().join("existing.json");
    let o = metabench()
        .args([
            "sweep",
            "--meta",
            &url,
            "--existing",
            "--workload",
            "nnbench",
        ])
        .args([
            "--conc",
            "1",
            "--warmup",
            "100ms",
            "--duration",
            "300ms",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", output_text(&o));
    assert_eq!(s3_keys(&prefix), [format!("{prefix}/their-file")]);
}

/// One `matrix` over SQLite, Redis, HDFS and S3 (NNBench's comparison on one machine):
/// every system is measured, and the report's tables and charts hold all four series,
/// the latency-at-20-clients chart included.
#[test]
fn one_matrix_puts_sqlite_redis_hdfs_and_s3_in_one_report() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let redis = fresh_database(Kind::Redis);
    let sqlite = fresh_database(Kind::Sqlite);
    let hdfs = hdfs_url("matrix");
    let (s3, prefix) = s3_url("matrix");
    let mut configs = Vec::new();
    for (name, meta) in [
        ("sqlite", sqlite.url()),
        ("redis", redis.url()),
        ("hdfs", hdfs.as_str()),
        ("s3", s3.as_str()),
    ] {
        let path = d.join(format!("{name}.toml"));
        std::fs::write(&path, format!("name = \"{name}\"\nmeta = \"{meta}\"\n")).unwrap();
        configs.push(path.to_str().unwrap().to_owned());
    }
    let (out, plots) = (d.join("results"), d.join("plots"));
    let mut args: Vec<&str> = vec!["matrix"];
    args.extend(configs.iter().map(String::as_str));
    args.extend([
        "--out",
        out.to_str().unwrap(),
        "--plot",
        plots.to_str().unwrap(),
    ]);
    args.extend([
        "--format",
        "markdown",
        "--",
        "sweep",
        "--workload",
        "nnbench",
    ]);
    args.extend(["--conc", "1,2", "--warmup", "200ms", "--duration", "1s"]);
    let o = metabench().args(&args).output().unwrap();
    let t = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    for name in ["sqlite", "redis", "hdfs", "s3"] {
        assert!(out.join(format!("{name}.json")).is_file(), "{name}: {t}");
        assert!(t.contains(&format!("{name}: done")), "{t}");
    }
    // Throughput by concurrency, one column pair per system, for every NNBench op.
    for op in ["create_write", "open", "rename", "unlink"] {
        let header = t
            .lines()
            .skip_while(|l| !l.contains(&format!("{op}: throughput and p99")))
            .find(|l| l.starts_with("| clients"))
            .unwrap_or_else(|| panic!("no {op} table: {t}"));
        for name in ["sqlite", "redis", "hdfs", "s3"] {
            assert!(header.contains(&format!(" {name} ops/s ")), "{header}");
        }
        let svg = std::fs::read_to_string(plots.join(format!("throughput-{op}.svg"))).unwrap();
        for name in ["sqlite", "redis", "hdfs", "s3"] {
            assert!(
                svg.contains(&format!(">\n{name}\n<")),
                "{op}: no {name} series"
            );
        }
    }
    // Latency per op at 20 clients (here the nearest level, 2).
    assert!(t.contains("Latency per operation at 20 clients"), "{t}");
    assert!(t.contains("hdfs (at 2) mean µs"), "{t}");
    let svg = std::fs::read_to_string(plots.join("latency-at-20.svg")).unwrap();
    for name in ["sqlite", "redis", "hdfs", "s3"] {
        assert!(
            svg.contains(&format!(">\n{name} (at 2)\n<")),
            "no {name} bar series"
        );
    }
    assert!(!hdfs_exists(&hdfs));
    assert!(s3_keys(&prefix).is_empty());
}
