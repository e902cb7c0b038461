//! The testkit against the real engines of `scripts/test.sh` and the real juicefs binary.

use metabench_testkit::*;
use std::net::TcpStream;

#[test]
fn redis_server_starts_answers_and_stops() {
    let server = RedisServer::start();
    let (port, pid) = (server.port(), server.pid());
    assert_eq!(
        server.url(3),
        format!("redis://:{PASSWORD}@127.0.0.1:{port}/3")
    );
    assert_eq!(server.password(), PASSWORD);
    server.reset_stats();
    let before = server.commandstats();
    assert_eq!(
        server.command(&["SET", "k", "v"]),
        Resp::Simple("OK".into())
    );
    assert_eq!(
        server.command(&["GET", "k"]),
        Resp::Bulk(Some(b"v".to_vec()))
    );
    assert!(matches!(server.command(&["NOPE"]), Resp::Error(_)));
    // 64 databases.
    assert_eq!(server.command(&["SELECT", "63"]), Resp::Simple("OK".into()));
    let after = server.commandstats();
    let delta = |c: &str| after.get(c).copied().unwrap_or(0) - before.get(c).copied().unwrap_or(0);
    assert_eq!((delta("set"), delta("get"), delta("select")), (1, 1, 1));
    // No persistence configured.
    match server.command(&["CONFIG", "GET", "save"]) {
        Resp::Array(Some(v)) => assert_eq!(v[1], Resp::Bulk(Some(Vec::new()))),
        other => panic!("{other:?}"),
    }
    drop(server);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| s.contains(") Z "))
                .unwrap_or(true),
        "redis-server {pid} still runs"
    );
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn fresh_mysql_database_is_created_and_dropped() {
    let db = fresh_database(Kind::Mysql);
    let name = db.name().to_owned();
    assert!(name.starts_with("mb_"));
    assert!(db.url().starts_with("mysql://metabench:"));
    assert!(db.url().ends_with(&format!(")/{name}")));
    assert_eq!(db.query("SELECT DATABASE()"), vec![vec![name.clone()]]);
    db.query("CREATE TABLE t (a INT, b VARBINARY(10))");
    db.query("INSERT INTO t VALUES (1, 'x\\ty')");
    assert_eq!(db.query("SELECT a, b FROM t"), vec![vec!["1", "x\ty"]]);

    // The general log, per connection.
    mysql_general_log_enable();
    let out = db.query("SELECT CONNECTION_ID(); SELECT 'marker-general-log'");
    let id: u64 = out[0][0].parse().unwrap();
    let log = mysql_general_log(id);
    assert!(
        log.iter()
            .any(|(c, a)| c == "Query" && a == "SELECT 'marker-general-log'"),
        "{log:?}"
    );

    drop(db);
    let other = fresh_database(Kind::Mysql);
    let left = other.query(&format!("SHOW DATABASES LIKE '{name}'"));
    assert!(left.is_empty(), "{name} was not dropped");
}

#[test]
fn fresh_postgres_database_is_created_dropped_and_logged() {
    let db = fresh_database(Kind::Postgres);
    let name = db.name().to_owned();
    assert!(db.url().starts_with("postgres://metabench:"));
    assert!(db.url().ends_with(&format!("/{name}?sslmode=disable")));
    assert_eq!(
        db.query("SELECT current_database()"),
        vec![vec![name.clone()]]
    );
    let mark = pg_log_position();
    let pid: u32 = db.query("SELECT pg_backend_pid()")[0][0].parse().unwrap();
    db.query("SELECT 'marker-pg-log'");
    let all = pg_statements(&name, None);
    assert!(
        all.contains(&"SELECT 'marker-pg-log'".to_owned()),
        "{all:?}"
    );
    assert_eq!(
        pg_statements_since(mark, &name, Some(pid)),
        vec!["SELECT pg_backend_pid()".to_owned()]
    );
    assert!(pg_statements_since(mark, &name, Some(u32::MAX)).is_empty());
    drop(db);
    let other = fresh_database(Kind::Postgres);
    let left = other.query(&format!(
        "SELECT count(*) FROM pg_database WHERE datname = '{name}'"
    ));
    assert_eq!(left, vec![vec!["0"]]);
}

