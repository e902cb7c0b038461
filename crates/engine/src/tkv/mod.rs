//! The TKV family (`pkg/meta/tkv.go`): JuiceFS's key encoding over a small transactional
//! KV interface ([`kv::KvBackend`]), with one implementation of every operation
//! ([`TkvSession`]) and backends that only move bytes: `memkv://` (in-process),
//! `etcd://`, `tikv://` and `fdb://`.
//!
//! Keys carry the driver's volume prefix (`pkg/meta/tkv_etcd.go`, `tkv_tikv.go`): etcd
//! uses the URL path with its leading `/`, then `0xFD`; TiKV the path without it, then
//! `0xFD`; memkv none. Every transaction runs as `kvMeta.txn` does — reads, buffered
//! writes, one commit, retried on conflict up to 50 times — and each KV call is counted
//! (TiKV: the PD timestamp too), so [`SessionStats::round_trips`](crate::SessionStats)
//! counts each read call and each commit that writes, as `pkg/meta/tkv.go` sends them.

#[cfg(feature = "etcd")]
pub mod etcd;
#[cfg(feature = "fdb")]
pub mod fdb;
mod fill;
pub mod kv;
pub mod mem;
#[cfg(any(feature = "etcd", feature = "tikv"))]
mod per_runtime;
mod reads;
mod registered;
mod rename;
mod resize;
mod session;
#[cfg(feature = "tikv")]
pub mod tikv;

pub use session::TkvSession;

use crate::base::{BaseMeta, SessionRegistry};
use crate::meta::{EngineKind, ServerInfo, SessionOptions, VolumeState};
use crate::rules::{format_dir_attr, init_time};
use crate::{Engine, Meta, MetaError, MetaUrl, Result, Scheme};
use async_trait::async_trait;
use kv::{CallCounter, KeyRange, KvBackend, KvError, TxErr, Txn};
use metabench_schema::tkv::TkvKeys;
use metabench_schema::{Format, ROOT_INODE, TRASH_INODE};
use std::sync::Arc;
use std::time::Duration;

/// Where metabench's TKV sessions knowingly differ from a JuiceFS client.
pub fn fidelity_notes() -> &'static [&'static str] {
    &[
        "Sessions: under `gobench` none is registered (sid 0, `NewSession(false)`); under \
         `mount` each client registers one (`SE`/`SI` keys, refreshed every 12 s by the \
         background work, removed at the end of the run). The heartbeat's other reads (the \
         setting, two counters, quotas) are not made. Unlinked files are never kept open (no \
         `SS` keys); resolve is ENOTSUP, as in JuiceFS.",
        "The process-local inode locks JuiceFS takes around a transaction (`txLock`) are not \
         taken: sessions of one metabench process conflict in the store as separate clients would.",
        "Volumes with TrashDays > 0: deletes are done as with TrashDays 0 (removed for good, not \
         moved to `.trash`).",
        "Quotas are neither loaded nor enforced; the ancestor walk of the quota check (a GetAttr \
         per uncached ancestor when DirStats is on) is reproduced. Capacity and inode limits are \
         not enforced.",
        "POSIX ACLs are not evaluated; RENAME_EXCHANGE is answered with ENOTSUP; changelog \
         (`XLOG`) records are never written (volumes with ChangeLog are refused).",
        "Compaction is never started.",
        crate::meta::BACKGROUND_WORK_NOTE,
        "Background work sends the same transactions; slice refcount keys left below zero are \
         deleted, as after deleting the objects — metabench deletes no objects.",
        "Inode batches are prefetched in the background with uncounted calls, as JuiceFS does off \
         the timed path.",
        "With `client_cache`, read and readlink answer from the session's caches; without it every \
         call reaches the store.",
        "etcd and TiKV: each client thread has a client of its own (its gRPC connections and, \
         on TiKV, its PD timestamp stream), made on it, which that thread's sessions share (a \
         JuiceFS process has one etcd or TiKV client for all of its sessions); so a call never \
         waits for another thread to send or receive it.",
        "TiKV: commits try 1PC as JuiceFS does, but without async commit (tikv-client 0.4's sets \
         no max_commit_ts); only a transaction spanning regions differs (2PC instead of async \
         commit). A scan longer than 10240 keys is several requests but counts as one call.",
        "TiKV stand-in (PD + unistore): proves protocol, schema and round trips, not TiKV's \
         speed. Commits there use 2PC, because unistore's 1PC is not snapshot-isolated (it \
         can lose an update under racing writers). Runs against it are labelled \
         `tikv-standin`; runs against a store PD does not list, `tikv-unverified`.",
        "FoundationDB (feature `fdb`, type-checked only, never run against a cluster): `incrBy` is a \
         get + set instead of an atomic add + get, a hole appended by truncate or fallocate \
         is a get + set instead of a blind `AppendIfFits`, conflicts are retried by metabench's loop \
         ((i+1)² ms random backoff) instead of the binding's `on_error`, and point reads use a \
         normal transaction (1.4.x) rather than HEAD's snapshot `ReadTransact`.",
    ]
}

