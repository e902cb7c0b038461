//! What the Redis operations do: values written and read back, the errno JuiceFS returns
//! for each failure, dir stats and volume counters after a flush, freed file data,
//! conflicting transactions retried, and the background inode prefetch.

use super::common::redis_volume;
use metabench_engine::{Ctx, Engine, Meta, MetaError, SessionOptions, SetAttr, XattrFlags};
use metabench_schema::{FileType, Ino, Slice, Timestamp, ROOT_INODE};
use metabench_testkit::RedisServer;
use std::sync::Arc;

struct Fixture {
    server: RedisServer,
    engine: Arc<dyn Engine>,
    meta: Box<dyn Meta>,
    ctx: Ctx,
}

const DB: u32 = 3;

async fn fixture() -> Fixture {
    let (server, engine, meta) = redis_volume(
        DB,
        "semantics",
        "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee",
        &SessionOptions::default(),
    )
    .await;
    Fixture {
        server,
        engine,
        meta,
        ctx: Ctx::root(),
    }
}

/// A fixture with the directories `a` and `b` under the root and an empty file `a/f`:
/// (it, `a`, `b`, `f`).
async fn two_dirs_and_a_file() -> (Fixture, Ino, Ino, Ino) {
    let mut fx = fixture().await;
    let c = fx.ctx.clone();
    let (a, _) = fx.meta.mkdir(&c, ROOT_INODE, b"a", 0o755, 0).await.unwrap();
    let (b, _) = fx.meta.mkdir(&c, ROOT_INODE, b"b", 0o755, 0).await.unwrap();
    let (f, _) = fx.meta.create(&c, a, b"f", 0o644, 0).await.unwrap();
    (fx, a, b, f)
}

impl Fixture {
    /// A Redis command on the test's database, on a connection of its own.
    fn redis(&self, args: &[&str]) -> redis::Value {
        let client = redis::Client::open(self.server.url(DB)).unwrap();
        let mut con = client.get_connection().unwrap();
        redis::cmd(args[0]).arg(&args[1..]).query(&mut con).unwrap()
    }

    fn int(&self, args: &[&str]) -> i64 {
        match self.redis(args) {
            redis::Value::Int(i) => i,
            redis::Value::BulkString(b) => String::from_utf8(b).unwrap().parse().unwrap(),
            redis::Value::Nil => 0,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    fn exists(&self, key: &str) -> bool {
        self.int(&["EXISTS", key]) == 1
    }
}

fn kind<T: std::fmt::Debug>(r: Result<T, MetaError>) -> &'static str {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.kind(),
    }
}

#[tokio::test]
async fn create_lookup_getattr_and_readdir() {
    let mut fx = fixture().await;
    let ctx = Ctx {
        uid: 1000,
        gids: vec![100],
        pid: 7,
    };
    let root0 = fx.meta.getattr(ROOT_INODE).await.unwrap();
    // The root is 0777, so uid 1000 may create in it.
    let (d, dattr) = fx
        .meta
        .mkdir(&ctx, ROOT_INODE, b"dir", 0o777, 0o022)
        .await
        .unwrap();
    assert_eq!(dattr.typ, FileType::Directory);
    assert_eq!((dattr.mode, dattr.uid, dattr.gid), (0o755, 1000, 100));
    let root1 = fx.meta.getattr(ROOT_INODE).await.unwrap();
    assert_eq!(root1.nlink, root0.nlink + 1);
    assert!(root1.mtime >= root0.mtime);

    let (f, fattr) = fx
        .meta
        .create(&ctx, d, b"file", 0o666, 0o022)
        .await
        .unwrap();
    assert_eq!(
        (fattr.typ, fattr.mode, fattr.nlink, fattr.length),
        (FileType::File, 0o644, 1, 0)
    );
    assert_eq!(fattr.parent, d);
    let (fifo, _) = fx
        .meta
        .mknod(&ctx, d, b"fifo", FileType::Fifo, 0o600, 0, 0)
        .await
        .unwrap();
    let (sym, sattr) = fx.meta.symlink(&ctx, d, b"sym", b"file").await.unwrap();
    assert_eq!(
        (sattr.typ, sattr.mode, sattr.length),
        (FileType::Symlink, 0o777, 4)
    );
    assert_eq!(fx.meta.readlink(sym).await.unwrap(), b"file");

    let (got, gattr) = fx.meta.lookup(&ctx, d, b"file").await.unwrap();
    assert_eq!((got, &gattr), (f, &fattr));
    assert_eq!(fx.meta.getattr(f).await.unwrap(), fattr);
    assert_eq!(fx.meta.lookup(&ctx, d, b".").await.unwrap().0, d);
    assert_eq!(fx.meta.lookup(&ctx, d, b"..").await.unwrap().0, ROOT_INODE);
    assert_eq!(
        fx.meta.lookup(&ctx, ROOT_INODE, b"..").await.unwrap().0,
        ROOT_INODE
    );

    let plus = fx.meta.readdir(&ctx, d, true).await.unwrap();
    let mut names: Vec<_> = plus
        .iter()
        .map(|e| (e.name.clone(), e.inode, e.attr.typ))
        .collect();
    names.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        names,
        vec![
            (b".".to_vec(), d, FileType::Directory),
            (b"..".to_vec(), ROOT_INODE, FileType::Directory),
            (b"fifo".to_vec(), fifo, FileType::Fifo),
            (b"file".to_vec(), f, FileType::File),
            (b"sym".to_vec(), sym, FileType::Symlink),
        ]
    );
    let file = plus.iter().find(|e| e.name == b"file").unwrap();
    assert_eq!(file.attr, fattr);
    let dot = plus.iter().find(|e| e.name == b".").unwrap();
    assert_eq!(dot.attr.nlink, 2, "plus fills . and .. too");
    let bare = fx.meta.readdir(&ctx, d, false).await.unwrap();
    assert_eq!(bare.len(), 5);
    assert!(
        bare.iter().all(|e| e.attr.nlink == 0),
        "no attributes without plus"
    );

    assert_eq!(fx.meta.getattr(9999).await.unwrap_err().kind(), "ENOENT");
}

