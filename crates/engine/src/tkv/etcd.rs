//! `etcd://h1:2379[,h2]/name`: the etcd backend, shaped as JuiceFS's `etcdTxn`
//! (`tkv_etcd.go`): `get` is a Range with limit 1, `gets` one Txn of up to 128 OpGets,
//! `scan` one ranged Get, `exist` a count-only prefix Get, and the commit one
//! `Txn(If ModRevision(k) == observed …).Then(puts, deletes)`; a false result is a
//! conflict. Keys are prefixed with the URL path (leading `/` included) and `0xFD`.

use super::kv::{KeyRange, KvBackend, KvError, KvResult, Version, Versioned, Write};
use super::per_runtime::PerRuntime;
use crate::{MetaError, MetaUrl, Result, ServerInfo};
use async_trait::async_trait;
use etcd_client::{
    Certificate, Client, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, Identity,
    KvClient, TlsOptions, Txn, TxnOp, TxnOpResponse,
};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// Keys per `gets` Txn (`tkv_etcd.go: gets`).
const GETS_BATCH: usize = 128;
/// Buffered writes that make `etcdTxn.set` commit early.
const COMMIT_EVERY: usize = 128;
/// The largest response the client takes: JuiceFS's (Go's clientv3 default
/// `MaxCallRecvMsgSize`, `math.MaxInt32`; `newEtcdClient` sets none), not tonic's 4 MiB,
/// which a range read of a directory of some 50,000 entries exceeds.
const MAX_RESPONSE_BYTES: usize = i32::MAX as usize;
/// The deletes [`EtcdKv::delete_keys`] sends at once: etcd writes its log once for the
/// requests that arrive together.
const DELETES_AT_ONCE: usize = 64;
/// Commits a bulk writer sends at once ([`KvBackend::commits_at_once`]): more than
/// `juicefs load`'s 10 writers, as its counters wait for a commit of their own per wave.
const COMMITS_AT_ONCE: usize = 16;

/// An etcd cluster reached through etcd-client (gRPC).
///
/// Each tokio runtime that calls gets a connection of its own, made on it, so that a
/// client thread's request goes from its task to the socket and back on that thread
/// (tonic drives a connection from tasks on the runtime that made it; a shared one would
/// hand every request to another thread and back). One client thread's sessions share
/// its connection, as a JuiceFS process's sessions share its one etcd client.
pub struct EtcdKv {
    /// The connection made by [`EtcdKv::connect`], on the runtime that opened the engine.
    client: Client,
    /// How to connect again, for another runtime.
    endpoints: Vec<String>,
    options: ConnectOptions,
    /// The KV client of each runtime that called, driven by that runtime.
    per_runtime: PerRuntime<KvClient>,
    /// The first endpoint, `host:port`, whose HTTP `/metrics` telemetry reads (empty when
    /// the endpoints speak TLS).
    metrics_at: String,
}

/// An etcd client error as a [`KvError`]: `ResourceExhausted` (the NOSPACE alarm's
/// "database space exceeded", or "too many requests") is raised before the request is
/// applied, so it is [`KvError::Refused`].
fn other(e: etcd_client::Error) -> KvError {
    let refused = matches!(&e, etcd_client::Error::GRpcStatus(s)
        if s.code() == tonic::Code::ResourceExhausted);
    match refused {
        true => KvError::Refused(format!("etcd: {e}")),
        false => KvError::Other(format!("etcd: {e}")),
    }
}

