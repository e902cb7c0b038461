//! What the SQL operations do, on MariaDB, PostgreSQL and SQLite alike: values written
//! and read back, the errno JuiceFS returns for each failure, the rows left behind (dir
//! stats, volume counters, freed data after a flush), conflicting transactions retried,
//! and the background inode prefetch.

use crate::sql_common;

use metabench_engine::{Ctx, Meta, MetaError, SessionOptions, SetAttr, XattrFlags};
use metabench_schema::{FileType, Ino, Slice, Timestamp, ROOT_INODE};
use metabench_testkit::Kind;
use sql_common::{volume, Vol};
use std::collections::BTreeMap;

fn slice(id: u64, pos: u32, len: u32) -> Slice {
    Slice::whole(pos, id, len)
}

fn user(uid: u32) -> Ctx {
    Ctx {
        uid,
        gids: vec![uid],
        pid: 1,
    }
}

fn count<D: AsDb>(v: &D, sql: &str) -> usize {
    v.db().query(sql).len()
}

/// A test database, directly or through a volume fixture.
trait AsDb {
    fn db(&self) -> &metabench_testkit::TestDb;
}

impl AsDb for Vol {
    fn db(&self) -> &metabench_testkit::TestDb {
        &self.db
    }
}

impl AsDb for metabench_testkit::TestDb {
    fn db(&self) -> &metabench_testkit::TestDb {
        self
    }
}