#[tokio::test]
async fn renames() {
    let (mut fx, a, b, f) = two_dirs_and_a_file().await;
    let c = fx.ctx.clone();
    let (sub, _) = fx.meta.mkdir(&c, a, b"sub", 0o755, 0).await.unwrap();

    // A file within a directory, then across directories.
    let (ino, attr) = fx.meta.rename(&c, a, b"f", a, b"g", 0).await.unwrap();
    assert_eq!((ino, attr.parent), (f, a));
    assert_eq!(kind(fx.meta.lookup(&c, a, b"f").await), "ENOENT");
    fx.meta.rename(&c, a, b"g", b, b"g", 0).await.unwrap();
    assert_eq!(fx.meta.lookup(&c, b, b"g").await.unwrap().1.parent, b);
    // A directory across directories moves one nlink.
    fx.meta.rename(&c, a, b"sub", b, b"sub", 0).await.unwrap();
    assert_eq!(fx.meta.getattr(a).await.unwrap().nlink, 2);
    assert_eq!(fx.meta.getattr(b).await.unwrap().nlink, 3);
    assert_eq!(fx.meta.getattr(sub).await.unwrap().parent, b);
    assert_eq!(fx.meta.lookup(&c, sub, b"..").await.unwrap().0, b);

    // Same name: nothing happens.
    assert_eq!(fx.meta.rename(&c, b, b"g", b, b"g", 0).await.unwrap().0, f);

    // Over an existing file: the target is deleted, its data queued for freeing.
    let (t, _) = fx.meta.create(&c, b, b"t", 0o644, 0).await.unwrap();
    fx.meta.rename(&c, b, b"g", b, b"t", 0).await.unwrap();
    assert_eq!(fx.meta.lookup(&c, b, b"t").await.unwrap().0, f);
    assert_eq!(kind(fx.meta.getattr(t).await), "ENOENT");
    assert_eq!(fx.int(&["ZCARD", "delfiles"]), 1);

    // Its errnos are conformance's (`renames_replace_and_move`, `errnos_of_every_operation`).
    fx.meta.create(&c, b, b"u", 0o644, 0).await.unwrap();
    fx.meta.create(&c, sub, b"x", 0o644, 0).await.unwrap();
    fx.meta.mkdir(&c, b, b"empty", 0o755, 0).await.unwrap();

    // Over an empty directory, and exchange.
    fx.meta.mkdir(&c, b, b"e2", 0o755, 0).await.unwrap();
    let nl = fx.meta.getattr(b).await.unwrap().nlink;
    fx.meta.rename(&c, b, b"e2", b, b"empty", 0).await.unwrap();
    assert_eq!(fx.meta.getattr(b).await.unwrap().nlink, nl - 1);
    let (t1, _) = fx.meta.lookup(&c, b, b"t").await.unwrap();
    let (u1, _) = fx.meta.lookup(&c, b, b"u").await.unwrap();
    fx.meta.rename(&c, b, b"t", b, b"u", 2).await.unwrap();
    assert_eq!(fx.meta.lookup(&c, b, b"t").await.unwrap().0, u1);
    assert_eq!(fx.meta.lookup(&c, b, b"u").await.unwrap().0, t1);
}

