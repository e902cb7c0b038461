//! The engine's setup in every results file: each engine's settings as the server has them
//! (read here through another connection, not through metabench), where the engine ran
//! (loopback for the test engines, in-process for SQLite) and whether it shared the client
//! threads' CPUs (against the server's `Cpus_allowed_list` in `/proc`); `compare` says
//! each difference in one line, and none between two runs of the same setup.

use crate::metabench;
use metabench_report::OpsResults;
use metabench_testkit::{fresh_database, output_text, Kind, RedisServer, Resp};
use std::path::{Path, PathBuf};

/// A short `ops` run of getattr on `meta`; its results file and what it printed.
fn ops_run(meta: &str, dir: &Path, name: &str, verbose: bool) -> (PathBuf, OpsResults, String) {
    let json = dir.join(format!("{name}.json"));
    let mut args = vec![
        "ops",
        "--meta",
        meta,
        "--ops",
        "getattr",
        "--iterations",
        "50",
        "--json",
        json.to_str().unwrap(),
    ];
    if verbose {
        args.insert(0, "-v");
    }
    let o = metabench(&args);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let run = OpsResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (json, run, text)
}

/// A Redis config value as another connection's `CONFIG GET` answers it.
fn config_get(redis: &RedisServer, name: &str) -> String {
    match redis.command(&["CONFIG", "GET", name]) {
        Resp::Array(Some(kv)) => match kv.get(1) {
            Some(Resp::Bulk(Some(v))) => String::from_utf8_lossy(v).into_owned(),
            other => panic!("CONFIG GET {name}: {other:?}"),
        },
        other => panic!("CONFIG GET {name}: {other:?}"),
    }
}

/// The CPUs `/proc/<pid>/status` allows (`Cpus_allowed_list`), as the kernel lists them.
fn cpus_allowed(pid: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_owned()
}

/// A kernel CPU list (`0-1,3`) as CPU numbers.
fn cpu_numbers(list: &str) -> Vec<usize> {
    list.split(',')
        .flat_map(|r| {
            let (a, b) = r.split_once('-').unwrap_or((r, r));
            a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()
        })
        .collect()
}