#[test]
fn fresh_sqlite_and_redis_databases() {
    let db = fresh_database(Kind::Sqlite);
    let path = db.sqlite_path().unwrap().to_owned();
    assert_eq!(db.url(), format!("sqlite3://{}", path.display()));
    assert!(db.url().starts_with("sqlite3:///"));
    db.query("CREATE TABLE t (a INTEGER)");
    assert!(path.exists());
    drop(db);
    assert!(!path.exists());

    let r = fresh_database(Kind::Redis);
    let server = r.redis().unwrap();
    assert_eq!(r.url(), server.url(1));
}

/// format -> dump -> mdtest -> dump -> fsck with the real juicefs on one engine.
fn juicefs_oracle(kind: Kind) {
    let db = fresh_database(kind);
    let bucket = temp_dir();
    let volume = db.name().replace('_', "-");
    juicefs_format(db.url(), &volume, bucket.path());

    let dump = juicefs_dump(db.url());
    assert_eq!(dump["Setting"]["Name"], volume.as_str());
    let tree = dump_tree(&dump);
    assert_eq!(tree.len(), 1, "{tree:?}");
    let root = &tree["/"];
    assert_eq!(
        (root.inode, root.typ.as_str(), root.nlink),
        (1, "directory", 2)
    );

    // JuiceFS 1.4.2 on every engine: a fresh volume fails fsck, as format writes no
    // dir-stat row for the root (the first entry made in / writes it).
    let fresh = juicefs_fsck(db.url());
    let problems = fsck_problems(&fresh);
    assert!(
        !fresh.status.success(),
        "{kind:?}: fresh volume passed fsck"
    );
    let root_stat_missing = problems
        .iter()
        .any(|p| p.contains("usage stat of / is missing"));
    assert!(root_stat_missing, "{kind:?}: {problems:?}");

    let out = juicefs_mdtest(
        db.url(),
        "/mdt",
        &["--dirs", "2", "--depth", "2", "--files", "3"],
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("Created 21 files"));

    let tree = dump_tree(&juicefs_dump(db.url()));
    let dirs = tree.values().filter(|n| n.typ == "directory").count();
    let files = tree.values().filter(|n| n.typ == "regular").count();
    // root, /mdt, /mdt/test-dir.0-0 and the 7 mdtest_tree.* directories holding the files
    assert_eq!(
        (dirs, files),
        (10, 21),
        "{:?}",
        tree.keys().collect::<Vec<_>>()
    );
    assert_eq!(tree["/mdt"].nlink, 3);
    assert!(tree.contains_key("/mdt/test-dir.0-0/mdtest_tree.0/file.mdtest.0.0"));

    let fsck = juicefs_fsck(db.url());
    assert!(
        fsck.status.success(),
        "fsck failed: {:?}",
        fsck_problems(&fsck)
    );
    assert!(
        fsck_problems(&fsck).is_empty(),
        "{:?}",
        fsck_problems(&fsck)
    );
}

/// One `#[test]` of [`juicefs_oracle`] per engine.
macro_rules! juicefs_oracle_on {
    ($($test:ident => $kind:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                juicefs_oracle(Kind::$kind);
            }
        )*
    };
}

juicefs_oracle_on!(
    juicefs_oracle_on_sqlite => Sqlite,
    juicefs_oracle_on_redis => Redis,
    juicefs_oracle_on_mysql => Mysql,
    juicefs_oracle_on_postgres => Postgres,
);

#[test]
fn juicefs_load_round_trips_a_dump() {
    let src = fresh_database(Kind::Sqlite);
    let bucket = temp_dir();
    juicefs_format(src.url(), "load-src", bucket.path());
    juicefs_mdtest(
        src.url(),
        "/x",
        &["--dirs", "1", "--depth", "1", "--files", "2"],
    );
    let dump = juicefs_dump(src.url());
    let dst = fresh_database(Kind::Sqlite);
    juicefs_load(dst.url(), &dump);
    let a = dump_tree(&dump);
    let b = dump_tree(&juicefs_dump(dst.url()));
    assert_eq!(a, b);
}

#[test]
fn juicefs_version_is_1_4() {
    let out = juicefs(&["version"]);
    assert!(out.status.success());
    let v = String::from_utf8_lossy(&out.stdout);
    assert!(v.contains("version 1.4."), "{v}");
}
