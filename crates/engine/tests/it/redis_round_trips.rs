//! Round trips per timed call of every operation of JuiceFS's `pkg/meta/benchmarks_test.go`
//! on Redis, with the benchmark's set-up: the session's own count must be the requests
//! `pkg/meta/redis.go` sends, and the server's `INFO commandstats` delta must be exactly
//! that command multiset (MULTI/EXEC counts once as a round trip, but every queued
//! command is a call on the server).

use super::common::{self, redis_volume};
use metabench_engine::{
    namespace, Ctx, Engine, FallocRange, Meta, SessionOptions, SetAttr, XattrFlags,
};
use metabench_schema::{FileType, Ino, Slice, Timestamp, ROOT_INODE};
use metabench_testkit::RedisServer;
use std::collections::BTreeMap;
use std::sync::Arc;

type Cmds = BTreeMap<String, u64>;

struct Fixture {
    server: RedisServer,
    _engine: Arc<dyn Engine>,
    meta: Box<dyn Meta>,
    ctx: Ctx,
}

async fn fixture_with(opts: SessionOptions) -> Fixture {
    let (server, engine, meta) = redis_volume(1, "benchmark-all", &uuid_v4(), &opts).await;
    Fixture {
        server,
        _engine: engine,
        meta,
        ctx: Ctx::root(),
    }
}

async fn fixture() -> Fixture {
    fixture_with(SessionOptions::default()).await
}

/// A registered session (`NewSession(true)`, the mount profile).
async fn registered_fixture() -> Fixture {
    fixture_with(SessionOptions {
        register: true,
        ..Default::default()
    })
    .await
}

impl Fixture {
    /// An empty directory of the set-up (untimed).
    async fn mkdir(&mut self, parent: Ino, name: &[u8]) -> Ino {
        common::mkdir(self.meta.as_mut(), &self.ctx, parent, name).await
    }

    /// An empty file of the set-up (untimed), umask 022 as the Go benchmark's.
    async fn create(&mut self, parent: Ino, name: &[u8]) -> Ino {
        common::create(self.meta.as_mut(), &self.ctx, parent, name, 0o022).await
    }
}

fn uuid_v4() -> String {
    // Good enough for a test volume.
    format!("00000000-0000-4000-8000-{:012x}", std::process::id())
}

/// `prepareParent`: remove `name` under the root recursively, then make it again.
async fn prepare_parent(fx: &mut Fixture, name: &str) -> Ino {
    namespace::remove_tree(fx.meta.as_mut(), ROOT_INODE, name.as_bytes())
        .await
        .unwrap();
    fx.mkdir(ROOT_INODE, name.as_bytes()).await
}

/// A fresh fixture and its `prepareParent(name)`.
async fn with_parent(name: &str) -> (Fixture, Ino) {
    let mut fx = fixture().await;
    let parent = prepare_parent(&mut fx, name).await;
    (fx, parent)
}

/// The command multiset of `pairs`; a command named twice counts the sum.
fn cmds(pairs: &[(&str, u64)]) -> Cmds {
    let mut m = Cmds::new();
    for (k, v) in pairs {
        *m.entry(k.to_string()).or_default() += v;
    }
    m
}

fn delta(before: &Cmds, after: &Cmds) -> Cmds {
    after
        .iter()
        .filter(|(k, _)| k.as_str() != "info" && k.as_str() != "auth")
        .filter_map(|(k, v)| {
            let d = v - before.get(k).copied().unwrap_or(0);
            (d > 0).then(|| (k.clone(), d))
        })
        .collect()
}

/// Runs one timed call and returns (its value, the session's round trips, the server's
/// command calls).
macro_rules! measure {
    ($fx:expr, $call:expr) => {{
        let before = $fx.server.commandstats();
        let s0 = $fx.meta.stats();
        let out = $call;
        let s1 = $fx.meta.stats();
        let after = $fx.server.commandstats();
        (out, s1.since(&s0).round_trips, delta(&before, &after))
    }};
}

