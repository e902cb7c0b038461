//! The client layer every engine family shares, written once as JuiceFS writes it in
//! `baseMeta` (`pkg/meta/base.go`, `quota.go`), over each family's storage steps
//! ([`Storage`], JuiceFS's `engine` interface).
//!
//! [`ClientState`] is what one JuiceFS client keeps between calls:
//! - id batches: inodes (`nextInode`, with its background prefetch) and slices
//!   (`NewSlice`);
//! - the directory-parent cache (`dirParents`) that `GetAttr` fills and the quota walk
//!   reads;
//! - the dir-stat and volume-counter buffers (`updateDirStat`, `updateParentStat`,
//!   `updateStats`);
//! - the deleted-file queue, freed by the background work ([`crate::Meta::flush`]);
//! - the chunk and symlink caches (`--client-cache`).
//!
//! The logic over it is here too: `nextInode`, `NewSlice`, `GetAttr`, the quota walk,
//! `Mknod` ([`Storage::make_node`]), `Rename`'s checks and walks, `Readdir`, `Read`,
//! `ReadLink`, `updateParentStat` and the background flush. The pure argument and
//! permission checks are in `common`. `client` implements [`crate::Meta`] once, for every
//! [`Storage`]: the mknod family (`Mkdir`, `Mknod`, `Create`, `Symlink`), `Rename`,
//! `Access`, `SetXattr`, `RemoveXattr`, and the other operations over their steps.

mod client;
mod client_cache;
mod dir_stats;
mod ids;
mod session;
mod state;
mod tx_locks;

pub use dir_stats::DirStatBuffer;
pub use ids::{
    inode_need_prefetch, IdRange, InodeIds, SliceIds, INODE_BATCH, SLICE_BATCH, SLICE_RUN,
};
pub use session::{session_expire, session_info, SessionRegistry, HEARTBEAT};
pub use state::{ClientState, TakenStats};
pub use tx_locks::{TxGuard, TxLock, TX_LOCKS};

use crate::common::{access, check_new_entry, check_rename, implicit_dir_attr, is_trash};
use crate::meta::{ChunkWrite, NewNode, Rename, Renamed, SetAttr, Xattr};
use crate::resize::{FallocRange, Resized};
use crate::{Ctx, Entry, Made, MetaError, Result, SessionStats};
use metabench_schema::{align4k, Attr, DirStat, FileType, Ino, Slice, ROOT_INODE};
use std::future::Future;

/// Work a session hands to a background task (it must own what it uses).
pub type Background<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// How far the quota walk climbs before it gives up (a loop in the tree).
const MAX_WALK: usize = 4096;

/// The steps of JuiceFS's `engine` interface that resize a file, implemented by each
/// family beside its transactions (`resize.rs`).
pub trait ResizeSteps: Send {
    /// `doTruncate` with flags 0 and the permission checked: the family's truncate
    /// transaction ([`crate::resize`]'s checks and holes), with `checkQuota` inside it
    /// ([`Storage::check_space_quota`]).
    fn do_truncate(
        &mut self,
        ctx: &Ctx,
        ino: Ino,
        length: u64,
    ) -> impl Future<Output = Result<Resized>> + Send;

    /// `doFallocate`: the family's fallocate transaction ([`crate::resize`]'s checks,
    /// length and holes), with `checkQuota` inside it.
    fn do_fallocate(
        &mut self,
        ctx: &Ctx,
        ino: Ino,
        range: FallocRange,
    ) -> impl Future<Output = Result<Resized>> + Send;
}

/// The steps of JuiceFS's `engine` interface that keep a registered session's record,
/// implemented by each family in `registered.rs`.
pub trait SessionSteps: Send {
    /// `doNewSession`: writes the record of session [`ClientState::sid`] with `info`
    /// (Redis also loads its Lua scripts).
    fn do_new_session(&mut self, info: &[u8]) -> impl Future<Output = Result<()>> + Send;

