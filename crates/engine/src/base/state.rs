//! [`ClientState`]: what one JuiceFS client keeps between calls (the fields of `baseMeta`),
//! shared by the client's workers (`--threads-per-client`), as a mount's goroutines share
//! one `baseMeta`.

use super::client_cache::ClientCache;
use super::dir_stats::DirStatBuffer;
use super::ids::{InodeIds, SliceIds, SLICE_RUN};
use super::session::SessionRegistry;
use super::tx_locks::{TxGuard, TxLock, TxLocks};
use crate::meta::SessionOptions;
use crate::rules::ParentRule;
use metabench_schema::{Ino, Slice};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What one JuiceFS client keeps between calls: a handle that each of the client's workers
/// (its sessions, each with its own connection) holds a clone of.
///
/// - The id batches sit behind `freeMu`, an async lock held across an allocation as
///   JuiceFS holds it ([`ClientState::ids`]); a slice id is taken without it
///   ([`ClientState::take_slice_id`]), from a run of them that this handle holds alone.
/// - The buffers, caches, deleted-file queue and session id sit behind a plain lock that
///   is never held across an await ([`ClientState::data`]).
/// - The transaction locks (`txlocks`) are taken once the client has a second worker
///   ([`ClientState::add_worker`]).
#[derive(Debug)]
pub struct ClientState {
    client: Arc<Client>,
    /// This worker's run of slice ids, taken from `freeSlices` ([`SliceIds::take_run`]).
    slice_run: Range<u64>,
    /// ns this handle's transactions waited for the client's locks ([`ClientState::tx_lock`]).
    lock_wait_ns: AtomicU64,
}

/// Another handle on the same client, with no slice ids of its own yet: a run belongs to
/// one handle, so that no id is handed out twice.
impl Clone for ClientState {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            slice_run: 0..0,
            lock_wait_ns: AtomicU64::new(0),
        }
    }
}

#[derive(Debug)]
struct Client {
    /// `Format.DirStats`: whether dir stats are kept (and the quota walk runs).
    dir_stats_on: bool,
    /// `Config.SkipDirMtime` and `SkipDirNlink`.
    skip_dir_mtime: Duration,
    skip_dir_nlink: u32,
    ids: tokio::sync::Mutex<Ids>,
    /// `freeSlices`: refilled under `ids`, taken from without it.
    slices: SliceIds,
    data: Mutex<ClientData>,
    tx_locks: TxLocks,
}

/// The inode batches (`freeInodes`, `prefetchedInodes`), behind `freeMu`.
#[derive(Debug, Default)]
pub(crate) struct Ids {
    pub(crate) inodes: InodeIds,
}

/// The client's buffers and caches, each access short.
#[derive(Debug)]
pub(crate) struct ClientData {
    /// `dirStats`.
    pub(crate) dir_stats: DirStatBuffer,
    /// `newSpace` and `newInodes`: volume counters not yet written (`updateStats`).
    new_space: i64,
    new_inodes: i64,
    /// Files whose data is still to be freed: (inode, length).
    pub(crate) deleted: Vec<(Ino, u64)>,
    /// Writes to hard-linked files (parent 0) whose parents' dir stats are still to be
    /// updated (`updateParentStat`'s goroutine): (inode, length delta, space delta).
    pub(crate) link_writes: Vec<(Ino, i64, i64)>,
    /// `dirParents`: directory → parent.
    pub(crate) dir_parents: HashMap<Ino, Ino>,
    /// Chunk and symlink caches (`--client-cache`).
    pub(crate) cache: ClientCache,
    /// `sid`: 0 unless the session is registered.
    pub(crate) sid: u64,
    /// Where a registered session is listed until closed, and when its next heartbeat is.
    pub(crate) registered: Option<(SessionRegistry, Instant)>,
    /// Heartbeats sent so far ([`crate::SessionStats::heartbeats`]).
    pub(crate) heartbeats: u64,
}

impl ClientState {
    /// A fresh client on a volume that keeps dir stats when `dir_stats_on`, with the
    /// caches and `Config` fields of `opts`, and one worker.
    pub fn new(dir_stats_on: bool, opts: &SessionOptions) -> Self {
        let client = Arc::new(Client {
            dir_stats_on,
            skip_dir_mtime: opts.skip_dir_mtime,
            skip_dir_nlink: opts.skip_dir_nlink,
            ids: tokio::sync::Mutex::new(Ids::default()),
            slices: SliceIds::default(),
            data: Mutex::new(ClientData {
                dir_stats: DirStatBuffer::default(),
                new_space: 0,
                new_inodes: 0,
                deleted: Vec::new(),
                link_writes: Vec::new(),
                dir_parents: HashMap::new(),
                cache: ClientCache::new(opts.client_cache),
                sid: 0,
                registered: None,
                heartbeats: 0,
            }),
            tx_locks: TxLocks::default(),
        });
        Self {
            client,
            slice_run: 0..0,
            lock_wait_ns: AtomicU64::new(0),
        }
    }

