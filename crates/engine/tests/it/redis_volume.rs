//! Opening, probing, formatting and destroying Redis volumes: what is refused, what is
//! written (compared with `juicefs format`), and connection errors without the password.

use super::common::volume_format;
use metabench_engine::{Engine, MetaError, MetaUrl, SessionOptions, VolumeState};
use metabench_schema::{Attr, FileType, Format, ROOT_INODE, TRASH_INODE};
use metabench_testkit::{juicefs_format_with, temp_dir, RedisServer};
use std::collections::BTreeSet;
use std::sync::Arc;

const UUID: &str = "0f0e0d0c-0b0a-4908-8706-050403020100";

fn no_env(_: &str) -> Option<String> {
    None
}

async fn open(server: &RedisServer, db: u32) -> Arc<dyn Engine> {
    metabench_engine::open(&MetaUrl::parse(&server.url(db)).unwrap())
        .await
        .unwrap()
}

fn con(server: &RedisServer, db: u32) -> redis::Connection {
    redis::Client::open(server.url(db))
        .unwrap()
        .get_connection()
        .unwrap()
}

fn dbsize(server: &RedisServer, db: u32) -> u64 {
    redis::cmd("DBSIZE").query(&mut con(server, db)).unwrap()
}

/// A command that writes, on database `db` (its reply is not read).
fn write(server: &RedisServer, db: u32, args: &[&str]) {
    let _: () = redis::cmd(args[0])
        .arg(&args[1..])
        .query(&mut con(server, db))
        .unwrap();
}

fn keys(server: &RedisServer, db: u32) -> BTreeSet<String> {
    redis::cmd("KEYS")
        .arg("*")
        .query(&mut con(server, db))
        .unwrap()
}

fn get(server: &RedisServer, db: u32, key: &str) -> Option<Vec<u8>> {
    redis::cmd("GET")
        .arg(key)
        .query(&mut con(server, db))
        .unwrap()
}

#[tokio::test]
async fn probe_format_and_destroy_a_volume() {
    let server = RedisServer::start();
    let engine = open(&server, 1).await;
    assert_eq!(engine.probe().await.unwrap(), VolumeState::Empty);
    let format = volume_format("vol", UUID);
    engine.format(&format).await.unwrap();
    assert_eq!(
        engine.probe().await.unwrap(),
        VolumeState::Volume(Box::new(format.clone()))
    );
    assert_eq!(
        keys(&server, 1),
        ["i1", "setting"].iter().map(|s| s.to_string()).collect()
    );
    let setting = get(&server, 1, "setting").unwrap();
    assert_eq!(setting, format.to_json().into_bytes());
    let root = Attr::decode(&get(&server, 1, "i1").unwrap()).unwrap();
    assert_eq!(
        (root.typ, root.mode, root.uid, root.gid, root.nlink),
        (FileType::Directory, 0o777, 0, 0, 2)
    );
    assert_eq!((root.length, root.parent, root.mtime.nsec), (4096, 1, 0));

    // Formatting twice is refused and writes nothing.
    let before = dbsize(&server, 1);
    let err = engine.format(&format).await.unwrap_err();
    assert!(err.to_string().contains("not empty"), "{err}");
    assert_eq!(dbsize(&server, 1), before);

    // Fill it a little, plus one key that is not JuiceFS's.
    let mut meta = engine.session(&SessionOptions::default()).await.unwrap();
    let ctx = metabench_engine::Ctx::root();
    let (d, _) = meta.mkdir(&ctx, ROOT_INODE, b"d", 0o755, 0).await.unwrap();
    let (f, _) = meta.create(&ctx, d, b"f", 0o644, 0).await.unwrap();
    meta.setxattr(f, b"user.k", b"v", Default::default())
        .await
        .unwrap();
    meta.symlink(&ctx, d, b"s", b"f").await.unwrap();
    meta.new_slice().await.unwrap();
    meta.flush().await.unwrap();
    drop(meta);
    write(&server, 1, &["SET", "user:1", "x"]);
    assert!(dbsize(&server, 1) > 10);

    // The wrong UUID is refused; the right one removes the volume's keys only.
    let err = engine.destroy("not-the-uuid").await.unwrap_err();
    assert!(err.to_string().contains("refusing"), "{err}");
    assert!(dbsize(&server, 1) > 10);
    engine.destroy(UUID).await.unwrap();
    assert_eq!(
        keys(&server, 1),
        ["user:1".to_string()].into_iter().collect()
    );
    // Nothing to destroy any more.
    assert!(engine.destroy(UUID).await.is_err());
}