/// A transactional KV store holding, or about to hold, a JuiceFS volume.
pub struct TkvEngine {
    url: MetaUrl,
    kind: EngineKind,
    kv: Arc<dyn KvBackend>,
    keys: TkvKeys,
    /// The sessions registered here and not closed.
    sessions: SessionRegistry,
}

/// Opens the TKV engine a URL names.
pub async fn open(url: &MetaUrl) -> Result<Arc<dyn Engine>> {
    Ok(Arc::new(TkvEngine::open(url).await?))
}

fn kv_err(e: KvError) -> MetaError {
    MetaError::Engine(e.to_string())
}

impl TkvEngine {
    /// A session loading the format (`NewClient` → `Load`: `S{get setting}`): a new
    /// client, or one more worker of `client`.
    async fn open_session(
        &self,
        opts: &SessionOptions,
        client: Option<&crate::ClientState>,
    ) -> Result<TkvSession> {
        let calls = CallCounter::default();
        let mut tx = Txn::simple(self.kv.clone(), calls.clone());
        let setting = tx.get(&self.keys.setting()).await.map_err(kv_err)?;
        let format = crate::meta::loaded_format(setting, &self.url)?;
        let base = match client {
            Some(c) => c.add_worker(),
            None => crate::ClientState::new(format.dir_stats, opts),
        };
        Ok(TkvSession::new(
            self.kv.clone(),
            calls,
            self.keys.clone(),
            format,
            base,
        ))
    }

    /// Connects to the store (memkv: finds or creates the named in-process store).
    pub async fn open(url: &MetaUrl) -> Result<Self> {
        let (kind, kv, keys): (_, Arc<dyn KvBackend>, _) = match url.scheme() {
            Scheme::Memkv => {
                let mut store = mem::MemKv::named(url.database());
                let ms = |key: &str| -> Result<Option<Duration>> {
                    url.param(key)
                        .map(|v| {
                            v.parse().map(Duration::from_millis).map_err(|_| {
                                MetaError::BadUrl(format!(
                                    "memkv: {key} must be a whole number of milliseconds, not {v:?}"
                                ))
                            })
                        })
                        .transpose()
                };
                if let Some(length) = ms("stall_ms")? {
                    let after = ms("stall_after_ms")?.unwrap_or_default();
                    store = store.with_stall_once(after, length);
                }
                (EngineKind::Memkv, Arc::new(store), TkvKeys::default())
            }
            #[cfg(feature = "etcd")]
            Scheme::Etcd => {
                let (kv, prefix) = etcd::EtcdKv::connect(url).await?;
                (EngineKind::Etcd, Arc::new(kv), TkvKeys::new(prefix))
            }
            #[cfg(feature = "tikv")]
            Scheme::Tikv => {
                let (kv, prefix) = tikv::TikvKv::connect(url).await?;
                (EngineKind::Tikv, Arc::new(kv), TkvKeys::new(prefix))
            }
            #[cfg(feature = "fdb")]
            Scheme::Fdb => {
                let (kv, prefix) = fdb::FdbKv::connect(url).await?;
                (EngineKind::Fdb, Arc::new(kv), TkvKeys::new(prefix))
            }
            other => {
                return Err(MetaError::BadUrl(format!(
                    "'{}' is not a TKV engine in this build",
                    other.as_str()
                )))
            }
        };
        Ok(Self::with_backend(url.clone(), kind, kv, keys))
    }

    /// An engine over any backend (tests wrap backends this way).
    pub fn with_backend(
        url: MetaUrl,
        kind: EngineKind,
        kv: Arc<dyn KvBackend>,
        keys: TkvKeys,
    ) -> Self {
        Self {
            url,
            kind,
            kv,
            keys,
            sessions: SessionRegistry::default(),
        }
    }

    /// The backend (for tests and administration).
    pub fn backend(&self) -> &Arc<dyn KvBackend> {
        &self.kv
    }

    /// The key builder with this volume's prefix.
    pub fn keys(&self) -> &TkvKeys {
        &self.keys
    }

    fn range(&self) -> (Vec<u8>, Vec<u8>) {
        let p = self.keys.prefix().to_vec();
        let end = if p.is_empty() {
            Vec::new()
        } else {
            TkvKeys::prefix_end(&p)
        };
        (p, end)
    }