async fn tree_and_errors(kind: Kind) {
    let mut v = volume(kind).await;
    let ctx = v.ctx.clone();
    let s = &mut v.s;

    // mkdir: mode & !umask, nlink 2, length 4096; the parent gains a link
    let (d, a) = s.mkdir(&ctx, ROOT_INODE, b"d", 0o777, 0o022).await.unwrap();
    assert_eq!(
        (a.typ, a.mode, a.nlink, a.length, a.parent),
        (FileType::Directory, 0o755, 2, 4096, 1)
    );
    assert_eq!(s.getattr(ROOT_INODE).await.unwrap().nlink, 3);
    let (ino, la) = s.lookup(&ctx, ROOT_INODE, b"d").await.unwrap();
    assert_eq!((ino, la.mode, la.mtime), (d, 0o755, a.mtime));
    assert!(matches!(
        s.mkdir(&ctx, ROOT_INODE, b"d", 0o755, 0).await,
        Err(MetaError::Exists)
    ));
    assert!(matches!(
        s.mkdir(&ctx, 424242, b"x", 0o755, 0).await,
        Err(MetaError::NotFound)
    ));
    assert!(matches!(
        s.mkdir(&ctx, d, b".", 0o755, 0).await,
        Err(MetaError::Exists)
    ));
    assert!(matches!(
        s.mkdir(&ctx, d, b"a/b", 0o755, 0).await,
        Err(MetaError::Invalid)
    ));
    assert!(matches!(
        s.mkdir(&ctx, ROOT_INODE, b".trash", 0o755, 0).await,
        Err(MetaError::Perm)
    ));

    // files: create opens an existing file, mknod does not
    let (f, fa) = s.create(&ctx, d, b"f", 0o666, 0o022).await.unwrap();
    assert_eq!(
        (fa.typ, fa.mode, fa.nlink, fa.length, fa.parent),
        (FileType::File, 0o644, 1, 0, d)
    );
    assert_eq!(s.create(&ctx, d, b"f", 0o644, 0).await.unwrap().0, f);
    assert!(matches!(
        s.mknod(&ctx, d, b"f", FileType::File, 0o644, 0, 0).await,
        Err(MetaError::Exists)
    ));
    assert!(matches!(
        s.mkdir(&ctx, f, b"x", 0o755, 0).await,
        Err(MetaError::NotDir)
    ));
    let (fifo, pa) = s
        .mknod(&ctx, d, b"p", FileType::Fifo, 0o600, 0, 0)
        .await
        .unwrap();
    assert_eq!(pa.typ, FileType::Fifo);
    let (dev, da) = s
        .mknod(&ctx, d, b"c", FileType::CharDev, 0o600, 0, 0x0501)
        .await
        .unwrap();
    assert_eq!(da.rdev, 0x0501);
    assert_eq!(s.getattr(dev).await.unwrap().rdev, 0x0501);
    assert!(matches!(s.getattr(999_999).await, Err(MetaError::NotFound)));
    assert!(matches!(
        s.lookup(&ctx, d, b"nope").await,
        Err(MetaError::NotFound)
    ));
    assert_eq!(s.lookup(&ctx, d, b"..").await.unwrap().0, ROOT_INODE);
    assert_eq!(s.lookup(&ctx, d, b".").await.unwrap().0, d);

    // symlinks
    let (l, sa) = s.symlink(&ctx, d, b"s", b"../target").await.unwrap();
    assert_eq!((sa.typ, sa.mode, sa.length), (FileType::Symlink, 0o777, 9));
    assert_eq!(s.readlink(l).await.unwrap(), b"../target");
    assert!(matches!(s.readlink(f).await, Err(MetaError::Invalid)));
    assert!(matches!(
        s.symlink(&ctx, d, b"s2", b"").await,
        Err(MetaError::Invalid)
    ));

    // readdir, with and without attributes
    let names = |e: &[metabench_engine::Entry]| {
        e.iter()
            .map(|e| {
                (
                    String::from_utf8_lossy(&e.name).into_owned(),
                    (e.inode, e.attr.typ),
                )
            })
            .collect::<BTreeMap<_, _>>()
    };
    let plus = s.readdir(&ctx, d, true).await.unwrap();
    let lite = s.readdir(&ctx, d, false).await.unwrap();
    assert_eq!(names(&plus), names(&lite));
    let n = names(&plus);
    assert_eq!(n.len(), 6);
    assert_eq!(n["."], (d, FileType::Directory));
    assert_eq!(n[".."], (ROOT_INODE, FileType::Directory));
    assert_eq!(n["p"], (fifo, FileType::Fifo));
    assert_eq!(n["s"], (l, FileType::Symlink));
    let fe = plus.iter().find(|e| e.name == b"f").unwrap();
    assert_eq!((fe.attr.mode, fe.attr.nlink, fe.attr.parent), (0o644, 1, d));
    assert!(matches!(
        s.readdir(&ctx, f, false).await,
        Err(MetaError::NotFound) | Ok(_)
    ));

    // hard links: parent 0, nlink counts; unlinking one name keeps the inode
    let la = s.link(&ctx, f, ROOT_INODE, b"hard").await.unwrap();
    assert_eq!((la.nlink, la.parent), (2, 0));
    s.unlink(&ctx, d, b"f").await.unwrap();
    let after = s.getattr(f).await.unwrap();
    assert_eq!((after.nlink, after.parent), (1, 0));
    assert_eq!(s.lookup(&ctx, ROOT_INODE, b"hard").await.unwrap().0, f);

    // rename: move a directory across parents, replace a file, refuse the rest
    let (e, _) = s.mkdir(&ctx, ROOT_INODE, b"e", 0o755, 0).await.unwrap();
    let (sub, _) = s.mkdir(&ctx, d, b"sub", 0o755, 0).await.unwrap();
    assert_eq!(s.getattr(d).await.unwrap().nlink, 3);
    let (moved, ma) = s.rename(&ctx, d, b"sub", e, b"sub2", 0).await.unwrap();
    assert_eq!((moved, ma.parent), (sub, e));
    assert_eq!(s.getattr(d).await.unwrap().nlink, 2);
    assert_eq!(s.getattr(e).await.unwrap().nlink, 3);
    let (g, _) = s.create(&ctx, e, b"g", 0o644, 0).await.unwrap();
    let (h, _) = s.create(&ctx, e, b"h", 0o644, 0).await.unwrap();
    // Its errnos are conformance's (`renames_replace_and_move`).
    s.rename(&ctx, e, b"g", e, b"h", 0).await.unwrap();
    assert_eq!(s.lookup(&ctx, e, b"h").await.unwrap().0, g);
    assert!(matches!(s.getattr(h).await, Err(MetaError::NotFound)));
    assert!(matches!(
        s.lookup(&ctx, e, b"g").await,
        Err(MetaError::NotFound)
    ));
    // exchange swaps the two entries
    let (i2, _) = s.create(&ctx, d, b"i", 0o644, 0).await.unwrap();
    s.rename(&ctx, e, b"h", d, b"i", 2).await.unwrap();
    assert_eq!(s.lookup(&ctx, d, b"i").await.unwrap().0, g);
    assert_eq!(s.lookup(&ctx, e, b"h").await.unwrap().0, i2);
    assert_eq!(s.getattr(g).await.unwrap().parent, d);

    // setattr and access
    let set = SetAttr {
        mode: Some(0o600),
        uid: Some(7),
        gid: Some(8),
        mtime: Some(Timestamp {
            sec: 1_000_000,
            nsec: 123_456_789,
        }),
        ..Default::default()
    };
    let sa = s.setattr(&ctx, g, &set).await.unwrap();
    assert_eq!((sa.mode, sa.uid, sa.gid), (0o600, 7, 8));
    let back = s.getattr(g).await.unwrap();
    assert_eq!(
        back.mtime,
        Timestamp {
            sec: 1_000_000,
            nsec: 123_456_789
        }
    );
    assert_eq!((back.mode, back.uid, back.gid), (0o600, 7, 8));
    assert!(matches!(
        s.setattr(
            &user(9),
            g,
            &SetAttr {
                uid: Some(9),
                ..Default::default()
            }
        )
        .await,
        Err(MetaError::Perm)
    ));
    assert!(matches!(
        s.access(&user(9), g, 4).await,
        Err(MetaError::Access)
    ));
    s.access(&user(7), g, 6).await.unwrap();
    s.access(&ctx, g, 7).await.unwrap();
    // a non-root user cannot create in a directory it may not write
    assert!(matches!(
        s.create(&user(9), e, b"nope", 0o644, 0).await,
        Err(MetaError::Access)
    ));

    // xattrs
    s.setxattr(g, b"user.a", b"1", XattrFlags::Any)
        .await
        .unwrap();
    s.setxattr(g, b"user.b", b"", XattrFlags::Create)
        .await
        .unwrap();
    assert!(matches!(
        s.setxattr(g, b"user.a", b"2", XattrFlags::Create).await,
        Err(MetaError::Exists)
    ));
    assert!(matches!(
        s.setxattr(g, b"user.c", b"2", XattrFlags::Replace).await,
        Err(MetaError::NoAttr)
    ));
    s.setxattr(g, b"user.a", b"22", XattrFlags::Replace)
        .await
        .unwrap();
    assert_eq!(s.getxattr(g, b"user.a").await.unwrap(), b"22");
    assert_eq!(s.getxattr(g, b"user.b").await.unwrap(), b"");
    let mut names = s.listxattr(g).await.unwrap();
    names.sort();
    assert_eq!(names, vec![b"user.a".to_vec(), b"user.b".to_vec()]);
    s.removexattr(g, b"user.a").await.unwrap();
    assert!(matches!(
        s.removexattr(g, b"user.a").await,
        Err(MetaError::NoAttr)
    ));
    assert!(matches!(
        s.getxattr(g, b"user.a").await,
        Err(MetaError::NoAttr)
    ));
    assert!(matches!(
        s.listxattr(999_999).await,
        Err(MetaError::NotFound)
    ));
    assert!(matches!(
        s.setxattr(g, b"", b"", XattrFlags::Any).await,
        Err(MetaError::Invalid)
    ));

    // write and read: records as stored, length grows, directories refuse
    let id1 = s.new_slice().await.unwrap();
    let id2 = s.new_slice().await.unwrap();
    assert_eq!(id2, id1 + 1);
    s.write(g, 0, slice(id1, 0, 5000), Timestamp::now())
        .await
        .unwrap();
    s.write(g, 1, slice(id2, 100, 10), Timestamp::now())
        .await
        .unwrap();
    assert_eq!(s.read(g, 0).await.unwrap(), vec![slice(id1, 0, 5000)]);
    assert_eq!(s.read(g, 1).await.unwrap(), vec![slice(id2, 100, 10)]);
    assert!(s.read(g, 2).await.unwrap().is_empty());
    assert_eq!(s.getattr(g).await.unwrap().length, (64 << 20) + 110);
    assert!(matches!(
        s.write(d, 0, slice(id1, 0, 1), Timestamp::now()).await,
        Err(MetaError::Perm)
    ));
    assert!(matches!(s.read(d, 0).await, Err(MetaError::Perm)));
    assert!(matches!(s.read(999_999, 0).await, Err(MetaError::NotFound)));

    // rmdir of an emptied directory, then of a missing one
    s.unlink(&ctx, d, b"p").await.unwrap();
    s.unlink(&ctx, d, b"c").await.unwrap();
    s.unlink(&ctx, d, b"s").await.unwrap();
    s.unlink(&ctx, d, b"i").await.unwrap();
    s.unlink(&ctx, d, b"f").await.unwrap_err();
    s.rmdir(&ctx, ROOT_INODE, b"d").await.unwrap();
    assert!(matches!(
        s.rmdir(&ctx, ROOT_INODE, b"d").await,
        Err(MetaError::NotFound)
    ));
    assert!(matches!(s.getattr(d).await, Err(MetaError::NotFound)));
    assert!(matches!(s.readlink(l).await, Err(MetaError::NotFound)));
    assert_eq!(count(&v, "SELECT * FROM jfs_symlink"), 0);
    assert_eq!(s_root_nlink(&mut v).await, 3); // e and nothing else besides . and ..
}

