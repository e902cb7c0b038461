//! Interoperability with the real `juicefs` 1.4.2 binary on the key-value engines —
//! Redis (a private server per test), etcd 3.5 (`METABENCH_ETCD_URL`), etcd 3.4
//! (`METABENCH_ETCD34_URL`) and the TiKV stand-in, PD + unistore (`METABENCH_TIKV_URL`),
//! each test under its own database or key prefix — both ways, with one body per direction:
//!
//! - a volume formatted and filled by metabench is what `juicefs dump` shows and what
//!   `juicefs fsck --path / --recursive` finds clean (the slices' block objects are written
//!   into the `file` bucket with the right names and sizes, so fsck finds no lost object);
//! - a volume formatted by `juicefs format` and filled by `juicefs mdtest` reads the same
//!   through metabench's lookup/readdir/getattr, and stays clean after metabench writes.
//!
//! The SQL engines have their own (`sql_interop.rs`: tables, not keys).

use crate::common::punched_file;
use metabench_engine::{Ctx, Engine, Meta, MetaUrl, SessionOptions, XattrFlags};
use metabench_schema::{FileType, Format, Ino, Slice, Timestamp, ROOT_INODE};
use metabench_testkit::{
    dump_tree, fsck_problems, juicefs_dump, juicefs_format, juicefs_fsck, juicefs_mdtest, temp_dir,
    write_slice_blocks, DumpNode, RedisServer,
};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

fn typ_name(t: FileType) -> &'static str {
    match t {
        FileType::File => "regular",
        FileType::Directory => "directory",
        FileType::Symlink => "symlink",
        FileType::Fifo => "fifo",
        FileType::BlockDev => "blockdev",
        FileType::CharDev => "chardev",
        FileType::Socket => "socket",
    }
}

async fn write(
    meta: &mut dyn Meta,
    bucket: &Path,
    volume: &str,
    ino: Ino,
    indx: u32,
    pos: u32,
    size: u32,
) -> Slice {
    let id = meta.new_slice().await.unwrap();
    let s = Slice::whole(pos, id, size);
    meta.write(ino, indx, s, Timestamp::now()).await.unwrap();
    write_slice_blocks(bucket, volume, id, size, 0);
    s
}

