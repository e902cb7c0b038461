//! `memkv://name`: an in-process transactional KV store with the same optimistic
//! semantics as the etcd client (versions per key, commit compares what was read), for
//! tests and for measuring the generator's own ceiling with no network. Stores live for
//! the process and are shared by name, so every session of a run sees one volume.
//!
//! For tests of how runs report a stall, `memkv://name?stall_ms=N&stall_after_ms=M`
//! makes the first call at least M ms after the engine was opened wait N ms before it is
//! answered (once; the other clients' calls go on).

use super::kv::{KeyRange, KvBackend, KvError, KvResult, Version, Versioned, Write};
use async_trait::async_trait;
use std::collections::{btree_map, BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Inner {
    /// key → (value, version at which it was last written).
    data: BTreeMap<Vec<u8>, (Vec<u8>, Version)>,
    /// The store's revision, bumped by every commit that writes.
    revision: Version,
}

impl Inner {
    /// The entries from `begin` (included) up to `end`, in key order.
    fn entries_from<'a>(
        &'a self,
        begin: &'a [u8],
        end: Bound<&'a [u8]>,
    ) -> btree_map::Range<'a, Vec<u8>, (Vec<u8>, Version)> {
        self.data.range::<[u8], _>((Bound::Included(begin), end))
    }
}

/// A synthetic stall: the first call from `at` on waits `length`.
struct StallOnce {
    at: Instant,
    length: Duration,
    done: AtomicBool,
}

/// One named in-process store.
#[derive(Default, Clone)]
pub struct MemKv {
    inner: Arc<Mutex<Inner>>,
    stall: Option<Arc<StallOnce>>,
}

impl MemKv {
    /// The process-wide store called `name` (created empty on first use).
    pub fn named(name: &str) -> Self {
        static STORES: OnceLock<Mutex<HashMap<String, MemKv>>> = OnceLock::new();
        let mut stores = STORES
            .get_or_init(Default::default)
            .lock()
            .expect("memkv registry");
        stores.entry(name.to_owned()).or_default().clone()
    }

    /// This handle, with one synthetic stall: the first call made `after` from now or later
    /// waits `length` (asleep on the runtime, so only its caller stalls) before it runs.
    pub fn with_stall_once(mut self, after: Duration, length: Duration) -> Self {
        self.stall = Some(Arc::new(StallOnce {
            at: Instant::now() + after,
            length,
            done: AtomicBool::new(false),
        }));
        self
    }