/// JuiceFS's `buildTlsConfig` (`pkg/meta/tkv_etcd.go`): TLS when the URL names a CA
/// (`cacert`), a client certificate (`cert` with `key`) or a `server-name`; without a CA,
/// the system's roots. `insecure-skip-verify` has no counterpart in this gRPC client and
/// is refused rather than ignored. A file that cannot be read is one line.
fn tls_options(url: &MetaUrl) -> std::result::Result<Option<TlsOptions>, String> {
    let (ca, cert, key, name) = (
        url.param("cacert"),
        url.param("cert"),
        url.param("key"),
        url.param("server-name"),
    );
    if ca.is_none() && cert.is_none() && key.is_none() && name.is_none() {
        return Ok(None);
    }
    if url
        .param("insecure-skip-verify")
        .is_some_and(|v| !v.is_empty())
    {
        return Err(
            "insecure-skip-verify is not available for etcd in metabench: give the server's \
             CA as cacert=…"
                .into(),
        );
    }
    let read = |option: &str, file: &str| {
        std::fs::read(file).map_err(|e| format!("cannot read {option} {file}: {e}"))
    };
    let mut tls = TlsOptions::new();
    tls = match ca {
        Some(file) => tls.ca_certificate(Certificate::from_pem(read("cacert", file)?)),
        None => tls.with_native_roots(),
    };
    tls = match (cert, key) {
        (Some(c), Some(k)) => tls.identity(Identity::from_pem(read("cert", c)?, read("key", k)?)),
        (None, None) => tls,
        _ => return Err("cert and key go together".into()),
    };
    if let Some(name) = name {
        tls = tls.domain_name(name);
    }
    Ok(Some(tls))
}

/// A connection failure in a few words: TLS refusals said plainly, anything else as the
/// client gave it.
fn connect_reason(e: &etcd_client::Error, url: &MetaUrl, tls: bool) -> String {
    let text = e.to_string();
    if text.contains("UnknownIssuer") {
        if url.param("cacert").is_some() {
            "TLS: the server's certificate is not signed by the CA given as cacert \
             (UnknownIssuer)"
                .into()
        } else {
            "TLS: the server's certificate is not signed by a CA the system trusts (give its \
             CA as cacert=…; UnknownIssuer)"
                .into()
        }
    } else if text.contains("BadCertificate") || text.contains("CertificateRequired") {
        "TLS: the server refused the client certificate (none given as cert=…&key=…, or \
         one its CA did not sign)"
            .into()
    } else if tls && {
        let text = text.to_ascii_lowercase();
        ["connection closed", "broken pipe", "connection reset"]
            .iter()
            .any(|closed| text.contains(closed))
    } {
        // TLS 1.3: a refused client certificate may only show as the connection closing,
        // seen as a closed stream, or as a broken pipe or a reset when the request was
        // already on its way.
        "TLS: the server closed the connection after the handshake (does it ask for a client \
         certificate, cert=…&key=…, that its CA signed? does it speak TLS?)"
            .into()
    } else if text.contains("NotValidForName") {
        "TLS: the server's certificate is not valid for the host dialled (set server-name=…)".into()
    } else {
        text
    }
}

impl EtcdKv {
    /// Connects to the URL's endpoints (user and password as given) and returns the
    /// backend with its key prefix: the URL path, with its leading `/`, then `0xFD`.
    pub async fn connect(url: &MetaUrl) -> Result<(Self, Vec<u8>)> {
        let fail = |reason: String| MetaError::Connect {
            url: url.redacted(),
            reason,
        };
        let tls = tls_options(url).map_err(fail)?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let endpoints: Vec<String> = url
            .host_ports()
            .into_iter()
            .map(|hp| format!("{scheme}://{hp}"))
            .collect();
        let mut opts = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(Duration::from_secs(30));
        if let Some(pw) = url.password() {
            opts = opts.with_user(url.user(), pw);
        }
        if let Some(tls) = tls {
            opts = opts.with_tls(tls);
        }
        // `/metrics` on the first endpoint, over plain HTTP only (none with TLS).
        let metrics_at = match scheme {
            "http" => endpoints[0].trim_start_matches("http://").to_owned(),
            _ => String::new(),
        };
        let client = Client::connect(endpoints.clone(), Some(opts.clone()))
            .await
            .map_err(|e| fail(connect_reason(&e, url, scheme == "https")))?;
        let mut kv = client
            .kv_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES);
        // Check it answers.
        kv.get("metabench-ping", Some(GetOptions::new().with_count_only()))
            .await
            .map_err(|e| fail(connect_reason(&e, url, scheme == "https")))?;
        let mut prefix = format!("/{}", url.database()).into_bytes();
        if url.database().is_empty() {
            prefix.clear();
        }
        prefix.push(0xFD);
        Ok((
            Self {
                client,
                endpoints,
                options: opts,
                per_runtime: PerRuntime::new(kv),
                metrics_at,
            },
            prefix,
        ))
    }

    /// The KV client of the calling runtime, connected on it the first time it asks.
    async fn kv(&self) -> KvResult<KvClient> {
        self.per_runtime
            .get(|| async {
                Client::connect(self.endpoints.clone(), Some(self.options.clone()))
                    .await
                    .map(|c| c.kv_client().max_decoding_message_size(MAX_RESPONSE_BYTES))
                    .map_err(other)
            })
            .await
    }
}

