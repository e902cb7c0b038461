//! KV calls per operation on the TKV engines, against `pkg/meta/tkv.go` (the call sequence)
//! and its counts (sequential reads plus a commit when something was written;
//! etcd `gets` split per 128 keys; TiKV: a PD timestamp per transaction). A wrapper around
//! the KV trait (and around TiKV's native transactions) records every call the backend
//! receives, so the sequences are what reaches the store, and the session's own
//! `round_trips` must agree with it. Runs on memkv, etcd (`METABENCH_ETCD_URL`) and the TiKV
//! stand-in (`METABENCH_TIKV_URL`), both set by `scripts/engines.sh`.
//!
//! Expected sequences name their transactions: `T` (`client.txn`) and `S`
//! (`client.simpleTxn`) cost nothing on memkv and etcd; on TiKV a `T` begins with a PD
//! timestamp request (`tso`), and an `S` reads at `u64::MAX` without one.

use super::common::volume_format;
use async_trait::async_trait;
use metabench_engine::tkv::kv::{
    KeyRange, KvBackend, KvError, KvResult, NativeTxn, Version, Versioned, Write,
};
use metabench_engine::tkv::mem::MemKv;
use metabench_engine::tkv::TkvEngine;
use metabench_engine::{
    ClientProfile, Ctx, Engine, EngineKind, FallocRange, Meta, MetaUrl, SessionOptions, SetAttr,
    XattrFlags,
};
use metabench_schema::tkv::TkvKeys;
use metabench_schema::{FileType, Slice, Timestamp, ROOT_INODE};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Records each call (`get`, `gets:N`, `scan`, `exist`, `commit`) and can make the next
/// commit fail with a conflict.
struct Recorder {
    inner: Arc<dyn KvBackend>,
    log: Arc<Log>,
}

/// The calls seen, shared with the recorded native transactions.
#[derive(Default)]
struct Log {
    calls: Mutex<Vec<String>>,
    fail_next_commit: AtomicBool,
}

impl Log {
    fn push(&self, s: String) {
        self.calls.lock().unwrap().push(s);
    }
}

impl Recorder {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.calls.lock().unwrap())
    }
    fn push(&self, s: String) {
        self.log.push(s);
    }
}

/// A backend's native transaction (TiKV), recorded call by call.
struct RecordedTxn {
    inner: Box<dyn NativeTxn>,
    log: Arc<Log>,
}

#[async_trait]
impl NativeTxn for RecordedTxn {
    async fn get(&mut self, key: &[u8]) -> KvResult<Option<Vec<u8>>> {
        self.log.push("get".into());
        self.inner.get(key).await
    }
    async fn batch_get(&mut self, keys: &[Vec<u8>]) -> KvResult<Vec<Option<Vec<u8>>>> {
        self.log.push(format!("gets:{}", keys.len()));
        self.inner.batch_get(keys).await
    }
    async fn scan(&mut self, range: KeyRange<'_>) -> KvResult<Vec<(Vec<u8>, Vec<u8>)>> {
        self.log.push("scan".into());
        self.inner.scan(range).await
    }
    async fn exist(&mut self, prefix: &[u8]) -> KvResult<bool> {
        self.log.push("exist".into());
        self.inner.exist(prefix).await
    }
    async fn commit(self: Box<Self>, writes: &[Write]) -> KvResult<()> {
        self.log.push("commit".into());
        if self.log.fail_next_commit.swap(false, Ordering::SeqCst) {
            return Err(KvError::Conflict("injected".into()));
        }
        self.inner.commit(writes).await
    }
}

