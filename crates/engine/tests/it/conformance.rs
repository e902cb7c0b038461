//! One body of semantic tests run over every engine: memkv, etcd 3.5 and 3.4, the TiKV
//! stand-in (PD + unistore), Redis, a three-primary Redis Cluster (through its seed list), SQLite, MariaDB and PostgreSQL (`engine_matrix!` writes one `#[tokio::test]` per engine and body).
//! The registered sessions and a client's workers are in `conformance_sessions`.
//! Each test gets a freshly formatted volume (TrashDays 0, DirStats on) and sessions
//! opened through `metabench_engine::open`, so it checks the engines through the same
//! `Engine` / `Meta` traits the runner uses.
//!
//! etcd needs `METABENCH_ETCD_URL` and `METABENCH_ETCD34_URL`, TiKV `METABENCH_TIKV_URL` (set by
//! `scripts/engines.sh`); MariaDB and PostgreSQL
//! need `METABENCH_MYSQL_URL` / `METABENCH_PG_URL`, as in the other engine tests.

use super::common::{self, volume_format};
use metabench_engine::{
    Ctx, Engine, EngineKind, FallocRange, Meta, MetaError, MetaUrl, SessionOptions, SetAttr,
    XattrFlags,
};
use metabench_schema::{FileType, Ino, Slice, Timestamp, ROOT_INODE, TRASH_INODE};
use metabench_testkit::{fresh_database, Kind, RedisCluster, TestDb, TestEngine};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A formatted volume: the engine, its database (kept alive) and one session.
pub(super) struct Vol {
    pub(super) engine: Arc<dyn Engine>,
    pub(super) url: String,
    db: Option<TestDb>,
    /// The private Cluster of [`TestEngine::RedisCluster`], kept alive.
    cluster: Option<RedisCluster>,
    uuid: String,
    pub(super) s: Box<dyn Meta>,
    pub(super) ctx: Ctx,
}

impl Vol {
    /// An empty directory of the set-up, made by root.
    async fn dir(&mut self, parent: Ino, name: &[u8]) -> Ino {
        common::mkdir(self.s.as_mut(), &self.ctx, parent, name).await
    }

    /// An empty file of the set-up, made by root with no umask.
    async fn file(&mut self, parent: Ino, name: &[u8]) -> Ino {
        common::create(self.s.as_mut(), &self.ctx, parent, name, 0).await
    }

    /// The set-up most tests start from: a directory `d` with an empty file `d/f`.
    async fn dir_and_file(&mut self) -> (Ino, Ino) {
        let d = self.dir(ROOT_INODE, b"d").await;
        (d, self.file(d, b"f").await)
    }

    async fn session(&self) -> Box<dyn Meta> {
        self.engine
            .session(&SessionOptions::default())
            .await
            .unwrap()
    }

    /// Whether the engine retries optimistic conflicts in the store (Redis WATCH, TKV).
    fn optimistic(&self) -> bool {
        matches!(
            self.engine.kind(),
            EngineKind::Redis | EngineKind::Etcd | EngineKind::Tikv | EngineKind::Memkv
        )
    }

    /// Flushes the session and, on the key-value engines, destroys the volume.
    pub(super) async fn finish(mut self) {
        self.s.flush().await.unwrap();
        if matches!(
            self.engine.kind(),
            EngineKind::Etcd | EngineKind::Tikv | EngineKind::Memkv
        ) {
            self.engine.destroy(&self.uuid).await.unwrap();
        }
    }
}

fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}_{}_{}_{:08x}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        rand_u32()
    )
}

fn rand_u32() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    t.subsec_nanos() ^ (t.as_secs() as u32).rotate_left(7)
}

/// A fresh formatted volume on `on`.
pub(super) async fn volume(on: TestEngine) -> Vol {
    let mut cluster = None;
    let (url, db) = match on {
        TestEngine::Memkv => (format!("memkv://{}", unique("conf")), None),
        TestEngine::RedisCluster => {
            let c = RedisCluster::start();
            let url = c.url(1);
            cluster = Some(c);
            (url, None)
        }
        TestEngine::Etcd | TestEngine::Etcd34 | TestEngine::Tikv => {
            let var = match on {
                TestEngine::Etcd => "METABENCH_ETCD_URL",
                TestEngine::Etcd34 => "METABENCH_ETCD34_URL",
                _ => "METABENCH_TIKV_URL",
            };
            let base = match std::env::var(var) {
                Ok(u) if !u.is_empty() => u,
                _ => panic!(
                    "{var} is not set: run the tests with `scripts/test.sh` \
                     (it starts the test engines), or `source scripts/engines.sh start` first"
                ),
            };
            (
                format!("{}/{}", base.trim_end_matches('/'), unique("conf")),
                None,
            )
        }
        TestEngine::Db(kind) => {
            let db = fresh_database(kind);
            (db.url().to_owned(), Some(db))
        }
    };
    let engine = metabench_engine::open(&MetaUrl::parse(&url).unwrap())
        .await
        .unwrap_or_else(|e| panic!("open {url}: {e}"));
    let uuid = uuid::Uuid::new_v4().to_string();
    engine
        .format(&volume_format("conformance", &uuid))
        .await
        .unwrap();
    let s = engine.session(&SessionOptions::default()).await.unwrap();
    Vol {
        engine,
        url,
        db,
        cluster,
        uuid,
        s,
        ctx: Ctx::root(),
    }
}

