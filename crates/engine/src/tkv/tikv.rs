//! `tikv://pd1[:2379][,pd2…]/name`: TiKV through tikv-client, shaped as JuiceFS's
//! `tikvTxn` (`tkv_tikv.go`). A `txn` is an optimistic transaction whose begin fetches a PD
//! timestamp; `get` is a KvGet, `gets` one BatchGet, `scan` Scan requests of up to 10240
//! keys, `exist` a one-key Scan; writes stay in the client's buffer and the commit tries
//! 1PC (see [`options`] on async commit). A `simpleTxn` is a read-only snapshot (see
//! [`snapshot`] on its timestamp). A write conflict or a missing lock
//! (`TxnLockNotFound`) is reported as a conflict, so the session retries, as
//! `tikvClient.shouldRetry` does. Keys are prefixed with the URL path (leading `/`
//! trimmed) and `0xFD`.

use super::kv::{
    via_native, KeyRange, KvBackend, KvError, KvResult, NativeTxn, Version, Versioned, Write,
};
use super::per_runtime::PerRuntime;
use crate::{MetaError, MetaUrl, Result, ServerInfo, StandIn};
use async_trait::async_trait;
use metabench_schema::tkv::TkvKeys;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tikv_client::{
    BoundRange, CheckLevel, Key, KvPair, Snapshot, Timestamp, TimestampExt, Transaction,
    TransactionClient, TransactionOptions,
};

/// Keys per Scan request (`tikvTxn.iter`: `SetScanBatchSize(10240)`).
const SCAN_BATCH: usize = 10240;

/// Keys deleted per transaction when a volume is removed (JuiceFS's `reset` uses
/// `DeleteRange`): small transactions, each well inside a raft entry.
const DELETE_BATCH: usize = 128;

/// How long connecting to PD may take before the URL is reported unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A TiKV cluster (or a TiKV-compatible store) reached through its PD endpoints.
pub struct TikvKv {
    clients: Arc<Clients>,
    /// Whether commits try 1PC (see [`one_pc_is_safe`]).
    one_pc: bool,
}

/// The cluster's clients: one per runtime that calls, connected on that runtime, so that
/// its gRPC channels and PD timestamp stream are driven by the calling thread. A client
/// made on another runtime would send every request through that runtime's threads and
/// back: a hand-off per call that a JuiceFS process, whose one client serves its own
/// goroutines, does not make. Sessions of one client thread share its client, as a JuiceFS
/// process's sessions share `tikvClient`.
struct Clients {
    endpoints: Vec<String>,
    config: tikv_client::Config,
    per_runtime: PerRuntime<Arc<TransactionClient>>,
}

impl Clients {
    /// Connects to PD, bounded by [`CONNECT_TIMEOUT`].
    async fn connect(
        endpoints: &[String],
        config: &tikv_client::Config,
    ) -> std::result::Result<TransactionClient, String> {
        tokio::time::timeout(
            CONNECT_TIMEOUT,
            TransactionClient::new_with_config(endpoints.to_vec(), config.clone()),
        )
        .await
        .map_err(|_| format!("no PD answered within {CONNECT_TIMEOUT:?}"))?
        .map_err(|e| connect_reason(&e))
    }

    /// The calling runtime's client, connected on it the first time it asks.
    async fn client(&self) -> KvResult<Arc<TransactionClient>> {
        self.per_runtime
            .get(|| async {
                Self::connect(&self.endpoints, &self.config)
                    .await
                    .map(Arc::new)
                    .map_err(|e| KvError::Other(format!("tikv: {e}")))
            })
            .await
    }
}

fn other(e: tikv_client::Error) -> KvError {
    KvError::Other(format!("tikv: {e}"))
}

