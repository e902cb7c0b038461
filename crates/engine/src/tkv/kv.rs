//! The small transactional KV interface every TKV backend implements, and the one
//! transaction object (`kvtxn`) the operations run on.
//!
//! A backend only moves bytes: point reads and batch reads that report each key's version
//! (etcd: its ModRevision; 0 = absent), range reads, a count-only prefix check, and a
//! commit that applies buffered writes if every observed version is unchanged (etcd's
//! `Txn(If ModRevision(k) == v …).Then(puts/deletes)`). [`Txn`] does what JuiceFS's
//! `etcdTxn` does on top: buffers writes, serves reads of buffered keys locally, records
//! what it observed, turns `incrBy` into get + set, splits batch reads into the backend's
//! batch size, commits early when the backend caps buffered writes, skips the commit of a
//! read-only transaction, and counts every call it sends.

use crate::MetaError;
use async_trait::async_trait;
use metabench_schema::tkv::{pack_counter, parse_counter};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A key's version as the backend reports it; 0 means the key is absent.
pub type Version = i64;

/// A value with the version it was read at.
pub type Versioned = Option<(Vec<u8>, Version)>;

/// A failed backend call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvError {
    /// The optimistic transaction lost a race (etcd compare failure, memkv conflict,
    /// TiKV write conflict, FDB not_committed): JuiceFS's `shouldRetry` is true.
    Conflict(String),
    /// The engine refused the call before applying any of it, so nothing of it landed
    /// (etcd's NOSPACE alarm: gRPC `ResourceExhausted`). Final.
    Refused(String),
    /// Anything else: final; for a commit it may not tell whether the writes landed (a
    /// timeout, a dropped connection).
    Other(String),
}

impl std::fmt::Display for KvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Conflict(m) => write!(f, "conflicted transaction: {m}"),
            Self::Refused(m) | Self::Other(m) => f.write_str(m),
        }
    }
}

/// Result of a backend call.
pub type KvResult<T> = std::result::Result<T, KvError>;

/// One write of a commit: a put (`Some`) or a delete (`None`).
pub type Write = (Vec<u8>, Option<Vec<u8>>);

/// A range scan: the keys in `[begin, end)` in order (an empty `end` reads to the end of
/// the keyspace), at most `limit` of them (0 = all), with empty values when `keys_only`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRange<'a> {
    /// The first key (inclusive).
    pub begin: &'a [u8],
    /// The key after the last (exclusive); empty for no bound.
    pub end: &'a [u8],
    /// How many keys at most; 0 for all.
    pub limit: usize,
    /// Whether to leave the values out.
    pub keys_only: bool,
}

impl<'a> KeyRange<'a> {
    /// Every key and value in `[begin, end)`.
    pub fn new(begin: &'a [u8], end: &'a [u8]) -> Self {
        Self {
            begin,
            end,
            limit: 0,
            keys_only: false,
        }
    }

    /// At most `limit` keys.
    pub fn limit(self, limit: usize) -> Self {
        Self { limit, ..self }
    }

    /// Keys only, values left empty.
    pub fn keys_only(self) -> Self {
        Self {
            keys_only: true,
            ..self
        }
    }
}

/// A transaction a backend runs itself (FoundationDB): reads go through it, so it knows
/// its read set and reports conflicts at commit; [`Txn`] still buffers the writes and
/// hands them over at commit.
#[async_trait]
pub trait NativeTxn: Send {
    /// Reads one key.
    async fn get(&mut self, key: &[u8]) -> KvResult<Option<Vec<u8>>>;
    /// Reads several keys (issued together).
    async fn batch_get(&mut self, keys: &[Vec<u8>]) -> KvResult<Vec<Option<Vec<u8>>>>;
    /// Reads `[begin, end)` in order, at most `limit` (0 = all).
    async fn scan(&mut self, range: KeyRange<'_>) -> KvResult<Vec<(Vec<u8>, Vec<u8>)>>;
    /// Whether any key starts with `prefix`.
    async fn exist(&mut self, prefix: &[u8]) -> KvResult<bool>;
    /// Applies `writes` and commits; [`KvError::Conflict`] when the store says so.
    async fn commit(self: Box<Self>, writes: &[Write]) -> KvResult<()>;
}

/// The versioned calls of a backend that runs its own transactions (TiKV, FoundationDB),
/// for administration outside sessions: each is served by a fresh native transaction, and
/// every value reads as version 1 (such backends detect conflicts themselves).
pub mod via_native {
    use super::{KeyRange, KvResult, NativeTxn, Version, Versioned};

