//! Probe, format, destroy, connection errors and server facts of the SQL engines, on
//! MariaDB, PostgreSQL and SQLite: a foreign database is never written to, the tables
//! metabench creates are the ones `juicefs format` 1.4.2 creates (compared with the
//! server's own description of them), and errors never show the password.

use crate::sql_common;

use metabench_engine::sql::SqlEngine;
use metabench_engine::{Engine, MetaError, MetaUrl, Telemetry, VolumeState};
use metabench_schema::ROOT_INODE;
use metabench_testkit::{fresh_database, Kind, TestDb};
use sql_common::{engine, test_format};

fn tables(db: &TestDb) -> Vec<String> {
    let sql = match db.kind() {
        Kind::Mysql => "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY 1",
        Kind::Postgres => "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
        _ => "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY 1",
    };
    db.query(sql).into_iter().map(|r| r[0].clone()).collect()
}

/// What the server says about the tables after format, in the form the testdata holds
/// for juicefs 1.4.2 (same MariaDB 10.11 / PostgreSQL 15 / SQLite).
fn server_schema(db: &TestDb) -> Vec<String> {
    match db.kind() {
        Kind::Mysql => tables(db)
            .iter()
            .map(|t| db.query(&format!("SHOW CREATE TABLE `{t}`"))[0][1].clone())
            .collect(),
        Kind::Postgres => {
            let mut out: Vec<String> = db
                .query(
                    "SELECT table_name||'|'||column_name||'|'||data_type||'|'||coalesce(character_maximum_length::text,'')||'|'||coalesce(column_default,'')||'|'||is_nullable FROM information_schema.columns WHERE table_schema='public' ORDER BY table_name, ordinal_position",
                )
                .into_iter()
                .map(|r| r[0].clone())
                .collect();
            out.extend(
                db.query("SELECT indexname||'|'||indexdef FROM pg_indexes WHERE schemaname='public' ORDER BY indexname")
                    .into_iter()
                    .map(|r| r[0].clone()),
            );
            out
        }
        _ => db
            .query("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")
            .into_iter()
            .map(|r| r.join("\t"))
            .collect(),
    }
}

fn golden_schema(kind: Kind) -> Vec<String> {
    let t = match kind {
        Kind::Mysql => include_str!("../../../schema/testdata/mysql_show_create_1.4.2.txt"),
        Kind::Postgres => include_str!("../../../schema/testdata/pg_catalog_1.4.2.txt"),
        _ => include_str!("../../../schema/testdata/sqlite_format_1.4.2.txt"),
    };
    match kind {
        Kind::Mysql => t
            .split("\n;\n")
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        Kind::Postgres => t.lines().map(str::to_owned).collect(),
        _ => t
            .lines()
            .filter(|l| l.starts_with("CREATE"))
            .map(|l| l.trim_end_matches(';').to_owned())
            .collect(),
    }
}

async fn format_probe_destroy(kind: Kind) {
    let db = fresh_database(kind);
    let e = engine(&db).await;
    assert_eq!(e.probe().await.unwrap(), VolumeState::Empty);
    if let Some(p) = db.sqlite_path() {
        assert!(!p.exists(), "probe created the SQLite file");
    }
    let f = test_format("/tmp/metabench-unused/");
    e.format(&f).await.unwrap();
    match e.probe().await.unwrap() {
        VolumeState::Volume(v) => assert_eq!(*v, f),
        other => panic!("{other:?}"),
    }
    // the tables as juicefs creates them, described by the server itself
    let mut ours = server_schema(&db);
    let mut golden = golden_schema(kind);
    if kind == Kind::Mysql {
        ours.sort();
        golden.sort();
    }
    assert_eq!(ours, golden);
    // the rows of doInit
    let counters = db.query("SELECT name, value FROM jfs_counter ORDER BY name");
    assert_eq!(
        counters,
        [
            ("nextChunk", "1"),
            ("nextCleanupSlices", "0"),
            ("nextInode", "2"),
            ("nextSession", "0"),
            ("totalInodes", "0"),
            ("usedSpace", "0")
        ]
        .map(|(a, b)| vec![a.to_owned(), b.to_owned()])
    );
    let root = &db.query("SELECT type, mode, nlink, length, parent, uid, gid FROM jfs_node")[0];
    assert_eq!(
        root,
        &["2", "511", "2", "4096", "1", "0", "0"].map(String::from)
    );
    // format twice: refused, nothing changed
    let before = tables(&db);
    assert!(matches!(e.format(&f).await, Err(MetaError::Engine(m)) if m.contains("already holds")));
    assert_eq!(tables(&db), before);
    // destroy: only with the right UUID, and only JuiceFS tables
    db.query("CREATE TABLE keepme (x INT)");
    assert!(e
        .destroy("00000000-0000-4000-8000-000000000000")
        .await
        .is_err());
    assert_eq!(tables(&db).len(), before.len() + 1);
    e.destroy(&f.uuid).await.unwrap();
    let left: Vec<String> = tables(&db)
        .into_iter()
        .filter(|t| !t.starts_with("sqlite_"))
        .collect();
    assert_eq!(left, vec!["keepme".to_owned()]);
}