/// Whether JuiceFS would retry the error: a write conflict, `TxnLockNotFound`, or a lock
/// whose primary is not found yet (`TxnNotFound`), found anywhere in the (possibly
/// nested) error.
fn is_retryable(e: &tikv_client::Error) -> bool {
    use tikv_client::Error as E;
    match e {
        E::KeyError(k) => k.conflict.is_some() || k.txn_not_found.is_some(),
        // A lock whose primary was never written (a failed prewrite's): the lock resolver
        // gives up before the lock's TTL lets it roll the primary back; a retry later
        // succeeds, as client-go retries it.
        E::TxnNotFound(_) => true,
        E::ExtractedErrors(v) | E::MultipleKeyErrors(v) => v.iter().any(is_retryable),
        E::UndeterminedError(inner) => is_retryable(inner),
        other => {
            let text = format!("{other:?}");
            text.contains("WriteConflict")
                || text.contains("write conflict")
                || text.contains("TxnLockNotFound")
        }
    }
}

fn classify(e: tikv_client::Error) -> KvError {
    if is_retryable(&e) {
        KvError::Conflict(format!("tikv: {e}"))
    } else {
        other(e)
    }
}

/// Transaction options: optimistic, 1PC as JuiceFS sets it (`SetEnable1PC(true)`; a
/// transaction within one region commits in its prewrite) when `one_pc`, no heartbeat for
/// these short transactions. JuiceFS also sets `SetEnableAsyncCommit(true)`, which only
/// matters when 1PC cannot apply; tikv-client 0.4's async commit sets no `max_commit_ts`
/// and trusts a zero `min_commit_ts`, so such transactions use plain 2PC here instead.
fn options(simple: bool, one_pc: bool) -> TransactionOptions {
    let o = TransactionOptions::new_optimistic().drop_check(CheckLevel::None);
    if simple {
        return o.read_only();
    }
    let o = o.heartbeat_option(tikv_client::transaction::HeartbeatOption::NoHeartbeat);
    if one_pc {
        o.try_one_pc()
    } else {
        o
    }
}

/// Whether 1PC keeps snapshot isolation on these stores. TiKV's 1PC takes its commit
/// timestamp above every read timestamp it has served (the concurrency manager's
/// `max_ts`, with in-memory locks while the write applies). unistore's 1PC takes a fresh PD
/// timestamp and writes without an in-memory lock, so a transaction that begins after that
/// timestamp but reads before the write lands misses it and commits over it (a lost update,
/// seen as a directory's nlink falling behind under racing mkdirs). On a stand-in, commits
/// therefore use plain 2PC, which is isolated there; the KV calls metabench counts are the
/// same either way. When PD cannot be asked, commits try 1PC as on TiKV, and the run is
/// labelled unverified ([`describe_stores`]).
fn one_pc_is_safe(stores: &std::result::Result<Vec<StoreInfo>, String>) -> bool {
    !matches!(stores, Ok(s) if s.iter().any(|s| s.standin))
}

impl TikvKv {
    /// Connects to the URL's PD endpoints and returns the backend with its key prefix.
    pub async fn connect(url: &MetaUrl) -> Result<(Self, Vec<u8>)> {
        let endpoints = url.host_ports();
        let unreachable = |reason: String| MetaError::Connect {
            url: url.redacted(),
            reason,
        };
        let config = config_for(url)?.with_timeout(CONNECT_TIMEOUT);
        let client = Clients::connect(&endpoints, &config)
            .await
            .map_err(unreachable)?;
        let one_pc = one_pc_is_safe(&pd_stores(&endpoints).await);
        let mut prefix = url.database().trim_start_matches('/').as_bytes().to_vec();
        prefix.push(0xFD);
        Ok((
            Self {
                clients: Arc::new(Clients {
                    endpoints,
                    config,
                    per_runtime: PerRuntime::new(Arc::new(client)),
                }),
                one_pc,
            },
            prefix,
        ))
    }
}

