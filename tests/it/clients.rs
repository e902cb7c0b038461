//! Thousands of clients from one process: every `mount` client registers its session
//! and all are removed at the end; an engine's connection limit and the process's
//! open-file limit are each said in one line.

use crate::metabench_cmd as metabench;
use metabench_report::SweepResults;
use metabench_testkit::{RedisServer, Resp};
use std::process::Stdio;
use std::time::Duration;

/// An integer reply of the test's own Redis (`ZCARD`, `HLEN`, `GET` of a counter).
fn number(redis: &RedisServer, args: &[&str]) -> i64 {
    match redis.command(args) {
        Resp::Integer(n) => n,
        Resp::Bulk(Some(b)) => String::from_utf8(b).unwrap().parse().unwrap(),
        Resp::Bulk(None) => 0,
        other => panic!("{args:?} answered {other:?}"),
    }
}

/// The issue's proof: `sweep --conc 2000` under the `mount` profile registers 2,000
/// sessions (the engine lists them in `allSessions` and `sessionInfos` while the level
/// runs) and removes every one at the end, on a private Redis whose `maxclients` takes
/// them.
#[test]
fn two_thousand_mount_clients_register_their_sessions_and_remove_them_all() {
    let _phase = crate::phase(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start_with(&["--maxclients", "4000"]);
    // Database 0, which the test's own commands read; a volume of JuiceFS's own making.
    let url = redis.url(0);
    metabench_testkit::juicefs_format(&url, "clients", &dir.path().join("bucket"));
    let taken_before = number(&redis, &["GET", "nextsession"]);
    let json = dir.path().join("c2000.json");
    let mut child = metabench()
        .args(["sweep", "--meta", &url, "--existing", "--conc", "2000"])
        .args(["--profile", "mount", "--ops", "getattr"])
        .args(["--warmup", "0", "--duration", "200ms", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The sessions stay registered from their level's opening to the run's end: watch
    // the engine's lists while the run lasts.
    let (mut listed, mut infos) = (0, 0);
    while child.try_wait().unwrap().is_none() {
        listed = listed.max(number(&redis, &["ZCARD", "allSessions"]));
        infos = infos.max(number(&redis, &["HLEN", "sessionInfos"]));
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}");
    assert_eq!((listed, infos), (2000, 2000), "sessions listed at once");
    assert_eq!(number(&redis, &["GET", "nextsession"]) - taken_before, 2000);
    // All removed: no record left in either list.
    assert_eq!(number(&redis, &["ZCARD", "allSessions"]), 0);
    assert_eq!(number(&redis, &["HLEN", "sessionInfos"]), 0);
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let level = &run.levels[0];
    assert_eq!(level.clients, 2000);
    assert!(!level.partial, "{said}");
    let getattr = &level.ops[0];
    assert!(
        getattr.latency.count > 0 && getattr.errors.is_empty(),
        "{getattr:?}"
    );
    // The mount profile's background work is reported per level.
    assert!(level.background.is_some(), "{level:?}");
    crate::assert_left_clean(&url);
}

/// A level beyond Redis's `maxclients` is refused in one line that names the setting,
/// before any of its sessions is tried: no wall of connection errors.
#[test]
fn a_level_beyond_maxclients_is_refused_in_one_line_naming_it() {
    let _phase = crate::phase(module_path!());
    let redis = RedisServer::start_with(&["--maxclients", "50"]);
    let url = redis.url(1);
    let o = metabench()
        .args(["sweep", "--meta", &url, "--conc", "100", "--ops", "getattr"])
        .args(["--warmup", "0", "--duration", "200ms"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{said}");
    let errors: Vec<&str> = said.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{said}");
    assert!(
        errors[0].contains("redis maxclients is 50")
            && errors[0].contains("raise maxclients to at least 10"),
        "{said}"
    );
    // Nothing left behind: the volume metabench formatted is gone.
    assert_eq!(number(&redis, &["DBSIZE"]), 0, "{said}");
    // A sweep whose later levels pass the limit measures those below it and says why
    // it stopped, in the same words.
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("capped.json");
    let o = metabench()
        .args([
            "sweep",
            "--meta",
            &url,
            "--conc",
            "10,20,100",
            "--ops",
            "getattr",
        ])
        .args(["--warmup", "0", "--duration", "200ms", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}");
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        run.levels.iter().map(|l| l.clients).collect::<Vec<_>>(),
        [10, 20]
    );
    let why = run.stopped_early.as_deref().unwrap_or_default();
    assert!(why.contains("redis maxclients is 50"), "{why}");
}

/// A sweep whose clients need more open files than the hard limit allows is refused in
/// one line naming RLIMIT_NOFILE and by how much to raise it, before anything is written
/// (the engine is never reached: nothing listens on its port).
#[test]
fn a_sweep_beyond_the_open_file_limit_says_which_limit_to_raise() {
    let _phase = crate::phase(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("never.json");
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -Sn 128 && ulimit -Hn 256 && exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_metabench"))
        .args(["sweep", "--meta", "redis://127.0.0.1:1/1", "--conc", "1000"])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    // 1,000 connections and 64 of the process's own, against a hard limit of 256 (the
    // soft one was raised to it).
    assert!(
        said.contains("need about 1064 open files")
            && said.contains("may open 256")
            && said.contains("RLIMIT_NOFILE")
            && said.contains("raise the hard limit by 808"),
        "{said}"
    );
    assert!(!json.exists());
}