metabench_testkit::engine_matrix!(
    [memkv, etcd, etcd34, tikv, redis, redis_cluster, sqlite, mysql, postgres] =>
    namespace_operations,
    errnos,
    errnos_of_every_operation,
    renames_replace_and_move,
    links_symlinks_xattrs,
    readlink_without_a_target,
    slice_ids_come_in_whole_batches,
    the_sticky_bit_guards_removal,
    write_then_read,
    setattr_and_access,
    racing_creates_in_one_directory,
    skipped_parent_updates,
    resizes,
);

/// The errno of a call that must fail.
pub(super) fn errno<T: std::fmt::Debug>(r: Result<T, MetaError>) -> &'static str {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.kind(),
    }
}

/// Asserts that `$result` is the error `$errno`.
macro_rules! assert_errno {
    ($result:expr, $errno:literal) => {
        assert_eq!(errno($result), $errno, "{}", stringify!($result))
    };
}

fn names(entries: &[metabench_engine::Entry]) -> Vec<String> {
    let mut v: Vec<String> = entries
        .iter()
        .map(|e| String::from_utf8_lossy(&e.name).into_owned())
        .collect();
    v.sort();
    v
}

async fn namespace_operations(on: TestEngine) {
    let mut v = volume(on).await;
    let ctx = v.ctx.clone();
    let (d, dattr) =
        v.s.mkdir(&ctx, ROOT_INODE, b"d", 0o755, 0o022)
            .await
            .unwrap();
    assert_eq!(dattr.typ, FileType::Directory);
    assert_eq!((dattr.mode, dattr.nlink, dattr.length), (0o755, 2, 4096));
    assert_eq!(v.s.getattr(ROOT_INODE).await.unwrap().nlink, 3);
    let (f, fattr) = v.s.create(&ctx, d, b"f", 0o644, 0o022).await.unwrap();
    assert_eq!(
        (fattr.typ, fattr.nlink, fattr.parent),
        (FileType::File, 1, d)
    );
    // Create of an existing file answers the file (no O_EXCL).
    assert_eq!(v.s.create(&ctx, d, b"f", 0o644, 0).await.unwrap().0, f);
    let (n, _) =
        v.s.mknod(&ctx, d, b"fifo", FileType::Fifo, 0o600, 0, 0)
            .await
            .unwrap();
    let (ino, attr) = v.s.lookup(&ctx, d, b"f").await.unwrap();
    assert_eq!((ino, attr.typ), (f, FileType::File));
    assert_eq!(v.s.getattr(n).await.unwrap().typ, FileType::Fifo);
    let entries = v.s.readdir(&ctx, d, true).await.unwrap();
    assert_eq!(names(&entries), [".", "..", "f", "fifo"]);
    let fe = entries.iter().find(|e| e.name == b"f").unwrap();
    assert_eq!((fe.inode, fe.attr.mode), (f, 0o644));
    let plain = v.s.readdir(&ctx, d, false).await.unwrap();
    assert_eq!(plain.len(), 4);
    // Directory nlink counts subdirectories only.
    assert_eq!(v.s.getattr(d).await.unwrap().nlink, 2);
    v.s.mkdir(&ctx, d, b"sub", 0o755, 0).await.unwrap();
    assert_eq!(v.s.getattr(d).await.unwrap().nlink, 3);
    v.s.rmdir(&ctx, d, b"sub").await.unwrap();
    assert_eq!(v.s.getattr(d).await.unwrap().nlink, 2);
    v.s.unlink(&ctx, d, b"f").await.unwrap();
    v.s.unlink(&ctx, d, b"fifo").await.unwrap();
    assert_errno!(v.s.getattr(f).await, "ENOENT");
    v.s.rmdir(&ctx, ROOT_INODE, b"d").await.unwrap();
    assert_eq!(
        names(&v.s.readdir(&ctx, ROOT_INODE, false).await.unwrap()),
        [".", ".."]
    );
    assert_eq!(v.s.getattr(ROOT_INODE).await.unwrap().nlink, 2);
    v.finish().await;
}

/// The errnos of the mknod family, a file listed as a directory, xattrs and a read-only
/// parent (the rest are in [`errnos_of_every_operation`]).
async fn errnos(on: TestEngine) {
    let mut v = volume(on).await;
    let ctx = v.ctx.clone();
    let (d, f) = v.dir_and_file().await;
    assert_errno!(v.s.mkdir(&ctx, ROOT_INODE, b"d", 0o755, 0).await, "EEXIST");
    assert_errno!(v.s.mkdir(&ctx, d, b"f", 0o755, 0).await, "EEXIST");
    // The mknod family, written once over each engine's one transaction: a symlink only
    // through symlink, with a target; create opens an existing file, not a directory.
    assert_errno!(
        v.s.mknod(&ctx, d, b"s", FileType::Symlink, 0o777, 0, 0)
            .await,
        "EINVAL"
    );
    assert_errno!(v.s.symlink(&ctx, d, b"s", b"").await, "EINVAL");
    assert_errno!(v.s.symlink(&ctx, d, b"s", b"a\0b").await, "EINVAL");
    assert_eq!(v.s.create(&ctx, d, b"f", 0o600, 0).await.unwrap().0, f);
    assert_errno!(v.s.create(&ctx, ROOT_INODE, b"d", 0o644, 0).await, "EEXIST");
    assert_errno!(v.s.symlink(&ctx, d, b"f", b"/t").await, "EEXIST");
    // JuiceFS lists a file as `.` and `..` (baseMeta.Readdir checks no type).
    assert_eq!(v.s.readdir(&ctx, f, false).await.unwrap().len(), 2);
    assert_errno!(v.s.removexattr(f, b"user.none").await, "ENOATTR");
    let user = Ctx {
        uid: 1000,
        gids: vec![1000],
        pid: 7,
    };
    let ro = v.dir(ROOT_INODE, b"ro").await;
    assert_errno!(v.s.create(&user, ro, b"x", 0o644, 0).await, "EACCES");
    v.finish().await;
}

