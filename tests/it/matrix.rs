//! `metabench matrix`: the same plan on several engine configs, with unreachable engines
//! listed rather than dropped, and the shipped configs/engines/*.toml readable.

use crate::metabench;
use metabench_testkit::{fresh_database, output_text, Kind};
use std::path::Path;

fn config(dir: &Path, name: &str, meta: &str) -> String {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, format!("name = \"{name}\"\nmeta = \"{meta}\"\n")).unwrap();
    path.to_str().unwrap().to_owned()
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
    ];
    let out = d.join("results");
    let mut args = vec!["matrix"];
    args.extend(configs.iter().map(String::as_str));
    args.extend([
        "--out",
        out.to_str().unwrap(),
        "--format",
        "markdown",
        "--",
        "ops",
        "--iterations",
        "5",
        "--ops",
        "mkdir,getattr",
    ]);
    args.insert(4, expecting.to_str().unwrap());
    let o = metabench(&args);
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
    let out = d.join("results");
    let mut args = vec!["matrix"];
    args.extend(configs.iter().map(String::as_str));
    args.extend([
        "--out",
        out.to_str().unwrap(),
        "--",
        "sweep",
        "--ops",
        "getattr",
        "--conc",
        "1",
        "--duration",
        "60s",
    ]);
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