    /// The handle for one more worker of this client: from now on its transactions take
    /// JuiceFS's process-local locks.
    pub fn add_worker(&self) -> Self {
        self.client.tx_locks.enable();
        self.clone()
    }

    /// Makes every transaction take its locks even with one worker: on SQLite, where all
    /// of them lock inode 1 (`dbMeta.txn`), the client's background inode prefetch
    /// included.
    pub(crate) fn always_lock(&self) {
        self.client.tx_locks.enable();
    }

    /// Whether `other` is a handle of this same client.
    pub fn same_client(&self, other: &ClientState) -> bool {
        Arc::ptr_eq(&self.client, &other.client)
    }

    /// The buffers and caches. Never held across an await (the guard is not `Send`).
    pub(crate) fn data(&self) -> MutexGuard<'_, ClientData> {
        self.client.data.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The id batches, behind `freeMu` (held across an allocation). Taken without the
    /// async wait when free, as it nearly always is: `freeMu` is held across a call to the
    /// engine only once a batch.
    pub(crate) async fn ids(&self) -> tokio::sync::MutexGuard<'_, Ids> {
        match self.client.ids.try_lock() {
            Ok(ids) => ids,
            Err(_) => self.client.ids.lock().await,
        }
    }

    /// `NewSlice` while the slice batch lasts: the next id of this worker's run, else of a
    /// new run taken from the batch, without `freeMu`. `None` once the batch is used up;
    /// refill it under [`ClientState::ids`].
    #[inline]
    pub fn take_slice_id(&mut self) -> Option<u64> {
        match self.slice_run.next() {
            Some(id) => Some(id),
            None => self.take_slice_run(),
        }
    }

    /// A new run of slice ids from the client's batch, and its first id.
    #[cold]
    fn take_slice_run(&mut self) -> Option<u64> {
        self.slice_run = self.client.slices.take_run(SLICE_RUN)?;
        self.slice_run.next()
    }

    /// `Read` from the chunk cache (`--client-cache`): chunk `indx` of `ino`, if cached.
    pub fn cached_chunk(&self, ino: Ino, indx: u32) -> Option<Arc<[Slice]>> {
        self.data().cache.chunk(ino, indx)
    }

    /// The slice batch, to refill under [`ClientState::ids`] once it is used up.
    pub(crate) fn slices(&self) -> &SliceIds {
        &self.client.slices
    }

    /// `txLock` / `txBatchLock`: waits for and holds what `lock` names until the guard is
    /// dropped (nothing while the client has one worker, SQLite's apart). The time it
    /// waited for another worker's lock is added to [`ClientState::lock_wait_ns`].
    pub async fn tx_lock(&self, lock: TxLock<'_>) -> TxGuard {
        let (guard, waited) = self.client.tx_locks.lock(lock).await;
        if !waited.is_zero() {
            self.lock_wait_ns
                .fetch_add(waited.as_nanos() as u64, Ordering::Relaxed);
        }
        guard
    }

    /// ns this handle's transactions have waited for the client's locks so far (the
    /// `lock_wait_ns` of [`crate::SessionStats`]).
    pub fn lock_wait_ns(&self) -> u64 {
        self.lock_wait_ns.load(Ordering::Relaxed)
    }

    /// Whether the volume keeps dir stats (and the quota walk runs).
    pub(crate) fn dir_stats_on(&self) -> bool {
        self.client.dir_stats_on
    }

    /// The session id (`sid`): 0 unless registered.
    pub fn sid(&self) -> u64 {
        self.data().sid
    }

    /// When Redis and SQL transactions rewrite a parent (`redis.go`, `sql.go`).
    pub(crate) fn parent_rule(&self) -> ParentRule {
        ParentRule::plain(self.client.skip_dir_mtime)
    }

    /// `SkipDirMtime` and `SkipDirNlink`, for TKV transactions, whose rule depends on the
    /// try ([`ParentRule::kv`]).
    pub(crate) fn dir_skips(&self) -> (Duration, u32) {
        (self.client.skip_dir_mtime, self.client.skip_dir_nlink)
    }

    /// `updateDirStat`: buffers a change below `dir`, when the volume keeps dir stats.
    pub fn update_dir_stat(&self, dir: Ino, length: i64, space: i64, inodes: i64) {
        if self.client.dir_stats_on {
            self.data().dir_stats.update(dir, length, space, inodes);
        }
    }

    /// Forgets the parent of a directory that was removed or moved (`dirParents`).
    pub fn forget_dir_parent(&self, dir: Ino) {
        self.data().dir_parents.remove(&dir);
    }

    /// Remembers a directory's parent (`dirParents`), as `GetAttr` and `Mkdir` do.
    pub fn keep_dir_parent(&self, dir: Ino, parent: Ino) {
        self.data().dir_parents.insert(dir, parent);
    }

    /// A directory's parent, when known (`dirParents`).
    pub(crate) fn dir_parent(&self, dir: Ino) -> Option<Ino> {
        self.data().dir_parents.get(&dir).copied()
    }

    /// `updateStats`: buffers a change of the volume's used space and inode count.
    pub fn update_stats(&self, space: i64, inodes: i64) {
        let mut d = self.data();
        d.new_space += space;
        d.new_inodes += inodes;
    }

    /// Deleted files whose data is still to be freed.
    pub fn deleted_pending(&self) -> usize {
        self.data().deleted.len()
    }

    /// Takes the volume-counter changes not yet written (`newSpace`, `newInodes`). JuiceFS's
    /// `doFlushStats` reads them and subtracts what it wrote once written; taking them out
    /// first comes to the same, and two workers flushing at once never write one change
    /// twice. What is not marked written goes back when the taken stats are dropped (a
    /// failed or cancelled flush).
    pub fn take_pending_stats(&self) -> TakenStats {
        let mut d = self.data();
        TakenStats {
            state: self.clone(),
            space: std::mem::take(&mut d.new_space),
            inodes: std::mem::take(&mut d.new_inodes),
        }
    }

    /// `updateParentStat`: a file's length grew by `length` (`space` after rounding).
    /// The parent's dir stat is buffered; for a hard-linked file (parent 0) its parents are
    /// looked up by the background flush.
    pub fn buffer_parent_stat(&self, ino: Ino, parent: Ino, length: i64, space: i64) {
        if length == 0 && space == 0 {
            return;
        }
        self.update_stats(space, 0);
        if !self.client.dir_stats_on {
            return;
        }
        let mut d = self.data();
        if parent > 0 {
            d.dir_stats.update(parent, length, space, 0);
        } else {
            d.link_writes.push((ino, length, space));
        }
    }

    /// Queues a deleted file's data to be freed (`tryDeleteFileData`).
    pub fn file_deleted(&self, ino: Ino, length: u64) {
        let mut d = self.data();
        d.deleted.push((ino, length));
        d.cache.forget_file(ino);
    }
}