async fn renames_replace_and_move(on: TestEngine) {
    let mut v = volume(on).await;
    let ctx = v.ctx.clone();
    let a = v.dir(ROOT_INODE, b"a").await;
    let b = v.dir(ROOT_INODE, b"b").await;
    let f = v.file(a, b"f").await;
    // Same directory, target absent.
    let (ino, _) = v.s.rename(&ctx, a, b"f", a, b"g", 0).await.unwrap();
    assert_eq!(ino, f);
    assert_errno!(v.s.lookup(&ctx, a, b"f").await, "ENOENT");
    assert_eq!(v.s.lookup(&ctx, a, b"g").await.unwrap().0, f);
    // Across directories, replacing a file (freed later).
    let t = v.file(b, b"t").await;
    v.s.rename(&ctx, a, b"g", b, b"t", 0).await.unwrap();
    assert_eq!(v.s.lookup(&ctx, b, b"t").await.unwrap().0, f);
    assert_eq!(v.s.getattr(f).await.unwrap().parent, b);
    assert_errno!(v.s.getattr(t).await, "ENOENT");
    // A directory moves with its nlink accounting.
    let sub = v.dir(a, b"sub").await;
    assert_eq!(v.s.getattr(a).await.unwrap().nlink, 3);
    v.s.rename(&ctx, a, b"sub", b, b"sub", 0).await.unwrap();
    assert_eq!(v.s.getattr(a).await.unwrap().nlink, 2);
    assert_eq!(v.s.getattr(b).await.unwrap().nlink, 3);
    assert_eq!(v.s.getattr(sub).await.unwrap().parent, b);
    // Errors.
    v.s.create(&ctx, b, b"u", 0o644, 0).await.unwrap();
    assert_errno!(v.s.rename(&ctx, b, b"t", b, b"u", 1).await, "EEXIST");
    assert_errno!(v.s.rename(&ctx, b, b"t", b, b"sub", 0).await, "EISDIR");
    assert_errno!(v.s.rename(&ctx, b, b"sub", b, b"u", 0).await, "ENOTDIR");
    assert_errno!(v.s.rename(&ctx, b, b"nope", b, b"x", 0).await, "ENOENT");
    v.s.create(&ctx, sub, b"inside", 0o644, 0).await.unwrap();
    v.s.mkdir(&ctx, b, b"full", 0o755, 0).await.unwrap();
    assert_errno!(
        v.s.rename(&ctx, b, b"full", b, b"sub", 0).await,
        "ENOTEMPTY"
    );
    v.finish().await;
}

async fn links_symlinks_xattrs(on: TestEngine) {
    let mut v = volume(on).await;
    let ctx = v.ctx.clone();
    let (d, f) = v.dir_and_file().await;
    let a = v.s.link(&ctx, f, d, b"l1").await.unwrap();
    assert_eq!((a.nlink, a.parent), (2, 0));
    v.s.link(&ctx, f, ROOT_INODE, b"l2").await.unwrap();
    assert_eq!(v.s.getattr(f).await.unwrap().nlink, 3);
    assert_eq!(v.s.lookup(&ctx, ROOT_INODE, b"l2").await.unwrap().0, f);
    v.s.unlink(&ctx, d, b"f").await.unwrap();
    assert_eq!(v.s.getattr(f).await.unwrap().nlink, 2);
    v.s.unlink(&ctx, d, b"l1").await.unwrap();
    v.s.unlink(&ctx, ROOT_INODE, b"l2").await.unwrap();
    assert_errno!(v.s.getattr(f).await, "ENOENT");

    let (s, sattr) = v.s.symlink(&ctx, d, b"s", b"/some/where").await.unwrap();
    assert_eq!((sattr.typ, sattr.length), (FileType::Symlink, 11));
    assert_eq!(v.s.readlink(s).await.unwrap(), b"/some/where");
    assert_errno!(v.s.symlink(&ctx, d, b"s", b"x").await, "EEXIST");

    let x = v.file(d, b"x").await;
    // Any sets a name whether it is there or not, Create only a new one, Replace only an
    // existing one.
    for (name, value, flags, fails) in [
        ("user.a", "1", XattrFlags::Any, None),
        ("user.a", "1", XattrFlags::Any, None),
        ("user.b", "2", XattrFlags::Create, None),
        ("user.b", "3", XattrFlags::Create, Some("EEXIST")),
        ("user.c", "3", XattrFlags::Replace, Some("ENOATTR")),
        ("user.b", "22", XattrFlags::Replace, None),
    ] {
        let r = v.s.setxattr(x, name.as_bytes(), value.as_bytes(), flags);
        match fails {
            None => r.await.unwrap(),
            Some(e) => assert_eq!(errno(r.await), e, "setxattr {name} {flags:?}"),
        }
    }
    assert_eq!(v.s.getxattr(x, b"user.b").await.unwrap(), b"22");
    // An empty value: TiKV cannot store one, so kvMeta.doSetXattr refuses it there only.
    let empty = v.s.setxattr(x, b"user.e", b"", XattrFlags::Any).await;
    if on == TestEngine::Tikv {
        assert_errno!(empty, "EINVAL");
    } else {
        empty.unwrap();
        assert_eq!(v.s.getxattr(x, b"user.e").await.unwrap(), b"");
        v.s.removexattr(x, b"user.e").await.unwrap();
    }
    let mut l = v.s.listxattr(x).await.unwrap();
    l.sort();
    assert_eq!(l, vec![b"user.a".to_vec(), b"user.b".to_vec()]);
    v.s.removexattr(x, b"user.a").await.unwrap();
    assert_eq!(v.s.listxattr(x).await.unwrap(), vec![b"user.b".to_vec()]);
    v.finish().await;
}

