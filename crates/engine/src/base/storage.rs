//! The storage steps of one engine family: JuiceFS's `engine` interface
//! (`pkg/meta/base.go`, the `do*` methods that `redis.go`, `sql.go` and `tkv.go`
//! implement). A family implements these and nothing else of the client; the client
//! logic over them (`baseMeta`) is [`super::BaseMeta`].

use super::state::ClientState;
use crate::types::{
    ChunkWrite, Ctx, Entry, FallocRange, Made, NewNode, Rename, Renamed, Resized, SetAttr, Xattr,
};
use crate::{MetaError, Result, SessionStats};
use metabench_schema::{Attr, DirStat, Ino, Slice};
use std::future::Future;

/// Work a session hands to a background task (it must own what it uses).
pub type Background<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// [`Storage::state`] and [`Storage::state_mut`] for a session that keeps its
/// [`ClientState`] in field `$field`: each family's session holds the client's state as
/// JuiceFS's `redisMeta`, `dbMeta` and `kvMeta` embed `*baseMeta`, written once here.
macro_rules! client_state_in {
    ($field:ident) => {
        fn state(&self) -> &$crate::base::ClientState {
            &self.$field
        }

        fn state_mut(&mut self) -> &mut $crate::base::ClientState {
            &mut self.$field
        }
    };
}
pub(crate) use client_state_in;

/// The steps of JuiceFS's `engine` interface that resize a file, implemented by each
/// family beside its transactions (`resize.rs`).
pub trait ResizeSteps: Send {
    /// `doTruncate` with flags 0 and the permission checked: the family's truncate
    /// transaction ([`crate::rules::resize`]'s checks and holes), with `checkQuota` inside it
    /// ([`super::BaseMeta::check_space_quota`]).
    fn do_truncate(
        &mut self,
        ctx: &Ctx,
        ino: Ino,
        length: u64,
    ) -> impl Future<Output = Result<Resized>> + Send;

    /// `doFallocate`: the family's fallocate transaction ([`crate::rules::resize`]'s checks,
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

    /// `doRename`: the family's one rename transaction, after [`super::BaseMeta::check_and_walk_rename`],
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

    /// The listing of `newDirHandler` and its fetcher, page by page to the end (the
    /// entries after `.` and `..`, with their attributes when `plus`): how many entries.
    fn do_list_dir(&mut self, ino: Ino, plus: bool) -> impl Future<Output = Result<u64>> + Send;

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
}