async fn s_root_nlink(v: &mut Vol) -> u32 {
    v.s.getattr(ROOT_INODE).await.unwrap().nlink
}

/// After a flush: every directory (the root included) has its dir-stat row equal to its
/// children's usage, the volume counters hold what the session added, and the data of
/// deleted files is freed (chunks, slice references, the `delfile` marker).
async fn flush_writes_stats_and_frees_data(kind: Kind) {
    let mut v = volume(kind).await;
    let ctx = v.ctx.clone();
    let (a, _) = v.s.mkdir(&ctx, ROOT_INODE, b"a", 0o755, 0).await.unwrap();
    let (f, _) = v.s.create(&ctx, a, b"f", 0o644, 0).await.unwrap();
    let (g, _) = v.s.create(&ctx, a, b"g", 0o644, 0).await.unwrap();
    v.s.symlink(&ctx, a, b"s", b"/x").await.unwrap();
    let id = v.s.new_slice().await.unwrap();
    v.s.write(f, 0, slice(id, 0, 5000), Timestamp::now())
        .await
        .unwrap();
    let id2 = v.s.new_slice().await.unwrap();
    v.s.write(g, 0, slice(id2, 0, 100), Timestamp::now())
        .await
        .unwrap();
    let id3 = v.s.new_slice().await.unwrap();
    v.s.write(g, 0, slice(id3, 100, 100), Timestamp::now())
        .await
        .unwrap();
    // a hard-linked file written after linking: its parents are found at flush
    v.s.link(&ctx, g, ROOT_INODE, b"g2").await.unwrap();
    let id4 = v.s.new_slice().await.unwrap();
    v.s.write(g, 0, slice(id4, 200, 100), Timestamp::now())
        .await
        .unwrap();
    assert_eq!(
        count(&v, "SELECT * FROM jfs_dir_stats"),
        1,
        "only mkdir's row before flush"
    );
    v.s.flush().await.unwrap();

    let stat = |v: &Vol, ino: Ino| -> (i64, i64, i64) {
        let r = &v.db.query(&format!(
            "SELECT data_length, used_space, used_inodes FROM jfs_dir_stats WHERE inode = {ino}"
        ))[0];
        (
            r[0].parse().unwrap(),
            r[1].parse().unwrap(),
            r[2].parse().unwrap(),
        )
    };
    // a: f (5000 B), g (300 B), s (symlink)
    assert_eq!(stat(&v, a), (5300, 8192 + 4096 + 4096, 3));
    // root: a (dir) and g2 (300 B, hard link)
    assert_eq!(stat(&v, ROOT_INODE), (300, 4096 + 4096, 2));
    // 4 inodes created; space: a, f, g, s at 4096 each, f grew to 8192
    assert_eq!(counter(&v.db, "totalInodes"), 4);
    assert_eq!(counter(&v.db, "usedSpace"), 4 * 4096 + 4096);
    assert_eq!(counter(&v.db, "nextChunk"), 4097);
    assert!(counter(&v.db, "nextInode") > g as i64);
    assert_eq!(count(&v, "SELECT * FROM jfs_chunk_ref"), 4);

    // delete f and g (both names): data freed at the next flush
    v.s.unlink(&ctx, a, b"f").await.unwrap();
    v.s.unlink(&ctx, a, b"g").await.unwrap();
    v.s.unlink(&ctx, ROOT_INODE, b"g2").await.unwrap();
    assert_eq!(count(&v, "SELECT * FROM jfs_delfile"), 2);
    v.s.flush().await.unwrap();
    assert_eq!(count(&v, "SELECT * FROM jfs_delfile"), 0);
    assert_eq!(count(&v, "SELECT * FROM jfs_chunk"), 0);
    assert_eq!(count(&v, "SELECT * FROM jfs_chunk_ref"), 0);
    assert_eq!(stat(&v, a), (0, 4096, 1));
    assert_eq!(stat(&v, ROOT_INODE), (0, 4096, 1));
    assert_eq!(counter(&v.db, "totalInodes"), 2);
    assert_eq!(counter(&v.db, "usedSpace"), 2 * 4096);
    // a flush with nothing to do sends nothing
    let before = v.rtt();
    v.s.flush().await.unwrap();
    assert_eq!(v.rtt(), before);
}

