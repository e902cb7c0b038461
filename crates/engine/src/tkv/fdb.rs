//! `fdb://path/to/fdb.cluster?prefix=NAME`: FoundationDB through the `foundationdb` crate
//! (cargo feature `fdb`, off by default; linking needs the FoundationDB client library
//! `libfdb_c` 7.1). Keys are prefixed with `NAME` and `0xFD` (`newFdbClient`).
//!
//! Transactions are FoundationDB's own ([`NativeTxn`]): reads go to one FDB transaction
//! (so the store tracks the read conflict ranges), `gets` issues its futures together,
//! the buffered writes are set at commit, and a `not_committed` (1020) or any other
//! retryable error is reported as a conflict, so the session's retry loop runs the
//! transaction again (JuiceFS leaves that loop to `db.Transact`).

use super::kv::{
    via_native, KeyRange, KvBackend, KvError, KvResult, NativeTxn, Version, Versioned, Write,
};
use crate::{MetaError, MetaUrl, Result, ServerInfo};
use async_trait::async_trait;
use foundationdb::{Database, FdbError, RangeOption, Transaction};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// The FoundationDB network thread, started once per process and never stopped.
fn boot_network() {
    static NETWORK: OnceLock<()> = OnceLock::new();
    NETWORK.get_or_init(|| {
        // SAFETY: called once per process (OnceLock); the guard is leaked so the network
        // runs until the process exits, as the binding requires.
        let guard = unsafe { foundationdb::boot() };
        Box::leak(Box::new(guard));
    });
}

fn fdb_err(e: FdbError) -> KvError {
    if e.is_retryable() {
        KvError::Conflict(format!("fdb: {e} ({})", e.code()))
    } else {
        KvError::Other(format!("fdb: {e} ({})", e.code()))
    }
}

/// A FoundationDB cluster.
pub struct FdbKv {
    db: Arc<Database>,
}

impl FdbKv {
    /// Opens the cluster file the URL names and returns the backend with its key prefix.
    pub async fn connect(url: &MetaUrl) -> Result<(Self, Vec<u8>)> {
        boot_network();
        let path = url.database();
        let db = Database::new(if path.is_empty() { None } else { Some(path) }).map_err(|e| {
            MetaError::Connect {
                url: url.redacted(),
                reason: e.to_string(),
            }
        })?;
        let mut prefix = url.param("prefix").unwrap_or("").as_bytes().to_vec();
        prefix.push(0xFD);
        Ok((Self { db: Arc::new(db) }, prefix))
    }

    fn trx(&self) -> KvResult<Transaction> {
        self.db.create_trx().map_err(fdb_err)
    }
}

struct FdbTxn {
    trx: Transaction,
}

async fn scan_trx(trx: &Transaction, range: KeyRange<'_>) -> KvResult<Vec<(Vec<u8>, Vec<u8>)>> {
    let (begin, end) = (range.begin, range.end);
    let (limit, keys_only) = (range.limit, range.keys_only);
    let end = if end.is_empty() {
        vec![0xFF]
    } else {
        end.to_vec()
    };
    let mut opt = RangeOption::from((begin.to_vec(), end));
    opt.limit = (limit > 0).then_some(limit);
    opt.mode = foundationdb::options::StreamingMode::WantAll;
    let mut out = Vec::new();
    let mut iteration = 1;
    loop {
        let kvs = trx
            .get_range(&opt, iteration, false)
            .await
            .map_err(fdb_err)?;
        for kv in kvs.iter() {
            let v = if keys_only {
                Vec::new()
            } else {
                kv.value().to_vec()
            };
            out.push((kv.key().to_vec(), v));
        }
        if limit > 0 && out.len() >= limit {
            out.truncate(limit);
            return Ok(out);
        }
        match opt.next_range(&kvs) {
            Some(next) => opt = next,
            None => return Ok(out),
        }
        iteration += 1;
    }
}