#[async_trait]
impl KvBackend for Recorder {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn begin_native(&self, simple: bool) -> Option<KvResult<Box<dyn NativeTxn>>> {
        let log = self.log.clone();
        self.inner
            .begin_native(simple)
            .map(|r| r.map(|inner| Box::new(RecordedTxn { inner, log }) as Box<dyn NativeTxn>))
    }
    fn begin_calls(&self, simple: bool) -> u64 {
        let n = self.inner.begin_calls(simple);
        for _ in 0..n {
            self.push("tso".into());
        }
        n
    }
    fn batch_limit(&self) -> usize {
        self.inner.batch_limit()
    }
    fn commit_every(&self) -> Option<usize> {
        self.inner.commit_every()
    }
    async fn get(&self, key: &[u8]) -> KvResult<Versioned> {
        self.push("get".into());
        self.inner.get(key).await
    }
    async fn batch_get(&self, keys: &[Vec<u8>]) -> KvResult<Vec<Versioned>> {
        self.push(format!("gets:{}", keys.len()));
        self.inner.batch_get(keys).await
    }
    async fn scan(&self, range: KeyRange<'_>) -> KvResult<Vec<(Vec<u8>, Vec<u8>, Version)>> {
        self.push("scan".into());
        self.inner.scan(range).await
    }
    async fn exist(&self, prefix: &[u8]) -> KvResult<bool> {
        self.push("exist".into());
        self.inner.exist(prefix).await
    }
    async fn commit(&self, observed: &[(Vec<u8>, Version)], writes: &[Write]) -> KvResult<()> {
        self.push("commit".into());
        if self.log.fail_next_commit.swap(false, Ordering::SeqCst) {
            return Err(KvError::Conflict("injected".into()));
        }
        self.inner.commit(observed, writes).await
    }
    async fn delete_prefix(&self, prefix: &[u8]) -> KvResult<()> {
        self.inner.delete_prefix(prefix).await
    }
    async fn server_info(&self) -> KvResult<metabench_engine::ServerInfo> {
        self.inner.server_info().await
    }
}

fn unique() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "calls_{}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        Timestamp::now().nsec
    )
}

struct Fx {
    rec: Arc<Recorder>,
    engine: TkvEngine,
    uuid: String,
    store: Store,
}

impl Fx {
    /// The calls `want` names, with each transaction marker (`T`, `S`) replaced by what
    /// beginning it costs on this store.
    fn calls(&self, want: &[&str]) -> Vec<String> {
        want.iter()
            .filter_map(|c| match *c {
                "T" => self.tso(),
                "S" => None,
                c => Some(c.to_owned()),
            })
            .collect()
    }

    fn tso(&self) -> Option<String> {
        #[cfg(feature = "tikv")]
        if self.store == Store::Tikv {
            return Some("tso".into());
        }
        None
    }
}

/// Which store the calls are counted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Store {
    Memkv,
    #[cfg(feature = "etcd")]
    Etcd,
    #[cfg(feature = "tikv")]
    Tikv,
}

fn env_url(var: &str) -> String {
    match std::env::var(var) {
        Ok(u) if !u.is_empty() => u,
        _ => panic!("{var} is not set: run the tests with scripts/test.sh"),
    }
}

async fn fixture(store: Store) -> Option<Fx> {
    let (url, inner, keys, kind): (MetaUrl, Arc<dyn KvBackend>, TkvKeys, EngineKind) = match store {
        #[cfg(feature = "etcd")]
        Store::Etcd => {
            let base = env_url("METABENCH_ETCD_URL");
            let url = MetaUrl::parse(&format!("{base}/{}", unique())).unwrap();
            let (kv, prefix) = metabench_engine::tkv::etcd::EtcdKv::connect(&url)
                .await
                .unwrap();
            (url, Arc::new(kv), TkvKeys::new(prefix), EngineKind::Etcd)
        }
        #[cfg(feature = "tikv")]
        Store::Tikv => {
            let base = env_url("METABENCH_TIKV_URL");
            let url = MetaUrl::parse(&format!("{base}/{}", unique())).unwrap();
            let (kv, prefix) = metabench_engine::tkv::tikv::TikvKv::connect(&url)
                .await
                .unwrap();
            (url, Arc::new(kv), TkvKeys::new(prefix), EngineKind::Tikv)
        }
        Store::Memkv => {
            let name = unique();
            let url = MetaUrl::parse(&format!("memkv://{name}")).unwrap();
            (
                url,
                Arc::new(MemKv::named(&name)),
                TkvKeys::default(),
                EngineKind::Memkv,
            )
        }
    };
    let rec = Arc::new(Recorder {
        inner,
        log: Arc::default(),
    });
    let engine = TkvEngine::with_backend(url, kind, rec.clone(), keys);
    let uuid = uuid::Uuid::new_v4().to_string();
    engine.format(&volume_format("calls", &uuid)).await.unwrap();
    Some(Fx {
        rec,
        engine,
        uuid,
        store,
    })
}