    /// Reads one key.
    pub async fn get(mut t: Box<dyn NativeTxn>, key: &[u8]) -> KvResult<Versioned> {
        Ok(t.get(key).await?.map(|v| (v, 1)))
    }

    /// Reads several keys.
    pub async fn batch_get(
        mut t: Box<dyn NativeTxn>,
        keys: &[Vec<u8>],
    ) -> KvResult<Vec<Versioned>> {
        Ok(t.batch_get(keys)
            .await?
            .into_iter()
            .map(|v| v.map(|v| (v, 1)))
            .collect())
    }

    /// Reads `[begin, end)`.
    pub async fn scan(
        mut t: Box<dyn NativeTxn>,
        range: KeyRange<'_>,
    ) -> KvResult<Vec<(Vec<u8>, Vec<u8>, Version)>> {
        Ok(t.scan(range)
            .await?
            .into_iter()
            .map(|(k, v)| (k, v, 1))
            .collect())
    }
}

/// A transactional KV store, as the TKV family needs it. Every method is one request.
#[async_trait]
pub trait KvBackend: Send + Sync {
    /// A native transaction, for backends that run their own (TiKV, FoundationDB); `None`
    /// (the default) means the versioned calls below are used, as etcd's client does.
    /// `simple` asks for JuiceFS's `simpleTxn`: read-only, for point reads.
    fn begin_native(&self, simple: bool) -> Option<KvResult<Box<dyn NativeTxn>>> {
        let _ = simple;
        None
    }

    /// Requests a transaction costs before its first read (TiKV: a PD timestamp for a
    /// `txn`, none for a `simpleTxn`); counted with the session's calls.
    fn begin_calls(&self, simple: bool) -> u64 {
        let _ = simple;
        0
    }

    /// Backend name (`etcd`, `memkv`).
    fn name(&self) -> &'static str;

    /// Most keys one batch read may carry; larger reads are split (etcd: 128).
    fn batch_limit(&self) -> usize {
        usize::MAX
    }

    /// Buffered writes that make the transaction commit early (etcd: 128), if any.
    fn commit_every(&self) -> Option<usize> {
        None
    }

    /// Reads one key with its version.
    async fn get(&self, key: &[u8]) -> KvResult<Versioned>;

    /// Reads several keys in one request (at most [`KvBackend::batch_limit`]).
    async fn batch_get(&self, keys: &[Vec<u8>]) -> KvResult<Vec<Versioned>>;