/// Inode ids come in batches of 1024 and the next batch is fetched in the background
/// (on the engine's other connection) before the current one runs out: only the very
/// first create pays the counter transaction.
async fn inode_prefetch(kind: Kind) {
    let mut v = volume(kind).await;
    let ctx = v.ctx.clone();
    let d = v.parent("many").await;
    assert_eq!(v.rtt(), 4 + 8, "first mkdir: counter transaction + mkdir");
    let start = v.rtt();
    let mut inos = Vec::new();
    for i in 0..1100 {
        inos.push(
            v.s.mknod(
                &ctx,
                d,
                format!("f{i}").as_bytes(),
                FileType::File,
                0o644,
                0,
                0,
            )
            .await
            .unwrap()
            .0,
        );
        if i == 1000 {
            // let the background prefetch finish before the range runs out
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        }
    }
    assert_eq!(
        v.rtt() - start,
        1100 * 7,
        "no counter transaction in the timed path"
    );
    assert_eq!(v.s.stats().retries, 0);
    let mut sorted = inos.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 1100);
    assert_eq!(counter(&v.db, "nextInode"), 2 + 2 * 1024);
}

/// On the connection `c` of another client: runs `sql` in a transaction, tells `tx`, and
/// commits 700 ms later.
async fn insert_and_hold<C>(mut c: C, sql: &str, tx: tokio::sync::oneshot::Sender<()>)
where
    C: sqlx::Connection,
    for<'c> &'c mut C: sqlx::Executor<'c, Database = C::Database>,
{
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("BEGIN; {sql}")))
        .execute(&mut c)
        .await
        .unwrap();
    tx.send(()).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    sqlx::raw_sql("COMMIT").execute(&mut c).await.unwrap();
}