#[async_trait]
impl KvBackend for EtcdKv {
    fn name(&self) -> &'static str {
        "etcd"
    }

    fn batch_limit(&self) -> usize {
        GETS_BATCH
    }

    fn commit_every(&self) -> Option<usize> {
        Some(COMMIT_EVERY)
    }

    fn commits_at_once(&self) -> usize {
        COMMITS_AT_ONCE
    }

    async fn get(&self, key: &[u8]) -> KvResult<Versioned> {
        let r = self
            .kv()
            .await?
            .get(key, Some(GetOptions::new().with_limit(1)))
            .await
            .map_err(other)?;
        Ok(r.kvs()
            .iter()
            .find(|p| p.key() == key)
            .map(|p| (p.value().to_vec(), p.mod_revision())))
    }

    async fn batch_get(&self, keys: &[Vec<u8>]) -> KvResult<Vec<Versioned>> {
        let ops: Vec<TxnOp> = keys.iter().map(|k| TxnOp::get(k.clone(), None)).collect();
        let r = self
            .kv()
            .await?
            .txn(Txn::new().and_then(ops))
            .await
            .map_err(other)?;
        let mut found: HashMap<Vec<u8>, (Vec<u8>, Version)> = HashMap::new();
        for op in r.op_responses() {
            if let TxnOpResponse::Get(g) = op {
                for p in g.kvs() {
                    found.insert(p.key().to_vec(), (p.value().to_vec(), p.mod_revision()));
                }
            }
        }
        Ok(keys.iter().map(|k| found.get(k).cloned()).collect())
    }

    async fn scan(&self, range: KeyRange<'_>) -> KvResult<Vec<(Vec<u8>, Vec<u8>, Version)>> {
        let (begin, end) = (range.begin, range.end);
        let (limit, keys_only) = (range.limit, range.keys_only);
        let mut o = GetOptions::new().with_range(if end.is_empty() {
            vec![0]
        } else {
            end.to_vec()
        });
        if keys_only {
            o = o.with_keys_only();
        }
        if limit > 0 {
            o = o.with_limit(limit as i64);
        }
        let r = self.kv().await?.get(begin, Some(o)).await.map_err(other)?;
        Ok(r.kvs()
            .iter()
            .map(|p| (p.key().to_vec(), p.value().to_vec(), p.mod_revision()))
            .collect())
    }

    async fn exist(&self, prefix: &[u8]) -> KvResult<bool> {
        let r = self
            .kv()
            .await?
            .get(
                prefix,
                Some(GetOptions::new().with_prefix().with_count_only()),
            )
            .await
            .map_err(other)?;
        Ok(r.count() > 0)
    }

    async fn commit(&self, observed: &[(Vec<u8>, Version)], writes: &[Write]) -> KvResult<()> {
        let conds: Vec<Compare> = observed
            .iter()
            .map(|(k, v)| Compare::mod_revision(k.clone(), CompareOp::Equal, *v))
            .collect();
        // One op per key (the buffer is a map in JuiceFS too).
        let ops: BTreeMap<&Vec<u8>, &Option<Vec<u8>>> =
            writes.iter().map(|(k, v)| (k, v)).collect();
        let ops: Vec<TxnOp> = ops
            .into_iter()
            .map(|(k, v)| match v {
                Some(v) => TxnOp::put(k.clone(), v.clone(), None),
                None => TxnOp::delete(k.clone(), None),
            })
            .collect();
        let r = self
            .kv()
            .await?
            .txn(Txn::new().when(conds).and_then(ops))
            .await
            .map_err(other)?;
        if r.succeeded() {
            Ok(())
        } else {
            Err(KvError::Conflict(
                "etcd: a compared ModRevision changed".into(),
            ))
        }
    }

    /// One `DeleteRange` a key, [`DELETES_AT_ONCE`] at once, every key tried: an etcd
    /// whose backend is over its quota (the NOSPACE alarm) takes them, while an etcd
    /// without the fix of etcd-io/etcd#13429 (3.5.1 has none, 3.4.23 has it) refuses every
    /// transaction, one of deletes alone too.
    async fn delete_keys(&self, keys: &[Vec<u8>]) -> KvResult<()> {
        let kv = self.kv().await?;
        let mut first_failure = Ok(());
        for part in keys.chunks(DELETES_AT_ONCE) {
            let deletes = part.iter().map(|k| {
                let (mut kv, k) = (kv.clone(), k.clone());
                async move { kv.delete(k, None).await }
            });
            for done in futures_util::future::join_all(deletes).await {
                first_failure = first_failure.and(done.map(drop).map_err(other));
            }
        }
        first_failure
    }

    async fn delete_prefix(&self, prefix: &[u8]) -> KvResult<()> {
        self.kv()
            .await?
            .delete(prefix, Some(DeleteOptions::new().with_prefix()))
            .await
            .map_err(other)?;
        Ok(())
    }

    async fn telemetry(&self) -> KvResult<crate::Telemetry> {
        if self.metrics_at.is_empty() {
            return Err(KvError::Other(
                "etcd /metrics is read over plain HTTP only, and this etcd speaks TLS".into(),
            ));
        }
        let text = http_get(&self.metrics_at, "/metrics")
            .await
            .map_err(|e| KvError::Other(format!("etcd /metrics at {}: {e}", self.metrics_at)))?;
        Ok(crate::telemetry::from_prometheus(&text))
    }

    /// The backend's size in use (`/metrics`' `etcd_mvcc_db_total_size_in_use_in_bytes`,
    /// what Status calls `dbSizeInUse`): every key of the cluster, history not yet
    /// compacted included. Over TLS, where /metrics is not read, the backend file's size
    /// (`dbSize`, free pages included).
    async fn footprint(&self) -> std::result::Result<crate::Footprint, String> {
        if !self.metrics_at.is_empty() {
            let gauge = self
                .telemetry()
                .await
                .map_err(|e| e.to_string())?
                .gauges
                .get("etcd_mvcc_db_total_size_in_use_in_bytes")
                .copied()
                .ok_or("etcd /metrics has no etcd_mvcc_db_total_size_in_use_in_bytes")?;
            return Ok(crate::Footprint {
                bytes: gauge.max(0.0) as u64,
                rss_bytes: None,
                what:
                    "etcd dbSizeInUse (the whole cluster's backend, uncompacted history included)"
                        .into(),
            });
        }
        let st = self
            .client
            .maintenance_client()
            .status()
            .await
            .map_err(|e| format!("etcd status: {e}"))?;
        Ok(crate::Footprint {
            bytes: st.db_size().max(0) as u64,
            rss_bytes: None,
            what: "etcd dbSize (the whole cluster's backend file, free pages included)".into(),
        })
    }

    /// The server's version, its backend quota (`--quota-backend-bytes`, which etcd
    /// exposes as the `etcd_server_quota_backend_bytes` gauge of `/metrics`) and the
    /// cluster's members (MemberList).
    async fn server_info(&self) -> KvResult<ServerInfo> {
        let st = self
            .client
            .maintenance_client()
            .status()
            .await
            .map_err(other)?;
        let mut settings = BTreeMap::new();
        let quota = if self.metrics_at.is_empty() {
            "unknown (etcd /metrics is read over plain HTTP only, and this etcd speaks TLS)"
                .to_owned()
        } else {
            match http_get(&self.metrics_at, "/metrics").await {
                Ok(text) => quota_backend_bytes(&text).map_or_else(
                    || "unknown (/metrics has no etcd_server_quota_backend_bytes)".to_owned(),
                    |q| q.to_string(),
                ),
                Err(e) => format!("unknown (/metrics at {}: {e})", self.metrics_at),
            }
        };
        settings.insert("quota-backend-bytes".to_owned(), quota);
        let members = match self.client.cluster_client().member_list().await {
            Ok(list) => describe_members(list.members()),
            Err(e) => format!("unknown (MemberList refused: {e})"),
        };
        settings.insert("members".to_owned(), members);
        Ok(ServerInfo {
            version: format!("etcd {}", st.version()),
            settings,
            standin: None,
        })
    }
}

