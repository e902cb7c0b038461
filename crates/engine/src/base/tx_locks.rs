//! JuiceFS's process-local transaction locks (`baseMeta.txlocks`, `txLock`,
//! `txBatchLock` in `pkg/meta/base.go`): 1024 mutexes per client, each transaction holding
//! the ones its call site names for as long as it runs, so that the workers of one client
//! queue behind each other before they can conflict in the engine.

use metabench_schema::Ino;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

/// `nlocks` in `pkg/meta/base.go`.
pub const TX_LOCKS: usize = 1024;

/// What a transaction locks: inodes (`dbMeta.txn` and `kvMeta.txn`, `txBatchLock`) or the
/// first key it watches (`redisMeta.txn`: the FNV-1 hash of `keys[0]`, `txLock`).
#[derive(Debug, Clone, Copy)]
pub enum TxLock<'a> {
    /// No lock (the call site passes no inode).
    None,
    /// The slots of these inodes, each once, in ascending order: at most two, as
    /// JuiceFS's call sites name (one inode, or rename's two parents).
    Inodes(&'a [Ino]),
    /// The slot of this Redis key.
    Key(&'a str),
}

/// The locks of one client. They are taken only once enabled: when the client gets a
/// second worker, or always on SQLite (where every transaction locks inode 1). A client
/// with one worker runs one call at a time, so none of its calls could wait on a lock.
/// A slot's mutex is made the first time it is taken.
#[derive(Debug, Default)]
pub(crate) struct TxLocks {
    enabled: AtomicBool,
    slots: Mutex<HashMap<usize, Arc<AsyncMutex<()>>>>,
}

/// The locks a transaction holds until it is dropped (at most two; no allocation per
/// transaction).
#[must_use = "the locks are released when the guard is dropped"]
#[derive(Debug, Default)]
pub struct TxGuard {
    _held: [Option<OwnedMutexGuard<()>>; 2],
}

impl TxLocks {
    /// From now on, transactions take their locks.
    pub(crate) fn enable(&self) {
        self.enabled.store(true, Ordering::Relaxed);
    }

    /// Waits for and takes what `lock` names, as `txBatchLock` does: sorted, each slot once
    /// (Go's mutexes are not recursive). Nothing until enabled. Also returns how long it
    /// waited for a slot another holder had: a slot free at once is taken with no clock
    /// read, so an uncontended lock costs the timing nothing.
    pub(crate) async fn lock(&self, lock: TxLock<'_>) -> (TxGuard, Duration) {
        if !self.enabled.load(Ordering::Relaxed) {
            return (TxGuard::default(), Duration::ZERO);
        }
        let (a, b) = match lock {
            TxLock::None => return (TxGuard::default(), Duration::ZERO),
            TxLock::Key(key) => (fnv1_32(key.as_bytes()) as usize % TX_LOCKS, None),
            TxLock::Inodes(inodes) => match *inodes {
                [] => return (TxGuard::default(), Duration::ZERO),
                [i] => (slot_of(i), None),
                [i, j] => {
                    let (x, y) = (slot_of(i), slot_of(j));
                    (x.min(y), (x != y).then_some(x.max(y)))
                }
                _ => panic!("a transaction names at most two inodes to lock: {inodes:?}"),
            },
        };
        let mut waited = Duration::ZERO;
        let first = take(self.slot(a), &mut waited).await;
        let second = match b {
            Some(b) => Some(take(self.slot(b), &mut waited).await),
            None => None,
        };
        (
            TxGuard {
                _held: [Some(first), second],
            },
            waited,
        )
    }

    fn slot(&self, slot: usize) -> Arc<AsyncMutex<()>> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.entry(slot).or_default().clone()
    }
}