#[async_trait]
impl NativeTxn for FdbTxn {
    async fn get(&mut self, key: &[u8]) -> KvResult<Option<Vec<u8>>> {
        Ok(self
            .trx
            .get(key, false)
            .await
            .map_err(fdb_err)?
            .map(|v| v.to_vec()))
    }

    async fn batch_get(&mut self, keys: &[Vec<u8>]) -> KvResult<Vec<Option<Vec<u8>>>> {
        // Every future is issued before the first is awaited: the reads run in parallel.
        let futures: Vec<_> = keys.iter().map(|k| self.trx.get(k, false)).collect();
        let mut out = Vec::with_capacity(keys.len());
        for f in futures {
            out.push(f.await.map_err(fdb_err)?.map(|v| v.to_vec()));
        }
        Ok(out)
    }

    async fn scan(&mut self, range: KeyRange<'_>) -> KvResult<Vec<(Vec<u8>, Vec<u8>)>> {
        scan_trx(&self.trx, range).await
    }

    async fn exist(&mut self, prefix: &[u8]) -> KvResult<bool> {
        let end = metabench_schema::tkv::TkvKeys::prefix_end(prefix);
        let range = KeyRange::new(prefix, &end).limit(1).keys_only();
        Ok(!scan_trx(&self.trx, range).await?.is_empty())
    }

    async fn commit(self: Box<Self>, writes: &[Write]) -> KvResult<()> {
        for (k, v) in writes {
            match v {
                Some(v) => self.trx.set(k, v),
                None => self.trx.clear(k),
            }
        }
        self.trx
            .commit()
            .await
            .map(|_| ())
            .map_err(|e| fdb_err(FdbError::from(e)))
    }
}

#[async_trait]
impl KvBackend for FdbKv {
    fn name(&self) -> &'static str {
        "fdb"
    }

    fn begin_native(&self, _simple: bool) -> Option<KvResult<Box<dyn NativeTxn>>> {
        Some(
            self.trx()
                .map(|trx| Box::new(FdbTxn { trx }) as Box<dyn NativeTxn>),
        )
    }

    // The versioned calls serve administration (probe, format checks) outside sessions.
    async fn get(&self, key: &[u8]) -> KvResult<Versioned> {
        let trx = self.trx()?;
        Ok(trx
            .get(key, true)
            .await
            .map_err(fdb_err)?
            .map(|v| (v.to_vec(), 1)))
    }

    async fn batch_get(&self, keys: &[Vec<u8>]) -> KvResult<Vec<Versioned>> {
        via_native::batch_get(Box::new(FdbTxn { trx: self.trx()? }), keys).await
    }

    async fn scan(&self, range: KeyRange<'_>) -> KvResult<Vec<(Vec<u8>, Vec<u8>, Version)>> {
        let t = Box::new(FdbTxn { trx: self.trx()? });
        via_native::scan(t, range).await
    }

    async fn exist(&self, prefix: &[u8]) -> KvResult<bool> {
        let mut t = FdbTxn { trx: self.trx()? };
        t.exist(prefix).await
    }

    async fn commit(&self, _observed: &[(Vec<u8>, Version)], writes: &[Write]) -> KvResult<()> {
        Box::new(FdbTxn { trx: self.trx()? }).commit(writes).await
    }

    async fn delete_prefix(&self, prefix: &[u8]) -> KvResult<()> {
        let trx = self.trx()?;
        trx.clear_range(prefix, &metabench_schema::tkv::TkvKeys::prefix_end(prefix));
        trx.commit()
            .await
            .map(|_| ())
            .map_err(|e| fdb_err(FdbError::from(e)))
    }

    async fn server_info(&self) -> KvResult<ServerInfo> {
        Ok(ServerInfo {
            version: "foundationdb (client API 710)".into(),
            settings: BTreeMap::new(),
            standin: None,
        })
    }
}