#[tokio::test]
async fn hard_links_symlinks_and_xattrs() {
    let (mut fx, d, e, f) = two_dirs_and_a_file().await;
    let c = fx.ctx.clone();
    let a = fx.meta.link(&c, f, e, b"h").await.unwrap();
    assert_eq!((a.nlink, a.parent), (2, 0));
    assert_eq!(fx.int(&["HGET", &format!("p{f}"), &d.to_string()]), 1);
    assert_eq!(fx.int(&["HGET", &format!("p{f}"), &e.to_string()]), 1);
    assert_eq!(fx.meta.lookup(&c, e, b"h").await.unwrap().0, f);
    fx.meta.unlink(&c, d, b"f").await.unwrap();
    assert_eq!(fx.meta.getattr(f).await.unwrap().nlink, 1);
    assert_eq!(fx.int(&["HGET", &format!("p{f}"), &d.to_string()]), 0);
    fx.meta.unlink(&c, e, b"h").await.unwrap();
    assert_eq!(kind(fx.meta.getattr(f).await), "ENOENT");
    assert!(!fx.exists(&format!("p{f}")));

    let (g, _) = fx.meta.create(&c, d, b"g", 0o644, 0).await.unwrap();
    for (k, v) in [("user.a", "1"), ("user.b", "")] {
        fx.meta
            .setxattr(g, k.as_bytes(), v.as_bytes(), XattrFlags::Any)
            .await
            .unwrap();
        assert_eq!(
            fx.meta.getxattr(g, k.as_bytes()).await.unwrap(),
            v.as_bytes()
        );
    }
    let mut names = fx.meta.listxattr(g).await.unwrap();
    names.sort();
    assert_eq!(names, vec![b"user.a".to_vec(), b"user.b".to_vec()]);
    fx.meta
        .setxattr(g, b"user.a", b"2", XattrFlags::Replace)
        .await
        .unwrap();
    assert_eq!(fx.meta.getxattr(g, b"user.a").await.unwrap(), b"2");
    fx.meta.removexattr(g, b"user.a").await.unwrap();
    assert_eq!(
        fx.meta.listxattr(g).await.unwrap(),
        vec![b"user.b".to_vec()]
    );
    // Deleting the file deletes its xattrs.
    fx.meta.unlink(&c, d, b"g").await.unwrap();
    assert!(!fx.exists(&format!("x{g}")));
}

#[tokio::test]
async fn setattr_changes_what_it_is_asked() {
    let mut fx = fixture().await;
    let c = fx.ctx.clone();
    let (f, a0) = fx
        .meta
        .create(&c, ROOT_INODE, b"f", 0o644, 0)
        .await
        .unwrap();
    let t = Timestamp {
        sec: 1_600_000_000,
        nsec: 42,
    };
    let set = SetAttr {
        mode: Some(0o640),
        uid: Some(7),
        gid: Some(8),
        atime: Some(t),
        mtime: Some(t),
    };
    let a1 = fx.meta.setattr(&c, f, &set).await.unwrap();
    assert_eq!(
        (a1.mode, a1.uid, a1.gid, a1.atime, a1.mtime),
        (0o640, 7, 8, t, t)
    );
    assert!(a1.ctime >= a0.ctime);
    assert_eq!(fx.meta.getattr(f).await.unwrap(), a1);
    // Nothing to change returns the current attribute.
    assert_eq!(
        fx.meta.setattr(&c, f, &SetAttr::default()).await.unwrap(),
        a1
    );
}