/// Takes `slot`, adding to `waited` how long it waited for another holder (no clock read
/// when the slot is free).
async fn take(slot: Arc<AsyncMutex<()>>, waited: &mut Duration) -> OwnedMutexGuard<()> {
    match slot.clone().try_lock_owned() {
        Ok(guard) => guard,
        Err(_) => {
            let start = Instant::now();
            let guard = slot.lock_owned().await;
            *waited += start.elapsed();
            guard
        }
    }
}

/// The lock slot of an inode (`ino % nlocks`).
fn slot_of(ino: Ino) -> usize {
    (ino % TX_LOCKS as u64) as usize
}

/// 32-bit FNV-1 (Go's `hash/fnv.New32`), which `redisMeta.txn` hashes its first key with.
fn fnv1_32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, &b| {
        h.wrapping_mul(0x0100_0193) ^ u32::from(b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1_matches_go() {
        // Go: fnv.New32() over "" and "a" gives 0x811c9dc5 and 0x050c5d7e.
        assert_eq!(fnv1_32(b""), 0x811c_9dc5);
        assert_eq!(fnv1_32(b"a"), 0x050c_5d7e);
        assert_eq!(fnv1_32(b"foobar"), 0x31f0_b262);
    }

    #[tokio::test]
    async fn one_worker_takes_no_lock() {
        let locks = TxLocks::default();
        let a = locks.lock(TxLock::Inodes(&[5])).await.0;
        // Not enabled: a second holder of the same slot does not wait.
        let b = tokio::time::timeout(Duration::from_secs(1), locks.lock(TxLock::Inodes(&[5])))
            .await
            .expect("no lock before a second worker");
        assert!(a._held.iter().chain(&b.0._held).all(Option::is_none));
    }

    #[tokio::test]
    async fn shared_slots_exclude_and_collisions_are_taken_once() {
        let locks = TxLocks::default();
        locks.enable();
        // 7 and 7 + 1024 share a slot: taken once, not twice (which would deadlock).
        let (once, waited) = locks.lock(TxLock::Inodes(&[7 + TX_LOCKS as u64, 7])).await;
        assert_eq!(
            waited,
            Duration::ZERO,
            "a free slot is taken without waiting"
        );
        assert!(once._held[0].is_some() && once._held[1].is_none());
        drop(once);
        let (held, _) = locks.lock(TxLock::Inodes(&[9, 7])).await;
        assert!(held._held.iter().all(Option::is_some));
        let waiting =
            tokio::time::timeout(Duration::from_millis(50), locks.lock(TxLock::Inodes(&[9]))).await;
        assert!(waiting.is_err(), "slot 9 is held");
        let free =
            tokio::time::timeout(Duration::from_millis(50), locks.lock(TxLock::Inodes(&[8]))).await;
        assert!(free.is_ok(), "slot 8 is free");
        drop(held);
        let after =
            tokio::time::timeout(Duration::from_secs(1), locks.lock(TxLock::Inodes(&[9]))).await;
        assert!(after.is_ok(), "released with the guard");
        let (key, _) = locks.lock(TxLock::Key("a")).await;
        let slot = 0x050c_5d7e_usize % TX_LOCKS;
        assert!(slots_held(&locks, slot));
        drop(key);
        assert!(!slots_held(&locks, slot));
    }

    /// A slot held by another holder is waited for, and the wait is what is returned.
    #[tokio::test]
    async fn a_held_slot_is_waited_for_and_the_wait_is_timed() {
        let locks = Arc::new(TxLocks::default());
        locks.enable();
        let (held, _) = locks.lock(TxLock::Inodes(&[3])).await;
        let waiter = {
            let locks = locks.clone();
            tokio::spawn(async move { locks.lock(TxLock::Inodes(&[3])).await.1 })
        };
        tokio::time::sleep(Duration::from_millis(30)).await;
        drop(held);
        let waited = waiter.await.unwrap();
        assert!(waited >= Duration::from_millis(25), "{waited:?}");
    }

    fn slots_held(locks: &TxLocks, slot: usize) -> bool {
        locks.slot(slot).try_lock().is_err()
    }
}