    /// `doRefreshSession`: moves the session record's expiry on (rewriting the record if
    /// another client cleaned it up as stale).
    fn do_refresh_session(&mut self) -> impl Future<Output = Result<()>> + Send;

    /// `doCleanStaleSession`: releases session `sid`'s locks, then removes its record. A
    /// session that keeps deleted files open (sustained inodes, which metabench never
    /// makes) is refused: freeing them is left to juicefs.
    fn do_clean_stale_session(&mut self, sid: u64) -> impl Future<Output = Result<()>> + Send;
}

/// The storage steps of one engine family (JuiceFS's `engine` interface, `base.go`), and
/// the client logic written once over them. A family implements only the steps (these,
/// [`ResizeSteps`] and [`SessionSteps`]); the provided methods are `baseMeta`'s.
pub trait Storage: ResizeSteps + SessionSteps + Send {
    /// The client's state (shared with the client's other workers).
    fn state(&self) -> &ClientState;

    /// This worker's handle on the client's state, for what it holds alone (its run of
    /// slice ids).
    fn state_mut(&mut self) -> &mut ClientState;

    /// `incrCounter`: adds `by` to a counter in one transaction and returns the counter's
    /// new value; for `nextInode` and `nextChunk` that is the next unused id.
    fn incr_counter(&mut self, name: &str, by: i64) -> impl Future<Output = Result<i64>> + Send;

    /// The background half of `nextInode` (`go m.prefetchInodes()`): the same
    /// `incrCounter("nextInode", inodeBatch)` on the engine's shared connection, not
    /// counted as the session's. `None` when it failed (then the session allocates inline).
    fn prefetch_inodes(&mut self) -> Background<Option<i64>>;

    /// `doMknod`: the family's one mknod transaction, making the node as inode `ino`
    /// (already allocated), or saying what is there.
    fn do_mknod(
        &mut self,
        ctx: &Ctx,
        ino: Ino,
        node: &NewNode<'_>,
    ) -> impl Future<Output = Result<Made>> + Send;

    /// `doRename`: the family's one rename transaction, after [`Storage::check_and_walk_rename`],
    /// with what JuiceFS does inside it (a replaced file's data queued, the volume
    /// counters, a trash directory's dir stat). The dir stats and `dirParents` of both
    /// parents are `Meta::rename`'s.
    fn do_rename(
        &mut self,
        ctx: &Ctx,
        r: &Rename<'_>,
    ) -> impl Future<Output = Result<Renamed>> + Send;

    /// Refuses rename flags JuiceFS accepts but this family does not implement (before
    /// any I/O). Every flag `check_rename` lets through is supported by default.
    fn check_rename_flags(&self, _flags: u32) -> Result<()> {
        Ok(())
    }

    /// `doLink`: the family's link transaction (`baseMeta.Link` checked the names and read
    /// the inode). Returns the inode's new attribute.
    fn do_link(
        &mut self,
        ctx: &Ctx,
        ino: Ino,
        parent: Ino,
        name: &[u8],
    ) -> impl Future<Output = Result<Attr>> + Send;

    /// `doUnlink`: the family's unlink transaction, with what JuiceFS does inside it (the
    /// volume counters, queueing a freed file's data). Returns the removed entry's
    /// attribute (its type and length at least).
    fn do_unlink(
        &mut self,
        ctx: &Ctx,
        parent: Ino,
        name: &[u8],
    ) -> impl Future<Output = Result<Attr>> + Send;

    /// `doRmdir`: the family's rmdir transaction, with what JuiceFS does inside it (the
    /// volume counters). Returns the removed directory.
    fn do_rmdir(
        &mut self,
        ctx: &Ctx,
        parent: Ino,
        name: &[u8],
    ) -> impl Future<Output = Result<Ino>> + Send;