/// With trash on, format also writes the trash directory (mode 0555).
async fn format_with_trash(kind: Kind) {
    let db = fresh_database(kind);
    let e = engine(&db).await;
    let mut f = test_format("/tmp/metabench-unused/");
    f.trash_days = 1;
    e.format(&f).await.unwrap();
    let rows = db.query("SELECT inode, mode, parent FROM jfs_node ORDER BY inode");
    assert_eq!(rows.len(), 2);
    assert_eq!(
        rows[1],
        ["9223372032828243968", "365", "1"].map(String::from)
    );
}

/// A database holding anything else is Foreign and is never written to.
async fn foreign_database_is_left_alone(kind: Kind) {
    let db = fresh_database(kind);
    db.query("CREATE TABLE users (id INT)");
    db.query("CREATE TABLE orders (id INT)");
    let e = engine(&db).await;
    let before = tables(&db);
    match e.probe().await.unwrap() {
        VolumeState::Foreign(m) => {
            assert!(m.contains("2 tables"), "{m}");
            assert!(m.contains("orders, users"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    let f = test_format("/tmp/metabench-unused/");
    assert!(e.format(&f).await.is_err());
    assert!(e.destroy(&f.uuid).await.is_err());
    assert!(e.session(&Default::default()).await.is_err());
    assert_eq!(tables(&db), before);
    // JuiceFS-named tables without a setting row are not a volume either
    db.query("CREATE TABLE jfs_setting (name VARCHAR(255) PRIMARY KEY, value TEXT)");
    assert!(matches!(e.probe().await.unwrap(), VolumeState::Foreign(_)));
}

async fn server_info(kind: Kind) {
    let db = fresh_database(kind);
    if kind == Kind::Postgres {
        // Not the server's default (`off` on the test engine, `on` elsewhere): what this
        // database's sessions run with is what a run records.
        db.query(&format!(
            "ALTER DATABASE \"{}\" SET synchronous_commit = 'local'",
            db.name()
        ));
    }
    let e = engine(&db).await;
    let info = e.server_info().await.unwrap();
    let keys: Vec<&str> = info.settings.keys().map(String::as_str).collect();
    match kind {
        Kind::Mysql => {
            assert!(info.version.to_lowercase().contains("mariadb"), "{info:?}");
            assert_eq!(
                keys,
                [
                    "general_log",
                    "innodb_buffer_pool_size",
                    "innodb_flush_log_at_trx_commit",
                    "max_connections",
                    "performance_schema",
                    "sync_binlog"
                ]
            );
            // What the server says to another connection.
            for (name, value) in &info.settings {
                let asked = db.query(&format!("SELECT @@{name}"));
                assert_eq!(&asked[0][0], value, "{name}");
            }
        }
        Kind::Postgres => {
            assert!(info.version.starts_with("PostgreSQL"), "{info:?}");
            assert_eq!(
                keys,
                [
                    "fsync",
                    "log_min_duration_statement",
                    "log_statement",
                    "max_connections",
                    "shared_buffers",
                    "shared_preload_libraries",
                    "synchronous_commit"
                ]
            );
            assert_eq!(info.settings["synchronous_commit"], "local");
            for (name, value) in &info.settings {
                let asked = db.query(&format!("SHOW {name}"));
                assert_eq!(&asked[0][0], value, "{name}");
            }
        }
        _ => {
            assert!(info.version.starts_with("sqlite 3."), "{info:?}");
            assert_eq!(info.settings["journal_mode"], "wal");
            assert!(
                !db.sqlite_path().unwrap().exists(),
                "server_info created the file"
            );
            e.format(&test_format("/tmp/x/")).await.unwrap();
            let info = e.server_info().await.unwrap();
            assert_eq!(info.settings["journal_mode"], "wal");
            assert_eq!(info.settings["synchronous"], "NORMAL");
        }
    }
}

/// The connection limit a sweep checks its levels against: the server's
/// `max_connections` as another connection reads it, and the connections open now (this
/// engine's administration connection at least); SQLite has none.
async fn connection_limit(kind: Kind) {
    let db = fresh_database(kind);
    let e = engine(&db).await;
    let limit = e.connection_limit().await.unwrap();
    match kind {
        Kind::Sqlite => assert_eq!(limit, None),
        _ => {
            let l = limit.expect("a server says its max_connections");
            let asked = match kind {
                Kind::Mysql => db.query("SELECT @@max_connections"),
                _ => db.query("SHOW max_connections"),
            };
            assert_eq!(l.setting, "max_connections");
            assert_eq!(l.limit.to_string(), asked[0][0]);
            assert!(l.in_use >= 1 && l.in_use < l.limit, "{l:?}");
            assert!(l.fits(1) && !l.fits(l.limit), "{l:?}");
            assert!(l.refusal(l.limit).contains("max_connections is"), "{l:?}");
        }
    }
}

/// Which server workers a reading of the statement figures covers (`backend_set`): the
/// same mark while the volume's connections stay, another once one more opens, so that a
/// window over other connections (MariaDB keeps its figures by connection, and they leave
/// with it) is not taken for a reading. SQLite has no server and no mark.
async fn statement_figures_name_their_connections(kind: Kind) {
    let db = fresh_database(kind);
    let e = engine(&db).await;
    e.format(&test_format("/tmp/metabench-unused/"))
        .await
        .unwrap();
    let mark = |t: &Telemetry| t.counters.get("backend_set").copied();
    let mut first = e.session(&Default::default()).await.unwrap();
    first.getattr(ROOT_INODE).await.unwrap();
    let a = e.telemetry().await.unwrap();
    first.getattr(ROOT_INODE).await.unwrap();
    let b = e.telemetry().await.unwrap();
    if kind == Kind::Sqlite {
        assert_eq!(mark(&b), None, "{b:?}");
        return;
    }
    assert_eq!(
        mark(&b.since(&a)),
        Some(0.0),
        "the same connections: {a:?} {b:?}"
    );
    let mut second = e.session(&Default::default()).await.unwrap();
    second.getattr(ROOT_INODE).await.unwrap();
    let c = e.telemetry().await.unwrap();
    let moved = mark(&c.since(&b)).expect("marked");
    assert_ne!(moved, 0.0, "a connection opened: {b:?} {c:?}");
    second.close().await.unwrap();
    first.close().await.unwrap();
}

metabench_testkit::engine_matrix!([mysql, postgres, sqlite] =>
    format_probe_destroy,
    format_with_trash,
    foreign_database_is_left_alone,
    server_info,
    connection_limit,
    statement_figures_name_their_connections
);

async fn open_err(url: &str) -> MetaError {
    match SqlEngine::open(&MetaUrl::parse(url).unwrap()).await {
        Err(e) => e,
        Ok(_) => panic!("{url} opened"),
    }
}

fn reason(e: &MetaError) -> String {
    match e {
        MetaError::Connect { reason, .. } => reason.clone(),
        other => panic!("not a connect error: {other:?}"),
    }
}

#[tokio::test]
async fn connect_errors_are_short_and_hide_the_password() {
    let my = std::env::var("METABENCH_MYSQL_URL").expect("run scripts/test.sh");
    let pg = std::env::var("METABENCH_PG_URL").expect("run scripts/test.sh");
    let pw = metabench_testkit::PASSWORD;
    for base in [&my, &pg] {
        let wrong = base.replace(pw, "not-the-password-42");
        let e = open_err(&format!("{wrong}mysql")).await;
        let text = e.to_string();
        assert!(
            reason(&e).starts_with("access denied for user 'metabench'"),
            "{text}"
        );
        assert!(!text.contains("not-the-password-42"), "{text}");
        assert!(text.contains("****"), "{text}");
        let e = open_err(&format!("{base}no_such_db_42")).await;
        assert_eq!(reason(&e), "database 'no_such_db_42' does not exist");
        assert!(!e.to_string().contains(pw));
    }
    let e = open_err("mysql://u:secret@(127.0.0.1:1)/db").await;
    assert_eq!(reason(&e), "connection refused");
    assert!(!e.to_string().contains("secret"));
    let e = open_err("postgres://u:secret@127.0.0.1:1/db?sslmode=disable").await;
    assert_eq!(reason(&e), "connection refused");
}

#[tokio::test]
async fn sqlite_files_are_created_only_by_format() {
    let dir = metabench_testkit::temp_dir();
    let path = dir.path().join("v.db");
    let url = MetaUrl::parse(&format!("sqlite3://{}", path.display())).unwrap();
    let e = SqlEngine::open(&url).await.unwrap();
    assert_eq!(e.probe().await.unwrap(), VolumeState::Empty);
    assert!(e.session(&Default::default()).await.is_err());
    assert!(!path.exists());
    // a missing directory is an error at open, and nothing is made
    let bad = dir.path().join("nodir/v.db");
    let e2 = open_err(&format!("sqlite3://{}", bad.display())).await;
    assert!(reason(&e2).contains("does not exist"), "{e2}");
    assert!(!dir.path().join("nodir").exists());
    // an empty file is empty; a file that is not a database is foreign
    std::fs::write(&path, b"").unwrap();
    assert_eq!(e.probe().await.unwrap(), VolumeState::Empty);
    std::fs::write(
        &path,
        b"hello, not a database, but long enough to be read as one......",
    )
    .unwrap();
    assert!(matches!(e.probe().await.unwrap(), VolumeState::Foreign(_)));
    std::fs::remove_file(&path).unwrap();
    e.format(&test_format("/tmp/x/")).await.unwrap();
    assert!(path.exists());
    assert!(matches!(e.probe().await.unwrap(), VolumeState::Volume(_)));
}