/// Asserts a timed call's round trips and server-side commands.
macro_rules! expect {
    ($fx:expr, $call:expr, $rtt:expr, $cmds:expr) => {{
        let (out, rtt, got) = measure!($fx, $call);
        assert_eq!(
            got,
            cmds($cmds),
            "server commands of `{}`",
            stringify!($call)
        );
        assert_eq!(rtt, $rtt, "round trips of `{}`", stringify!($call));
        out
    }};
}

fn name(prefix: &str, i: usize) -> Vec<u8> {
    format!("{prefix}{i}").into_bytes()
}

/// `doMknod`'s transaction: `set` counts the new inode's and the parent's attributes (and
/// a symlink's target), `hset` the entry (and a directory's dir-stat records).
fn mknod_cmds(set: u64, hset: u64) -> Vec<(&'static str, u64)> {
    vec![
        ("watch", 1),
        ("get", 1),
        ("hget", 1),
        ("multi", 1),
        ("set", set),
        ("hset", hset),
        ("incrby", 1),
        ("incr", 1),
        ("exec", 1),
        ("unwatch", 1),
    ]
}

/// `doRmdir`'s and `doUnlink`'s transaction, plus `extra`: the commands of the one or the
/// other.
fn remove_cmds(extra: &[(&'static str, u64)]) -> Vec<(&'static str, u64)> {
    let mut want = vec![
        ("watch", 2),
        ("hget", 1),
        ("mget", 1),
        ("multi", 1),
        ("set", 1),
        ("del", 2),
        ("incrby", 1),
        ("decr", 1),
        ("exec", 1),
        ("unwatch", 1),
    ];
    want.extend_from_slice(extra);
    want
}

const RENAME: &[(&str, u64)] = &[
    ("watch", 2),
    ("hget", 2),
    ("mget", 1),
    ("multi", 1),
    ("hdel", 1),
    ("set", 2),
    ("hset", 1),
    ("exec", 1),
    ("unwatch", 1),
];

#[tokio::test]
async fn mkdir_is_5_round_trips() {
    let (mut fx, parent) = with_parent("benchMkdir").await;
    for i in 0..3 {
        let (ino, attr) = expect!(
            fx,
            fx.meta
                .mkdir(&fx.ctx, parent, &name("d", i), 0o755, 0)
                .await
                .unwrap(),
            5,
            &mknod_cmds(2, 4)
        );
        assert!(ino > 1);
        assert_eq!((attr.nlink, attr.length, attr.parent), (2, 4096, parent));
    }
}

/// `benchMvdir` and `benchRename`: `{prefix}0` renamed to `{prefix}1`, `{prefix}2` and
/// `{prefix}3` within its parent.
async fn renames_are_7_round_trips(fx: &mut Fixture, parent: Ino, prefix: &str) {
    for i in 0..3 {
        expect!(
            fx,
            fx.meta
                .rename(
                    &fx.ctx,
                    parent,
                    &name(prefix, i),
                    parent,
                    &name(prefix, i + 1),
                    0
                )
                .await
                .unwrap(),
            7,
            RENAME
        );
    }
}

#[tokio::test]
async fn mvdir_is_7_round_trips() {
    let (mut fx, parent) = with_parent("benchMvdir").await;
    fx.mkdir(parent, b"d0").await;
    renames_are_7_round_trips(&mut fx, parent, "d").await;
}

#[tokio::test]
async fn rename_is_7_round_trips() {
    let (mut fx, parent) = with_parent("benchRename").await;
    fx.create(parent, b"f0").await;
    renames_are_7_round_trips(&mut fx, parent, "f").await;
}

/// `benchRmdir` and `benchUnlink`: three times over, a directory `dir` or a file `file` is
/// made again (untimed) and removed.
async fn removals_are(
    fx: &mut Fixture,
    parent: Ino,
    ty: FileType,
    rtt: u64,
    want: &[(&'static str, u64)],
) {
    let dir = ty == FileType::Directory;
    let name: &[u8] = if dir { b"dir" } else { b"file" };
    for _ in 0..3 {
        if dir {
            fx.mkdir(parent, name).await;
        } else {
            fx.create(parent, name).await;
        }
        expect!(
            fx,
            if dir {
                fx.meta.rmdir(&fx.ctx, parent, name).await.unwrap()
            } else {
                fx.meta.unlink(&fx.ctx, parent, name).await.unwrap()
            },
            rtt,
            want
        );
    }
}

#[tokio::test]
async fn rmdir_is_7_round_trips() {
    let (mut fx, parent) = with_parent("benchRmdir").await;
    let want = remove_cmds(&[("hlen", 1), ("hdel", 7)]);
    removals_are(&mut fx, parent, FileType::Directory, 7, &want).await;
}

#[tokio::test]
async fn unlink_is_6_round_trips() {
    let (mut fx, parent) = with_parent("benchUnlink").await;
    // Settle the dir stats of the set-up (the root gets its record here).
    fx.meta.flush().await.unwrap();
    let want = remove_cmds(&[("hdel", 1), ("zadd", 1)]);
    removals_are(&mut fx, parent, FileType::File, 6, &want).await;
    // The background part: doDeleteFileData of a 0-byte file is one ZREM. The parent's
    // dir-stat deltas cancel out, but it stays in the batch (JuiceFS's `dirStats` map):
    // one HEXISTS pipeline and nothing to add.
    expect!(
        fx,
        fx.meta.flush().await.unwrap(),
        4,
        &[("hexists", 1), ("zrem", 3)]
    );
}

async fn readdir_n(n: usize) {
    let (mut fx, parent) = with_parent(&format!("benchReaddir{n}")).await;
    for i in 0..n {
        fx.create(parent, &name("f", i)).await;
    }
    // Let a background inode prefetch started during the set-up land first.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    for _ in 0..2 {
        let entries = expect!(
            fx,
            fx.meta.readdir(&fx.ctx, parent, true).await.unwrap(),
            3,
            &[("get", 1), ("hscan", 1), ("mget", 1)]
        );
        assert_eq!(entries.len(), n + 2);
        assert!(entries.iter().skip(2).all(|e| e.attr.nlink == 1));
    }
}

#[tokio::test]
async fn readdir_10_is_3_round_trips() {
    readdir_n(10).await;
}

#[tokio::test]
async fn readdir_1k_is_3_round_trips() {
    readdir_n(1000).await;
}

/// Above 4096 entries the attributes come in several MGETs (JuiceFS: two goroutines).
#[tokio::test]
async fn readdir_5k_fetches_attributes_in_4096_key_batches() {
    let (mut fx, parent) = with_parent("benchReaddir5k").await;
    for i in 0..5000 {
        fx.meta
            .mknod(&fx.ctx, parent, &name("f", i), FileType::File, 0o644, 0, 0)
            .await
            .unwrap();
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let (entries, rtt, got) = measure!(fx, fx.meta.readdir(&fx.ctx, parent, true).await.unwrap());
    assert_eq!(entries.len(), 5002);
    assert!(entries
        .iter()
        .skip(2)
        .all(|e| e.attr.nlink == 1 && e.attr.parent == parent));
    assert_eq!((got["get"], got["mget"]), (1, 2));
    assert_eq!(rtt, 1 + got["hscan"] + 2);
    assert_eq!(got.len(), 3, "{got:?}");
}

#[tokio::test]
async fn mknod_and_create_are_5_round_trips() {
    let (mut fx, parent) = with_parent("benchMknod").await;
    for i in 0..3 {
        expect!(
            fx,
            fx.meta
                .mknod(
                    &fx.ctx,
                    parent,
                    &name("f", i),
                    FileType::File,
                    0o644,
                    0o022,
                    0
                )
                .await
                .unwrap(),
            5,
            &mknod_cmds(2, 1)
        );
        expect!(
            fx,
            fx.meta
                .create(&fx.ctx, parent, &name("c", i), 0o644, 0o022)
                .await
                .unwrap(),
            5,
            &mknod_cmds(2, 1)
        );
    }
}

/// A created file, for the attribute and xattr benchmarks.
async fn with_file(name: &str) -> (Fixture, Ino, Ino) {
    let (mut fx, parent) = with_parent(name).await;
    let ino = fx.create(parent, b"file").await;
    (fx, parent, ino)
}

#[tokio::test]
async fn lookup_is_2_round_trips() {
    let (mut fx, parent, ino) = with_file("benchLookup").await;
    for _ in 0..3 {
        let (got, _) = expect!(
            fx,
            fx.meta.lookup(&fx.ctx, parent, b"file").await.unwrap(),
            2,
            &[("hget", 1), ("get", 1)]
        );
        assert_eq!(got, ino);
    }
}

#[tokio::test]
async fn getattr_and_access_are_1_round_trip() {
    let (mut fx, _, ino) = with_file("benchGetAttr").await;
    let user = Ctx {
        uid: 1,
        gids: vec![1],
        pid: 100,
    };
    for _ in 0..3 {
        expect!(fx, fx.meta.getattr(ino).await.unwrap(), 1, &[("get", 1)]);
        expect!(
            fx,
            fx.meta.access(&user, ino, 4).await.unwrap(),
            1,
            &[("get", 1)]
        );
    }
    // Root needs no I/O at all (baseMeta.Access returns before GetAttr).
    expect!(fx, fx.meta.access(&fx.ctx, ino, 7).await.unwrap(), 0, &[]);
}

#[tokio::test]
async fn setattr_is_4_round_trips() {
    let (mut fx, _, ino) = with_file("benchSetAttr").await;
    let mut mode = 0o644u16;
    for _ in 0..3 {
        mode ^= 1;
        let attr = expect!(
            fx,
            fx.meta
                .setattr(
                    &fx.ctx,
                    ino,
                    &SetAttr {
                        mode: Some(mode),
                        ..Default::default()
                    }
                )
                .await
                .unwrap(),
            4,
            &[
                ("watch", 1),
                ("get", 1),
                ("multi", 1),
                ("set", 1),
                ("exec", 1),
                ("unwatch", 1)
            ]
        );
        assert_eq!(attr.mode, mode);
    }
}

#[tokio::test]
async fn xattr_round_trips() {
    let (mut fx, _, ino) = with_file("benchXattr").await;
    for i in 0..3 {
        let v = format!("value{}", i % 10);
        expect!(
            fx,
            fx.meta
                .setxattr(ino, b"key", v.as_bytes(), XattrFlags::Any)
                .await
                .unwrap(),
            3,
            &[
                ("watch", 1),
                ("multi", 1),
                ("hset", 1),
                ("exec", 1),
                ("unwatch", 1)
            ]
        );
        let got = expect!(
            fx,
            fx.meta.getxattr(ino, b"key").await.unwrap(),
            1,
            &[("hget", 1)]
        );
        assert_eq!(got, v.as_bytes());
    }
    for _ in 0..3 {
        fx.meta
            .setxattr(ino, b"key", b"value", XattrFlags::Any)
            .await
            .unwrap();
        expect!(
            fx,
            fx.meta.removexattr(ino, b"key").await.unwrap(),
            3,
            &[("watch", 1), ("hdel", 1), ("unwatch", 1)]
        );
    }
    for n in [1usize, 10] {
        for i in 0..n {
            fx.meta
                .setxattr(ino, format!("key{i}").as_bytes(), b"v", XattrFlags::Any)
                .await
                .unwrap();
        }
        let names = expect!(
            fx,
            fx.meta.listxattr(ino).await.unwrap(),
            2,
            &[("hkeys", 1), ("get", 1)]
        );
        assert_eq!(names.len(), n);
    }
}

#[tokio::test]
async fn link_is_6_round_trips() {
    let (mut fx, parent, ino) = with_file("benchLink").await;
    for i in 0..3 {
        let first = i == 0;
        let attr = expect!(
            fx,
            fx.meta
                .link(&fx.ctx, ino, parent, &name("l", i))
                .await
                .unwrap(),
            6,
            &[
                ("get", 1),
                ("watch", 1),
                ("mget", 1),
                ("hget", 1),
                ("multi", 1),
                ("hset", 1),
                ("set", 2),
                ("hincrby", if first { 2 } else { 1 }),
                ("exec", 1),
                ("unwatch", 1),
            ]
        );
        assert_eq!((attr.nlink, attr.parent), (i as u32 + 2, 0));
    }
}

#[tokio::test]
async fn symlink_is_5_and_readlink_1_round_trips() {
    let (mut fx, parent, _) = with_file("benchSymlink").await;
    let mut last = 0;
    for i in 0..3 {
        let (ino, attr) = expect!(
            fx,
            fx.meta
                .symlink(&fx.ctx, parent, &name("s", i), b"/benchSymlink/source")
                .await
                .unwrap(),
            5,
            &mknod_cmds(3, 1)
        );
        assert_eq!(attr.length, 20);
        last = ino;
    }
    // Without the client cache every readlink reaches Redis.
    for _ in 0..3 {
        let t = expect!(fx, fx.meta.readlink(last).await.unwrap(), 1, &[("get", 1)]);
        assert_eq!(t, b"/benchSymlink/source");
    }
}

#[tokio::test]
async fn client_cache_serves_readlink_and_read_from_memory() {
    let mut fx = fixture_with(SessionOptions {
        client_cache: true,
        ..Default::default()
    })
    .await;
    let parent = prepare_parent(&mut fx, "benchCache").await;
    let (sym, _) = fx
        .meta
        .symlink(&fx.ctx, parent, b"s", b"/target")
        .await
        .unwrap();
    expect!(fx, fx.meta.readlink(sym).await.unwrap(), 1, &[("get", 1)]);
    for _ in 0..3 {
        let t = expect!(fx, fx.meta.readlink(sym).await.unwrap(), 0, &[]);
        assert_eq!(t, b"/target");
    }
    let ino = fx.create(parent, b"f").await;
    write_kib(&mut fx, ino, 0).await;
    expect!(fx, fx.meta.read(ino, 0).await.unwrap(), 1, &[("lrange", 1)]);
    for _ in 0..3 {
        let s = expect!(fx, fx.meta.read(ino, 0).await.unwrap(), 0, &[]);
        assert_eq!(s.len(), 1);
    }
    // This session's write invalidates the cached chunk.
    write_kib(&mut fx, ino, 1).await;
    let s = expect!(fx, fx.meta.read(ino, 0).await.unwrap(), 1, &[("lrange", 1)]);
    assert_eq!(s.len(), 2);
}

#[tokio::test]
async fn newchunk_costs_one_round_trip_per_4096() {
    let mut fx = fixture().await;
    let first = expect!(fx, fx.meta.new_slice().await.unwrap(), 1, &[("incrby", 1)]);
    assert_eq!(first, 1);
    for i in 1..4096 {
        let (id, rtt, _) = {
            let s0 = fx.meta.stats();
            let id = fx.meta.new_slice().await.unwrap();
            (id, fx.meta.stats().since(&s0).round_trips, ())
        };
        assert_eq!((id, rtt), (i + 1, 0));
    }
    let id = expect!(fx, fx.meta.new_slice().await.unwrap(), 1, &[("incrby", 1)]);
    assert_eq!(id, 4097);
}

async fn write_kib(fx: &mut Fixture, ino: Ino, j: u32) {
    let id = fx.meta.new_slice().await.unwrap();
    fx.meta
        .write(ino, 0, Slice::whole(j * 1024, id, 1024), Timestamp::now())
        .await
        .unwrap();
}

#[tokio::test]
async fn write_is_4_round_trips() {
    let (mut fx, _, ino) = with_file("benchWrite").await;
    for j in 0..6u32 {
        let id = fx.meta.new_slice().await.unwrap();
        let slice = Slice::whole(j * 1024, id, 1024);
        // usedSpace grows only when the length crosses a 4 KiB boundary (the 5th write).
        let grows = j == 4;
        let mut want = vec![
            ("watch", 1),
            ("get", 1),
            ("multi", 1),
            ("rpush", 1),
            ("set", 1),
            ("exec", 1),
            ("unwatch", 1),
        ];
        if grows {
            want.push(("incrby", 1));
        }
        expect!(
            fx,
            fx.meta
                .write(ino, 0, slice, Timestamp::now())
                .await
                .unwrap(),
            4,
            &want
        );
    }
    assert_eq!(fx.meta.getattr(ino).await.unwrap().length, 6 * 1024);
}

async fn read_n(n: u32) {
    let (mut fx, _, ino) = with_file(&format!("benchRead{n}")).await;
    for j in 0..n {
        write_kib(&mut fx, ino, j).await;
    }
    for _ in 0..3 {
        let s = expect!(fx, fx.meta.read(ino, 0).await.unwrap(), 1, &[("lrange", 1)]);
        assert_eq!(s.len(), n as usize);
    }
}

#[tokio::test]
async fn read_1_and_read_10_are_1_round_trip() {
    read_n(1).await;
    read_n(10).await;
}

#[tokio::test]
async fn first_create_of_a_session_allocates_inodes_inline() {
    let mut fx = fixture().await;
    // The very first create fetches the first inode batch on the calling path: one
    // INCRBY more.
    let mut want = mknod_cmds(2, 4);
    want.push(("incrby", 1));
    let (ino, _) = expect!(
        fx,
        fx.meta
            .mkdir(&fx.ctx, ROOT_INODE, b"first", 0o755, 0)
            .await
            .unwrap(),
        6,
        &want
    );
    assert_eq!(ino, 2, "the first inode is 2");
}

/// A session's request goes from its task to the socket and back, with no driver task in
/// between: on a current-thread runtime of its own, a session that has opened and run
/// calls (reads and transactions) keeps no task alive there. redis-rs's multiplexed
/// connection would keep its driver task alive for as long as the session lives.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_session_drives_its_own_connection() {
    let fx = fixture().await;
    let engine = fx._engine.clone();
    let alive = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut meta = engine.session(&SessionOptions::default()).await.unwrap();
            let ctx = Ctx::root();
            let (d, _) = meta
                .mkdir(&ctx, ROOT_INODE, b"own-task", 0o755, 0)
                .await
                .unwrap();
            for _ in 0..50 {
                meta.getattr(d).await.unwrap();
                meta.setxattr(d, b"k", b"v", XattrFlags::Any).await.unwrap();
            }
            let alive = tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks();
            drop(meta);
            alive
        })
    })
    .join()
    .unwrap();
    assert_eq!(alive, 0, "tasks alive beside the session");
}

