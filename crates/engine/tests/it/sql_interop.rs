//! Interoperability with the real `juicefs` 1.4.2 binary on MariaDB, PostgreSQL and
//! SQLite, in both directions:
//!
//! - a volume metabench formats and fills (directories, files with slices, symlinks, hard
//!   links, xattrs, a fifo) and flushes is what `juicefs dump` shows, entry for entry, and
//!   `juicefs fsck --path / --recursive` finds nothing wrong with it — nlinks, attributes,
//!   every directory's usage row, and every slice's objects. metabench writes metadata
//!   only, so the test puts one object of the right name and size per slice into the
//!   `file` bucket, as a JuiceFS client's upload would, before fsck lists them;
//! - a volume `juicefs format` made and `juicefs mdtest` filled is what metabench's
//!   lookup, readdir, getattr and read see.

use crate::common::punched_file;
use crate::sql_common;

use metabench_engine::{Ctx, Meta, SetAttr};
use metabench_schema::{FileType, Ino, Slice, Timestamp, ROOT_INODE};
use metabench_testkit::{
    dump_tree, fresh_database, fsck_problems, juicefs_dump, juicefs_format_with, juicefs_fsck,
    juicefs_mdtest, temp_dir, write_slice_blocks, DumpNode, Kind,
};
use sql_common::engine;
use std::collections::BTreeMap;

const NAME: &str = "mbinterop";