#[tokio::test]
async fn foreign_data_is_never_touched() {
    let server = RedisServer::start();
    write(&server, 4, &["SET", "foo", "bar"]);
    let engine = open(&server, 4).await;
    assert_eq!(
        engine.probe().await.unwrap(),
        VolumeState::Foreign("1 keys and no JuiceFS setting".into())
    );
    let err = engine
        .format(&Format::new("vol", UUID, "/tmp/x/", 0))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not empty"), "{err}");
    assert_eq!(keys(&server, 4), ["foo".to_string()].into_iter().collect());
    assert!(engine.destroy(UUID).await.is_err());
    assert_eq!(dbsize(&server, 4), 1);
    // A `setting` that is not JuiceFS's is foreign too.
    write(&server, 4, &["SET", "setting", "{\"x\":1}"]);
    match engine.probe().await.unwrap() {
        VolumeState::Foreign(why) => assert!(why.contains("2 keys"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(engine.session(&SessionOptions::default()).await.is_err());
    // Other databases are someone else's business.
    assert_eq!(
        open(&server, 5).await.probe().await.unwrap(),
        VolumeState::Empty
    );
}

#[tokio::test]
async fn format_writes_what_juicefs_format_writes() {
    let server = RedisServer::start();
    let bucket = temp_dir();
    juicefs_format_with(
        &server.url(7),
        "jfsvol",
        bucket.path(),
        &["--trash-days", "1"],
    );
    let theirs = Format::from_json(&get(&server, 7, "setting").unwrap()).unwrap();
    let engine = open(&server, 8).await;
    let ours = Format::new("jfsvol", &theirs.uuid, &theirs.bucket, 1);
    engine.format(&ours).await.unwrap();

    assert_eq!(keys(&server, 7), keys(&server, 8));
    assert_eq!(
        keys(&server, 8),
        ["i1", &format!("i{TRASH_INODE}"), "setting"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
    assert_eq!(
        get(&server, 7, "setting").unwrap(),
        get(&server, 8, "setting").unwrap(),
        "the setting JSON, byte for byte"
    );
    for key in ["i1".to_string(), format!("i{TRASH_INODE}")] {
        let mut a = Attr::decode(&get(&server, 7, &key).unwrap()).unwrap();
        let b = Attr::decode(&get(&server, 8, &key).unwrap()).unwrap();
        // Only the time differs.
        (a.atime, a.mtime, a.ctime) = (b.atime, b.mtime, b.ctime);
        assert_eq!(a, b, "{key}");
        assert_eq!(b.mtime.nsec, 0);
    }
    // Our sessions read theirs.
    let theirs_engine = open(&server, 7).await;
    match theirs_engine.probe().await.unwrap() {
        VolumeState::Volume(f) => assert_eq!(f.trash_days, 1),
        other => panic!("{other:?}"),
    }
    let mut meta = theirs_engine
        .session(&SessionOptions::default())
        .await
        .unwrap();
    let trash = meta.getattr(TRASH_INODE).await.unwrap();
    assert_eq!((trash.mode, trash.typ), (0o555, FileType::Directory));
}

#[tokio::test]
async fn connection_errors_never_show_the_password() {
    let server = RedisServer::start();
    let port = server.port();
    let secret = "s3cr3t-Pa55";
    let url =
        MetaUrl::parse_with_env(&format!("redis://:{secret}@127.0.0.1:{port}/1"), no_env).unwrap();
    let err = metabench_engine::open(&url).await.err().unwrap();
    let text = err.to_string();
    assert!(matches!(err, MetaError::Connect { .. }), "{err:?}");
    assert!(text.contains("WRONGPASS"), "{text}");
    assert!(!text.contains(secret), "{text}");
    assert!(!format!("{err:?}").contains(secret));

    let url = MetaUrl::parse_with_env(&format!("redis://127.0.0.1:{port}/1"), no_env).unwrap();
    let err = metabench_engine::open(&url).await.err().unwrap();
    assert!(matches!(err, MetaError::Connect { .. }), "{err:?}");
    assert!(err.to_string().contains("NOAUTH"), "{err}");

    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = MetaUrl::parse_with_env(&format!("redis://:{secret}@127.0.0.1:{closed}/1"), no_env)
        .unwrap();
    let err = metabench_engine::open(&url).await.err().unwrap();
    assert!(matches!(err, MetaError::Connect { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("connection refused"), "{text}");
    assert!(text.contains("****") && !text.contains(secret), "{text}");

    let url =
        MetaUrl::parse_with_env(&format!("rediss://:{secret}@127.0.0.1:{port}/1"), no_env).unwrap();
    // TLS to a port without it: the server never answers the hello.
    let err = metabench_engine::open(&url).await.err().unwrap();
    assert!(
        err.to_string()
            .contains("TLS handshake timed out (does the server speak TLS on this port?)"),
        "{err}"
    );
    assert!(!err.to_string().contains(secret));

    // Selecting a database the server does not have.
    let err = metabench_engine::open(&MetaUrl::parse(&server.url(99)).unwrap())
        .await
        .err()
        .unwrap();
    assert!(matches!(err, MetaError::Connect { .. }), "{err:?}");
    assert!(err.to_string().contains("DB index"), "{err}");
}

#[tokio::test]
async fn server_info_reports_version_and_settings_and_changes_nothing() {
    let server = RedisServer::start();
    // JuiceFS would switch this to noeviction; metabench only reports it.
    write(
        &server,
        0,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
    );
    write(&server, 0, &["CONFIG", "SET", "maxmemory", "123456789"]);
    let engine = open(&server, 1).await;
    let info = engine.server_info().await.unwrap();
    assert!(info.version.starts_with("redis "), "{}", info.version);
    assert_ne!(info.version, "redis unknown");
    assert_eq!(info.settings["appendonly"], "no");
    assert_eq!(info.settings["save"], "");
    assert_eq!(info.settings["maxmemory-policy"], "allkeys-lru");
    assert_eq!(info.settings["maxmemory"], "123456789");
    // The rest as the server answers another connection's CONFIG GET.
    for name in ["appendfsync", "maxmemory", "io-threads"] {
        let got: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg(name)
            .query(&mut con(&server, 0))
            .unwrap();
        assert_eq!(info.settings[name], got[1], "{name}");
    }
    let policy: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query(&mut con(&server, 0))
        .unwrap();
    assert_eq!(policy[1], "allkeys-lru");
}