    /// Reads the keys in `[begin, end)` in order, at most `limit` (0 = all); values are
    /// empty when `keys_only`.
    async fn scan(&self, range: KeyRange<'_>) -> KvResult<Vec<(Vec<u8>, Vec<u8>, Version)>>;

    /// Whether any key starts with `prefix` (count only).
    async fn exist(&self, prefix: &[u8]) -> KvResult<bool>;

    /// Applies `writes` if every key in `observed` still has the version seen;
    /// [`KvError::Conflict`] otherwise.
    async fn commit(&self, observed: &[(Vec<u8>, Version)], writes: &[Write]) -> KvResult<()>;

    /// Commits a bulk writer (`metabench fill`) sends at once: etcd writes its log to disk
    /// once for all that arrive together, as it does for `juicefs load`'s concurrent
    /// writers. 1 (the default): one at a time.
    fn commits_at_once(&self) -> usize {
        1
    }

    /// Deletes every key starting with `prefix` (administration, not an operation).
    async fn delete_prefix(&self, prefix: &[u8]) -> KvResult<()>;

    /// Deletes exactly `keys`, not as one transaction: how a bulk writer (`metabench
    /// fill`) takes back the keys of a refused wave. By default unguarded commits of
    /// deletes, [`KvBackend::commit_every`] keys each; a backend whose store, out of room,
    /// refuses those but takes deletes of another kind sends those (etcd). Every part is
    /// tried; the first failure is returned.
    async fn delete_keys(&self, keys: &[Vec<u8>]) -> KvResult<()> {
        let per = self.commit_every().unwrap_or(usize::MAX).max(1);
        let mut first_failure = Ok(());
        for part in keys.chunks(per) {
            let deletes: Vec<Write> = part.iter().map(|k| (k.clone(), None)).collect();
            let done = self.commit(&[], &deletes).await;
            first_failure = first_failure.and(done);
        }
        first_failure
    }

    /// Server software and version, and the settings results record ([`crate::ServerInfo`]).
    async fn server_info(&self) -> KvResult<crate::ServerInfo>;

    /// What the store holds, by its own count ([`crate::Engine::footprint`]); why not by
    /// default.
    async fn footprint(&self) -> std::result::Result<crate::Footprint, String> {
        Err("this store keeps no figure of what it holds that metabench reads".into())
    }

    /// The server's own counters and gauges now (etcd's `/metrics`); empty by default.
    async fn telemetry(&self) -> KvResult<crate::Telemetry> {
        Ok(crate::Telemetry::default())
    }
}

/// Counts the calls a session sends; clones share the count.
#[derive(Debug, Clone, Default)]
pub struct CallCounter(Arc<AtomicU64>);

impl CallCounter {
    /// Calls so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
}

pub(crate) use crate::retry::TxErr;

impl From<KvError> for TxErr {
    fn from(e: KvError) -> Self {
        match e {
            KvError::Conflict(_) => TxErr::Retry(e.to_string()),
            KvError::Refused(m) | KvError::Other(m) => TxErr::Meta(MetaError::Engine(m)),
        }
    }
}

/// One `kvtxn`: buffered writes, observed versions, counted calls.
pub struct Txn {
    kv: Arc<dyn KvBackend>,
    simple: bool,
    native: Option<KvResult<Box<dyn NativeTxn>>>,
    calls: CallCounter,
    /// The version of every key read, for the commit's check. Hashed with foldhash, not
    /// the standard library's SipHash: the keys are the client's own, and on memkv SipHash
    /// was a few % of a write transaction's CPU, which Go's map hash does not spend.
    observed: HashMap<Vec<u8>, Version, foldhash::fast::FixedState>,
    buffer: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Retries before this try (`kvTxn.retry`).
    retry: u32,
}

impl Txn {
    /// This try's number of retries before it (`tx.retry`), which JuiceFS's
    /// SkipDirMtime and SkipDirNlink rules read.
    pub fn retry(&self) -> u32 {
        self.retry
    }

    /// Marks this as the try after `retry` retries.
    pub fn on_try(mut self, retry: u32) -> Self {
        self.retry = retry;
        self
    }

    /// Starts a transaction (`client.txn`). The backend's begin cost (TiKV's PD timestamp)
    /// is counted now; the request itself goes out with the first read.
    pub fn new(kv: Arc<dyn KvBackend>, calls: CallCounter) -> Self {
        Self::begin(kv, calls, false)
    }

    /// Starts a read-only `client.simpleTxn` for point reads (TiKV: no PD timestamp).
    pub fn simple(kv: Arc<dyn KvBackend>, calls: CallCounter) -> Self {
        Self::begin(kv, calls, true)
    }