/// Writes the block objects of a slice as a JuiceFS client uploads them:
/// `<bucket>/<volume>/chunks/<id/1e6>/<id/1e3>/<id>_<block>_<bytes>`, 4 MiB blocks.
async fn metabench_volume_reads_back_in_juicefs(kind: Kind) {
    let db = fresh_database(kind);
    let bucket = temp_dir();
    let e = engine(&db).await;
    let mut f = sql_common::test_format(&format!("{}/", bucket.path().display()));
    f.name = NAME.into();
    use metabench_engine::Engine;
    e.format(&f).await.unwrap();
    let mut s = e.sql_session(&Default::default()).await.unwrap();
    let ctx = Ctx::root();

    let (a, _) = s.mkdir(&ctx, ROOT_INODE, b"a", 0o755, 0).await.unwrap();
    let (b, _) = s.mkdir(&ctx, a, b"b", 0o700, 0).await.unwrap();
    let (file, _) = s.create(&ctx, a, b"f", 0o644, 0).await.unwrap();
    let mut slices = Vec::new();
    for (pos, len) in [(0u32, 5000u32), (5000, 100)] {
        let id = s.new_slice().await.unwrap();
        let sl = Slice::whole(pos, id, len);
        s.write(file, 0, sl, Timestamp::now()).await.unwrap();
        write_slice_blocks(bucket.path(), NAME, id, len, 0);
        slices.push(sl);
    }
    let (g, _) = s.create(&ctx, b, b"g", 0o666, 0o022).await.unwrap();
    let set = SetAttr {
        mode: Some(0o600),
        uid: Some(1000),
        gid: Some(100),
        ..Default::default()
    };
    s.setattr(&ctx, g, &set).await.unwrap();
    s.symlink(&ctx, a, b"s", b"/target/x").await.unwrap();
    s.link(&ctx, file, b, b"h").await.unwrap();
    s.setxattr(file, b"user.k", b"v", Default::default())
        .await
        .unwrap();
    s.mknod(&ctx, ROOT_INODE, b"p", FileType::Fifo, 0o640, 0, 0)
        .await
        .unwrap();
    // resized files: a truncate down and up across a chunk boundary, and a punched hole
    const C: u64 = 64 << 20;
    let (t, _) = s.create(&ctx, a, b"t", 0o644, 0).await.unwrap();
    let id = s.new_slice().await.unwrap();
    let tdata = Slice::whole(0, id, 4096);
    s.write(t, 0, tdata, Timestamp::now()).await.unwrap();
    write_slice_blocks(bucket.path(), NAME, id, 4096, 0);
    s.truncate(&ctx, t, 100).await.unwrap();
    s.truncate(&ctx, t, C + 5).await.unwrap();
    punched_file(&mut s, &ctx, a).await;
    // a deleted file with data: freed at flush, so fsck sees no leaked slice
    let (gone, _) = s.create(&ctx, a, b"gone", 0o644, 0).await.unwrap();
    let id = s.new_slice().await.unwrap();
    s.write(gone, 0, Slice::whole(0, id, 10), Timestamp::now())
        .await
        .unwrap();
    s.unlink(&ctx, a, b"gone").await.unwrap();
    s.flush().await.unwrap();
    drop(s);

    let tree = dump_tree(&juicefs_dump(db.url()));
    let node = |typ: &str, mode: u16, nlink: u32, length: u64| DumpNode {
        inode: 0,
        typ: typ.into(),
        mode,
        uid: 0,
        gid: 0,
        nlink,
        length,
        rdev: 0,
        symlink: None,
        xattrs: BTreeMap::new(),
        chunks: Vec::new(),
    };
    // `juicefs dump` writes no length for directories and symlinks (read back as 0)
    let mut want: BTreeMap<String, DumpNode> = BTreeMap::new();
    want.insert("/".into(), node("directory", 0o777, 3, 0));
    want.insert("/a".into(), node("directory", 0o755, 3, 0));
    want.insert("/a/b".into(), node("directory", 0o700, 2, 0));
    let mut fnode = node("regular", 0o644, 2, 5100);
    fnode.xattrs.insert("user.k".into(), b"v".to_vec());
    fnode.chunks = vec![metabench_testkit::DumpChunk {
        index: 0,
        slices: slices
            .iter()
            .map(|s| metabench_testkit::DumpSlice {
                id: s.id,
                pos: s.pos,
                size: s.size,
                off: s.off,
                len: s.len,
            })
            .collect(),
    }];
    want.insert("/a/f".into(), fnode.clone());
    want.insert("/a/b/h".into(), fnode);
    let mut gnode = node("regular", 0o600, 1, 0);
    gnode.uid = 1000;
    gnode.gid = 100;
    want.insert("/a/b/g".into(), gnode);
    let mut snode = node("symlink", 0o777, 1, 0);
    snode.symlink = Some("/target/x".into());
    want.insert("/a/s".into(), snode);
    want.insert("/p".into(), node("fifo", 0o640, 1, 0));
    let dslice = |s: Slice| metabench_testkit::DumpSlice {
        id: s.id,
        pos: s.pos,
        size: s.size,
        off: s.off,
        len: s.len,
    };
    let hole = |pos, len| {
        dslice(Slice {
            pos,
            id: 0,
            size: 0,
            off: 0,
            len,
        })
    };
    let chunk = |index, slices| metabench_testkit::DumpChunk { index, slices };
    let mut tnode = node("regular", 0o644, 1, C + 5);
    tnode.chunks = vec![
        chunk(
            0,
            vec![dslice(tdata), hole(100, 3996), hole(100, (C - 100) as u32)],
        ),
        chunk(1, vec![hole(0, 5)]),
    ];
    want.insert("/a/t".into(), tnode);
    let mut fanode = node("regular", 0o644, 1, 10_000);
    fanode.chunks = vec![chunk(0, vec![hole(10, 10)])];
    want.insert("/a/fa".into(), fanode);
    let got: BTreeMap<String, DumpNode> = tree
        .iter()
        .map(|(p, n)| {
            let mut n = n.clone();
            n.inode = 0;
            (p.clone(), n)
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(tree["/a/f"].inode, file);
    assert_eq!(tree["/a/b/h"].inode, file);

    let out = juicefs_fsck(db.url());
    let problems = fsck_problems(&out);
    assert!(
        out.status.success() && problems.is_empty(),
        "fsck on {}: {problems:#?}\n{}",
        kind.name(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Walks the tree from the root with metabench: path -> (inode, attr).
async fn walk(
    s: &mut metabench_engine::sql::SqlSession,
) -> BTreeMap<String, (Ino, metabench_schema::Attr)> {
    let ctx = Ctx::root();
    let mut out = BTreeMap::new();
    out.insert(
        "/".to_owned(),
        (ROOT_INODE, s.getattr(ROOT_INODE).await.unwrap()),
    );
    let mut todo = vec![("/".to_owned(), ROOT_INODE)];
    while let Some((path, dir)) = todo.pop() {
        for e in s.readdir(&ctx, dir, true).await.unwrap() {
            if e.name == b"." || e.name == b".." {
                continue;
            }
            let name = String::from_utf8(e.name.clone()).unwrap();
            let p = if path == "/" {
                format!("/{name}")
            } else {
                format!("{path}/{name}")
            };
            let (ino, attr) = s.lookup(&ctx, dir, &e.name).await.unwrap();
            assert_eq!(
                (ino, &attr),
                (e.inode, &e.attr),
                "{p}: lookup and readdir differ"
            );
            assert_eq!(s.getattr(ino).await.unwrap(), attr);
            if attr.typ == FileType::Directory {
                todo.push((p.clone(), ino));
            }
            out.insert(p, (ino, attr));
        }
    }
    out
}

async fn juicefs_volume_reads_in_metabench(kind: Kind) {
    let db = fresh_database(kind);
    let bucket = temp_dir();
    juicefs_format_with(db.url(), NAME, bucket.path(), &["--trash-days", "0"]);
    juicefs_mdtest(
        db.url(),
        "/test",
        &[
            "--dirs", "2", "--depth", "2", "--files", "3", "--write", "1000",
        ],
    );
    let dump = dump_tree(&juicefs_dump(db.url()));
    let e = engine(&db).await;
    let mut s = e.sql_session(&Default::default()).await.unwrap();
    let seen = walk(&mut s).await;
    let seen_paths: Vec<&String> = seen.keys().collect();
    let dump_paths: Vec<&String> = dump.keys().collect();
    assert_eq!(seen_paths, dump_paths);
    let mut files = 0;
    for (p, d) in &dump {
        let (ino, a) = &seen[p];
        let typ = match a.typ {
            FileType::Directory => "directory",
            FileType::File => "regular",
            FileType::Symlink => "symlink",
            _ => "other",
        };
        assert_eq!(
            (*ino, typ, a.mode, a.nlink, a.uid, a.gid),
            (d.inode, d.typ.as_str(), d.mode, d.nlink, d.uid, d.gid),
            "{p}"
        );
        // the dump has no length for directories (metabench reads 4096 from the row)
        match a.typ {
            FileType::Directory => assert_eq!(a.length, 4096, "{p}"),
            _ => assert_eq!(a.length, d.length, "{p}"),
        }
        for c in &d.chunks {
            let ours = s.read(*ino, c.index).await.unwrap();
            let theirs: Vec<Slice> = c
                .slices
                .iter()
                .map(|x| Slice {
                    pos: x.pos,
                    id: x.id,
                    size: x.size,
                    off: x.off,
                    len: x.len,
                })
                .collect();
            assert_eq!(ours, theirs, "{p} chunk {}", c.index);
        }
        if a.typ == FileType::File {
            files += 1;
            assert_eq!(a.length, 1000, "{p}");
        }
    }
    assert_eq!(
        files, 21,
        "mdtest made 3 files in each of the 7 directories"
    );
}

metabench_testkit::engine_matrix!([mysql, postgres, sqlite] =>
    metabench_volume_reads_back_in_juicefs,
    juicefs_volume_reads_in_metabench
);