/// A transaction that runs into a concurrent insert of the same name is retried, as
/// JuiceFS retries (duplicate key on MySQL and PostgreSQL, "database is locked" on
/// SQLite), and then sees the entry: EEXIST after one retry.
async fn conflict_is_retried(kind: Kind) {
    let mut v = volume(kind).await;
    let ctx = v.ctx.clone();
    let d = v.parent("race").await;
    let url = v.db.url().to_owned();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let holder = tokio::spawn(async move {
        use sqlx::Connection;
        // names are BLOBs in SQLite (as juicefs binds them): 'x' would be another value
        let name = if kind == Kind::Sqlite { "X'78'" } else { "'x'" };
        let sql = format!(
            "INSERT INTO jfs_edge (parent, name, inode, type) VALUES ({d}, {name}, 999999, 1)"
        );
        match kind {
            Kind::Mysql => {
                let u = url
                    .replace("mysql://", "")
                    .replace("@(", "@")
                    .replace(")/", "/");
                let c = sqlx::MySqlConnection::connect(&format!("mysql://{u}"))
                    .await
                    .unwrap();
                insert_and_hold(c, &sql, tx).await;
            }
            Kind::Postgres => {
                let c = sqlx::PgConnection::connect(&url).await.unwrap();
                insert_and_hold(c, &sql, tx).await;
            }
            _ => {
                // A second process's connection, on a thread of its own: SQLite blocks.
                let path = url.trim_start_matches("sqlite3://").to_owned();
                tokio::task::spawn_blocking(move || {
                    let c = rusqlite::Connection::open(path).unwrap();
                    c.execute_batch(&format!("BEGIN IMMEDIATE; {sql}")).unwrap();
                    tx.send(()).unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(700));
                    c.execute_batch("COMMIT").unwrap();
                })
                .await
                .unwrap();
            }
        }
    });
    rx.await.unwrap();
    eprintln!(
        "edges now: {:?}",
        v.db.query("SELECT parent, name, inode FROM jfs_edge")
    );
    let r = v.s.mknod(&ctx, d, b"x", FileType::File, 0o644, 0, 0).await;
    holder.await.unwrap();
    assert!(matches!(r, Err(MetaError::Exists)), "{r:?}");
    assert!(
        v.s.stats().retries >= 1,
        "the conflicting attempt was retried"
    );
}