/// The client configuration the URL's options ask for, as `newTikvClient` reads them:
/// `ca`, `cert` and `key` (all three) for TLS; `gc-interval` only steers JuiceFS's
/// background GC and is accepted. Options metabench cannot honour are refused, so a run
/// never silently differs from the client it stands for.
fn config_for(url: &MetaUrl) -> Result<tikv_client::Config> {
    let mut config = tikv_client::Config::default();
    for (k, _) in url.query() {
        if !matches!(k.as_str(), "ca" | "cert" | "key" | "gc-interval") {
            return Err(MetaError::BadUrl(format!(
                "the tikv URL option '{k}' is not supported by metabench (supported: ca, cert, key, gc-interval)"
            )));
        }
    }
    match (url.param("ca"), url.param("cert"), url.param("key")) {
        (None, None, None) => {}
        (Some(ca), Some(cert), Some(key)) => config = config.with_security(ca, cert, key),
        _ => {
            return Err(MetaError::BadUrl(
                "tikv TLS needs all of ca=, cert= and key=".into(),
            ))
        }
    }
    Ok(config)
}

/// Why connecting failed, in words (tikv-client's own message names its source file).
fn connect_reason(e: &tikv_client::Error) -> String {
    let text = e.to_string();
    if text.contains("failed to respond") {
        return "no PD endpoint answered".to_owned();
    }
    // "[src/…/file.rs:123]: message" → "message"
    let text = match text.split_once("]: ") {
        Some((head, rest)) if head.starts_with('[') => rest.to_owned(),
        _ => text,
    };
    text.lines().next().unwrap_or("").to_owned()
}

/// Either side of a JuiceFS TiKV transaction, begun on first use.
enum Reader {
    /// `simpleTxn`: a read-only snapshot.
    Simple(Option<Snapshot>),
    /// `txn`: an optimistic transaction.
    Txn(Option<Transaction>),
}

/// One JuiceFS transaction on TiKV.
struct TikvTxn {
    clients: Arc<Clients>,
    one_pc: bool,
    reader: Reader,
}

/// Runs a call that both a [`Snapshot`] and a [`Transaction`] answer, beginning the
/// transaction first if this is its first request; `$post` maps the call's output.
macro_rules! on_reader {
    ($self:ident, |$r:ident| $call:expr) => {
        on_reader!($self, |$r| $call, |x| x)
    };
    ($self:ident, |$r:ident| $call:expr, $post:expr) => {{
        match &mut $self.reader {
            Reader::Simple(slot) => {
                if slot.is_none() {
                    *slot = Some(snapshot(&*$self.clients.client().await?));
                }
                let $r = slot.as_mut().expect("begun above");
                $call.await.map($post)
            }
            Reader::Txn(slot) => {
                if slot.is_none() {
                    *slot = Some(begin(&*$self.clients.client().await?, $self.one_pc).await?);
                }
                let $r = slot.as_mut().expect("begun above");
                $call.await.map($post)
            }
        }
    }};
}

/// `KVStore.Begin()`: an optimistic transaction at a fresh PD timestamp.
async fn begin(client: &TransactionClient, one_pc: bool) -> KvResult<Transaction> {
    client
        .begin_with_options(options(false, one_pc))
        .await
        .map_err(other)
}

/// A `simpleTxn` snapshot: reads at `u64::MAX` (the latest committed data, no PD request),
/// as JuiceFS's `Begin(WithStartTS(math.MaxUint64))` does. Upstream tikv-client cannot
/// express that timestamp; metabench builds a vendored copy that can
/// (`vendor/tikv-client/README.metabench.md`).
fn snapshot(client: &TransactionClient) -> Snapshot {
    client.snapshot(Timestamp::from_version(u64::MAX), options(true, false))
}

impl TikvKv {
    /// A transaction (`simple`: a snapshot) begun on first use.
    fn reader(&self, simple: bool) -> TikvTxn {
        TikvTxn {
            clients: self.clients.clone(),
            one_pc: self.one_pc,
            reader: if simple {
                Reader::Simple(None)
            } else {
                Reader::Txn(None)
            },
        }
    }
}