/// Removes the target record of symlink `ino` behind the engine's back, as a damaged
/// volume would lack it: the raw key or row of each family.
async fn drop_symlink_target(v: &Vol, on: TestEngine, ino: Ino) {
    use metabench_engine::tkv::kv::KvBackend;
    use metabench_schema::tkv::TkvKeys;
    let url = MetaUrl::parse(&v.url).unwrap();
    let delete = |prefix: Vec<u8>| vec![(TkvKeys::new(prefix).symlink(ino), None)];
    match on {
        TestEngine::Memkv => metabench_engine::tkv::mem::MemKv::named(url.database())
            .commit(&[], &delete(Vec::new()))
            .await
            .unwrap(),
        TestEngine::Etcd | TestEngine::Etcd34 => {
            let (kv, prefix) = metabench_engine::tkv::etcd::EtcdKv::connect(&url)
                .await
                .unwrap();
            kv.commit(&[], &delete(prefix)).await.unwrap();
        }
        TestEngine::Tikv => {
            let (kv, prefix) = metabench_engine::tkv::tikv::TikvKv::connect(&url)
                .await
                .unwrap();
            kv.commit(&[], &delete(prefix)).await.unwrap();
        }
        TestEngine::Db(Kind::Redis) => {
            let db = v.db.as_ref().unwrap();
            let key = metabench_schema::redis_keys::RedisKeys::new("").symlink(ino);
            let deleted = db.redis().unwrap().command(&[
                "EVAL",
                "redis.call('SELECT', ARGV[1]); return redis.call('DEL', KEYS[1])",
                "1",
                &key,
                url.database(),
            ]);
            assert_eq!(deleted, metabench_testkit::Resp::Integer(1), "DEL {key}");
        }
        TestEngine::RedisCluster => {
            let cluster = v.cluster.as_ref().unwrap();
            let key = metabench_schema::redis_keys::RedisKeys::new("{1}").symlink(ino);
            let owner = &cluster.nodes[cluster.owner_of(1)];
            let deleted = owner.command(&["DEL", &key]);
            assert_eq!(deleted, metabench_testkit::Resp::Integer(1), "DEL {key}");
        }
        TestEngine::Db(_) => {
            v.db.as_ref()
                .unwrap()
                .query(&format!("DELETE FROM jfs_symlink WHERE inode = {ino}"));
        }
    }
}

/// `base.go` `ReadLink`: a symlink whose target record is missing is EIO, on every family;
/// a node that is not a symlink is EINVAL.
async fn readlink_without_a_target(on: TestEngine) {
    let mut v = volume(on).await;
    let ctx = v.ctx.clone();
    let (s, _) = v.s.symlink(&ctx, ROOT_INODE, b"s", b"/t").await.unwrap();
    let f = v.file(ROOT_INODE, b"f").await;
    assert_errno!(v.s.readlink(f).await, "EINVAL");
    drop_symlink_target(&v, on, s).await;
    let mut fresh = v.session().await;
    assert_errno!(fresh.readlink(s).await, "EIO");
    v.finish().await;
}