async fn per_operation(store: Store) {
    let Some(fx) = fixture(store).await else {
        return;
    };
    let mut s: Box<dyn Meta> = fx.engine.session(&SessionOptions::default()).await.unwrap();
    // Runs `$call` on `s`, then checks the calls the store received (`$want`, as
    // `Fx::calls` spells them) and the session's count of round trips.
    macro_rules! expect {
        ($op:literal, $call:expr, [$($c:literal),*]) => {
            expect!($op, $call, &[$($c),*])
        };
        ($op:literal, $call:expr, $want:expr) => {{
            fx.rec.take();
            let before = s.stats();
            let r = $call;
            let got = fx.rec.take();
            let want: Vec<String> = fx.calls($want);
            assert_eq!(got, want, "{} KV calls", $op);
            assert_eq!(
                s.stats().since(&before).round_trips,
                want.len() as u64,
                "{} round_trips",
                $op
            );
            eprintln!("{:<14} {:>2} calls  {:?}", $op, want.len(), got);
            r
        }};
    }
    let ctx = Ctx::root();
    // prepareParent, and a first create that fetches the inode batch (untimed in Go).
    let (p, _) = s.mkdir(&ctx, ROOT_INODE, b"bench", 0o755, 0).await.unwrap();
    s.create(&ctx, p, b"warm", 0o644, 0).await.unwrap();

    expect!(
        "mkdir",
        s.mkdir(&ctx, p, b"d0", 0o755, 0).await.unwrap(),
        ["T", "gets:2", "commit"]
    );
    expect!(
        "mvdir",
        s.rename(&ctx, p, b"d0", p, b"d1", 0).await.unwrap(),
        ["T", "get", "gets:4", "commit"]
    );
    expect!(
        "rmdir",
        s.rmdir(&ctx, p, b"d1").await.unwrap(),
        ["T", "get", "gets:3", "exist", "scan", "commit"]
    );
    expect!(
        "mknod",
        s.mknod(&ctx, p, b"n0", FileType::File, 0o644, 0o022, 0)
            .await
            .unwrap(),
        ["T", "gets:2", "commit"]
    );
    let (f, _) = expect!(
        "create",
        s.create(&ctx, p, b"f0", 0o644, 0o022).await.unwrap(),
        ["T", "gets:2", "commit"]
    );
    expect!(
        "rename",
        s.rename(&ctx, p, b"f0", p, b"f1", 0).await.unwrap(),
        ["T", "get", "gets:4", "commit"]
    );
    expect!(
        "lookup",
        s.lookup(&ctx, p, b"f1").await.unwrap(),
        ["S", "get", "get"]
    );
    expect!("getattr", s.getattr(f).await.unwrap(), ["S", "get"]);
    // baseMeta.Lookup: `..` of the root is the root itself, one GetAttr.
    expect!(
        "lookup .. of the root",
        s.lookup(&ctx, ROOT_INODE, b"..").await.unwrap(),
        ["S", "get"]
    );
    let user = Ctx {
        uid: 1,
        gids: vec![1],
        pid: 100,
    };
    expect!("access", s.access(&user, f, 4).await.unwrap(), ["S", "get"]);
    let set = SetAttr {
        mode: Some(0o645),
        ..Default::default()
    };
    expect!(
        "setattr",
        s.setattr(&ctx, f, &set).await.unwrap(),
        ["T", "get", "commit"]
    );
    expect!(
        "setxattr",
        s.setxattr(f, b"key", b"value1", XattrFlags::Any)
            .await
            .unwrap(),
        ["T", "get", "commit"]
    );
    expect!(
        "setxattr same",
        s.setxattr(f, b"key", b"value1", XattrFlags::Any)
            .await
            .unwrap(),
        ["T", "get"]
    );
    expect!(
        "getxattr",
        s.getxattr(f, b"key").await.unwrap(),
        ["S", "get"]
    );
    expect!(
        "listxattr",
        s.listxattr(f).await.unwrap(),
        ["T", "scan", "S", "get"]
    );
    expect!(
        "removexattr",
        s.removexattr(f, b"key").await.unwrap(),
        ["T", "get", "commit"]
    );
    // First link: incrBy of the old parent's counter, then of the new one (same key here,
    // served from the buffer); later links: one counter get.
    expect!(
        "link first",
        s.link(&ctx, f, p, b"l0").await.unwrap(),
        ["S", "get", "T", "gets:3", "get", "commit"]
    );
    expect!(
        "link",
        s.link(&ctx, f, p, b"l1").await.unwrap(),
        ["S", "get", "T", "gets:3", "get", "commit"]
    );
    let (sl, _) = expect!(
        "symlink",
        s.symlink(&ctx, p, b"s0", b"/benchSymlink/source")
            .await
            .unwrap(),
        ["T", "gets:2", "commit"]
    );
    expect!("readlink", s.readlink(sl).await.unwrap(), ["S", "get"]);
    expect!(
        "unlink",
        s.unlink(&ctx, p, b"n0").await.unwrap(),
        ["T", "get", "gets:2", "scan", "commit"]
    );
    let id = expect!(
        "newchunk first",
        s.new_slice().await.unwrap(),
        ["T", "get", "commit"]
    );
    expect!("newchunk", s.new_slice().await.unwrap(), []);
    let (w, _) = s.create(&ctx, p, b"w", 0o644, 0).await.unwrap();
    let sl1 = Slice::whole(0, id, 1024);
    expect!(
        "write",
        s.write(w, 0, sl1, Timestamp::now()).await.unwrap(),
        ["T", "gets:2", "commit"]
    );
    expect!("read", s.read(w, 0).await.unwrap(), ["S", "get"]);
    // truncate (`doTruncate`): the inode, then each hole appended (`kvTxn.append`: a get
    // and a set), the chunks between found by one scan when the range spans them.
    const C: u64 = 64 << 20;
    expect!(
        "truncate",
        s.truncate(&ctx, w, 1 << 20).await.unwrap(),
        ["T", "get", "get", "commit"]
    );
    expect!(
        "truncate same length",
        s.truncate(&ctx, w, 1 << 20).await.unwrap(),
        ["T", "get"]
    );
    expect!(
        "truncate across chunks",
        s.truncate(&ctx, w, 3 * C + 7).await.unwrap(),
        ["T", "get", "scan", "get", "get", "commit"]
    );
    expect!(
        "fallocate",
        s.fallocate(&ctx, w, FallocRange::new(0, 0, 4 * C))
            .await
            .unwrap(),
        ["T", "get", "commit"]
    );
    expect!(
        "fallocate zero_range",
        s.fallocate(
            &ctx,
            w,
            FallocRange::new(metabench_engine::falloc::ZERO_RANGE, C - 1, 2)
        )
        .await
        .unwrap(),
        ["T", "get", "get", "get", "commit"]
    );
    assert_eq!(s.read(w, 1).await.unwrap().len(), 1, "one hole in chunk 1");
    // readdir_10 and readdir_1k (plus): GetAttr, scan, gets (etcd: 128 keys per Txn).
    let (r10, _) = s.mkdir(&ctx, ROOT_INODE, b"r10", 0o755, 0).await.unwrap();
    for i in 0..10 {
        s.create(&ctx, r10, format!("f{i}").as_bytes(), 0o644, 0)
            .await
            .unwrap();
    }
    expect!(
        "readdir_10",
        s.readdir(&ctx, r10, true).await.unwrap(),
        ["S", "get", "T", "scan", "S", "gets:12"]
    );
    let (rk, _) = s.mkdir(&ctx, ROOT_INODE, b"r1k", 0o755, 0).await.unwrap();
    for i in 0..1000 {
        s.create(&ctx, rk, format!("f{i}").as_bytes(), 0o644, 0)
            .await
            .unwrap();
    }
    // The creates start a background inode prefetch (uncounted by the session, but seen
    // by the recorder): wait until the store is quiet so only readdir's calls are recorded.
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        if fx.rec.take().is_empty() {
            break;
        }
    }
    let mut want: Vec<&str> = vec!["S", "get", "T", "scan", "S"];
    #[cfg(feature = "etcd")]
    if fx.store == Store::Etcd {
        want.extend([&"gets:128"; 7]);
        want.push("gets:106");
    }
    if want.len() == 5 {
        want.push("gets:1002");
    }
    let entries = expect!(
        "readdir_1k",
        s.readdir(&ctx, rk, true).await.unwrap(),
        &want
    );
    assert_eq!(entries.len(), 1002);

    // A conflicting commit is retried: the whole transaction runs again, one retry counted.
    fx.rec.log.fail_next_commit.store(true, Ordering::SeqCst);
    let before = s.stats();
    expect!(
        "mkdir conflict",
        s.mkdir(&ctx, p, b"dc", 0o755, 0).await.unwrap(),
        ["T", "gets:2", "commit", "T", "gets:2", "commit"]
    );
    assert_eq!(s.stats().since(&before).retries, 1);
    assert!(s.lookup(&ctx, p, b"dc").await.is_ok());
    s.flush().await.unwrap();
    fx.engine.destroy(&fx.uuid).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memkv_calls_per_operation() {
    per_operation(Store::Memkv).await
}