fn assert_fsck_clean(url: &str) {
    let out = juicefs_fsck(url);
    let problems = fsck_problems(&out);
    assert!(
        out.status.success() && problems.is_empty(),
        "juicefs fsck found problems ({}):\n{}\n--- stderr\n{}",
        out.status,
        problems.join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// (type, mode, nlink, length, symlink target) of a dumped node.
fn shape(n: &DumpNode) -> (String, u16, u32, u64, Option<String>) {
    (n.typ.clone(), n.mode, n.nlink, n.length, n.symlink.clone())
}

/// Where a test runs.
#[derive(Clone, Copy)]
enum Store {
    Redis,
    #[cfg(feature = "etcd")]
    Etcd35,
    #[cfg(feature = "etcd")]
    Etcd34,
    #[cfg(feature = "tikv")]
    Tikv,
}

/// A fresh, empty volume location on `store`: its URL, and the private Redis server that
/// must live as long as the test (Redis only).
fn fresh(store: Store, tag: &str) -> (String, Option<RedisServer>) {
    let var = match store {
        Store::Redis => {
            let server = RedisServer::start();
            return (server.url(1), Some(server));
        }
        #[cfg(feature = "etcd")]
        Store::Etcd35 => "METABENCH_ETCD_URL",
        #[cfg(feature = "etcd")]
        Store::Etcd34 => "METABENCH_ETCD34_URL",
        #[cfg(feature = "tikv")]
        Store::Tikv => "METABENCH_TIKV_URL",
    };
    let base = std::env::var(var)
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| panic!("{var} is not set: run the tests with scripts/test.sh"));
    let url = format!(
        "{}/{tag}_{}_{}",
        base.trim_end_matches('/'),
        std::process::id(),
        Timestamp::now().nsec
    );
    (url, None)
}

/// Removes the volume under the URL's prefix (whoever formatted it).
async fn destroy(engine: &dyn Engine) {
    if let metabench_engine::VolumeState::Volume(f) = engine.probe().await.unwrap() {
        engine.destroy(&f.uuid).await.unwrap();
    }
    assert_eq!(
        engine.probe().await.unwrap(),
        metabench_engine::VolumeState::Empty
    );
}

/// One test per store and direction.
macro_rules! interop {
    ($($name:ident: $store:ident, $(#[$cfg:meta])?;)*) => {
        mod juicefs_reads_what_metabench_wrote { $(
            $(#[$cfg])?
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::juicefs_reads_what_metabench_wrote(super::Store::$store).await }
        )* }
        mod metabench_reads_what_juicefs_wrote { $(
            $(#[$cfg])?
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::metabench_reads_what_juicefs_wrote(super::Store::$store).await }
        )* }
    };
}

interop! {
    redis: Redis, ;
    etcd: Etcd35, #[cfg(feature = "etcd")];
    etcd34: Etcd34, #[cfg(feature = "etcd")];
    tikv: Tikv, #[cfg(feature = "tikv")];
}

async fn juicefs_reads_what_metabench_wrote(store: Store) {
    let (url, _server) = fresh(store, "mbvol");
    let bucket = temp_dir();
    let volume = "mbvol";
    let engine = metabench_engine::open(&MetaUrl::parse(&url).unwrap())
        .await
        .unwrap();
    let format = Format::new(
        volume,
        "5b0a3c1e-7d2f-4e8a-9b6c-0123456789ab",
        &format!("{}/", bucket.path().display()),
        0,
    );
    engine.format(&format).await.unwrap();
    let mut meta = engine.session(&SessionOptions::default()).await.unwrap();
    let m = meta.as_mut();
    let c = Ctx::root();
    let b = bucket.path();

    let (a, _) = m.mkdir(&c, ROOT_INODE, b"a", 0o755, 0o022).await.unwrap();
    let (sub, _) = m.mkdir(&c, a, b"b", 0o700, 0).await.unwrap();
    let (f1, _) = m.create(&c, a, b"f1", 0o644, 0o022).await.unwrap();
    let s1 = write(m, b, volume, f1, 0, 0, 4096).await;
    let s2 = write(m, b, volume, f1, 0, 4096, 1000).await;
    let (big, _) = m.create(&c, a, b"big", 0o640, 0).await.unwrap();
    let s3 = write(m, b, volume, big, 0, 0, 5 << 20).await; // two blocks
    let s4 = write(m, b, volume, big, 1, 10, 300).await; // second chunk
    let (f2, _) = m.create(&c, sub, b"f2", 0o600, 0).await.unwrap();
    m.symlink(&c, a, b"s", b"f1").await.unwrap();
    m.link(&c, f1, sub, b"h").await.unwrap();
    m.mknod(&c, a, b"fifo", FileType::Fifo, 0o644, 0, 0)
        .await
        .unwrap();
    for (ino, name, value) in [(f1, "user.k", "v"), (a, "user.dir", "1")] {
        m.setxattr(ino, name.as_bytes(), value.as_bytes(), XattrFlags::Any)
            .await
            .unwrap();
    }
    m.create(&c, ROOT_INODE, b"top", 0o644, 0).await.unwrap();
    // Resized files: a truncate down and up across a chunk boundary, a punched hole.
    let (t, _) = m.create(&c, a, b"t", 0o644, 0).await.unwrap();
    let t1 = write(m, b, volume, t, 0, 0, 4096).await;
    m.truncate(&c, t, 100).await.unwrap();
    m.truncate(&c, t, (64 << 20) + 5).await.unwrap();
    punched_file(m, &c, a).await;
    // Entries that come and go must leave nothing behind.
    let (gone, _) = m.create(&c, a, b"gone", 0o644, 0).await.unwrap();
    write(m, b, volume, gone, 0, 0, 100).await;
    m.unlink(&c, a, b"gone").await.unwrap();
    m.mkdir(&c, a, b"tmpdir", 0o755, 0).await.unwrap();
    m.rmdir(&c, a, b"tmpdir").await.unwrap();
    m.create(&c, sub, b"old", 0o644, 0).await.unwrap();
    m.rename(&c, sub, b"old", a, b"renamed", 0).await.unwrap();
    m.mkdir(&c, ROOT_INODE, b"moved", 0o755, 0).await.unwrap();
    m.rename(&c, ROOT_INODE, b"moved", sub, b"moved", 0)
        .await
        .unwrap();
    m.flush().await.unwrap();
    let _ = f2;

    let dump = juicefs_dump(&url);
    let tree = dump_tree(&dump);
    // `juicefs dump` records a length for regular files only.
    let want: BTreeMap<&str, (&str, u16, u32, u64, Option<&str>)> = [
        ("/", ("directory", 0o777, 3, 0, None)),
        ("/a", ("directory", 0o755, 3, 0, None)),
        ("/a/b", ("directory", 0o700, 3, 0, None)),
        ("/a/b/f2", ("regular", 0o600, 1, 0, None)),
        ("/a/b/h", ("regular", 0o644, 2, 5096, None)),
        ("/a/b/moved", ("directory", 0o755, 2, 0, None)),
        ("/a/big", ("regular", 0o640, 1, (64 << 20) + 310, None)),
        ("/a/f1", ("regular", 0o644, 2, 5096, None)),
        ("/a/fifo", ("fifo", 0o644, 1, 0, None)),
        ("/a/renamed", ("regular", 0o644, 1, 0, None)),
        ("/a/s", ("symlink", 0o777, 1, 0, Some("f1"))),
        ("/a/t", ("regular", 0o644, 1, (64 << 20) + 5, None)),
        ("/a/fa", ("regular", 0o644, 1, 10_000, None)),
        ("/top", ("regular", 0o644, 1, 0, None)),
    ]
    .into_iter()
    .collect();
    let got: BTreeMap<&str, _> = tree.iter().map(|(p, n)| (p.as_str(), shape(n))).collect();
    let want: BTreeMap<&str, _> = want
        .into_iter()
        .map(|(p, (t, m, n, l, s))| (p, (t.to_owned(), m, n, l, s.map(str::to_owned))))
        .collect();
    assert_eq!(got, want);

    // Inodes, types and attributes agree with what metabench reads.
    for (path, node) in &tree {
        let mut ino = ROOT_INODE;
        for part in path.split('/').filter(|p| !p.is_empty()) {
            ino = meta.lookup(&c, ino, part.as_bytes()).await.unwrap().0;
        }
        let attr = meta.getattr(ino).await.unwrap();
        assert_eq!(node.inode, ino, "{path}");
        assert_eq!(node.typ, typ_name(attr.typ), "{path}");
        assert_eq!(
            (node.uid, node.gid, node.rdev),
            (attr.uid, attr.gid, attr.rdev)
        );
        if attr.typ == FileType::File {
            assert_eq!(node.length, attr.length, "{path}");
        }
    }
    assert_eq!(tree["/a/f1"].xattrs["user.k"], b"v");
    assert_eq!(tree["/a"].xattrs["user.dir"], b"1");
    let chunks = |p: &str| {
        let n = &tree[p];
        n.chunks
            .iter()
            .map(|c| {
                (
                    c.index,
                    c.slices
                        .iter()
                        .map(|s| (s.id, s.pos, s.size, s.off, s.len))
                        .collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>()
    };
    let t = |s: Slice| (s.id, s.pos, s.size, s.off, s.len);
    // A hard-linked file's chunks are dumped at one of its paths.
    let linked = if tree["/a/f1"].chunks.is_empty() {
        chunks("/a/b/h")
    } else {
        chunks("/a/f1")
    };
    assert_eq!(linked, vec![(0, vec![t(s1), t(s2)])]);
    assert_eq!(chunks("/a/big"), vec![(0, vec![t(s3)]), (1, vec![t(s4)])]);
    let hole = |pos, len| (0, pos, 0, 0, len);
    assert_eq!(
        chunks("/a/t"),
        vec![
            (0, vec![t(t1), hole(100, 3996), hole(100, (64 << 20) - 100)]),
            (1, vec![hole(0, 5)])
        ]
    );
    assert_eq!(chunks("/a/fa"), vec![(0, vec![hole(10, 10)])]);

    // Volume counters: usedSpace is Σ align4K(length) and usedInodes the inode count
    // (the root excluded, as format does not count it).
    let counters = &dump["Counters"];
    let inodes: BTreeMap<u64, u64> = tree
        .values()
        .filter(|n| n.inode != ROOT_INODE)
        .map(|n| (n.inode, n.length))
        .collect();
    let space: u64 = inodes
        .values()
        .map(|l| l.max(&1).div_ceil(4096) * 4096)
        .sum();
    assert_eq!(counters["usedInodes"].as_u64(), Some(inodes.len() as u64));
    assert_eq!(counters["usedSpace"].as_u64(), Some(space));
    assert!(dump["DelFiles"].as_array().is_none_or(|d| d.is_empty()));

    assert_fsck_clean(&url);
    destroy(engine.as_ref()).await;
}

/// Walks a tree through metabench's readdir(plus), as `path -> (inode, type, mode, nlink,
/// length)`.
async fn walk(
    meta: &mut dyn Meta,
    top: Ino,
    path: &str,
) -> BTreeMap<String, (Ino, String, u16, u32, u64)> {
    let c = Ctx::root();
    let mut out = BTreeMap::new();
    let mut stack = vec![(top, path.to_owned())];
    while let Some((dir, p)) = stack.pop() {
        for e in meta.readdir(&c, dir, true).await.unwrap() {
            if e.name == b"." || e.name == b".." {
                continue;
            }
            let child = format!("{p}/{}", String::from_utf8_lossy(&e.name));
            let a = &e.attr;
            // `juicefs dump` records a length for regular files only.
            let length = if a.typ == FileType::File { a.length } else { 0 };
            out.insert(
                child.clone(),
                (e.inode, typ_name(a.typ).to_owned(), a.mode, a.nlink, length),
            );
            if a.typ == FileType::Directory {
                stack.push((e.inode, child));
            }
        }
    }
    out
}

async fn metabench_reads_what_juicefs_wrote(store: Store) {
    let (url, _server) = fresh(store, "jfsvol");
    let bucket = temp_dir();
    juicefs_format(&url, "jfsvol", bucket.path());
    juicefs_mdtest(
        &url,
        "/test",
        &["--dirs", "2", "--depth", "2", "--files", "3"],
    );

    let engine: Arc<dyn Engine> = metabench_engine::open(&MetaUrl::parse(&url).unwrap())
        .await
        .unwrap();
    let mut meta = engine.session(&SessionOptions::default()).await.unwrap();
    let c = Ctx::root();
    let (test, tattr) = meta.lookup(&c, ROOT_INODE, b"test").await.unwrap();
    assert_eq!(tattr.typ, FileType::Directory);
    let ours = walk(meta.as_mut(), test, "/test").await;

    let tree = dump_tree(&juicefs_dump(&url));
    let theirs: BTreeMap<String, _> = tree
        .iter()
        .filter(|(p, _)| p.starts_with("/test/"))
        .map(|(p, n)| {
            (
                p.clone(),
                (n.inode, n.typ.clone(), n.mode, n.nlink, n.length),
            )
        })
        .collect();
    assert_eq!(ours, theirs);
    let files = ours.values().filter(|v| v.1 == "regular").count();
    let dirs = ours.values().filter(|v| v.1 == "directory").count();
    // 21 files in 7 mdtest_tree directories below test-dir.0-0.
    assert_eq!(
        (files, dirs),
        (21, 8),
        "mdtest --dirs 2 --depth 2 --files 3"
    );
    for (path, (ino, ..)) in &ours {
        let attr = meta.getattr(*ino).await.unwrap();
        let node = &tree[path];
        assert_eq!(
            (attr.mode, attr.uid, attr.gid, attr.nlink),
            (node.mode, node.uid, node.gid, node.nlink),
            "{path}"
        );
        let want_len = if attr.typ == FileType::Directory {
            4096
        } else {
            node.length
        };
        assert_eq!(attr.length, want_len, "{path}");
    }

    // metabench works in the volume juicefs made (trash on: deletes are plain, see
    // fidelity_notes) and leaves it consistent; its inodes continue after mdtest's.
    let max_theirs = tree.values().map(|n| n.inode).max().unwrap();
    let (d, _) = meta.mkdir(&c, test, b"mb", 0o755, 0o022).await.unwrap();
    assert!(d > max_theirs);
    let (f, _) = meta.create(&c, d, b"f", 0o644, 0o022).await.unwrap();
    let id = meta.new_slice().await.unwrap();
    let s = Slice::whole(0, id, 777);
    meta.write(f, 0, s, Timestamp::now()).await.unwrap();
    write_slice_blocks(bucket.path(), "jfsvol", id, 777, 0);
    let first_file = ours
        .iter()
        .find(|(_, v)| v.1 == "regular")
        .map(|(p, _)| p.clone())
        .unwrap();
    let (dir, name) = first_file.rsplit_once('/').unwrap();
    let parent = ours.get(dir).map(|v| v.0).unwrap_or(test);
    meta.unlink(&c, parent, name.as_bytes()).await.unwrap();
    meta.flush().await.unwrap();

    let tree = dump_tree(&juicefs_dump(&url));
    assert_eq!(tree["/test/mb/f"].length, 777);
    assert!(!tree.contains_key(&first_file));
    assert_fsck_clean(&url);
    destroy(engine.as_ref()).await;
}