/// Every operation's errno for bad arguments, missing or wrong-typed nodes and an
/// unprivileged caller, as JuiceFS answers (`base.go` and the engines' `do*`).
async fn errnos_of_every_operation(on: TestEngine) {
    let mut v = volume(on).await;
    let c = v.ctx.clone();
    let (d, f) = v.dir_and_file().await;
    v.s.mkdir(&c, d, b"sub", 0o755, 0).await.unwrap();

    assert_errno!(v.s.mkdir(&c, d, b"sub", 0o755, 0).await, "EEXIST");
    assert_errno!(v.s.mkdir(&c, d, b"f", 0o755, 0).await, "EEXIST");
    assert_errno!(
        v.s.mknod(&c, d, b"f", FileType::File, 0o644, 0, 0).await,
        "EEXIST"
    );
    assert_errno!(v.s.symlink(&c, d, b"f", b"x").await, "EEXIST");
    // Create without O_EXCL opens an existing file, as JuiceFS's Create(flags 0) does …
    assert_eq!(v.s.create(&c, d, b"f", 0o644, 0).await.unwrap().0, f);
    // … but not an existing directory.
    assert_errno!(v.s.create(&c, d, b"sub", 0o644, 0).await, "EEXIST");
    assert_errno!(v.s.mkdir(&c, d, b".", 0o755, 0).await, "EEXIST");
    assert_errno!(v.s.mkdir(&c, d, b"a/b", 0o755, 0).await, "EINVAL");
    assert_errno!(v.s.mkdir(&c, d, b"", 0o755, 0).await, "EINVAL");
    assert_errno!(v.s.mkdir(&c, f, b"x", 0o755, 0).await, "ENOTDIR");
    assert_errno!(v.s.create(&c, 4242, b"x", 0o644, 0).await, "ENOENT");
    assert_errno!(
        v.s.mkdir(&c, ROOT_INODE, b".trash", 0o755, 0).await,
        "EPERM"
    );
    assert_errno!(v.s.symlink(&c, d, b"s", b"").await, "EINVAL");

    assert_errno!(v.s.lookup(&c, d, b"nope").await, "ENOENT");
    assert_errno!(v.s.lookup(&c, f, b"..").await, "ENOTDIR");
    // baseMeta.Lookup answers these itself, the same on every family.
    assert_eq!(
        v.s.lookup(&c, ROOT_INODE, b"..").await.unwrap().0,
        ROOT_INODE
    );
    assert_eq!(v.s.lookup(&c, d, b"..").await.unwrap().0, ROOT_INODE);
    assert_eq!(v.s.lookup(&c, d, b".").await.unwrap().0, d);
    let (trash, attr) = v.s.lookup(&c, ROOT_INODE, b".trash").await.unwrap();
    assert_eq!((trash, attr.typ), (TRASH_INODE, FileType::Directory));
    assert_errno!(v.s.unlink(&c, d, b"nope").await, "ENOENT");
    assert_errno!(v.s.unlink(&c, d, b"sub").await, "EPERM");
    assert_errno!(v.s.rmdir(&c, d, b"f").await, "ENOTDIR");
    assert_errno!(v.s.rmdir(&c, d, b"nope").await, "ENOENT");
    assert_errno!(v.s.rmdir(&c, ROOT_INODE, b"d").await, "ENOTEMPTY");
    assert_errno!(v.s.rmdir(&c, d, b".").await, "EINVAL");
    assert_errno!(v.s.rmdir(&c, d, b"..").await, "ENOTEMPTY");
    assert_errno!(v.s.link(&c, d, ROOT_INODE, b"dl").await, "EPERM");
    assert_errno!(v.s.link(&c, f, d, b"sub").await, "EEXIST");
    assert_errno!(v.s.link(&c, 4242, d, b"x").await, "ENOENT");
    assert_errno!(v.s.readlink(f).await, "EINVAL");
    assert_errno!(v.s.getxattr(f, b"user.none").await, "ENOATTR");
    assert_errno!(v.s.removexattr(f, b"user.none").await, "ENOATTR");
    assert_errno!(v.s.setxattr(f, b"", b"v", XattrFlags::Any).await, "EINVAL");
    assert_errno!(v.s.removexattr(f, b"").await, "EINVAL");
    assert_errno!(
        v.s.setxattr(f, b"user.k", b"v", XattrFlags::Replace).await,
        "ENOATTR"
    );
    v.s.setxattr(f, b"user.k", b"v", XattrFlags::Create)
        .await
        .unwrap();
    assert_errno!(
        v.s.setxattr(f, b"user.k", b"v", XattrFlags::Create).await,
        "EEXIST"
    );
    assert_errno!(v.s.read(d, 0).await, "EPERM");
    let s = Slice::whole(0, 1, 10);
    assert_errno!(v.s.write(d, 0, s, Timestamp::now()).await, "EPERM");
    assert_errno!(v.s.write(4242, 0, s, Timestamp::now()).await, "ENOENT");
    assert_errno!(v.s.read(4242, 0).await, "ENOENT");
    assert_errno!(v.s.setattr(&c, 4242, &SetAttr::default()).await, "ENOENT");
    assert_errno!(v.s.resolve(&c, ROOT_INODE, b"d/f").await, "ENOTSUP");

    // Permissions of an unprivileged user.
    let user = Ctx {
        uid: 1000,
        gids: vec![1000],
        pid: 1,
    };
    assert_errno!(v.s.create(&user, d, b"u", 0o644, 0).await, "EACCES");
    assert_errno!(v.s.unlink(&user, d, b"f").await, "EACCES");
    assert_errno!(v.s.access(&user, f, 2).await, "EACCES");
    v.s.access(&user, f, 4).await.unwrap();
    let chmod = SetAttr {
        mode: Some(0o777),
        ..Default::default()
    };
    assert_errno!(v.s.setattr(&user, f, &chmod).await, "EPERM");
    let chown = SetAttr {
        uid: Some(1000),
        ..Default::default()
    };
    assert_errno!(v.s.setattr(&user, f, &chown).await, "EPERM");

    // Renames the flags or the tree refuse.
    let e = v.dir(d, b"e").await;
    assert_errno!(
        v.s.rename(&c, ROOT_INODE, b"d", e, b"loop", 0).await,
        "EPERM"
    );
    assert_errno!(v.s.rename(&c, d, b"f", d, b"w", 4).await, "ENOTSUP");
    assert_errno!(v.s.rename(&c, d, b"f", d, b"w", 99).await, "EINVAL");
    v.finish().await;
}

/// `NewSlice` hands out every id of a `nextChunk` batch, from the first (`base.go`):
/// on a fresh volume a client starts at 1, and the next client at 1 + 4096.
async fn slice_ids_come_in_whole_batches(on: TestEngine) {
    let mut v = volume(on).await;
    let first: Vec<u64> = [
        v.s.new_slice().await.unwrap(),
        v.s.new_slice().await.unwrap(),
    ]
    .into();
    assert_eq!(first, [1, 2]);
    let mut other = v.session().await;
    assert_eq!(other.new_slice().await.unwrap(), 1 + 4096);
    v.finish().await;
}

