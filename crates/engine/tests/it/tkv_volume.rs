//! Volume handling on the TKV engines: probe (empty / volume / foreign keys under the
//! prefix), format refusing a non-empty prefix, format writing the keys `juicefs format`
//! writes (etcd and the TiKV stand-in, compared with juicefs 1.4.2 on another prefix), and
//! destroy removing its own prefix only.

#![cfg_attr(
    not(all(feature = "etcd", feature = "tikv")),
    allow(unused_imports, dead_code)
)]

use metabench_engine::tkv::kv::KeyRange;
use metabench_engine::tkv::TkvEngine;
use metabench_engine::{Engine, MetaUrl, VolumeState};
use metabench_schema::tkv::{parse_counter, TkvKeys};
use metabench_schema::{Attr, Format, Timestamp, ROOT_INODE, TRASH_INODE};
use metabench_testkit::{juicefs_format, temp_dir};
use std::collections::BTreeMap;

/// The base URL in `var` (set by `scripts/engines.sh`).
fn base(var: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| panic!("{var} is not set: run the tests with scripts/test.sh"))
}

fn etcd_base() -> String {
    base("METABENCH_ETCD_URL")
}

fn tikv_base() -> String {
    base("METABENCH_TIKV_URL")
}

fn unique(tag: &str) -> String {
    format!("{tag}_{}_{}", std::process::id(), Timestamp::now().nsec)
}

async fn open(url: &str) -> TkvEngine {
    TkvEngine::open(&MetaUrl::parse(url).unwrap())
        .await
        .unwrap()
}

/// Every key under the engine's prefix (prefix stripped) with its value.
async fn keys_of(e: &TkvEngine) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let p = e.keys().prefix().to_vec();
    let end = if p.is_empty() {
        Vec::new()
    } else {
        TkvKeys::prefix_end(&p)
    };
    e.backend()
        .scan(KeyRange::new(&p, &end))
        .await
        .unwrap()
        .into_iter()
        .map(|(k, v, _)| (k[p.len()..].to_vec(), v))
        .collect()
}

async fn probe_format_destroy(base: &str) {
    let a = open(&format!("{base}/{}", unique("a"))).await;
    let b = open(&format!("{base}/{}", unique("b"))).await;
    assert_eq!(a.probe().await.unwrap(), VolumeState::Empty);
    let fa = Format::new("va", &uuid::Uuid::new_v4().to_string(), "/tmp/x/", 1);
    let fb = Format::new("vb", &uuid::Uuid::new_v4().to_string(), "/tmp/x/", 0);
    a.format(&fa).await.unwrap();
    b.format(&fb).await.unwrap();
    match a.probe().await.unwrap() {
        VolumeState::Volume(f) => {
            assert_eq!((f.name.as_str(), f.uuid.as_str()), ("va", fa.uuid.as_str()))
        }
        other => panic!("{other:?}"),
    }
    assert!(
        a.format(&fa).await.is_err(),
        "format refuses a non-empty prefix"
    );
    // The wrong UUID is refused; the right one removes this prefix and nothing else.
    assert!(a.destroy(&fb.uuid).await.is_err());
    a.destroy(&fa.uuid).await.unwrap();
    assert_eq!(a.probe().await.unwrap(), VolumeState::Empty);
    assert!(matches!(b.probe().await.unwrap(), VolumeState::Volume(_)));
    // Keys that are not a volume are foreign and never formatted over.
    let mut tx = metabench_engine::tkv::kv::Txn::new(a.backend().clone(), Default::default());
    tx.set(&TkvKeys::new(a.keys().prefix().to_vec()).counter("x"), b"1")
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert!(matches!(a.probe().await.unwrap(), VolumeState::Foreign(_)));
    assert!(a.format(&fa).await.is_err());
    a.backend().delete_prefix(a.keys().prefix()).await.unwrap();
    b.destroy(&fb.uuid).await.unwrap();
}

#[tokio::test]
async fn memkv_probe_format_destroy() {
    probe_format_destroy("memkv:/").await
}

#[cfg(feature = "etcd")]
#[tokio::test]
async fn etcd_probe_format_destroy() {
    probe_format_destroy(&etcd_base()).await
}

/// A client thread's calls go through a client of its own, made on its runtime: they still
/// work once the runtime that opened the engine is gone (a client shared from there would
/// have gone with it, and every call would have crossed threads).
#[cfg(any(feature = "etcd", feature = "tikv"))]
fn calls_use_the_calling_runtimes_own_client(base: &str) {
    let url = format!("{base}/{}", unique("conn"));
    let opener = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let f = Format::new("vc", &uuid::Uuid::new_v4().to_string(), "/tmp/x/", 0);
    let engine = opener.block_on(async {
        let e = open(&url).await;
        e.format(&f).await.unwrap();
        e
    });
    drop(opener);
    let client_thread = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    client_thread.block_on(async {
        let probed = tokio::time::timeout(std::time::Duration::from_secs(10), engine.probe())
            .await
            .expect("an answer within 10 s")
            .unwrap();
        assert!(matches!(probed, VolumeState::Volume(_)), "{probed:?}");
        engine.destroy(&f.uuid).await.unwrap();
        assert_eq!(engine.probe().await.unwrap(), VolumeState::Empty);
    });
}