    fn begin(kv: Arc<dyn KvBackend>, calls: CallCounter, simple: bool) -> Self {
        let native = kv.begin_native(simple);
        calls.add(kv.begin_calls(simple));
        Self {
            kv,
            simple,
            native,
            calls,
            observed: HashMap::default(),
            buffer: BTreeMap::new(),
            retry: 0,
        }
    }

    /// `get`: the buffered value if this transaction wrote the key, else one request.
    pub async fn get(&mut self, key: &[u8]) -> KvResult<Option<Vec<u8>>> {
        if let Some(v) = self.buffer.get(key) {
            return Ok(v.clone());
        }
        self.calls.add(1);
        if let Some(n) = self.native()? {
            return n.get(key).await;
        }
        let r = self.kv.get(key).await?;
        Ok(self.observe(key, r))
    }

    fn native(&mut self) -> KvResult<Option<&mut Box<dyn NativeTxn>>> {
        match &mut self.native {
            None => Ok(None),
            Some(Ok(n)) => Ok(Some(n)),
            Some(Err(e)) => Err(e.clone()),
        }
    }

    fn observe(&mut self, key: &[u8], r: Versioned) -> Option<Vec<u8>> {
        match r {
            Some((v, ver)) => {
                self.observed.insert(key.to_vec(), ver);
                Some(v)
            }
            None => {
                self.observed.insert(key.to_vec(), 0);
                None
            }
        }
    }

    /// `gets`: every key is sent (batches of the backend's limit, one request each);
    /// buffered values win over what the server returned.
    pub async fn gets(&mut self, keys: &[Vec<u8>]) -> KvResult<Vec<Option<Vec<u8>>>> {
        let mut out = Vec::with_capacity(keys.len());
        let limit = self.kv.batch_limit().max(1);
        for batch in keys.chunks(limit) {
            self.calls.add(1);
            if let Some(n) = self.native()? {
                for (k, v) in batch.iter().zip(n.batch_get(batch).await?) {
                    out.push(match self.buffer.get(k) {
                        Some(b) => b.clone(),
                        None => v,
                    });
                }
                continue;
            }
            let rs = self.kv.batch_get(batch).await?;
            for (k, r) in batch.iter().zip(rs) {
                let v = self.observe(k, r);
                out.push(match self.buffer.get(k) {
                    Some(b) => b.clone(),
                    None => v,
                });
            }
        }
        Ok(out)
    }

    /// `scan` of `[begin, end)`: one request; every returned key is observed.
    pub async fn scan(&mut self, range: KeyRange<'_>) -> KvResult<Vec<(Vec<u8>, Vec<u8>)>> {
        self.calls.add(1);
        if let Some(n) = self.native()? {
            return n.scan(range).await;
        }
        let rs = self.kv.scan(range).await?;
        Ok(rs
            .into_iter()
            .map(|(k, v, ver)| {
                self.observed.insert(k.clone(), ver);
                (k, v)
            })
            .collect())
    }

    /// `exist`: one count-only request (nothing observed, as etcd's client does).
    pub async fn exist(&mut self, prefix: &[u8]) -> KvResult<bool> {
        self.calls.add(1);
        if let Some(n) = self.native()? {
            return n.exist(prefix).await;
        }
        self.kv.exist(prefix).await
    }

    /// `set`: buffered; commits early when the backend caps buffered writes.
    pub async fn set(&mut self, key: &[u8], value: &[u8]) -> KvResult<()> {
        self.buffer.insert(key.to_vec(), Some(value.to_vec()));
        self.maybe_commit_early().await
    }

    /// `delete`: buffered.
    pub fn delete(&mut self, key: &[u8]) {
        self.buffer.insert(key.to_vec(), None);
    }