#[cfg(feature = "etcd")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_calls_per_operation() {
    per_operation(Store::Etcd).await
}

#[cfg(feature = "tikv")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tikv_calls_per_operation() {
    per_operation(Store::Tikv).await
}

/// Retries of 16 clients creating 25 files each in one shared directory, with `profile`'s
/// settings.
#[cfg(feature = "etcd")]
async fn shared_dir_retries(store: Store, profile: ClientProfile) -> u64 {
    let fx = fixture(store).await.unwrap();
    let opts = profile.session_options();
    let ctx = Ctx::root();
    let mut first = fx.engine.session(&opts).await.unwrap();
    let (dir, _) = first
        .mkdir(&ctx, ROOT_INODE, b"shared", 0o755, 0)
        .await
        .unwrap();
    let mut clients = Vec::new();
    for c in 0..16 {
        let mut s = fx.engine.session(&opts).await.unwrap();
        clients.push(tokio::spawn(async move {
            for i in 0..25 {
                let name = format!("c{c}-{i}");
                s.create(&Ctx::root(), dir, name.as_bytes(), 0o644, 0)
                    .await
                    .unwrap();
            }
            s.stats().retries
        }));
    }
    let mut retries = 0;
    for c in clients {
        retries += c.await.unwrap();
    }
    fx.engine.destroy(&fx.uuid).await.unwrap();
    retries
}

/// Under the Go benchmark's settings every create rewrites the shared parent's attribute
/// key, so 16 clients conflict on it; a mount (SkipDirMtime 100 ms) rewrites it once per
/// 100 ms at most, and its clients retry at least 5 times less.
#[cfg(feature = "etcd")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_shared_dir_writers_retry_less_under_the_mount_profile() {
    let gobench = shared_dir_retries(Store::Etcd, ClientProfile::Gobench).await;
    let mount = shared_dir_retries(Store::Etcd, ClientProfile::Mount).await;
    eprintln!("retries of 16 clients x 25 creates: gobench {gobench}, mount {mount}");
    assert!(
        gobench >= 5 * mount.max(1),
        "gobench {gobench} retries, mount {mount}: expected at least 5x fewer under mount"
    );
}