/// In a directory with the sticky bit (`/tmp`), only root, the directory's owner and the
/// entry's owner remove, rename or replace an entry (`base.go`, the engines' `doUnlink`,
/// `doRmdir`, `doRename`).
async fn the_sticky_bit_guards_removal(on: TestEngine) {
    let mut v = volume(on).await;
    let ctx = v.ctx.clone();
    let user = |uid: u32| Ctx {
        uid,
        gids: vec![uid],
        pid: 1,
    };
    let (alice, bob) = (user(1000), user(2000));
    let (tmp, attr) =
        v.s.mkdir(&ctx, ROOT_INODE, b"tmp", 0o1777, 0)
            .await
            .unwrap();
    assert_eq!(attr.mode, 0o1777);
    v.s.create(&alice, tmp, b"a", 0o666, 0).await.unwrap();
    v.s.create(&bob, tmp, b"b", 0o666, 0).await.unwrap();
    v.s.mkdir(&alice, tmp, b"ad", 0o777, 0).await.unwrap();
    assert_errno!(v.s.unlink(&bob, tmp, b"a").await, "EACCES");
    assert_errno!(v.s.rmdir(&bob, tmp, b"ad").await, "EACCES");
    assert_errno!(v.s.rename(&bob, tmp, b"a", tmp, b"c", 0).await, "EACCES");
    // Replacing alice's entry with bob's own file is removing hers.
    assert_errno!(v.s.rename(&bob, tmp, b"b", tmp, b"a", 0).await, "EACCES");
    // The entry's owner, and root, may.
    v.s.rename(&alice, tmp, b"a", tmp, b"c", 0).await.unwrap();
    v.s.unlink(&alice, tmp, b"c").await.unwrap();
    v.s.rmdir(&alice, tmp, b"ad").await.unwrap();
    v.s.unlink(&ctx, tmp, b"b").await.unwrap();
    let left = names(&v.s.readdir(&ctx, tmp, false).await.unwrap());
    assert!(left.iter().all(|n| n == "." || n == ".."), "{left:?}");
    v.finish().await;
}

async fn write_then_read(on: TestEngine) {
    let mut v = volume(on).await;
    let ctx = v.ctx.clone();
    let f = v.file(ROOT_INODE, b"data").await;
    assert!(v.s.read(f, 0).await.unwrap().is_empty());
    let mut written = Vec::new();
    for j in 0..3u32 {
        let id = v.s.new_slice().await.unwrap();
        let s = Slice::whole(j * 1024, id, 1024);
        v.s.write(f, 0, s, Timestamp::now()).await.unwrap();
        written.push(s);
    }
    assert_eq!(v.s.read(f, 0).await.unwrap(), written);
    assert_eq!(v.s.getattr(f).await.unwrap().length, 3072);
    // Second chunk.
    let id = v.s.new_slice().await.unwrap();
    let s = Slice::whole(0, id, 10);
    v.s.write(f, 1, s, Timestamp::now()).await.unwrap();
    assert_eq!(v.s.getattr(f).await.unwrap().length, (64 << 20) + 10);
    assert_eq!(v.s.read(f, 1).await.unwrap(), vec![s]);
    let ids: Vec<u64> = written.iter().map(|s| s.id).chain([id]).collect();
    let mut sorted = ids.clone();
    sorted.dedup();
    assert_eq!(sorted.len(), 4, "slice ids are unique: {ids:?}");
    let d = v.dir(ROOT_INODE, b"d").await;
    assert_errno!(v.s.write(d, 0, s, Timestamp::now()).await, "EPERM");
    // Unlink, then the background frees the data.
    v.s.unlink(&ctx, ROOT_INODE, b"data").await.unwrap();
    v.s.flush().await.unwrap();
    assert_errno!(v.s.getattr(f).await, "ENOENT");
    v.finish().await;
}

async fn setattr_and_access(on: TestEngine) {
    let mut v = volume(on).await;
    let ctx = v.ctx.clone();
    let f = v.file(ROOT_INODE, b"f").await;
    let a =
        v.s.setattr(
            &ctx,
            f,
            &SetAttr {
                mode: Some(0o600),
                uid: Some(1000),
                gid: Some(1000),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((a.mode, a.uid, a.gid), (0o600, 1000, 1000));
    assert_eq!(v.s.getattr(f).await.unwrap().mode, 0o600);
    let other = Ctx {
        uid: 2000,
        gids: vec![2000],
        pid: 1,
    };
    assert_errno!(v.s.access(&other, f, 4).await, "EACCES");
    let owner = Ctx {
        uid: 1000,
        gids: vec![1000],
        pid: 1,
    };
    v.s.access(&owner, f, 4 | 2).await.unwrap();

    // baseMeta.mergeAttr, one copy for every family: the same time again changes nothing
    // (ctime stays), a negative second means now, a stranger may not touch the times of
    // a file it cannot write (EACCES), and chown clears set-uid.
    let before = v.s.getattr(f).await.unwrap();
    let same = SetAttr {
        mtime: Some(before.mtime),
        ..Default::default()
    };
    let a = v.s.setattr(&owner, f, &same).await.unwrap();
    assert_eq!(
        a.ctime, before.ctime,
        "{on:?}: an unchanged setattr is not written"
    );
    let now = SetAttr {
        atime: Some(Timestamp { sec: -1, nsec: 0 }),
        ..Default::default()
    };
    assert_errno!(v.s.setattr(&other, f, &now).await, "EACCES");
    let a = v.s.setattr(&owner, f, &now).await.unwrap();
    assert!(
        a.atime.sec > 0,
        "{on:?}: atime set to now, got {:?}",
        a.atime
    );
    let suid = SetAttr {
        mode: Some(0o4755),
        ..Default::default()
    };
    v.s.setattr(&ctx, f, &suid).await.unwrap();
    let chown = SetAttr {
        uid: Some(0),
        ..Default::default()
    };
    let a = v.s.setattr(&ctx, f, &chown).await.unwrap();
    assert_eq!((a.uid, a.mode), (0, 0o755), "{on:?}: chown clears set-uid");
    v.finish().await;
}

/// Two sessions create entries in one directory at once: every entry is there, the
/// directory's nlink is right, and optimistic engines count their retries.
async fn racing_creates_in_one_directory(on: TestEngine) {
    let mut v = volume(on).await;
    let ctx = v.ctx.clone();
    let d = v.dir(ROOT_INODE, b"race").await;
    const N: usize = 60;
    let mut tasks = Vec::new();
    for c in 0..2 {
        let mut s = v.session().await;
        let ctx = ctx.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..N {
                let name = format!("c{c}-{i}");
                if i % 2 == 0 {
                    s.mkdir(&ctx, d, name.as_bytes(), 0o755, 0).await.unwrap();
                } else {
                    s.create(&ctx, d, name.as_bytes(), 0o644, 0).await.unwrap();
                }
            }
            s.flush().await.unwrap();
            s.stats()
        }));
    }
    let mut retries = 0;
    for t in tasks {
        retries += t.await.unwrap().retries;
    }
    let entries = v.s.readdir(&ctx, d, true).await.unwrap();
    assert_eq!(entries.len(), 2 * N + 2, "no entry lost");
    let dirs = entries
        .iter()
        .filter(|e| e.name != b"." && e.name != b".." && e.attr.typ == FileType::Directory)
        .count();
    assert_eq!(dirs, N);
    assert_eq!(v.s.getattr(d).await.unwrap().nlink as usize, 2 + N);
    for e in entries.iter().filter(|e| e.name != b"." && e.name != b"..") {
        let (ino, _): (Ino, _) = v.s.lookup(&ctx, d, &e.name).await.unwrap();
        assert_eq!(ino, e.inode);
    }
    eprintln!("{on:?}: {retries} retries in {} creates", 2 * N);
    if v.optimistic() && matches!(on, TestEngine::Etcd | TestEngine::Etcd34 | TestEngine::Tikv) {
        assert!(
            retries > 0,
            "two {on:?} clients racing on one directory conflict"
        );
    }
    v.finish().await;
}