impl TikvTxn {
    /// One Scan request of at most `limit` keys in `[begin, end)` (an empty `end`: to the
    /// end of the keyspace).
    async fn scan_once(
        &mut self,
        begin: Vec<u8>,
        end: &[u8],
        limit: u32,
        keys_only: bool,
    ) -> KvResult<Vec<(Vec<u8>, Vec<u8>)>> {
        let range: BoundRange = if end.is_empty() {
            (Key::from(begin)..).into()
        } else {
            (Key::from(begin)..Key::from(end.to_vec())).into()
        };
        if keys_only {
            let keys: Vec<Key> = on_reader!(
                self,
                |r| r.scan_keys(range.clone(), limit),
                Iterator::collect
            )
            .map_err(classify)?;
            Ok(keys.into_iter().map(|k| (k.into(), Vec::new())).collect())
        } else {
            let pairs: Vec<KvPair> =
                on_reader!(self, |r| r.scan(range.clone(), limit), Iterator::collect)
                    .map_err(classify)?;
            Ok(pairs.into_iter().map(|p| (p.0.into(), p.1)).collect())
        }
    }
}

#[async_trait]
impl NativeTxn for TikvTxn {
    /// A KvGet. An empty value reads as absent, as in client-go (TiKV stores none; some
    /// compatible stores answer a missing key with one).
    async fn get(&mut self, key: &[u8]) -> KvResult<Option<Vec<u8>>> {
        Ok(on_reader!(self, |r| r.get(key.to_vec()))
            .map_err(classify)?
            .filter(|v| !v.is_empty()))
    }

    /// One BatchGet; missing keys (and empty values) come back as `None`.
    async fn batch_get(&mut self, keys: &[Vec<u8>]) -> KvResult<Vec<Option<Vec<u8>>>> {
        let pairs: Vec<KvPair> =
            on_reader!(self, |r| r.batch_get(keys.to_vec()), Iterator::collect)
                .map_err(classify)?;
        let found: HashMap<Vec<u8>, Vec<u8>> = pairs
            .into_iter()
            .filter(|p| !p.1.is_empty())
            .map(|p| (Vec::<u8>::from(p.0), p.1))
            .collect();
        // A key may be asked for twice (rename within one directory).
        Ok(keys.iter().map(|k| found.get(k).cloned()).collect())
    }

    /// Scan requests of up to 10240 keys until the range or `limit` is exhausted.
    async fn scan(&mut self, range: KeyRange<'_>) -> KvResult<Vec<(Vec<u8>, Vec<u8>)>> {
        let (begin, end) = (range.begin, range.end);
        let (limit, keys_only) = (range.limit, range.keys_only);
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut from = begin.to_vec();
        loop {
            let want = match limit {
                0 => SCAN_BATCH,
                n => (n - out.len()).min(SCAN_BATCH),
            };
            let page = self
                .scan_once(from.clone(), end, want as u32, keys_only)
                .await?;
            let full = page.len() == want;
            if let Some((last, _)) = page.last() {
                from = last.clone();
                from.push(0);
            }
            out.extend(page);
            if !full || (limit > 0 && out.len() >= limit) {
                return Ok(out);
            }
        }
    }

    async fn exist(&mut self, prefix: &[u8]) -> KvResult<bool> {
        Ok(!self
            .scan_once(prefix.to_vec(), &TkvKeys::prefix_end(prefix), 1, true)
            .await?
            .is_empty())
    }

    async fn commit(self: Box<Self>, writes: &[Write]) -> KvResult<()> {
        let mut tx = match self.reader {
            Reader::Simple(_) => {
                return Err(KvError::Other(
                    "tikv: a simpleTxn must stay read-only".into(),
                ))
            }
            Reader::Txn(Some(tx)) => tx,
            Reader::Txn(None) => begin(&*self.clients.client().await?, self.one_pc).await?,
        };
        for (k, v) in writes {
            match v {
                Some(v) => tx.put(k.clone(), v.clone()).await.map_err(other)?,
                None => tx.delete(k.clone()).await.map_err(other)?,
            }
        }
        tx.commit().await.map(|_| ()).map_err(classify)
    }
}