/// Two volumes in one database, told apart by `?table_prefix=`.
async fn table_prefix(kind: Kind) {
    let v = volume(kind).await;
    let sep = if v.db.url().contains('?') { '&' } else { '?' };
    let url =
        metabench_engine::MetaUrl::parse(&format!("{}{sep}table_prefix=x", v.db.url())).unwrap();
    let e = metabench_engine::sql::SqlEngine::open(&url).await.unwrap();
    assert_eq!(e.table_prefix(), "jfs_x_");
    // the default volume's tables make this prefix's database not empty
    use metabench_engine::{Engine, VolumeState};
    assert!(matches!(e.probe().await.unwrap(), VolumeState::Foreign(m) if m.contains("jfs_x_")));
    drop(v);
    let db = metabench_testkit::fresh_database(kind);
    let url =
        metabench_engine::MetaUrl::parse(&format!("{}{sep}table_prefix=x", db.url())).unwrap();
    let e = metabench_engine::sql::SqlEngine::open(&url).await.unwrap();
    e.format(&sql_common::test_format("/tmp/unused/"))
        .await
        .unwrap();
    let mut s = e.sql_session(&SessionOptions::default()).await.unwrap();
    let (ino, _) = s
        .mkdir(&Ctx::root(), ROOT_INODE, b"p", 0o755, 0)
        .await
        .unwrap();
    assert_eq!(
        s.lookup(&Ctx::root(), ROOT_INODE, b"p").await.unwrap().0,
        ino
    );
    assert_eq!(
        db.query("SELECT inode FROM jfs_x_edge WHERE parent = 1")[0][0],
        ino.to_string()
    );
    drop(s);
}