#[tokio::test]
async fn write_read_dir_stats_counters_and_freed_data() {
    let mut fx = fixture().await;
    let c = fx.ctx.clone();
    let (d, _) = fx.meta.mkdir(&c, ROOT_INODE, b"d", 0o755, 0).await.unwrap();
    let (f, _) = fx.meta.create(&c, d, b"f", 0o644, 0).await.unwrap();
    let mut written = Vec::new();
    for j in 0..3u32 {
        let id = fx.meta.new_slice().await.unwrap();
        let s = Slice::whole(j * 3000, id, 3000);
        fx.meta
            .write(
                f,
                0,
                s,
                Timestamp {
                    sec: 1_700_000_000 + j as i64,
                    nsec: 0,
                },
            )
            .await
            .unwrap();
        written.push(s);
    }
    // A second chunk.
    let id = fx.meta.new_slice().await.unwrap();
    let far = Slice {
        pos: 100,
        id,
        size: 50,
        off: 10,
        len: 40,
    };
    fx.meta.write(f, 1, far, Timestamp::now()).await.unwrap();
    assert_eq!(fx.meta.read(f, 0).await.unwrap(), written);
    assert_eq!(fx.meta.read(f, 1).await.unwrap(), vec![far]);
    assert_eq!(fx.meta.read(f, 2).await.unwrap(), vec![]);
    let len = (64u64 << 20) + 140;
    let attr = fx.meta.getattr(f).await.unwrap();
    assert_eq!(attr.length, len);
    let (sym, _) = fx.meta.symlink(&c, d, b"s", b"f").await.unwrap();
    let _ = sym;

    // Volume counters are updated inside the transactions.
    let space = |l: u64| if l == 0 { 4096 } else { l.div_ceil(4096) * 4096 } as i64;
    assert_eq!(fx.int(&["GET", "totalInodes"]), 3);
    assert_eq!(fx.int(&["GET", "usedSpace"]), 4096 + space(len) + 4096);

    // Dir stats after a flush: every directory, the root included, has its record.
    fx.meta.flush().await.unwrap();
    let stat = |fx: &Fixture, ino: Ino| {
        (
            fx.int(&["HGET", "dirDataLength", &ino.to_string()]),
            fx.int(&["HGET", "dirUsedSpace", &ino.to_string()]),
            fx.int(&["HGET", "dirUsedInodes", &ino.to_string()]),
        )
    };
    assert_eq!(stat(&fx, ROOT_INODE), (0, 4096, 1));
    assert_eq!(stat(&fx, d), (len as i64, space(len) + 4096, 2));

    // Unlink, flush: the chunks are deleted, the slices' refcounts settled, the marker gone.
    fx.meta.unlink(&c, d, b"f").await.unwrap();
    assert_eq!(fx.int(&["ZCARD", "delfiles"]), 1);
    assert!(fx.exists(&format!("c{f}_0")));
    fx.meta.flush().await.unwrap();
    assert!(!fx.exists(&format!("c{f}_0")));
    assert!(!fx.exists(&format!("c{f}_1")));
    assert_eq!(fx.int(&["ZCARD", "delfiles"]), 0);
    assert_eq!(fx.int(&["HLEN", "sliceRef"]), 0);
    assert_eq!(stat(&fx, d), (0, 4096, 1));
    assert_eq!(fx.int(&["GET", "totalInodes"]), 2);
    assert_eq!(fx.int(&["GET", "usedSpace"]), 8192);
}

#[tokio::test]
async fn hard_linked_writes_reach_every_parent_at_flush() {
    let (mut fx, a, b, f) = two_dirs_and_a_file().await;
    let c = fx.ctx.clone();
    fx.meta.link(&c, f, b, b"g").await.unwrap();
    fx.meta.flush().await.unwrap();
    let s = Slice::whole(0, fx.meta.new_slice().await.unwrap(), 5000);
    fx.meta.write(f, 0, s, Timestamp::now()).await.unwrap();
    fx.meta.flush().await.unwrap();
    for p in [a, b] {
        assert_eq!(fx.int(&["HGET", "dirDataLength", &p.to_string()]), 5000);
        assert_eq!(fx.int(&["HGET", "dirUsedSpace", &p.to_string()]), 8192);
    }
}

#[tokio::test]
async fn concurrent_sessions_conflict_retry_and_agree() {
    let fx = fixture().await;
    let c = fx.ctx.clone();
    let mut setup = fx.engine.session(&SessionOptions::default()).await.unwrap();
    let (p, _) = setup.mkdir(&c, ROOT_INODE, b"hot", 0o755, 0).await.unwrap();
    let mut tasks = Vec::new();
    for t in 0..4 {
        let mut m = fx.engine.session(&SessionOptions::default()).await.unwrap();
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..50 {
                m.mkdir(&c, p, format!("t{t}-{i}").as_bytes(), 0o755, 0)
                    .await
                    .unwrap();
            }
            m.stats()
        }));
    }
    let mut retries = 0;
    for t in tasks {
        retries += t.await.unwrap().retries;
    }
    assert!(
        retries > 0,
        "four sessions creating in one directory never conflicted"
    );
    // No lost update: every mkdir incremented the parent's nlink.
    assert_eq!(setup.getattr(p).await.unwrap().nlink, 2 + 200);
    assert_eq!(setup.readdir(&c, p, false).await.unwrap().len(), 202);
}

#[tokio::test]
async fn inodes_are_prefetched_in_the_background() {
    let mut fx = fixture().await;
    let c = fx.ctx.clone();
    let s0 = fx.meta.stats();
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..1100 {
        let (ino, _) = fx
            .meta
            .mknod(
                &c,
                ROOT_INODE,
                format!("f{i}").as_bytes(),
                FileType::File,
                0o644,
                0,
                0,
            )
            .await
            .unwrap();
        assert!(seen.insert(ino));
    }
    // Only the very first batch was fetched on the calling path.
    assert_eq!(fx.meta.stats().since(&s0).round_trips, 1 + 5 * 1100);
    assert_eq!(*seen.iter().next().unwrap(), 2);
    assert_eq!(fx.int(&["GET", "nextinode"]), 2048);
    assert!(seen.iter().all(|i| *i <= 2048));
}
