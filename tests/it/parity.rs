//! `metabench parity` end to end: the real juicefs client mounted on SQLite and Redis,
//! every phase run both ways, and afterwards no mount and no temporary directory left —
//! also when the run is interrupted with SIGINT while mounted.

use metabench_testkit::{juicefs_bin, temp_dir, RedisServer, Resp};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn mounted(mp: &Path) -> bool {
    let want = mp.to_string_lossy().into_owned();
    std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(want.as_str()))
}

/// A parity run with its own TMPDIR (so every temporary directory it makes is visible)
/// and mount point.
struct Run {
    dir: tempfile::TempDir,
    tmp: PathBuf,
    mountpoint: PathBuf,
    json: PathBuf,
}

impl Run {
    fn new() -> Run {
        let dir = temp_dir();
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        Run {
            mountpoint: dir.path().join("mnt"),
            json: dir.path().join("parity.json"),
            tmp,
            dir,
        }
    }

    fn spawn(&self, meta: &str, extra: &[&str]) -> Child {
        Command::new(env!("CARGO_BIN_EXE_metabench"))
            .env("TMPDIR", &self.tmp)
            .env("METABENCH_JUICEFS", juicefs_bin())
            .env_remove("META_PASSWORD")
            .env_remove("REDIS_PASSWORD")
            .args(["parity", "--meta", meta, "--tasks", "2"])
            .args(if extra.contains(&"--scale") {
                &[][..]
            } else {
                &["--scale", "small"][..]
            })
            .arg("--mountpoint")
            .arg(&self.mountpoint)
            .arg("--json")
            .arg(&self.json)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Runs to the end, asserts it succeeded, and returns its stdout.
    fn succeed(&self, meta: &str, extra: &[&str]) -> String {
        let out = self.spawn(meta, extra).wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "parity failed: {stderr}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Nothing of the run is left: no mount, no mount point, no temporary directory.
    fn assert_clean(&self) {
        assert!(!mounted(&self.mountpoint), "still mounted");
        assert!(!self.mountpoint.exists(), "mount point left behind");
        let left: Vec<_> = std::fs::read_dir(&self.tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "temporary files left: {left:?}");
    }
}

/// Runs to the end while watching /proc/mounts; returns the report and whether the mount
/// was seen.
fn run_to_end(run: &Run, meta: &str) -> (serde_json::Value, bool) {
    let seen = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (seen, done, mp) = (seen.clone(), done.clone(), run.mountpoint.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if mounted(&mp) {
                    seen.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let stdout = run.succeed(meta, &[]);
    done.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    assert!(stdout.contains("native/mount"), "{stdout}");
    // Both sides model a default mount, and the output names the client and its settings.
    assert!(stdout.contains("client profile: mount"), "{stdout}");
    assert!(
        stdout.contains(
            "client settings: background-work between phases, client-cache on, \
             session registered, skip-dir-mtime 100ms, skip-dir-nlink 20"
        ),
        "{stdout}"
    );
    let report = serde_json::from_str(&std::fs::read_to_string(&run.json).unwrap()).unwrap();
    (report, seen.load(Ordering::Relaxed))
}

fn check_report(r: &serde_json::Value) {
    assert_eq!(
        (&r["kind"], &r["schema_version"]),
        (&"parity".into(), &2.into())
    );
    assert!(
        r["host"]["cores"].as_u64().unwrap() >= 1,
        "parity results carry the run header"
    );
    assert_eq!((&r["tasks"], &r["io_tasks"]), (&2.into(), &2.into()));
    let trees = r["trees"].as_array().unwrap();
    let names: Vec<&str> = trees.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "metadata",
            "metadata-shared",
            "small-files",
            "small-files-shared"
        ]
    );
    // Every phase ran natively both ways: 2 clients, and 1 client × 2 threads.
    for t in trees {
        for p in t["phases"].as_array().unwrap() {
            assert!(p["native_threads_ops_per_s"].as_f64().unwrap() > 0.0, "{p}");
        }
    }
    // metadata: -b 3 -z 1 -I 10 -u on 2 tasks: 2 trees of 4 directories, 80 items.
    let md = &trees[0];
    assert_eq!(md["mdtest_args"], "-b 3 -z 1 -I 10 -u");
    let phases: Vec<(&str, u64)> = md["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["phase"].as_str().unwrap(), p["items"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        phases,
        [
            ("Tree creation", 8),
            ("Directory creation", 80),
            ("Directory stat", 80),
            ("Directory removal", 80),
            ("File creation", 80),
            ("File stat", 80),
            ("File read", 80),
            ("File removal", 80),
            ("Tree removal", 8),
        ]
    );
    for p in md["phases"].as_array().unwrap() {
        assert!(p["native_ops_per_s"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["mount_ops_per_s"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["ratio"].as_f64().unwrap() > 0.0, "{p}");
    }
    // juicefs mdtest cannot run -u: the docs' trees say so, and their shared, files-only
    // twins carry its column, parsed from the real binary's log, for the two phases it
    // times, with the items the other sides made.
    assert!(
        md["go_missing"]
            .as_str()
            .unwrap()
            .contains("see metadata-shared"),
        "{md}"
    );
    assert!(md["phases"][4]["go_ops_per_s"].is_null());
    let mds = &trees[1];
    assert_eq!(mds["mdtest_args"], "-F -b 3 -z 1 -I 10");
    assert!(mds["go_missing"].is_null(), "{mds}");
    let rows: Vec<(&str, u64, bool)> = mds["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["phase"].as_str().unwrap(),
                p["items"].as_u64().unwrap(),
                p["go_ops_per_s"].as_f64().is_some_and(|g| g > 0.0),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("Tree creation", 4, true),
            ("File creation", 80, true),
            ("File stat", 80, false),
            ("File read", 80, false),
            ("File removal", 80, false),
            ("Tree removal", 4, false),
        ]
    );
    assert_eq!(
        mds["go_mdtest"]["phases"],
        serde_json::json!([
            ["tree_creation", 4, mds["phases"][0]["go_ops_per_s"]],
            ["file_creation", 80, mds["phases"][1]["go_ops_per_s"]]
        ])
    );
    // small files: -F -z 0 -I 20 -w 4096 -u on 2 tasks.
    let sf = &trees[2];
    assert_eq!(sf["phases"].as_array().unwrap().len(), 6);
    assert_eq!(sf["phases"][1]["items"], 40);
    let sfs = &trees[3];
    assert_eq!(sfs["mdtest_args"], "-F -z 0 -I 20 -w 4096");
    assert_eq!(sfs["go_mdtest"]["phases"][1][1], 40);
    let fio: Vec<&str> = r["fio"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(fio, ["big-write", "big-read", "small-write", "small-read"]);
    for f in r["fio"].as_array().unwrap() {
        assert!(f["bw_bytes_per_s"].as_f64().unwrap() > 0.0, "{f}");
        assert_eq!(f["jobs"], 2);
    }
    assert_eq!(r["bench"]["rows"].as_array().unwrap().len(), 12);
}

#[test]
fn parity_on_sqlite_mounts_runs_everything_and_cleans_up() {
    let _phase = crate::phase(module_path!());
    let run = Run::new();
    let db = run.dir.path().join("meta.db");
    let meta = format!("sqlite3://{}", db.display());
    let (report, seen) = run_to_end(&run, &meta);
    assert!(seen, "the mount never appeared in /proc/mounts");
    check_report(&report);
    assert_eq!(report["engine"]["kind"], "sqlite");
    // The docs did not run SQLite: no published column.
    assert!(report["docs_engine"].is_null(), "{}", report["docs_engine"]);
    run.assert_clean();
    // The volume metabench formatted is gone again.
    let tables = Command::new("sqlite3")
        .arg(&db)
        .arg(".tables")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&tables.stdout).trim(), "");
}

#[test]
fn parity_on_redis_mounts_runs_everything_and_cleans_up() {
    let _phase = crate::phase(module_path!());
    let redis = RedisServer::start();
    // The docs' Redis-Always setup: the AOF on, fsync'd at every write.
    for (name, value) in [("appendonly", "yes"), ("appendfsync", "always")] {
        let set = redis.command(&["CONFIG", "SET", name, value]);
        assert!(matches!(set, Resp::Simple(_)), "{set:?}");
    }
    let run = Run::new();
    let (report, seen) = run_to_end(&run, &redis.url(1));
    assert!(seen, "the mount never appeared in /proc/mounts");
    check_report(&report);
    assert_eq!(report["engine"]["kind"], "redis");
    // The docs' published rates of that setup sit beside the docs' own trees, as
    // multiples of Redis-Always (1 here); the shared twins, which the docs did not run,
    // have none.
    assert_eq!(report["docs_engine"], "Redis-Always");
    assert!(report["docs_source"]
        .as_str()
        .unwrap()
        .contains("Metadata Engines Benchmark"));
    let metadata_file_creation = &report["trees"][0]["phases"][4];
    assert_eq!(metadata_file_creation["phase"], "File creation");
    assert_eq!(metadata_file_creation["docs_ops_per_s"], 5472.628);
    assert_eq!(metadata_file_creation["docs_vs_redis_always"], 1.0);
    assert!(report["trees"][1]["phases"][1]["docs_ops_per_s"].is_null());
    assert_eq!(report["trees"][2]["phases"][1]["docs_ops_per_s"], 295.067);
    run.assert_clean();
    let keys = redis.command(&["DBSIZE"]);
    assert!(matches!(keys, Resp::Integer(0)), "keys left: {keys:?}");
}

/// `metabench report` sets parity runs on several engines side by side as the docs do:
/// each phase's columns as multiples of the Redis-Always run (picked by its durability,
/// not its place on the command line), beside the docs' published multiples. Bad parity
/// files get one line and exit 2.
#[test]
fn report_sets_parity_runs_beside_redis_always_and_the_docs() {
    let _phase = crate::phase(module_path!());
    let redis = RedisServer::start();
    for (name, value) in [("appendonly", "yes"), ("appendfsync", "always")] {
        let set = redis.command(&["CONFIG", "SET", name, value]);
        assert!(matches!(set, Resp::Simple(_)), "{set:?}");
    }
    let (lite, always) = (Run::new(), Run::new());
    let db = lite.dir.path().join("meta.db");
    lite.succeed(
        &format!("sqlite3://{}", db.display()),
        &["--suites", "mdtest"],
    );
    always.succeed(&redis.url(1), &["--suites", "mdtest"]);
    let dir = temp_dir();
    let (lite_json, always_json) = (dir.path().join("lite.json"), dir.path().join("always.json"));
    std::fs::copy(&lite.json, &lite_json).unwrap();
    std::fs::copy(&always.json, &always_json).unwrap();
    let out = crate::metabench(&[
        "report",
        lite_json.to_str().unwrap(),
        always_json.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    let csv = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{csv}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each table's block, its last row ending in a newline as the others.
    let blocks: Vec<String> = csv.split("\n\n").map(|b| format!("{b}\n")).collect();
    let runs = blocks
        .iter()
        .find(|b| b.starts_with("# Parity runs"))
        .unwrap();
    assert!(runs.contains("\nlite,sqlite,"), "{runs}");
    assert!(runs.contains(",–,\"small, 2 tasks\","), "{runs}");
    assert!(runs.contains(",Redis-Always,\"small, 2 tasks\","), "{runs}");
    let metadata = blocks
        .iter()
        .find(|b| b.starts_with("# Parity, mdtest -b 3 -z 1 -I 10 -u (metadata)"))
        .unwrap();
    assert!(
        metadata.contains("relative to always, the Redis-Always run"),
        "{metadata}"
    );
    // Every cell is the file's rate, and SQLite's its multiple of Redis's.
    let json = |p: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let (l, a) = (json(&lite_json), json(&always_json));
    let rows = |v: &serde_json::Value| v["trees"][0]["phases"].as_array().unwrap().clone();
    let (lite_rows, always_rows) = (rows(&l), rows(&a));
    assert_eq!(lite_rows.len(), 9);
    for (lr, ar) in lite_rows.iter().zip(&always_rows) {
        let phase = lr["phase"].as_str().unwrap();
        let mut want_lite = vec![phase.to_owned(), "lite".to_owned()];
        let mut want_always = vec![phase.to_owned(), "always".to_owned()];
        for key in [
            "native_ops_per_s",
            "native_threads_ops_per_s",
            "go_ops_per_s",
            "mount_ops_per_s",
        ] {
            match (lr[key].as_f64(), ar[key].as_f64()) {
                (Some(x), Some(base)) => {
                    want_lite.push(format!("{x:.0} (×{:.2})", x / base));
                    want_always.push(format!("{base:.0}"));
                }
                (x, base) => {
                    assert!(x.is_none() && base.is_none(), "{phase} {key}");
                    want_lite.push("–".into());
                    want_always.push("–".into());
                }
            }
        }
        want_lite.push("–".into());
        want_always.push(match ar["docs_ops_per_s"].as_f64() {
            Some(rate) => format!("{rate:.0} (×1.00)"),
            None => "–".into(),
        });
        for want in [want_lite, want_always] {
            let line = format!("\n{}\n", want.join(","));
            assert!(metadata.contains(&line), "no {line:?} in\n{metadata}");
        }
    }
    assert!(metadata.contains("\nFile creation,always,"), "{metadata}");
    assert!(metadata.contains(",5473 (×1.00)\n"), "{metadata}");
    let notes = blocks
        .iter()
        .find(|b| b.starts_with("# Parity notes"))
        .unwrap();
    assert!(notes.contains("the docs ran no setup like lite"), "{notes}");
    assert!(notes.contains("Metadata Engines Benchmark"), "{notes}");

    // An older layout, and a field this metabench does not write, are refused in one line.
    let mut old = a.clone();
    old["schema_version"] = 1.into();
    let mut odd = a;
    odd["trees"][0]["phases"][0]["surprise"] = 1.into();
    for (name, v, want) in [
        (
            "old.json",
            old,
            "results schema version 1 is older than this metabench reads (2)",
        ),
        (
            "odd.json",
            odd,
            "unknown field `trees[0].phases[0].surprise`",
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, v.to_string()).unwrap();
        let out = crate::metabench(&["report", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(want), "{err}");
    }
    lite.assert_clean();
    always.assert_clean();
}

/// `--suites objbench` runs `juicefs objbench` on the volume's object store (here the
/// private `file` bucket) and puts both its tables into the report; objbench's own
/// prefix is gone from the bucket afterwards.
#[test]
fn objbench_reports_the_object_store_under_the_volume() {
    let _phase = crate::phase(module_path!());
    let run = Run::new();
    let db = run.dir.path().join("meta.db");
    let bucket = run.dir.path().join("bucket");
    let meta = format!("sqlite3://{}", db.display());
    let stdout = run.succeed(
        &meta,
        &[
            "--suites",
            "objbench",
            "--io-tasks",
            "1",
            "--bucket",
            &format!("{}/", bucket.display()),
        ],
    );
    assert!(stdout.contains("juicefs objbench on file "), "{stdout}");
    assert!(stdout.contains("put small objects"), "{stdout}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run.json).unwrap()).unwrap();
    let o = &r["objbench"];
    // --io-tasks sets objbench's threads apart from --tasks.
    assert_eq!((&r["tasks"], &r["io_tasks"]), (&2.into(), &1.into()));
    assert!(
        o["params"].as_str().unwrap().contains("NumThreads: 1"),
        "{o}"
    );
    let perf = o["perf"].as_array().unwrap();
    assert!(perf.len() >= 8, "{o}");
    for p in perf {
        assert!(p["value"].as_f64().unwrap() > 0.0, "{p}");
    }
    let functions = o["functions"].as_array().unwrap();
    assert!(
        functions
            .iter()
            .any(|f| f["test"] == "put an object" && f["result"] == "pass"),
        "{o}"
    );
    assert!(
        r["trees"].as_array().unwrap().is_empty(),
        "only the suite asked for"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&bucket)
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(
        leftovers
            .iter()
            .all(|n| !n.to_string_lossy().starts_with("__juicefs_benchmark")),
        "{leftovers:?}"
    );
    run.assert_clean();
}

#[test]
fn sigint_while_mounted_unmounts_and_exits_130() {
    let _phase = crate::phase(module_path!());
    let run = Run::new();
    let db = run.dir.path().join("meta.db");
    let meta = format!("sqlite3://{}", db.display());
    // fio at docs scale keeps the mount busy long enough to be interrupted.
    let mut child = run.spawn(&meta, &["--suites", "fio", "--scale", "docs"]);
    let t0 = Instant::now();
    while !mounted(&run.mountpoint) {
        assert!(t0.elapsed() < Duration::from_secs(60), "never mounted");
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "exited before mounting: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    run.assert_clean();
    assert!(!run.json.exists(), "no report after an interrupted run");
    // fio forks its jobs: none of them outlives the run.
    let t0 = Instant::now();
    while !processes_using(&run.mountpoint).is_empty() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(processes_using(&run.mountpoint), Vec::<String>::new());
}

#[test]
fn parity_inside_an_existing_volume_leaves_it_as_it_was() {
    let _phase = crate::phase(module_path!());
    let run = Run::new();
    let db = run.dir.path().join("meta.db");
    let meta = format!("sqlite3://{}", db.display());
    let bucket = run.dir.path().join("bucket");
    metabench_testkit::juicefs_format_with(
        &meta,
        "parity-existing",
        &bucket,
        &["--trash-days", "0"],
    );
    let count = |sql: &str| {
        let o = Command::new("sqlite3").arg(&db).arg(sql).output().unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    };
    let nodes_before = count("select count(*) from jfs_node");
    run.succeed(&meta, &["--existing", "--suites", "mdtest,fio"]);
    run.assert_clean();
    // The volume is still there, with nothing of the run left in it.
    assert_eq!(count("select name from jfs_setting"), "format");
    assert_eq!(count("select count(*) from jfs_edge"), "0");
    assert_eq!(count("select count(*) from jfs_node"), nodes_before);
}

#[test]
fn sigint_during_the_native_phases_cleans_up_and_exits_130() {
    let _phase = crate::phase(module_path!());
    let run = Run::new();
    let db = run.dir.path().join("meta.db");
    let meta = format!("sqlite3://{}", db.display());
    let mut child = run.spawn(&meta, &["--suites", "mdtest", "--scale", "docs"]);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(child.try_wait().unwrap().is_none(), "finished too early");
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    run.assert_clean();
    let tables = Command::new("sqlite3")
        .arg(&db)
        .arg(".tables")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&tables.stdout).trim(), "");
}

/// The command lines of the processes that name `path` in their arguments.
fn processes_using(path: &Path) -> Vec<String> {
    let needle = path.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&needle))
        .collect()
}