    /// `doLookup`: the entry `name` in `parent` with its attribute (no permission check);
    /// `.`, `..` and the root's `.trash` never reach it ([`crate::Meta::lookup`] answers them).
    fn do_lookup(
        &mut self,
        ctx: &Ctx,
        parent: Ino,
        name: &[u8],
    ) -> impl Future<Output = Result<(Ino, Attr)>> + Send;

    /// `doSetAttr`: the family's setattr transaction.
    fn do_setattr(
        &mut self,
        ctx: &Ctx,
        ino: Ino,
        set: &SetAttr,
    ) -> impl Future<Output = Result<Attr>> + Send;

    /// `doGetXattr`: an extended attribute's value; ENOATTR when there is none.
    fn do_getxattr(
        &mut self,
        ino: Ino,
        name: &[u8],
    ) -> impl Future<Output = Result<Vec<u8>>> + Send;

    /// `doListXattr`: the names of an inode's extended attributes.
    fn do_listxattr(&mut self, ino: Ino) -> impl Future<Output = Result<Vec<Vec<u8>>>> + Send;

    /// `doWrite`: appends a slice record to a chunk and updates the file's length and
    /// times.
    fn do_write(&mut self, ino: Ino, w: ChunkWrite) -> impl Future<Output = Result<()>> + Send;

    /// `Resolve` of the family: ENOTSUP, as in JuiceFS, unless the family resolves a path
    /// in one call (Redis with its Lua script loaded by a registered session).
    fn do_resolve(
        &mut self,
        _ctx: &Ctx,
        _parent: Ino,
        _path: &[u8],
    ) -> impl Future<Output = Result<(Ino, Attr)>> + Send {
        async { Err(MetaError::NotSupported) }
    }

    /// The engine's null round trip on this session's connection ([`crate::Meta::null_round_trip`]).
    fn do_null_round_trip(&mut self) -> impl Future<Output = Result<&'static str>> + Send;

    /// What this session has sent so far ([`crate::Meta::stats`]).
    fn session_stats(&self) -> SessionStats;

    /// `doGetAttr`: the inode's attribute as stored; `NotFound` when there is none.
    fn do_getattr(&mut self, ino: Ino) -> impl Future<Output = Result<Attr>> + Send;

    /// `doReadlink`: the stored target, empty when there is none.
    fn do_readlink(&mut self, ino: Ino) -> impl Future<Output = Result<Vec<u8>>> + Send;