#[async_trait]
impl KvBackend for TikvKv {
    fn name(&self) -> &'static str {
        "tikv"
    }

    fn begin_native(&self, simple: bool) -> Option<KvResult<Box<dyn NativeTxn>>> {
        Some(Ok(Box::new(self.reader(simple))))
    }

    /// A PD timestamp for a `txn`; none for a `simpleTxn` (see [`snapshot`]).
    fn begin_calls(&self, simple: bool) -> u64 {
        u64::from(!simple)
    }

    // The versioned calls serve administration (probe, format checks) outside sessions:
    // snapshot reads of the latest data.
    async fn get(&self, key: &[u8]) -> KvResult<Versioned> {
        via_native::get(Box::new(self.reader(true)), key).await
    }

    async fn batch_get(&self, keys: &[Vec<u8>]) -> KvResult<Vec<Versioned>> {
        via_native::batch_get(Box::new(self.reader(true)), keys).await
    }

    async fn scan(&self, range: KeyRange<'_>) -> KvResult<Vec<(Vec<u8>, Vec<u8>, Version)>> {
        via_native::scan(Box::new(self.reader(true)), range).await
    }

    async fn exist(&self, prefix: &[u8]) -> KvResult<bool> {
        let mut t = self.reader(true);
        NativeTxn::exist(&mut t, prefix).await
    }

    async fn commit(&self, _observed: &[(Vec<u8>, Version)], writes: &[Write]) -> KvResult<()> {
        Box::new(self.reader(false)).commit(writes).await
    }

    /// Deletes the prefix in transactions of up to [`DELETE_BATCH`] keys (JuiceFS's `reset`
    /// uses `DeleteRange`, which a TiKV-compatible store need not offer). A batch that
    /// conflicts (or meets a lock whose primary is not found yet) is retried as a
    /// transaction is ([`crate::retry::after_conflict`]).
    async fn delete_prefix(&self, prefix: &[u8]) -> KvResult<()> {
        let end = TkvKeys::prefix_end(prefix);
        let mut attempt = 0;
        loop {
            let batch = async {
                let mut t = self.reader(false);
                let keys = NativeTxn::scan(
                    &mut t,
                    KeyRange::new(prefix, &end).limit(DELETE_BATCH).keys_only(),
                )
                .await?;
                if keys.is_empty() {
                    return Ok(true);
                }
                let writes: Vec<Write> = keys.into_iter().map(|(k, _)| (k, None)).collect();
                Box::new(t).commit(&writes).await.map(|()| false)
            };
            match batch.await {
                Ok(true) => return Ok(()),
                Ok(false) => attempt = 0,
                Err(KvError::Conflict(msg)) => {
                    crate::retry::after_conflict(&mut attempt, "tikv", &msg)
                        .await
                        .map_err(|e| KvError::Other(format!("tikv: {e}: {msg}")))?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// PD's view of the stores: their versions, and whether any is a stand-in.
    async fn server_info(&self) -> KvResult<ServerInfo> {
        let mut settings = BTreeMap::new();
        let (version, stores, standin) = describe_stores(pd_stores(&self.clients.endpoints).await);
        settings.insert("stores".to_owned(), stores);
        let commit = if self.one_pc {
            "1PC within a region, else 2PC (as JuiceFS)"
        } else {
            "2PC: the stand-in's 1PC is not snapshot-isolated"
        };
        settings.insert("commit".to_owned(), commit.to_owned());
        Ok(ServerInfo {
            version,
            settings,
            standin,
        })
    }
}

/// The server's version, its `stores` entry and whether it is (or may be) a stand-in, from
/// PD's stores. When PD cannot list them, the store may be unistore as well as TiKV: the
/// run is labelled unverified rather than taken for TiKV.
fn describe_stores(
    stores: std::result::Result<Vec<StoreInfo>, String>,
) -> (String, String, Option<StandIn>) {
    match stores {
        Ok(stores) => {
            let versions: Vec<&str> = stores.iter().map(|s| s.version.as_str()).collect();
            let count = stores.len().to_string();
            if stores.iter().any(|s| s.standin) {
                let version = format!("unistore {} (TiKV stand-in)", versions.join(","));
                (
                    version,
                    count,
                    Some(StandIn::Known(STANDIN_LABEL.to_owned())),
                )
            } else {
                (format!("tikv {}", versions.join(",")), count, None)
            }
        }
        Err(e) => (
            "tikv (store version unknown)".to_owned(),
            format!("unknown ({e})"),
            Some(StandIn::Unverified(format!(
                "PD did not list its stores ({e}): TiKV or a stand-in (unistore), not told apart"
            ))),
        ),
    }
}

/// How results against the stand-in store are labelled (they prove protocol and schema,
/// not TiKV's speed).
pub const STANDIN_LABEL: &str =
    "TiKV-compatible stand-in (unistore), not TiKV: proves protocol and schema, not TiKV's speed";

/// A store as PD describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreInfo {
    /// The version the store registered with.
    pub version: String,
    /// Whether the store is not a real TiKV: it registered no git hash (real TiKV always
    /// does), as unistore does (`3.0.0-bata.1`).
    pub standin: bool,
}

/// Parses PD's `GET /pd/api/v1/stores` answer.
pub fn parse_pd_stores(body: &[u8]) -> std::result::Result<Vec<StoreInfo>, String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("PD stores answer: {e}"))?;
    let stores = v
        .get("stores")
        .and_then(|s| s.as_array())
        .ok_or("PD stores answer has no `stores`")?;
    Ok(stores
        .iter()
        .filter_map(|s| s.get("store"))
        .map(|s| {
            let field = |k: &str| s.get(k).and_then(|x| x.as_str()).unwrap_or("").to_owned();
            let version = field("version");
            let standin = field("git_hash").is_empty() || version == "3.0.0-bata.1";
            StoreInfo { version, standin }
        })
        .collect())
}