#[cfg(feature = "etcd")]
#[test]
fn etcd_calls_use_the_calling_runtimes_own_connection() {
    calls_use_the_calling_runtimes_own_client(&etcd_base())
}

#[cfg(feature = "tikv")]
#[test]
fn tikv_calls_use_the_calling_runtimes_own_client() {
    calls_use_the_calling_runtimes_own_client(&tikv_base())
}

#[cfg(feature = "tikv")]
#[tokio::test]
async fn tikv_probe_format_destroy() {
    probe_format_destroy(&tikv_base()).await
}

#[cfg(feature = "etcd")]
#[tokio::test]
async fn etcd_format_matches_juicefs() {
    format_matches_juicefs(&etcd_base()).await
}

#[cfg(feature = "tikv")]
#[tokio::test]
async fn tikv_format_matches_juicefs() {
    format_matches_juicefs(&tikv_base()).await
}

/// `metabench format` writes the keys `juicefs format` writes, with the same values
/// (times aside): setting, root, trash, `CnextInode` = 2, `CnextChunk` = 1 (int64 LE).
async fn format_matches_juicefs(base: &str) {
    let bucket = temp_dir();
    let theirs_url = format!("{base}/{}", unique("jfs"));
    juicefs_format(&theirs_url, "same", bucket.path());
    let theirs = open(&theirs_url).await;
    let VolumeState::Volume(format) = theirs.probe().await.unwrap() else {
        panic!("juicefs format left no volume");
    };
    let ours = open(&format!("{base}/{}", unique("mb"))).await;
    ours.format(&format).await.unwrap();
    let (t, o) = (keys_of(&theirs).await, keys_of(&ours).await);
    assert_eq!(
        t.keys().collect::<Vec<_>>(),
        o.keys().collect::<Vec<_>>(),
        "same keys"
    );
    let k = TkvKeys::default();
    for c in ["nextInode", "nextChunk"] {
        assert_eq!(o[&k.counter(c)], t[&k.counter(c)], "{c}");
    }
    assert_eq!(parse_counter(Some(&o[&k.counter("nextInode")])), 2);
    assert_eq!(parse_counter(Some(&o[&k.counter("nextChunk")])), 1);
    for ino in [ROOT_INODE, TRASH_INODE] {
        let (mut a, mut b) = (
            Attr::decode(&t[&k.inode(ino)]).unwrap(),
            Attr::decode(&o[&k.inode(ino)]).unwrap(),
        );
        for x in [&mut a, &mut b] {
            x.atime = Timestamp::default();
            x.mtime = Timestamp::default();
            x.ctime = Timestamp::default();
        }
        assert_eq!(a, b, "inode {ino}");
        assert_eq!(t[&k.inode(ino)].len(), o[&k.inode(ino)].len());
    }
    assert_eq!(
        Format::from_json(&o[&k.setting()]).unwrap(),
        *format,
        "setting"
    );
    theirs.destroy(&format.uuid).await.unwrap();
    ours.destroy(&format.uuid).await.unwrap();
}

/// A file written 1,000 times, as `ops --ops write --iterations 1000` leaves it, then
/// unlinked: freeing its data is one transaction of about 1,000 keys (JuiceFS's
/// `deleteChunk`: the chunk and a slice reference per slice). On the TiKV stand-in each
/// prewrite carried every secondary key and unistore kept them in every lock, so that
/// transaction's raft entry grew past its 8 MB limit (`RaftEntryTooLarge`). It must commit,
/// leave no chunk or slice reference behind, and let the volume be destroyed.
#[cfg(feature = "tikv")]
#[tokio::test]
async fn tikv_frees_a_file_of_a_thousand_slices() {
    use metabench_engine::{Ctx, SessionOptions};
    use metabench_schema::Slice;
    let e = open(&format!("{}/{}", tikv_base(), unique("big"))).await;
    let f = Format::new("vbig", &uuid::Uuid::new_v4().to_string(), "/tmp/x/", 0);
    e.format(&f).await.unwrap();
    let mut s = e.session(&SessionOptions::default()).await.unwrap();
    let ctx = Ctx::root();
    let (ino, _) = s.create(&ctx, ROOT_INODE, b"f", 0o644, 0).await.unwrap();
    for _ in 0..1000 {
        let id = s.new_slice().await.unwrap();
        let slice = Slice::whole(0, id, 4096);
        s.write(ino, 0, slice, Timestamp::now()).await.unwrap();
    }
    assert_eq!(s.read(ino, 0).await.unwrap().len(), 1000);
    s.unlink(&ctx, ROOT_INODE, b"f").await.unwrap();
    s.flush().await.unwrap();
    let left: Vec<_> = keys_of(&e)
        .await
        .into_keys()
        .filter(|k| k.starts_with(b"K") || (k.starts_with(b"A") && k.get(9) == Some(&b'C')))
        .collect();
    assert!(left.is_empty(), "chunk or slice keys left: {left:?}");
    s.close().await.unwrap();
    e.destroy(&f.uuid).await.unwrap();
    assert_eq!(e.probe().await.unwrap(), VolumeState::Empty);
}