/// On a volume with trash (`juicefs format`'s default TrashDays 1) deleted entries move
/// into the hour's trash sub-directory, made on first use (`checkTrash`), named
/// `<parent>-<inode>-<name>`, and stay counted; the statements follow `doUnlink` /
/// `doRmdir` / `doRename` with trash (first captured from juicefs 1.4.2 on MariaDB).
async fn trash(kind: Kind) {
    let db = metabench_testkit::fresh_database(kind);
    let e = sql_common::engine(&db).await;
    let mut f = sql_common::test_format("/tmp/unused/");
    f.trash_days = 1;
    use metabench_engine::Engine;
    e.format(&f).await.unwrap();
    let mut s = e.sql_session(&SessionOptions::default()).await.unwrap();
    let ctx = Ctx::root();
    let rtt = |s: &metabench_engine::sql::SqlSession| s.stats().round_trips;
    let (d, _) = s.mkdir(&ctx, ROOT_INODE, b"d", 0o755, 0).await.unwrap();
    let (fi, _) = s.create(&ctx, d, b"f", 0o644, 0).await.unwrap();
    let id = s.new_slice().await.unwrap();
    s.write(fi, 0, slice(id, 0, 5000), Timestamp::now())
        .await
        .unwrap();
    let (g, _) = s.create(&ctx, d, b"g", 0o644, 0).await.unwrap();

    // first delete of the hour: lookup + make the sub-directory + the unlink
    let r0 = rtt(&s);
    s.unlink(&ctx, d, b"f").await.unwrap();
    assert_eq!(rtt(&s) - r0, 1 + 9 + 9);
    let r0 = rtt(&s);
    s.unlink(&ctx, d, b"g").await.unwrap();
    assert_eq!(
        rtt(&s) - r0,
        9,
        "B, node p, edge, node FU, DELETE edge, UPDATE node, INSERT trash edge, UPDATE p, C"
    );

    assert_eq!(
        s.lookup(&ctx, ROOT_INODE, b".trash").await.unwrap().0,
        metabench_schema::TRASH_INODE
    );
    let subs = s
        .readdir(&ctx, metabench_schema::TRASH_INODE, true)
        .await
        .unwrap();
    assert_eq!(subs.len(), 3);
    let sub = &subs[2];
    assert_eq!(sub.name.len(), "2026-01-01-00".len());
    assert_eq!(
        (sub.attr.mode, sub.attr.parent),
        (0o555, metabench_schema::TRASH_INODE)
    );
    assert_eq!(sub.inode, metabench_schema::TRASH_INODE + 1);
    let sub = sub.inode;
    let (tf, ta) = s
        .lookup(&ctx, sub, format!("{d}-{fi}-f").as_bytes())
        .await
        .unwrap();
    assert_eq!((tf, ta.parent, ta.nlink, ta.length), (fi, sub, 1, 5000));
    assert_eq!(count(&db, "SELECT * FROM jfs_delfile"), 0);
    let tg = s
        .lookup(&ctx, sub, format!("{d}-{g}-g").as_bytes())
        .await
        .unwrap();
    assert_eq!((tg.0, tg.1.parent), (g, sub));

    // rmdir
    let (x, _) = s.mkdir(&ctx, d, b"x", 0o755, 0).await.unwrap();
    let r0 = rtt(&s);
    s.rmdir(&ctx, d, b"x").await.unwrap();
    assert_eq!(rtt(&s) - r0, 12);
    assert_eq!(s.getattr(x).await.unwrap().parent, sub);
    assert_eq!(
        s.lookup(&ctx, sub, format!("{d}-{x}-x").as_bytes())
            .await
            .unwrap()
            .0,
        x
    );

    // rename over an existing file: the target goes to the trash
    s.create(&ctx, d, b"a", 0o644, 0).await.unwrap();
    let (b, _) = s.create(&ctx, d, b"b", 0o644, 0).await.unwrap();
    let r0 = rtt(&s);
    s.rename(&ctx, d, b"a", d, b"b", 0).await.unwrap();
    assert_eq!(rtt(&s) - r0, 15);
    assert_eq!(s.getattr(b).await.unwrap().parent, sub);

    s.flush().await.unwrap();
    let r = &db.query(&format!(
        "SELECT data_length, used_space, used_inodes FROM jfs_dir_stats WHERE inode = {sub}"
    ))[0];
    assert_eq!(
        r,
        &["5000", &(8192 + 3 * 4096).to_string(), "4"].map(String::from)
    );
    // d, f, g, x, a, b and the sub-directory; nothing was freed
    assert_eq!(counter(&db, "totalInodes"), 7);
    assert_eq!(counter(&db, "nextTrash"), 1);
}