    /// `doReaddir`: appends the entries of directory `ino` to `entries` (which holds `.`
    /// and `..`), with their attributes when `plus`.
    fn do_readdir(
        &mut self,
        ino: Ino,
        plus: bool,
        entries: &mut Vec<Entry>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// `doSetXattr`: sets an extended attribute (the name is not empty).
    fn do_setxattr(&mut self, ino: Ino, x: &Xattr<'_>) -> impl Future<Output = Result<()>> + Send;

    /// `doRemoveXattr`: removes an extended attribute (the name is not empty); ENOATTR
    /// when there is none.
    fn do_removexattr(&mut self, ino: Ino, name: &[u8]) -> impl Future<Output = Result<()>> + Send;

    /// `doRead`: the slice records of chunk `indx` as stored, empty when there are none.
    fn do_read(&mut self, ino: Ino, indx: u32) -> impl Future<Output = Result<Vec<Slice>>> + Send;

    /// `doGetParents`: the parents of a hard-linked file with their link counts, sorted.
    fn do_get_parents(&mut self, ino: Ino) -> impl Future<Output = Result<Vec<(Ino, i64)>>> + Send;

    /// `doUpdateDirStat`: adds a batch of buffered deltas (sorted by inode) to the stored
    /// dir stats, recomputing the records that are missing (`doSyncDirStat`).
    fn do_update_dir_stat(
        &mut self,
        batch: Vec<(Ino, DirStat)>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// `doFlushStats`: writes the buffered volume counters, taken with
    /// [`ClientState::take_pending_stats`], marking what was written (the rest goes back).
    fn do_flush_stats(&mut self) -> impl Future<Output = Result<()>> + Send;

    /// `doDeleteFileData`: frees a deleted file's chunks and its delete-queue record.
    fn do_delete_file_data(
        &mut self,
        ino: Ino,
        length: u64,
    ) -> impl Future<Output = Result<()>> + Send;

    /// `nextInode`: the next id of the current batch. When exactly `inodeNeedPrefetch` ids
    /// are left, the next batch is fetched in the background; when the batch is used up,
    /// the prefetched one is taken if it arrived, else one is allocated inline.
    fn next_inode(&mut self) -> impl Future<Output = Result<Ino>> + Send {
        async move {
            // `freeMu`, held across an inline allocation as JuiceFS holds it.
            let client = self.state().clone();
            let mut ids = client.ids().await;
            loop {
                if let Some((id, prefetch)) = ids.inodes.take() {
                    if prefetch {
                        let fetch = self.prefetch_inodes();
                        ids.inodes.prefetching(tokio::spawn(async move {
                            let v = fetch.await?;
                            Some(IdRange::ending_at(v as u64, INODE_BATCH))
                        }));
                    }
                    return Ok(id);
                }
                if ids.inodes.take_prefetched().await {
                    continue;
                }
                let v = self.incr_counter("nextInode", INODE_BATCH as i64).await?;
                ids.inodes.refill(IdRange::ending_at(v as u64, INODE_BATCH));
            }
        }
    }

    /// `baseMeta.Mknod`: the name's checks, the quota walk (`checkQuota`), a fresh inode
    /// (`nextInode`), `doMknod`, then the counters, the parent's dir stat and its quota
    /// walk (`updateDirQuota`). Returns the inode allocated and what `doMknod` found.
    fn make_node(
        &mut self,
        ctx: &Ctx,
        node: &NewNode<'_>,
    ) -> impl Future<Output = Result<(Ino, Made)>> + Send {
        async move {
            let parent = node.parent;
            check_new_entry(parent, node.name)?;
            self.quota_walk(parent).await;
            let ino = self.next_inode().await?;
            let made = self.do_mknod(ctx, ino, node).await?;
            if let Made::New(_) = made {
                let state = self.state();
                state.update_stats(align4k(0), 1);
                state.update_dir_stat(parent, 0, align4k(0), 1);
                if node.typ == FileType::Directory {
                    state.keep_dir_parent(ino, parent);
                }
                self.quota_walk(parent).await;
            }
            Ok((ino, made))
        }
    }

    /// `baseMeta.Rename` before `doRename`: the checks of the names and flags
    /// ([`check_rename`]) and the quota walks from both parents (`getQuotaParent`; none
    /// from the trash).
    fn check_and_walk_rename(
        &mut self,
        ctx: &Ctx,
        r: &Rename<'_>,
    ) -> impl Future<Output = Result<()>> + Send {
        async move {
            check_rename(ctx, r)?;
            self.check_rename_flags(r.flags)?;
            if !is_trash(r.parent_src) {
                self.quota_walk(r.parent_src).await;
            }
            if r.parent_src != r.parent_dst {
                self.quota_walk(r.parent_dst).await;
            }
            Ok(())
        }
    }

    /// `baseMeta.GetAttr`: `doGetAttr`, with the root and the trash answering even without
    /// a record, and a directory's parent kept for the quota walk.
    fn get_attr(&mut self, ino: Ino) -> impl Future<Output = Result<Attr>> + Send {
        async move {
            let attr = match self.do_getattr(ino).await {
                Err(MetaError::NotFound) => implicit_dir_attr(ino).ok_or(MetaError::NotFound)?,
                r => r?,
            };
            if attr.typ == FileType::Directory && ino != ROOT_INODE && !is_trash(attr.parent) {
                self.state().keep_dir_parent(ino, attr.parent);
            }
            Ok(attr)
        }
    }

    /// The walk up the tree that `checkDirQuota`, `updateDirQuota` and `getQuotaParent`
    /// do when dir stats are on: each ancestor missing from `dirParents` costs a
    /// `GetAttr`. With no quotas set, nothing else happens.
    fn quota_walk(&mut self, mut ino: Ino) -> impl Future<Output = ()> + Send {
        async move {
            if !self.state().dir_stats_on() {
                return;
            }
            for _ in 0..MAX_WALK {
                if ino <= ROOT_INODE {
                    return;
                }
                let cached = self.state().dir_parent(ino);
                ino = match cached {
                    Some(p) => p,
                    None => match self.get_attr(ino).await {
                        Ok(a) => a.parent,
                        Err(e) => {
                            tracing::debug!("get directory parent of inode {ino}: {e}");
                            return;
                        }
                    },
                };
            }
        }
    }

    /// `checkQuota(space, 0, …, parents)` inside a write, truncate or fallocate
    /// transaction: when the file grows by `space > 0` bytes and the volume keeps dir
    /// stats, the walk up from each parent (`checkDirQuota`). The parents are the
    /// family's `getParents`, which the transaction reads whether or not this walks.
    fn check_space_quota(
        &mut self,
        space: i64,
        parents: &[Ino],
    ) -> impl Future<Output = ()> + Send {
        async move {
            if space > 0 {
                for &p in parents {
                    self.quota_walk(p).await;
                }
            }
        }
    }

    /// `updateParentStat` with `updateDirQuota`: buffers a file's growth for its parent
    /// (or, for a hard-linked file, for the background flush to spread over its parents)
    /// and walks up from the parent.
    fn update_parent_stat(
        &mut self,
        ino: Ino,
        parent: Ino,
        length: i64,
        space: i64,
    ) -> impl Future<Output = ()> + Send {
        async move {
            self.state().buffer_parent_stat(ino, parent, length, space);
            if parent > 0 && (length != 0 || space != 0) {
                self.quota_walk(parent).await;
            }
        }
    }

    /// `NewSlice`: the next slice id, with one `incrCounter("nextChunk", sliceIdBatch)`
    /// per batch. The batch is refilled under `freeMu`, as JuiceFS holds it across the
    /// call; an id is taken without it ([`ClientState::take_slice_id`]).
    fn next_slice(&mut self) -> impl Future<Output = Result<u64>> + Send {
        async move {
            if let Some(id) = self.state_mut().take_slice_id() {
                return Ok(id);
            }
            let client = self.state().clone();
            let _free_mu = client.ids().await;
            loop {
                if let Some(id) = self.state_mut().take_slice_id() {
                    return Ok(id);
                }
                let v = self.incr_counter("nextChunk", SLICE_BATCH as i64).await?;
                client.slices().refill(v as u64);
            }
        }
    }

    /// `baseMeta.ReadLink` (noatime): the cached target, else `doReadlink`; a link
    /// without a target is EIO, a node that is not a link EINVAL.
    fn read_link(&mut self, ino: Ino) -> impl Future<Output = Result<Vec<u8>>> + Send {
        async move {
            let cached = self.state().data().cache.symlink(ino);
            if let Some(t) = cached {
                return Ok(t);
            }
            let target = self.do_readlink(ino).await?;
            if target.is_empty() {
                let attr = self.get_attr(ino).await?;
                return Err(crate::common::readlink_without_target(&attr));
            }
            self.state().data().cache.keep_symlink(ino, &target);
            Ok(target)
        }
    }

    /// `baseMeta.Readdir`: `GetAttr`, the read (and, with `plus`, search) permission, `.`
    /// and `..` (the root is its own parent), then `doReaddir`. A file lists as `.` and
    /// `..`: no type is checked.
    fn read_dir(
        &mut self,
        ctx: &Ctx,
        ino: Ino,
        plus: bool,
    ) -> impl Future<Output = Result<Vec<Entry>>> + Send {
        async move {
            let attr = self.get_attr(ino).await?;
            access(ctx, &attr, if plus { 0o5 } else { 0o4 })?;
            let up = if ino == ROOT_INODE {
                ROOT_INODE
            } else {
                attr.parent
            };
            let dir = |name: &[u8], inode| Entry {
                name: name.to_vec(),
                inode,
                attr: Attr::type_only(FileType::Directory),
            };
            let mut entries = vec![dir(b".", ino), dir(b"..", up)];
            self.do_readdir(ino, plus, &mut entries).await?;
            Ok(entries)
        }
    }

    /// `baseMeta.Read`: the cached chunk, else `doRead`; an empty chunk is checked with
    /// `doGetAttr` (ENOENT for a missing inode, EPERM for one that is not a file) and not
    /// cached.
    fn read_chunk(
        &mut self,
        ino: Ino,
        indx: u32,
    ) -> impl Future<Output = Result<Vec<Slice>>> + Send {
        async move {
            if let Some(s) = self.state().cached_chunk(ino, indx) {
                return Ok(s.to_vec());
            }
            let slices = self.do_read(ino, indx).await?;
            if slices.is_empty() {
                if self.do_getattr(ino).await?.typ != FileType::File {
                    return Err(MetaError::Perm);
                }
                return Ok(slices);
            }
            self.state().data().cache.keep_chunk(ino, indx, &slices);
            Ok(slices)
        }
    }

    /// `NewSession(true)`: a session id from the `nextSession` counter, then
    /// `doNewSession`, with a fresh id while the family finds the id taken (EEXIST: SQL's
    /// duplicate `session2` row). The id is listed in `registry` before its record is
    /// written, so a record whose write was cut short (a timeout, a lost reply) is still
    /// removed at the end; an id found taken is another client's and is never listed.
    /// The session refreshes its record every [`HEARTBEAT`] from then on
    /// ([`Storage::flush_background`]).
    fn register(&mut self, registry: &SessionRegistry) -> impl Future<Output = Result<u64>> + Send {
        async move {
            for _ in 0..session::MAX_TAKEN_IDS {
                let sid = self.incr_counter("nextSession", 1).await? as u64;
                registry.opened(sid);
                self.state().data().sid = sid;
                match self.do_new_session(&session_info()).await {
                    Ok(()) => {
                        self.state().data().registered =
                            Some((registry.clone(), session::next_heartbeat()));
                        return Ok(sid);
                    }
                    Err(MetaError::Exists) => {
                        tracing::warn!("session id {sid} is already used");
                        registry.closed(sid);
                    }
                    Err(e) => {
                        self.state().data().sid = 0;
                        return Err(e);
                    }
                }
            }
            self.state().data().sid = 0;
            Err(MetaError::Engine(
                "no free session id: every id taken from nextSession was in use".into(),
            ))
        }
    }

    /// `refresh`'s heartbeat: `doRefreshSession` once the registered session's
    /// [`HEARTBEAT`] (with jitter) has passed. Of a client's workers, the first to find it
    /// due sends it.
    fn heartbeat_if_due(&mut self) -> impl Future<Output = Result<()>> + Send {
        async move {
            let due = {
                let mut d = self.state().data();
                let sid = d.sid;
                match &mut d.registered {
                    Some((registry, _)) if !registry.is_open(sid) => {
                        // The engine removed the record (a run's clean-up): nothing to
                        // refresh, and refreshing would write it back.
                        d.registered = None;
                        d.sid = 0;
                        false
                    }
                    Some((_, at)) if *at <= std::time::Instant::now() => {
                        *at = session::next_heartbeat();
                        true
                    }
                    _ => false,
                }
            };
            if !due {
                return Ok(());
            }
            self.do_refresh_session().await
        }
    }

    /// `CloseSession`: the background work (all of it, where `FlushSession` flushes the
    /// stats), then the session's record removed (`doCleanStaleSession`) when it was
    /// registered. The first error is returned; the record is forgotten only once removed.
    fn close_session(&mut self) -> impl Future<Output = Result<()>> + Send {
        async move {
            let flushed = self.flush_background().await;
            let sid = self.state().sid();
            if sid > 0 {
                if let Err(e) = self.do_clean_stale_session(sid).await {
                    return flushed.and(Err(e));
                }
                let mut d = self.state().data();
                if let Some((registry, _)) = d.registered.take() {
                    registry.closed(sid);
                }
                d.sid = 0;
            }
            flushed
        }
    }

    /// What a JuiceFS client does in the background, in this order: a registered
    /// session's heartbeat when due (`refresh`), the dir stats of
    /// hard-linked files' parents (`updateParentStat`'s goroutine), the dir-stat flush
    /// (`doFlushDirStat`), the counter flush (`doFlushStats`) and freeing deleted files'
    /// data (`doDeleteFileData`). Every step runs and every file is tried; the first error
    /// is returned, and files not freed stay queued.
    fn flush_background(&mut self) -> impl Future<Output = Result<()>> + Send {
        async move {
            let mut first: Option<MetaError> = self.heartbeat_if_due().await.err();
            let link_writes = std::mem::take(&mut self.state().data().link_writes);
            for (ino, length, space) in link_writes {
                match self.do_get_parents(ino).await {
                    Ok(parents) => {
                        for (p, n) in parents {
                            self.state().update_dir_stat(p, length * n, space * n, 0);
                            self.quota_walk(p).await;
                        }
                    }
                    Err(e) => {
                        first.get_or_insert(e);
                    }
                }
            }
            let batch = self.state().data().dir_stats.drain();
            if self.state().dir_stats_on() && !batch.is_empty() {
                if let Err(e) = self.do_update_dir_stat(batch).await {
                    first.get_or_insert(e);
                }
            }
            if let Err(e) = self.do_flush_stats().await {
                first.get_or_insert(e);
            }
            if let Err(e) = self.free_deleted_files().await {
                first.get_or_insert(e);
            }
            first.map_or(Ok(()), Err)
        }
    }

    /// Frees the data of the deleted files (`doDeleteFileData`), each on its own, as
    /// JuiceFS does: a file that fails goes back in the queue for the next try; the first
    /// error is returned. The queue is taken whole first, so two workers of one client
    /// freeing at once never free one file twice.
    fn free_deleted_files(&mut self) -> impl Future<Output = Result<()>> + Send {
        async move {
            let mut files = std::mem::take(&mut self.state().data().deleted);
            let mut first: Option<MetaError> = None;
            while let Some((ino, length)) = files.pop() {
                // Out of the queue only while freed: a pass cancelled half-way (the op
                // timeout) puts this file and the rest back when dropped.
                let mut rest = std::mem::take(&mut files);
                rest.push((ino, length));
                let rest = PutBack {
                    state: self.state().clone(),
                    files: rest,
                };
                let freed = self.do_delete_file_data(ino, length).await;
                files = rest.keep();
                if let Err(e) = freed {
                    first.get_or_insert(e);
                    self.state().data().deleted.push((ino, length));
                }
            }
            first.map_or(Ok(()), Err)
        }
    }
}

/// Deleted files taken out of the queue while one of them is freed; dropped without
/// [`PutBack::keep`] (the pass was cancelled), they go back in the queue.
struct PutBack {
    state: ClientState,
    files: Vec<(Ino, u64)>,
}

impl PutBack {
    /// The files but the last (the one being freed), for the pass to go on with.
    fn keep(mut self) -> Vec<(Ino, u64)> {
        let mut files = std::mem::take(&mut self.files);
        files.pop();
        files
    }
}

impl Drop for PutBack {
    fn drop(&mut self) {
        if !self.files.is_empty() {
            self.state.data().deleted.append(&mut self.files);
        }
    }
}