#[test]
fn redis_settings_are_the_servers_and_its_cpus_are_compared_with_the_clients() {
    let _phase = crate::phase(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start();
    // Not the defaults: a run that made them up would not match.
    for (name, value) in [("appendfsync", "always"), ("maxmemory", "123456789")] {
        assert!(matches!(
            redis.command(&["CONFIG", "SET", name, value]),
            Resp::Simple(_)
        ));
    }
    let (_, run, printed) = ops_run(&redis.url(2), dir.path(), "redis", true);
    let engine = &run.header.engine;
    let names = [
        "appendfsync",
        "appendonly",
        "io-threads",
        "maxmemory",
        "maxmemory-policy",
        "save",
    ];
    assert_eq!(
        engine
            .settings
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        names
    );
    for name in names {
        assert_eq!(engine.settings[name], config_get(&redis, name), "{name}");
    }
    assert_eq!(engine.settings["appendfsync"], "always");
    assert_eq!(engine.settings["maxmemory"], "123456789");
    assert_eq!(engine.location, "loopback");
    // The server's CPUs, as /proc says them, against the client threads' (bound, or this
    // test's, which the run inherits).
    let server = cpus_allowed(&redis.pid().to_string());
    let clients = match run.header.host.client_cpus.as_slice() {
        [] => cpus_allowed("self"),
        bound => metabench_report::cpu_list(bound),
    };
    let theirs = cpu_numbers(&server);
    let ours = cpu_numbers(&clients);
    let both = ours.iter().filter(|c| theirs.contains(c)).count();
    let word = match both {
        0 => "no",
        n if n == ours.len() => "yes",
        _ => "partly",
    };
    let sharing = &engine.cpu_sharing;
    assert!(sharing.starts_with(&format!("{word} (")), "{sharing}");
    assert!(
        sharing.contains(&format!(
            "redis-server on CPU {server}, the client threads on CPU {clients}"
        )),
        "{sharing}"
    );
    // -v prints them.
    assert!(
        printed.contains("engine: redis ") && printed.contains(", loopback; CPUs shared"),
        "{printed}"
    );
    assert!(
        printed.contains("engine settings: appendfsync=always appendonly="),
        "{printed}"
    );

    // Bound to one CPU of the two or more this test may use, the server keeps it and the
    // clients share none.
    let mine = cpu_numbers(&cpus_allowed("self"));
    if mine.len() > 1 {
        redis.bind_to_cpus(&mine[..1]);
        let (_, bound, _) = ops_run(&redis.url(2), dir.path(), "redis-bound", false);
        let sharing = &bound.header.engine.cpu_sharing;
        assert!(
            sharing.starts_with(&format!("no (redis-server on CPU {}, ", mine[0])),
            "{sharing}"
        );
        redis.bind_to_cpus(&mine);
    }
}

/// A user that may not run CONFIG (as on managed Redis services): what INFO says is
/// recorded, the rest as `unknown (<why>)`, none left out, none made up.
#[test]
fn redis_settings_config_refuses_are_unknown_with_the_reason() {
    let _phase = crate::phase(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start();
    assert!(matches!(
        redis.command(&[
            "ACL",
            "SETUSER",
            "noconfig",
            "on",
            ">noconfig-pw",
            "~*",
            "&*",
            "+@all",
            "-config",
        ]),
        Resp::Simple(_)
    ));
    let url = format!("redis://noconfig:noconfig-pw@127.0.0.1:{}/2", redis.port());
    let (_, run, _) = ops_run(&url, dir.path(), "redis-noconfig", false);
    let settings = &run.header.engine.settings;
    assert_eq!(settings.len(), 6, "{settings:?}");
    // INFO says these.
    assert_eq!(settings["appendonly"], "no");
    assert_eq!(settings["maxmemory"], config_get(&redis, "maxmemory"));
    assert_eq!(
        settings["maxmemory-policy"],
        config_get(&redis, "maxmemory-policy")
    );
    for name in ["appendfsync", "save", "io-threads"] {
        assert!(
            settings[name].starts_with("unknown (CONFIG GET refused: ")
                && settings[name].contains("no permissions to run the 'config|get' command"),
            "{name}: {}",
            settings[name]
        );
    }
}

/// The settings a SQL run records, each as another connection reads it.
fn sql_settings_match(kind: Kind, names: &[&str], ask: impl Fn(&str) -> String) -> OpsResults {
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_database(kind);
    if kind == Kind::Postgres {
        // This database's sessions commit with `local`: not the server's setting.
        db.query(&format!(
            "ALTER DATABASE \"{}\" SET synchronous_commit = 'local'",
            db.name()
        ));
    }
    let (_, run, _) = ops_run(db.url(), dir.path(), kind.name(), false);
    let settings = &run.header.engine.settings;
    assert_eq!(
        settings.keys().map(String::as_str).collect::<Vec<_>>(),
        names
    );
    for name in names {
        let sql = ask(name);
        assert_eq!(settings[*name], db.query(&sql)[0][0], "{name}");
    }
    assert_eq!(run.header.engine.location, "loopback");
    run
}

#[test]
fn postgres_settings_are_the_servers() {
    let _phase = crate::phase(module_path!());
    let run = sql_settings_match(
        Kind::Postgres,
        &[
            "fsync",
            "log_min_duration_statement",
            "log_statement",
            "max_connections",
            "shared_buffers",
            "shared_preload_libraries",
            "synchronous_commit",
        ],
        |name| format!("SHOW {name}"),
    );
    assert_eq!(run.header.engine.settings["synchronous_commit"], "local");
    // scripts/engines.sh starts the test server with these.
    assert_eq!(run.header.engine.settings["max_connections"], "300");
    assert_eq!(run.header.engine.settings["fsync"], "off");
    assert_eq!(run.header.engine.settings["log_statement"], "all");
    assert_eq!(
        run.header.engine.settings["shared_preload_libraries"],
        "pg_stat_statements"
    );
}

#[test]
fn mariadb_settings_are_the_servers() {
    let _phase = crate::phase(module_path!());
    let run = sql_settings_match(
        Kind::Mysql,
        &[
            "general_log",
            "innodb_buffer_pool_size",
            "innodb_flush_log_at_trx_commit",
            "max_connections",
            "performance_schema",
            "sync_binlog",
        ],
        |name| format!("SELECT @@{name}"),
    );
    assert!(
        run.header.engine.version.to_lowercase().contains("mariadb"),
        "{}",
        run.header.engine.version
    );
}

#[test]
fn sqlite_records_its_journal_mode_and_synchronous_and_runs_in_process() {
    let _phase = crate::phase(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_database(Kind::Sqlite);
    let (_, run, printed) = ops_run(db.url(), dir.path(), "sqlite", false);
    let engine = &run.header.engine;
    // WAL is a property of the file, read here by the sqlite3 shell; synchronous is each
    // connection's own, NORMAL as JuiceFS's SQLiteDriver.Open sets it.
    let journal = db.query("PRAGMA journal_mode");
    assert_eq!(engine.settings["journal_mode"], journal[0][0]);
    assert_eq!(engine.settings["journal_mode"], "wal");
    assert_eq!(engine.settings["synchronous"], "NORMAL");
    assert_eq!(engine.settings.len(), 2, "{:?}", engine.settings);
    assert_eq!(engine.location, "in-process");
    assert!(
        engine.cpu_sharing.starts_with("yes (in-process"),
        "{}",
        engine.cpu_sharing
    );
    // A plain run says it in one line.
    let line = printed
        .lines()
        .find(|l| l.starts_with("engine: "))
        .unwrap_or_else(|| panic!("no engine line:\n{printed}"));
    assert_eq!(
        line,
        "engine: in-process, CPUs shared with the clients: yes; 2 settings recorded: see \
         --verbose, the JSON or the report"
    );
}

/// `curl`'s answer from the test etcd's HTTP port (`data`: a POST of it).
fn etcd_http(path: &str, data: Option<&str>) -> String {
    let url = std::env::var("METABENCH_ETCD_URL").expect("METABENCH_ETCD_URL");
    let host = url.trim_start_matches("etcd://").trim_end_matches('/');
    let mut cmd = std::process::Command::new("curl");
    cmd.args(["-sS", "--fail", &format!("http://{host}{path}")]);
    if let Some(d) = data {
        cmd.args(["-X", "POST", "-d", d]);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", output_text(&o));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn etcd_records_its_version_quota_and_members() {
    let _phase = crate::phase(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let base = std::env::var("METABENCH_ETCD_URL").expect("METABENCH_ETCD_URL");
    let url = format!(
        "{}/{}",
        base.trim_end_matches('/'),
        metabench_testkit::unique_name("mb-setup")
    );
    let (_, run, _) = ops_run(&url, dir.path(), "etcd", false);
    let engine = &run.header.engine;
    // The version and the quota as etcd's HTTP endpoints say them.
    let version: serde_json::Value = serde_json::from_str(&etcd_http("/version", None)).unwrap();
    assert_eq!(
        engine.version,
        format!("etcd {}", version["etcdserver"].as_str().unwrap())
    );
    let quota = etcd_http("/metrics", None)
        .lines()
        .find_map(|l| l.strip_prefix("etcd_server_quota_backend_bytes "))
        .map(|v| v.trim().parse::<f64>().unwrap() as u64)
        .expect("the quota gauge");
    assert_eq!(engine.settings["quota-backend-bytes"], quota.to_string());
    let list: serde_json::Value =
        serde_json::from_str(&etcd_http("/v3/cluster/member/list", Some("{}"))).unwrap();
    let members = list["members"].as_array().unwrap();
    let each: Vec<String> = members
        .iter()
        .map(|m| {
            let urls: Vec<&str> = m["clientURLs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|u| u.as_str().unwrap())
                .collect();
            format!("{} ({})", m["name"].as_str().unwrap(), urls.join(" "))
        })
        .collect();
    assert_eq!(
        engine.settings["members"],
        format!("{}: {}", members.len(), each.join(", "))
    );
    assert_eq!(engine.location, "loopback");
}

#[test]
fn compare_says_each_setup_difference_and_none_between_equal_setups() {
    let _phase = crate::phase(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_database(Kind::Sqlite);
    let (base, _, _) = ops_run(db.url(), dir.path(), "base", false);
    let text = std::fs::read_to_string(&base).unwrap();
    let write = |name: &str, json: &serde_json::Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, serde_json::to_string(json).unwrap()).unwrap();
        path
    };
    let original: serde_json::Value = serde_json::from_str(&text).unwrap();
    let compare = |current: &Path| {
        let o = metabench(&["compare", base.to_str().unwrap(), current.to_str().unwrap()]);
        let t = output_text(&o);
        assert_eq!(o.status.code(), Some(0), "{t}");
        t.lines()
            .filter(|l| l.starts_with("Setup: "))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    // The same setup: no line.
    assert_eq!(
        compare(&write("same.json", &original)),
        Vec::<String>::new()
    );
    // A file written before the settings had their name (`durability`) reads the same.
    let mut older = original.clone();
    let engine = older["engine"].as_object_mut().unwrap();
    let settings = engine.remove("settings").unwrap();
    engine.insert("durability".into(), settings);
    assert_eq!(compare(&write("older.json", &older)), Vec::<String>::new());
    // One setting changed, and where it ran: a line each.
    let mut changed = original.clone();
    changed["engine"]["settings"]["synchronous"] = "FULL".into();
    changed["engine"]["location"] = "remote".into();
    assert_eq!(
        compare(&write("changed.json", &changed)),
        [
            "Setup: the engine's location differs: baseline in-process, current remote",
            "Setup: the engine's synchronous differs: baseline NORMAL, current FULL",
        ]
    );
    // The gate says them as notes.
    let changed_file = dir.path().join("changed.json");
    let o = metabench(&[
        "gate",
        "--baseline",
        base.to_str().unwrap(),
        "--current",
        changed_file.to_str().unwrap(),
        "--round-trips-only",
    ]);
    let t = output_text(&o);
    assert!(
        t.contains("note: the engine's synchronous differs: baseline NORMAL, current FULL"),
        "{t}"
    );
    // A setting only one of them records is said once, as not compared.
    let mut fewer = original.clone();
    let settings: &mut serde_json::Map<String, serde_json::Value> =
        fewer["engine"]["settings"].as_object_mut().unwrap();
    settings.remove("synchronous");
    let lines = compare(&write("fewer.json", &fewer));
    assert_eq!(
        lines,
        ["Setup: recorded by one run only, not compared: synchronous (baseline only)"]
    );
}