    async fn stall_once(&self) {
        if let Some(stall) = &self.stall {
            if Instant::now() >= stall.at && !stall.done.swap(true, Ordering::Relaxed) {
                tokio::time::sleep(stall.length).await;
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What a KV call does first: the synthetic stall when one is due, then the lock.
    async fn call(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.stall_once().await;
        self.lock()
    }

    /// Number of keys held.
    pub fn len(&self) -> usize {
        self.lock().data.len()
    }

    /// Whether the store holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl KvBackend for MemKv {
    fn name(&self) -> &'static str {
        "memkv"
    }

    async fn get(&self, key: &[u8]) -> KvResult<Versioned> {
        Ok(self.call().await.data.get(key).cloned())
    }

    async fn batch_get(&self, keys: &[Vec<u8>]) -> KvResult<Vec<Versioned>> {
        let g = self.call().await;
        Ok(keys.iter().map(|k| g.data.get(k).cloned()).collect())
    }

    async fn scan(&self, range: KeyRange<'_>) -> KvResult<Vec<(Vec<u8>, Vec<u8>, Version)>> {
        let (begin, end) = (range.begin, range.end);
        let (limit, keys_only) = (range.limit, range.keys_only);
        let g = self.call().await;
        let end = if end.is_empty() {
            Bound::Unbounded
        } else {
            Bound::Excluded(end)
        };
        let range = g.entries_from(begin, end).map(|(k, (v, ver))| {
            let v = if keys_only { Vec::new() } else { v.clone() };
            (k.clone(), v, *ver)
        });
        Ok(if limit == 0 {
            range.collect()
        } else {
            range.take(limit).collect()
        })
    }

    async fn exist(&self, prefix: &[u8]) -> KvResult<bool> {
        let g = self.call().await;
        let found = g
            .entries_from(prefix, Bound::Unbounded)
            .next()
            .is_some_and(|(k, _)| k.starts_with(prefix));
        Ok(found)
    }

    async fn commit(&self, observed: &[(Vec<u8>, Version)], writes: &[Write]) -> KvResult<()> {
        let mut g = self.call().await;
        for (k, ver) in observed {
            let now = g.data.get(k).map_or(0, |(_, v)| *v);
            if now != *ver {
                return Err(KvError::Conflict(format!(
                    "memkv: key {} changed (version {ver} -> {now})",
                    String::from_utf8_lossy(k)
                )));
            }
        }
        g.revision += 1;
        let rev = g.revision;
        for (k, v) in writes {
            match v {
                Some(v) => {
                    g.data.insert(k.clone(), (v.clone(), rev));
                }
                None => {
                    g.data.remove(k);
                }
            }
        }
        Ok(())
    }

    async fn delete_prefix(&self, prefix: &[u8]) -> KvResult<()> {
        self.lock().data.retain(|k, _| !k.starts_with(prefix));
        Ok(())
    }

    async fn server_info(&self) -> KvResult<crate::ServerInfo> {
        let mut settings = std::collections::BTreeMap::new();
        settings.insert("persistence".to_owned(), "none (process memory)".to_owned());
        Ok(crate::ServerInfo {
            version: format!(
                "memkv (in-process, metabench {})",
                env!("CARGO_PKG_VERSION")
            ),
            settings,
            standin: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stall_once_delays_one_call() {
        let kv = MemKv::default().with_stall_once(Duration::ZERO, Duration::from_millis(80));
        let t = Instant::now();
        kv.get(b"a").await.unwrap();
        assert!(
            t.elapsed() >= Duration::from_millis(80),
            "{:?}",
            t.elapsed()
        );
        let t = Instant::now();
        for _ in 0..10 {
            kv.get(b"a").await.unwrap();
        }
        assert!(t.elapsed() < Duration::from_millis(80), "{:?}", t.elapsed());
    }

    #[tokio::test]
    async fn conflicts_on_changed_reads() {
        let kv = MemKv::default();
        kv.commit(&[], &[(b"a".to_vec(), Some(b"1".to_vec()))])
            .await
            .unwrap();
        let (_, ver) = kv.get(b"a").await.unwrap().unwrap();
        kv.commit(
            &[(b"a".to_vec(), ver)],
            &[(b"a".to_vec(), Some(b"2".to_vec()))],
        )
        .await
        .unwrap();
        let stale = kv
            .commit(
                &[(b"a".to_vec(), ver)],
                &[(b"b".to_vec(), Some(b"x".to_vec()))],
            )
            .await;
        assert!(matches!(stale, Err(KvError::Conflict(_))));
        // An absent key read as 0 conflicts once someone creates it.
        assert!(kv
            .commit(&[(b"c".to_vec(), 0)], &[(b"c".to_vec(), Some(vec![]))])
            .await
            .is_ok());
        assert!(kv
            .commit(&[(b"c".to_vec(), 0)], &[(b"c".to_vec(), Some(vec![]))])
            .await
            .is_err());
        assert!(kv.exist(b"c").await.unwrap());
        assert!(!kv.exist(b"d").await.unwrap());
        let all = kv.scan(KeyRange::new(b"", b"").keys_only()).await.unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(kv.scan(KeyRange::new(b"a", b"b")).await.unwrap()[0].1, b"2");
    }

    #[test]
    fn named_stores_are_shared() {
        let a = MemKv::named("shared-test");
        let b = MemKv::named("shared-test");
        assert!(Arc::ptr_eq(&a.inner, &b.inner));
    }
}