/// The `etcd_server_quota_backend_bytes` gauge of a `/metrics` text, in bytes.
fn quota_backend_bytes(metrics: &str) -> Option<u64> {
    metrics.lines().find_map(|line| {
        let value = line
            .strip_prefix("etcd_server_quota_backend_bytes")?
            .strip_prefix(' ')?;
        let bytes: f64 = value.trim().parse().ok()?;
        (bytes >= 0.0).then_some(bytes as u64)
    })
}

/// A cluster's members as results record them: `N: name (client URL), …`; learners are
/// said.
fn describe_members(members: &[etcd_client::Member]) -> String {
    let each: Vec<String> = members
        .iter()
        .map(|m| {
            let name = if m.name().is_empty() {
                format!("{:x} (not started)", m.id())
            } else {
                m.name().to_owned()
            };
            let learner = if m.is_learner() { ", learner" } else { "" };
            format!("{name} ({}{learner})", m.client_urls().join(" "))
        })
        .collect();
    format!("{}: {}", members.len(), each.join(", "))
}

/// How long reading etcd's `/metrics` may take.
const METRICS_TIMEOUT: Duration = Duration::from_secs(5);

/// A plain HTTP/1.1 GET of `path` on `host:port` (etcd serves `/metrics` on its client
/// port), returning the body. Enough for etcd's answer: no TLS, no chunked encoding
/// (HTTP/1.0 asks for a body that ends with the connection).
async fn http_get(addr: &str, path: &str) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let fetch = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
            .await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    let answer = tokio::time::timeout(METRICS_TIMEOUT, fetch)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out"))??;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("not an HTTP answer"))?;
    let status = head.split_whitespace().nth(1);
    if !head.starts_with("HTTP/1.") || status != Some("200") {
        return Err(std::io::Error::other(
            head.lines().next().unwrap_or_default().to_owned(),
        ));
    }
    Ok(body.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backend_quota_is_read_from_its_gauge() {
        let metrics =
            "# HELP etcd_server_quota_backend_bytes Current backend storage quota size in bytes.
# TYPE etcd_server_quota_backend_bytes gauge
etcd_server_quota_backend_bytes_total 1
etcd_server_quota_backend_bytes 2.147483648e+09
";
        assert_eq!(quota_backend_bytes(metrics), Some(2_147_483_648));
        assert_eq!(quota_backend_bytes("etcd_server_has_leader 1\n"), None);
    }

    /// A server that wants a client certificate it did not get closes the connection
    /// after a TLS 1.3 handshake; the client sees that in one of several ways, each
    /// said the same way.
    #[test]
    fn a_connection_closed_after_the_handshake_is_said_as_tls() {
        let url = MetaUrl::parse("etcd://127.0.0.1:2379/jfs?cacert=/ca.pem").unwrap();
        for seen in [
            "connection closed before message completed",
            "stream closed because of a broken pipe",
            "Connection reset by peer (os error 104)",
        ] {
            let e = etcd_client::Error::IoError(std::io::Error::other(seen));
            let said = connect_reason(&e, &url, true);
            assert!(said.contains("client certificate"), "{seen}: {said}");
            // Without TLS, the client's own words are kept.
            assert!(connect_reason(&e, &url, false).contains(seen), "{seen}");
        }
    }
}