/// SkipDirMtime as a mount sets it (here an hour, so that no update falls due during the
/// test): a parent younger than that keeps its mtime through a create, link and unlink; a
/// directory made or replaced still changes its nlink and times (on TKV until
/// SkipDirNlink retries). Under the Go benchmark's settings (0) every create moves it.
async fn skipped_parent_updates(on: TestEngine) {
    let mut v = volume(on).await;
    let ctx = v.ctx.clone();
    let opts = SessionOptions {
        skip_dir_mtime: std::time::Duration::from_secs(3600),
        skip_dir_nlink: 20,
        ..SessionOptions::default()
    };
    let mut m = v.engine.session(&opts).await.unwrap();
    let p = v.dir(ROOT_INODE, b"skip").await;
    for d in [&b"a"[..], b"b"] {
        m.mkdir(&ctx, p, d, 0o755, 0).await.unwrap();
    }
    let before = v.s.getattr(p).await.unwrap();
    assert_eq!(before.nlink, 4, "{on:?}: two subdirectories were linked");
    let (f, _) = m.create(&ctx, p, b"f", 0o644, 0).await.unwrap();
    m.link(&ctx, f, p, b"g").await.unwrap();
    m.unlink(&ctx, p, b"g").await.unwrap();
    let after = v.s.getattr(p).await.unwrap();
    assert_eq!(
        (after.mtime, after.ctime, after.nlink),
        (before.mtime, before.ctime, 4),
        "{on:?}: create, link and unlink within SkipDirMtime leave the parent alone"
    );
    // Replacing an empty directory in the same parent drops a link: written, with `now`.
    m.rename(&ctx, p, b"a", p, b"b", 0).await.unwrap();
    let replaced = v.s.getattr(p).await.unwrap();
    assert_eq!(replaced.nlink, 3, "{on:?}");
    assert!(
        replaced.mtime > before.mtime,
        "{on:?}: {replaced:?} vs {before:?}"
    );
    assert_eq!(replaced.ctime, replaced.mtime, "{on:?}");
    // The Go benchmark's settings move it on every create.
    v.s.create(&ctx, p, b"h", 0o644, 0).await.unwrap();
    assert!(
        v.s.getattr(p).await.unwrap().mtime > replaced.mtime,
        "{on:?}"
    );
    m.flush().await.unwrap();
    v.finish().await;
}