/// The value of JuiceFS counter `name` (`jfs_counter`).
fn counter(db: &metabench_testkit::TestDb, name: &str) -> i64 {
    let sql = format!("SELECT value FROM jfs_counter WHERE name = '{name}'");
    db.query(&sql)[0][0].parse().unwrap()
}

metabench_testkit::engine_matrix!([mysql, postgres, sqlite] =>
    tree_and_errors,
    flush_writes_stats_and_frees_data,
    inode_prefetch,
    conflict_is_retried,
    table_prefix,
    trash
);

/// SQLite is called in-process on the calling thread, as go-sqlite3 is: every call,
/// reads and write transactions alike, is finished within its first poll. Handing a
/// statement to a worker thread (as sqlx's SQLite driver does) would leave it pending.
#[tokio::test]
async fn sqlite_calls_finish_on_the_calling_thread() {
    use std::task::{Context, Poll, Waker};
    let mut v = volume(Kind::Sqlite).await;
    let ctx = v.ctx.clone();
    let (d, _) =
        v.s.mkdir(&ctx, ROOT_INODE, b"inline", 0o755, 0)
            .await
            .unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    for i in 0..50u16 {
        let mut read = v.s.getattr(d);
        assert!(
            matches!(read.as_mut().poll(&mut cx), Poll::Ready(Ok(_))),
            "getattr {i}"
        );
        drop(read);
        let set = SetAttr {
            mode: Some(0o700 | (i & 1)),
            ..Default::default()
        };
        let mut write = v.s.setattr(&ctx, d, &set);
        assert!(
            matches!(write.as_mut().poll(&mut cx), Poll::Ready(Ok(_))),
            "setattr {i}"
        );
    }
}

/// `Engine::settle` leaves SQLite's WAL empty, so every measurement starts from the
/// same point of its automatic-checkpoint cycle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_settle_checkpoints_and_truncates_the_wal() {
    let mut v = volume(Kind::Sqlite).await;
    let wal = {
        let mut p =
            v.db.sqlite_path()
                .expect("a SQLite file")
                .as_os_str()
                .to_owned();
        p.push("-wal");
        std::path::PathBuf::from(p)
    };
    let d = v.parent("settle").await;
    for i in 0..20u32 {
        v.s.mknod(
            &v.ctx,
            d,
            format!("f{i}").as_bytes(),
            FileType::File,
            0o644,
            0,
            0,
        )
        .await
        .unwrap();
    }
    let before = std::fs::metadata(&wal).expect("a WAL after writes").len();
    assert!(before > 0, "the writes left nothing in {}", wal.display());
    metabench_engine::Engine::settle(&v.engine).await.unwrap();
    let after = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    assert_eq!(
        after, 0,
        "the WAL held {before} bytes and still holds {after}"
    );
    // The volume is intact and writable after it.
    v.s.getattr(d).await.unwrap();
    v.s.mkdir(&v.ctx, d, b"after", 0o755, 0).await.unwrap();
}