/// `doTruncate`'s transaction with `n` of its chunk commands: `RPUSH` of the first (and
/// last) chunk, `RPUSHX` of each chunk between.
fn truncate_cmds(
    rpush: u64,
    rpushx: u64,
    extra: &[(&'static str, u64)],
) -> Vec<(&'static str, u64)> {
    let mut want = vec![
        ("watch", 1),
        ("get", 1),
        ("multi", 1),
        ("set", 1),
        ("rpush", rpush),
        ("incrby", 1),
        ("exec", 1),
        ("unwatch", 1),
    ];
    if rpushx > 0 {
        want.push(("rpushx", rpushx));
    }
    want.extend_from_slice(extra);
    want
}

#[tokio::test]
async fn truncate_is_4_round_trips() {
    const C: u64 = 64 << 20;
    let (mut fx, parent, ino) = with_file("benchTruncate").await;
    let ctx = fx.ctx.clone();
    for (length, rtt, want) in [
        (1 << 20, 4, truncate_cmds(1, 0, &[])),
        (4 << 10, 4, truncate_cmds(1, 0, &[])),
        // Across chunks: the two chunks between are named, RPUSHX skips missing ones.
        (3 * C + 7, 4, truncate_cmds(2, 2, &[])),
    ] {
        let a = expect!(
            fx,
            fx.meta.truncate(&ctx, ino, length).await.unwrap(),
            rtt,
            &want
        );
        assert_eq!(a.length, length);
    }
    // The same length: read, nothing written.
    expect!(
        fx,
        fx.meta.truncate(&ctx, ino, 3 * C + 7).await.unwrap(),
        3,
        &[("watch", 1), ("get", 1), ("unwatch", 1)]
    );
    // No chunk between was made by RPUSHX; the first and last got their holes.
    for (indx, holes) in [(0, 3), (1, 0), (2, 0), (3, 1)] {
        assert_eq!(
            fx.meta.read(ino, indx).await.unwrap().len(),
            holes,
            "chunk {indx}"
        );
    }
    // A hard-linked file (parent 0) reads its parents for the quota check.
    fx.meta.link(&ctx, ino, parent, b"link").await.unwrap();
    expect!(
        fx,
        fx.meta.truncate(&ctx, ino, 100).await.unwrap(),
        5,
        &truncate_cmds(2, 2, &[("hgetall", 1)])
    );
}

#[tokio::test]
async fn truncate_over_10000_chunks_scans_for_them() {
    const C: u64 = 64 << 20;
    let (mut fx, _, ino) = with_file("benchTruncateHuge").await;
    let ctx = fx.ctx.clone();
    let id = fx.meta.new_slice().await.unwrap();
    let s = Slice::whole(0, id, 1024);
    fx.meta.write(ino, 5, s, Timestamp::now()).await.unwrap();
    fx.meta.truncate(&ctx, ino, 0).await.unwrap();
    // One SCAN step finds chunk 5 among this small database's keys; only it gets a hole.
    expect!(
        fx,
        fx.meta.truncate(&ctx, ino, 20_000 * C).await.unwrap(),
        5,
        &truncate_cmds(1, 1, &[("scan", 1)])
    );
    // chunk 5: the write, the hole of the truncate to 0, this one's.
    assert_eq!(fx.meta.read(ino, 5).await.unwrap().len(), 3);
    assert!(fx.meta.read(ino, 6).await.unwrap().is_empty());
}

#[tokio::test]
async fn fallocate_is_4_round_trips() {
    use metabench_engine::falloc::{KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE};
    const C: u64 = 64 << 20;
    let (mut fx, _, ino) = with_file("benchFallocate").await;
    let ctx = fx.ctx.clone();
    let plain = [
        ("watch", 1),
        ("get", 1),
        ("multi", 1),
        ("set", 1),
        ("incrby", 1),
        ("exec", 1),
        ("unwatch", 1),
    ];
    let l = expect!(
        fx,
        fx.meta
            .fallocate(&ctx, ino, FallocRange::new(0, 0, C + 10))
            .await
            .unwrap(),
        4,
        &plain
    );
    assert_eq!(l, C + 10);
    // KEEP_SIZE past the end: the length stays, INCRBY is sent anyway (by 0).
    let l = expect!(
        fx,
        fx.meta
            .fallocate(&ctx, ino, FallocRange::new(KEEP_SIZE, C, C))
            .await
            .unwrap(),
        4,
        &plain
    );
    assert_eq!(l, C + 10);
    // Zeroing across a chunk boundary: one RPUSH per chunk, inside the old length only.
    let mut want = plain.to_vec();
    want.push(("rpush", 2));
    for mode in [ZERO_RANGE, PUNCH_HOLE | KEEP_SIZE] {
        expect!(
            fx,
            fx.meta
                .fallocate(&ctx, ino, FallocRange::new(mode, C - 5, 100))
                .await
                .unwrap(),
            4,
            &want
        );
    }
    // ZERO_RANGE grew the file to C + 95, so the punched hole reaches further.
    let hole = |len| Slice {
        pos: 0,
        id: 0,
        size: 0,
        off: 0,
        len,
    };
    assert_eq!(
        fx.meta.read(ino, 1).await.unwrap(),
        vec![hole(10), hole(95)]
    );
    // Checked before any request.
    let (_, rtt, got) = measure!(
        fx,
        fx.meta
            .fallocate(&ctx, ino, FallocRange::new(PUNCH_HOLE, 0, 1))
            .await
    );
    assert_eq!((rtt, got.len()), (0, 0));
}

/// A registered session (`NewSession(true)`, the mount profile) loads the Lua scripts:
/// lookup is one `EVALSHA` (its HGET and GET run inside the server), resolve too, and a
/// script the server lost (`SCRIPT FLUSH`) is loaded again once.
#[tokio::test]
async fn a_registered_session_looks_up_in_one_evalsha() {
    let mut fx = registered_fixture().await;
    let parent = prepare_parent(&mut fx, "benchLookupLua").await;
    let ctx = fx.ctx.clone();
    let ino = fx.create(parent, b"file").await;
    let (found, _) = expect!(
        fx,
        fx.meta.lookup(&ctx, parent, b"file").await.unwrap(),
        1,
        &[("evalsha", 1), ("hget", 1), ("get", 1)]
    );
    assert_eq!(found, ino);
    let (found, _) = expect!(
        fx,
        fx.meta
            .resolve(&ctx, ROOT_INODE, b"benchLookupLua/file")
            .await
            .unwrap(),
        1,
        &[("evalsha", 1), ("hget", 2), ("get", 1)]
    );
    assert_eq!(found, ino);
    fx.server.command(&["SCRIPT", "FLUSH"]);
    let (found, _) = expect!(
        fx,
        fx.meta.lookup(&ctx, parent, b"file").await.unwrap(),
        3,
        &[("evalsha", 2), ("script|load", 1), ("hget", 1), ("get", 1)]
    );
    assert_eq!(found, ino);
    fx.meta.close().await.unwrap();
}

/// A registered session refreshes its record once per heartbeat (12 s, ±10 %), from its
/// background work: `doRefreshSession`'s transaction, which writes the info back when
/// another client removed the record as stale meanwhile.
#[tokio::test]
async fn a_registered_session_refreshes_its_record_every_heartbeat() {
    let mut fx = registered_fixture().await;
    let sid = fx.meta.sid();
    // Not due yet: the background work sends no heartbeat.
    let (_, _, got) = measure!(fx, fx.meta.flush().await.unwrap());
    assert!(!got.contains_key("zadd"), "{got:?}");
    // Another client cleaned the session up as stale.
    let mut other = fx
        ._engine
        .session(&SessionOptions::default())
        .await
        .unwrap();
    other.clean_session(sid).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(13_300)).await;
    let (_, _, got) = measure!(fx, fx.meta.flush().await.unwrap());
    for (cmd, n) in [
        ("watch", 1),
        ("hexists", 1),
        ("multi", 1),
        ("hset", 1),
        ("zadd", 1),
        ("exec", 1),
    ] {
        assert_eq!(got.get(cmd), Some(&n), "{cmd} in {got:?}");
    }
    // Listed again, as juicefs reads the records.
    let status = metabench_testkit::juicefs_status(&fx.server.url(1));
    let sids: Vec<u64> = status["Sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["Sid"].as_u64().unwrap())
        .collect();
    assert_eq!(sids, vec![sid]);
    fx.meta.close().await.unwrap();
}
