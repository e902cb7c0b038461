//! Resizes across the two clients, through a real `juicefs mount` (FUSE): a file that
//! metabench truncated and punched reads back through the mount with the right bytes, and
//! a file that the mount truncated reads back in metabench with the length and holes
//! `doTruncate` leaves. On Redis and SQLite.

use metabench_engine::falloc::{KEEP_SIZE, PUNCH_HOLE};
use metabench_engine::{Ctx, FallocRange, MetaUrl, SessionOptions};
use metabench_mount::juicefs::{find_juicefs, Mount, MountOptions};
use metabench_schema::{Format, Slice, Timestamp, ROOT_INODE};
use metabench_testkit::{fresh_database, temp_dir, write_slice_blocks, Kind};

const C: u64 = 64 << 20;

async fn both_ways(kind: Kind) {
    let _phase = crate::phase(module_path!());
    let db = fresh_database(kind);
    let bucket = temp_dir();
    let volume = "resizes";
    let engine = metabench_engine::open(&MetaUrl::parse(db.url()).unwrap())
        .await
        .unwrap();
    let uuid = uuid::Uuid::new_v4().to_string();
    engine
        .format(&Format::new(
            volume,
            &uuid,
            &format!("{}/", bucket.path().display()),
            0,
        ))
        .await
        .unwrap();
    let mut s = engine.session(&SessionOptions::default()).await.unwrap();
    let ctx = Ctx::root();

    // metabench: 8 KiB of 'x', truncated to 100, grown to 5000, bytes 50..60 punched.
    let (f, _) = s.create(&ctx, ROOT_INODE, b"cut", 0o644, 0).await.unwrap();
    let id = s.new_slice().await.unwrap();
    let data = Slice {
        pos: 0,
        id,
        size: 8192,
        off: 0,
        len: 8192,
    };
    s.write(f, 0, data, Timestamp::now()).await.unwrap();
    write_slice_blocks(bucket.path(), volume, id, 8192, b'x');
    s.truncate(&ctx, f, 100).await.unwrap();
    s.truncate(&ctx, f, 5000).await.unwrap();
    s.fallocate(&ctx, f, FallocRange::new(PUNCH_HOLE | KEEP_SIZE, 50, 10))
        .await
        .unwrap();
    let (g, _) = s.create(&ctx, ROOT_INODE, b"grow", 0o644, 0).await.unwrap();
    s.flush().await.unwrap();

    let work = temp_dir();
    let mut mount = Mount::start(&MountOptions {
        juicefs: find_juicefs().unwrap(),
        meta_url: db.url().to_owned(),
        mountpoint: work.path().join("mnt"),
        work_dir: work.path().join("client"),
        skip_dir_mtime: std::time::Duration::from_millis(100),
        skip_dir_nlink: 20,
    })
    .unwrap();
    let read = std::fs::read(mount.path().join("cut")).unwrap();
    let mut want = vec![0u8; 5000];
    want[..100].fill(b'x');
    want[50..60].fill(0);
    assert_eq!(read.len(), want.len(), "{}", kind.name());
    assert!(read == want, "{}: the mount read other bytes", kind.name());
    // The mount grows a file across chunks (`ftruncate`).
    std::fs::OpenOptions::new()
        .write(true)
        .open(mount.path().join("grow"))
        .unwrap()
        .set_len(2 * C + 7)
        .unwrap();
    mount.unmount().unwrap();

    assert_eq!(s.getattr(g).await.unwrap().length, 2 * C + 7);
    assert_eq!(s.read(g, 0).await.unwrap(), vec![Slice::hole(0, C as u32)]);
    assert!(s.read(g, 1).await.unwrap().is_empty());
    assert_eq!(s.read(g, 2).await.unwrap(), vec![Slice::hole(0, 7)]);
    drop(s);
    engine.destroy(&uuid).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis() {
    both_ways(Kind::Redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite() {
    both_ways(Kind::Sqlite).await;
}