/// Asks the first PD that answers for its stores (PD's HTTP API shares the client port).
pub async fn pd_stores(endpoints: &[String]) -> std::result::Result<Vec<StoreInfo>, String> {
    use http_body_util::{BodyExt, Empty};
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    let client: Client<_, Empty<bytes::Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let mut last = String::from("no PD endpoint");
    for ep in endpoints {
        let uri = match format!("http://{ep}/pd/api/v1/stores").parse() {
            Ok(u) => u,
            Err(e) => {
                last = format!("{ep}: {e}");
                continue;
            }
        };
        let answer = tokio::time::timeout(CONNECT_TIMEOUT, async {
            let resp = client.get(uri).await.map_err(|e| e.to_string())?;
            if !resp.status().is_success() {
                return Err(format!("HTTP {}", resp.status()));
            }
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| e.to_string())?;
            parse_pd_stores(&body.to_bytes())
        })
        .await;
        match answer {
            Ok(Ok(stores)) => return Ok(stores),
            Ok(Err(e)) => last = format!("{ep}: {e}"),
            Err(_) => last = format!("{ep}: no answer within {CONNECT_TIMEOUT:?}"),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_options_are_honoured_or_refused() {
        let cfg = |u: &str| config_for(&MetaUrl::parse(u).unwrap());
        assert!(cfg("tikv://pd:2379/jfs").is_ok());
        assert!(cfg("tikv://pd:2379/jfs?gc-interval=2h").is_ok());
        assert!(cfg("tikv://pd/jfs?ca=/c&cert=/t&key=/k").is_ok());
        let e = cfg("tikv://pd/jfs?ca=/c").unwrap_err().to_string();
        assert!(e.contains("ca=, cert= and key="), "{e}");
        let e = cfg("tikv://pd/jfs?verify-cn=a").unwrap_err().to_string();
        assert!(e.contains("'verify-cn' is not supported"), "{e}");
    }

    #[test]
    fn stores_pd_cannot_list_are_labelled_unverified() {
        let (version, stores, standin) = describe_stores(Err("connection refused".into()));
        assert_eq!(version, "tikv (store version unknown)");
        assert_eq!(stores, "unknown (connection refused)");
        let Some(StandIn::Unverified(why)) = standin else {
            panic!("{standin:?}");
        };
        assert!(why.contains("connection refused"), "{why}");
        let real = StoreInfo {
            version: "7.5.0".into(),
            standin: false,
        };
        assert_eq!(
            describe_stores(Ok(vec![real.clone()])),
            ("tikv 7.5.0".into(), "1".into(), None)
        );
        let unistore = StoreInfo {
            version: "3.0.0-bata.1".into(),
            standin: true,
        };
        let (version, _, standin) = describe_stores(Ok(vec![real, unistore]));
        assert_eq!(version, "unistore 7.5.0,3.0.0-bata.1 (TiKV stand-in)");
        assert!(matches!(standin, Some(StandIn::Known(_))));
    }

    #[test]
    fn unistore_is_labelled_a_standin() {
        let body = br#"{"count":1,"stores":[{"store":{"id":1,"address":"127.0.0.1:12581",
            "version":"3.0.0-bata.1","state_name":"Down"},"status":{}}]}"#;
        let s = parse_pd_stores(body).unwrap();
        assert_eq!(
            s,
            vec![StoreInfo {
                version: "3.0.0-bata.1".into(),
                standin: true
            }]
        );
    }

    #[test]
    fn real_tikv_is_not_a_standin() {
        let body = br#"{"count":1,"stores":[{"store":{"id":1,"version":"7.5.1",
            "git_hash":"7d0f3b4a","state_name":"Up"}}]}"#;
        assert!(!parse_pd_stores(body).unwrap()[0].standin);
        assert!(parse_pd_stores(b"{}").is_err());
        assert!(parse_pd_stores(b"<html>").is_err());
    }

    #[test]
    fn one_pc_only_where_it_is_isolated() {
        let store = |standin| StoreInfo {
            version: String::new(),
            standin,
        };
        assert!(one_pc_is_safe(&Ok(vec![store(false)])));
        assert!(!one_pc_is_safe(&Ok(vec![store(false), store(true)])));
        assert!(one_pc_is_safe(&Err("PD unreachable over HTTP".into())));
    }

    /// The vendored tikv-client's first change: `u64::MAX` survives as a read timestamp.
    #[test]
    fn point_reads_can_use_the_latest_timestamp() {
        assert_eq!(Timestamp::from_version(u64::MAX).version(), u64::MAX);
        let ts = Timestamp::from_version(449_000_000_000_000_123);
        assert_eq!(ts.version(), 449_000_000_000_000_123);
    }

    #[test]
    fn write_conflicts_are_retried() {
        let mut k = tikv_client::ProtoKeyError::default();
        assert!(!is_retryable(&tikv_client::Error::KeyError(Box::new(
            k.clone()
        ))));
        k.conflict = Some(Default::default());
        let e =
            tikv_client::Error::MultipleKeyErrors(vec![tikv_client::Error::KeyError(Box::new(k))]);
        assert!(is_retryable(&e));
        assert!(matches!(classify(e), KvError::Conflict(_)));
        // A lock left by a failed prewrite whose primary was never written: retried until
        // its TTL lets the resolver roll it back.
        let e = tikv_client::Error::TxnNotFound(Default::default());
        assert!(matches!(classify(e), KvError::Conflict(_)));
        assert!(matches!(
            classify(tikv_client::Error::StringError("region unavailable".into())),
            KvError::Other(_)
        ));
    }
}