/// Volume-counter changes taken to be written ([`ClientState::take_pending_stats`]).
#[derive(Debug)]
pub struct TakenStats {
    state: ClientState,
    /// `newSpace`, still to be written.
    pub space: i64,
    /// `newInodes`, still to be written.
    pub inodes: i64,
}

impl TakenStats {
    /// The space change was written.
    pub fn space_written(&mut self) {
        self.space = 0;
    }

    /// The inode-count change was written.
    pub fn inodes_written(&mut self) {
        self.inodes = 0;
    }
}

impl Drop for TakenStats {
    fn drop(&mut self) {
        if self.space != 0 || self.inodes != 0 {
            self.state.update_stats(self.space, self.inodes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::SLICE_BATCH;

    #[test]
    fn each_worker_takes_its_own_run_of_slice_ids_and_a_clone_none_of_its_run() {
        let mut first = ClientState::new(false, &SessionOptions::default());
        assert_eq!(first.take_slice_id(), None, "no batch fetched yet");
        first.slices().refill(1 + SLICE_BATCH);
        assert_eq!(first.take_slice_id(), Some(1));
        // A clone (another worker, or a background task) starts after the first run.
        let mut second = first.clone();
        assert_eq!(second.take_slice_id(), Some(1 + SLICE_RUN));
        assert_eq!(first.take_slice_id(), Some(2));
        let mut all: Vec<u64> = std::iter::from_fn(|| first.take_slice_id())
            .chain(std::iter::from_fn(|| second.take_slice_id()))
            .chain([1, 2, 1 + SLICE_RUN])
            .collect();
        all.sort_unstable();
        assert_eq!(all, (1..=SLICE_BATCH).collect::<Vec<_>>(), "every id, once");
    }
}