    async fn load_setting(&self) -> Result<Option<Vec<u8>>> {
        Ok(self
            .kv
            .get(&self.keys.setting())
            .await
            .map_err(kv_err)?
            .map(|(v, _)| v))
    }
}

#[async_trait]
impl Engine for TkvEngine {
    fn kind(&self) -> EngineKind {
        self.kind
    }

    fn url(&self) -> &MetaUrl {
        &self.url
    }

    async fn probe(&self) -> Result<VolumeState> {
        let (begin, end) = self.range();
        let any = self
            .kv
            .scan(KeyRange::new(&begin, &end).limit(1).keys_only())
            .await
            .map_err(kv_err)?;
        if any.is_empty() {
            return Ok(VolumeState::Empty);
        }
        match self.load_setting().await? {
            Some(body) => match Format::from_json(&body) {
                Ok(f) => Ok(VolumeState::Volume(Box::new(f))),
                Err(e) => Ok(VolumeState::Foreign(format!(
                    "keys under the prefix and a `setting` key that is not a JuiceFS format ({e})"
                ))),
            },
            None => Ok(VolumeState::Foreign(
                "keys under the prefix and no JuiceFS setting".into(),
            )),
        }
    }

    /// `doInit` on an empty store: one transaction that sets the trash inode (when
    /// TrashDays > 0 and absent), the setting, the root, and `CnextInode`/`CnextChunk`
    /// through `incrBy` (2 and 1).
    async fn format(&self, format: &Format) -> Result<()> {
        crate::meta::check_new_format(format)?;
        if !matches!(self.probe().await?, VolumeState::Empty) {
            return Err(MetaError::Engine(format!(
                "refusing to format {}: keys exist under its prefix",
                self.url.redacted()
            )));
        }
        let now = init_time();
        let keys = &self.keys;
        let mut tx = Txn::new(self.kv.clone(), CallCounter::default());
        let r: std::result::Result<(), TxErr> = async {
            if format.trash_days > 0 && tx.get(&keys.inode(TRASH_INODE)).await?.is_none() {
                tx.set(
                    &keys.inode(TRASH_INODE),
                    &format_dir_attr(TRASH_INODE, now).encode(),
                )
                .await?;
            }
            tx.set(&keys.setting(), format.to_json().as_bytes()).await?;
            tx.set(
                &keys.inode(ROOT_INODE),
                &format_dir_attr(ROOT_INODE, now).encode(),
            )
            .await?;
            tx.incr_by(&keys.counter("nextInode"), 2).await?;
            tx.incr_by(&keys.counter("nextChunk"), 1).await?;
            Ok(())
        }
        .await;
        r?;
        tx.commit().await.map_err(kv_err)
    }

    /// Deletes every key under the volume prefix (memkv: the whole named store).
    async fn destroy(&self, uuid: &str) -> Result<()> {
        crate::meta::check_destroy(self, uuid).await?;
        self.kv
            .delete_prefix(self.keys.prefix())
            .await
            .map_err(kv_err)
    }

    async fn bulk_loader(&self) -> Result<Box<dyn crate::fill::BulkLoad>> {
        Ok(Box::new(fill::TkvBulk {
            s: self.open_session(&SessionOptions::default(), None).await?,
            kv: self.kv.clone(),
            keys: self.keys.clone(),
            stray: None,
        }))
    }

    async fn session(&self, opts: &SessionOptions) -> Result<Box<dyn Meta>> {
        let mut s = self.open_session(opts, None).await?;
        if opts.register {
            s.register(&self.sessions).await?;
        }
        Ok(Box::new(s))
    }

    /// One more worker of `client`: its own call counter on the engine's client (which,
    /// as in JuiceFS, every session of a process shares).
    async fn worker(
        &self,
        opts: &SessionOptions,
        client: &crate::ClientState,
    ) -> Result<Box<dyn Meta>> {
        Ok(Box::new(self.open_session(opts, Some(client)).await?))
    }

    fn sessions(&self) -> &SessionRegistry {
        &self.sessions
    }

    fn fidelity_notes(&self) -> &'static [&'static str] {
        fidelity_notes()
    }

    async fn server_info(&self) -> Result<ServerInfo> {
        self.kv.server_info().await.map_err(kv_err)
    }

    async fn telemetry(&self) -> Result<crate::Telemetry> {
        self.kv.telemetry().await.map_err(kv_err)
    }

    async fn footprint(&self) -> std::result::Result<crate::Footprint, String> {
        self.kv.footprint().await
    }
}