    /// `incrBy`: a get, then a set of the new value unless `delta` is 0. Returns the new value.
    pub async fn incr_by(&mut self, key: &[u8], delta: i64) -> KvResult<i64> {
        let old = self.get(key).await?;
        let new = parse_counter(old.as_deref()) + delta;
        if delta != 0 {
            self.set(key, &pack_counter(new)).await?;
        }
        Ok(new)
    }

    async fn maybe_commit_early(&mut self) -> KvResult<()> {
        if let Some(n) = self.kv.commit_every() {
            if self.buffer.len() >= n {
                // Hands over (and so empties) what was observed and buffered.
                self.send_commit(true).await?;
            }
        }
        Ok(())
    }

    async fn send_commit(&mut self, reopen: bool) -> KvResult<()> {
        // Handed over, not copied: after a commit the transaction starts afresh (or ends).
        let observed: Vec<(Vec<u8>, Version)> =
            std::mem::take(&mut self.observed).into_iter().collect();
        let writes: Vec<Write> = std::mem::take(&mut self.buffer).into_iter().collect();
        self.calls.add(1);
        if self.native.is_some() {
            // A native transaction commits once; an early commit starts a new one.
            let next = if reopen {
                self.calls.add(self.kv.begin_calls(self.simple));
                self.kv.begin_native(self.simple)
            } else {
                None
            };
            let n = std::mem::replace(&mut self.native, next).expect("checked");
            return n?.commit(&writes).await;
        }
        self.kv.commit(&observed, &writes).await
    }

    /// Whether anything is buffered.
    pub fn has_writes(&self) -> bool {
        !self.buffer.is_empty()
    }

    /// Commits the buffered writes (one request); a read-only transaction sends nothing.
    pub async fn commit(mut self) -> KvResult<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        self.send_commit(false).await
    }
}

/// Runs `$body` as one JuiceFS TKV transaction (`kvMeta.txn` → `client.txn`), holding the
/// client's transaction locks of the inodes given as `[ino, …]` (none when left out): a fresh
/// [`Txn`] named `$tx`, the body (an async block yielding `Result<T, TxErr>`), then the
/// commit; a conflict anywhere runs it all again, up to 50 tries with a random
/// 0..(i+1)² ms sleep, counting retries in `$sess.retries`. Evaluates to `crate::Result<T>`.
macro_rules! txn {
    ($sess:expr, |$tx:ident| $body:block) => {
        txn!($sess, [], |$tx| $body)
    };
    ($sess:expr, [$($ino:expr),*], |$tx:ident| $body:block) => {{
        // `txBatchLock` of the inodes the `pkg/meta/tkv.go` call site names.
        let _locked = $sess
            .base
            .tx_lock($crate::base::TxLock::Inodes(&[$($ino),*]))
            .await;
        let kv = $sess.kv.clone();
        let calls = $sess.calls.clone();
        let mut attempt: u32 = 0;
        // When the attempt in progress started: an attempt that conflicts is retry waste.
        let mut tried = ::std::time::Instant::now();
        loop {
            let sent = calls.get();
            let mut $tx = $crate::tkv::kv::Txn::new(kv.clone(), calls.clone()).on_try(attempt);
            let r: ::std::result::Result<_, $crate::tkv::kv::TxErr> = async { $body }.await;
            let r = match r {
                Ok(v) => $tx
                    .commit()
                    .await
                    .map(|_| v)
                    .map_err($crate::tkv::kv::TxErr::from),
                Err(e) => Err(e),
            };
            match r {
                Ok(v) => break Ok(v),
                Err($crate::tkv::kv::TxErr::Meta(e)) => break Err(e),
                Err($crate::tkv::kv::TxErr::Retry(msg)) => {
                    if let Err(e) = $crate::retry::after_conflict(&mut attempt, "tkv", &msg).await {
                        break Err(e);
                    }
                    $sess.retries += 1;
                    $sess.retry_waste_ns += $crate::retry::wasted_since(&mut tried);
                    $sess.retried_round_trips += calls.get() - sent;
                }
            }
        }
    }};
}

pub(crate) use txn;