/// `Truncate` and `Fallocate`: the lengths, the holes each family appends (read back
/// through `read`), the times, and the errnos of `baseMeta.Fallocate` and of
/// `doTruncate` / `doFallocate`.
async fn resizes(on: TestEngine) {
    use metabench_engine::falloc::*;
    const C: u64 = 64 << 20;
    let mut v = volume(on).await;
    let ctx = v.ctx.clone();
    let d = v.dir(ROOT_INODE, b"d").await;
    let (f, created) = v.s.create(&ctx, d, b"f", 0o644, 0).await.unwrap();
    let id = v.s.new_slice().await.unwrap();
    let data = Slice::whole(0, id, 1024);
    v.s.write(f, 0, data, Timestamp::now()).await.unwrap();

    // Down within a chunk: the cut-off tail reads as a hole; mtime and ctime move.
    let a = v.s.truncate(&ctx, f, 100).await.unwrap();
    assert_eq!(a.length, 100);
    assert!(a.mtime > created.mtime && a.ctime == a.mtime, "{a:?}");
    assert_eq!(v.s.getattr(f).await.unwrap(), a);
    assert_eq!(
        v.s.read(f, 0).await.unwrap(),
        vec![data, Slice::hole(100, 924)]
    );
    // To the same length: nothing is written, the times stay.
    assert_eq!(v.s.truncate(&ctx, f, 100).await.unwrap(), a);
    assert_eq!(v.s.read(f, 0).await.unwrap().len(), 2);

    // Up across chunks: the first chunk to its end, none in between (there is no chunk
    // there), the last up to the new length.
    v.s.truncate(&ctx, f, 3 * C + 7).await.unwrap();
    assert_eq!(
        v.s.read(f, 0).await.unwrap()[2],
        Slice::hole(100, (C - 100) as u32)
    );
    assert!(v.s.read(f, 1).await.unwrap().is_empty());
    assert_eq!(v.s.read(f, 3).await.unwrap(), vec![Slice::hole(0, 7)]);
    // Down across chunks: an existing chunk between gets a whole-chunk hole.
    let id = v.s.new_slice().await.unwrap();
    let in_one = Slice { id, ..data };
    v.s.write(f, 1, in_one, Timestamp::now()).await.unwrap();
    assert_eq!(v.s.truncate(&ctx, f, 10).await.unwrap().length, 10);
    assert_eq!(
        v.s.read(f, 1).await.unwrap(),
        vec![in_one, Slice::hole(0, C as u32)]
    );
    assert!(v.s.read(f, 2).await.unwrap().is_empty());
    assert_eq!(
        v.s.read(f, 3).await.unwrap(),
        vec![Slice::hole(0, 7), Slice::hole(0, 7)]
    );
    assert_eq!(
        v.s.read(f, 0).await.unwrap()[3],
        Slice::hole(10, (C - 10) as u32)
    );

    // Fallocate: mode 0 grows the file without a hole; KEEP_SIZE keeps the length.
    let g = v.file(d, b"g").await;
    assert_eq!(
        v.s.fallocate(&ctx, g, FallocRange::new(0, 0, 5000))
            .await
            .unwrap(),
        5000
    );
    assert!(v.s.read(g, 0).await.unwrap().is_empty());
    assert_eq!(
        v.s.fallocate(&ctx, g, FallocRange::new(KEEP_SIZE, 4000, 9000))
            .await
            .unwrap(),
        5000
    );
    assert_eq!(v.s.getattr(g).await.unwrap().length, 5000);
    // ZERO_RANGE and PUNCH_HOLE zero the part inside the old length, chunk by chunk.
    assert_eq!(
        v.s.fallocate(
            &ctx,
            g,
            FallocRange::new(PUNCH_HOLE | KEEP_SIZE, 4000, 9000)
        )
        .await
        .unwrap(),
        5000
    );
    assert_eq!(v.s.read(g, 0).await.unwrap(), vec![Slice::hole(4000, 1000)]);
    v.s.fallocate(&ctx, g, FallocRange::new(0, 0, C + 10))
        .await
        .unwrap();
    assert_eq!(
        v.s.fallocate(&ctx, g, FallocRange::new(ZERO_RANGE, C - 1, 11))
            .await
            .unwrap(),
        C + 10
    );
    assert_eq!(
        v.s.read(g, 0).await.unwrap()[1],
        Slice::hole((C - 1) as u32, 1)
    );
    assert_eq!(v.s.read(g, 1).await.unwrap(), vec![Slice::hole(0, 10)]);

    // Errnos: the VFS's checks first (a size of 0, then EFBIG, overflow included), then
    // base's argument checks, then the node's.
    for (mode, off, size, want) in [
        (COLLAPSE_RANGE, 0, 0, "EINVAL"),
        (PUNCH_HOLE, C << 31, 1, "EFBIG"),
        (0, u64::MAX - 1, 10, "EFBIG"),
        (PUNCH_HOLE, 0, 1, "EINVAL"),
        (0, 0, 0, "EINVAL"),
        (COLLAPSE_RANGE, 0, 1, "ENOTSUP"),
        (INSERT_RANGE | KEEP_SIZE, 0, 1, "EINVAL"),
    ] {
        let r = v.s.fallocate(&ctx, g, FallocRange::new(mode, off, size));
        assert_eq!(
            errno(r.await),
            want,
            "fallocate mode {mode:#x} {off}+{size}"
        );
    }
    assert_errno!(v.s.truncate(&ctx, g, C << 31).await, "EFBIG");
    assert_errno!(
        v.s.fallocate(&ctx, g, FallocRange::new(0, C << 31, 1))
            .await,
        "EFBIG"
    );
    assert_errno!(v.s.truncate(&ctx, d, 0).await, "EPERM");
    assert_errno!(
        v.s.fallocate(&ctx, d, FallocRange::new(0, 0, 1)).await,
        "EPERM"
    );
    let (fifo, _) =
        v.s.mknod(&ctx, d, b"p", FileType::Fifo, 0o644, 0, 0)
            .await
            .unwrap();
    assert_errno!(
        v.s.fallocate(&ctx, fifo, FallocRange::new(0, 0, 1)).await,
        "EPIPE"
    );
    assert_errno!(v.s.truncate(&ctx, fifo, 0).await, "EPERM");
    let user = Ctx {
        uid: 7,
        gids: vec![7],
        pid: 1,
    };
    assert_errno!(v.s.truncate(&user, g, 0).await, "EACCES");
    assert_errno!(
        v.s.fallocate(&user, g, FallocRange::new(0, 0, 1)).await,
        "EACCES"
    );
    assert_errno!(v.s.truncate(&ctx, 1 << 40, 0).await, "ENOENT");
    assert_errno!(
        v.s.fallocate(&ctx, 1 << 40, FallocRange::new(0, 0, 1))
            .await,
        "ENOENT"
    );
    // An error wrote nothing.
    assert_eq!(v.s.getattr(g).await.unwrap().length, C + 10);
    v.finish().await;
}
