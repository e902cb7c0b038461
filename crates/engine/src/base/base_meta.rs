//! `baseMeta` (`pkg/meta/base.go`): the client logic every family shares, written once over
//! a family's [`Storage`] steps, in the order base.go reads. [`Meta`] is implemented here
//! for every [`Storage`], each operation as its `baseMeta` method: `Mkdir` builds a
//! [`NewNode`] and calls [`BaseMeta::make_node`] (`baseMeta.Mknod`: the checks, the
//! quota walk, `nextInode`), which calls the family's [`Storage::do_mknod`].
//!
//! A call costs one boxed future (the `dyn Meta` the runner holds), a slice id from the
//! client's batch or a cached chunk none ([`Meta::take_slice_id`], [`Meta::read_cached`]);
//! the steps and the helpers under it are plain `impl Future`s.

use super::ids::{IdRange, INODE_BATCH, SLICE_BATCH};
use super::session::{self, session_info, SessionRegistry};
use super::state::ClientState;
use super::storage::Storage;
use crate::rules::{
    access, check_fallocate_args, check_new_entry, check_rename, check_rmdir, check_unlink,
    implicit_dir_attr, is_trash, readlink_without_target, MAX_SYMLINK, RENAME_EXCHANGE, TRASH_NAME,
};
use crate::types::{
    ChunkWrite, Ctx, Entry, FallocRange, Made, NewNode, Rename, Renamed, SetAttr, Xattr, XattrFlags,
};
use crate::{Meta, MetaError, Result, SessionStats};
use async_trait::async_trait;
use metabench_schema::{align4k, Attr, FileType, Ino, Slice, Timestamp, ROOT_INODE, TRASH_INODE};
use std::future::Future;
use std::sync::Arc;

/// How far the quota walk climbs before it gives up (a loop in the tree).
const MAX_WALK: usize = 4096;

/// `maxFileSize` of the VFS (`pkg/vfs/vfs.go`): `ChunkSize << 31`. A truncate or
/// fallocate that reaches it is EFBIG there, before the metadata client is called.
const MAX_FILE_SIZE: u64 = metabench_schema::CHUNK_SIZE << 31;

/// What `Mkdir`, `Mknod` and `Symlink` answer: the new node, or EEXIST.
fn created((ino, made): (Ino, Made)) -> Result<(Ino, Attr)> {
    match made {
        Made::New(attr) => Ok((ino, attr)),
        Made::Existing(..) => Err(MetaError::Exists),
    }
}

/// What `Create` without `O_EXCL` answers: the new node, or the existing regular file.
fn created_or_existing_file((ino, made): (Ino, Made)) -> Result<(Ino, Attr)> {
    match made {
        Made::New(attr) => Ok((ino, attr)),
        Made::Existing(ino, Some(attr)) if attr.typ == FileType::File => Ok((ino, attr)),
        Made::Existing(..) => Err(MetaError::Exists),
    }
}

/// `baseMeta.Rename` after `doRename`: the moved directory's new parent, the dir stats of
/// both parents, and those of the entry replaced or exchanged (with no quotas loaded, the
/// `updateDirQuota` calls do nothing). An entry that did not move counts with JuiceFS's
/// zero attribute: no length, no `dirParents` change.
fn rename_bookkeeping(state: &ClientState, r: &Rename<'_>, done: &Renamed) {
    let (ps, pd) = (r.parent_src, r.parent_dst);
    let exchange = r.flags == RENAME_EXCHANGE;
    let length = |attr: &Attr| {
        if attr.typ == FileType::File {
            attr.length
        } else {
            0
        }
    };
    let mut moved = 0;
    if done.moved {
        if done.attr.typ == FileType::Directory {
            state.keep_dir_parent(done.ino, pd);
        }
        moved = length(&done.attr);
    }
    if ps != pd {
        state.update_dir_stat(ps, -(moved as i64), -align4k(moved), -1);
        state.update_dir_stat(pd, moved as i64, align4k(moved), 1);
    }
    if let Some((tino, tattr)) = &done.target {
        if tattr.typ == FileType::Directory {
            if !exchange {
                state.forget_dir_parent(*tino);
            } else if ps != pd {
                state.keep_dir_parent(*tino, ps);
            }
        }
        let t = length(tattr);
        if ps != pd || !exchange {
            state.update_dir_stat(pd, -(t as i64), -align4k(t), -1);
        }
        if ps != pd && exchange {
            state.update_dir_stat(ps, t as i64, align4k(t), 1);
        }
    }
}

#[async_trait]
impl<S: Storage> Meta for S {
    async fn mkdir(
        &mut self,
        ctx: &Ctx,
        parent: Ino,
        name: &[u8],
        mode: u16,
        umask: u16,
    ) -> Result<(Ino, Attr)> {
        let node = NewNode::new(parent, name, FileType::Directory, mode, umask);
        created(self.make_node(ctx, &node).await?)
    }

    async fn mknod(
        &mut self,
        ctx: &Ctx,
        parent: Ino,
        name: &[u8],
        typ: FileType,
        mode: u16,
        umask: u16,
        rdev: u32,
    ) -> Result<(Ino, Attr)> {
        if typ == FileType::Symlink {
            return Err(MetaError::Invalid);
        }
        let node = NewNode {
            rdev,
            ..NewNode::new(parent, name, typ, mode, umask)
        };
        created(self.make_node(ctx, &node).await?)
    }

    async fn create(
        &mut self,
        ctx: &Ctx,
        parent: Ino,
        name: &[u8],
        mode: u16,
        umask: u16,
    ) -> Result<(Ino, Attr)> {
        let node = NewNode::new(parent, name, FileType::File, mode, umask);
        created_or_existing_file(self.make_node(ctx, &node).await?)
    }

    async fn symlink(
        &mut self,
        ctx: &Ctx,
        parent: Ino,
        name: &[u8],
        target: &[u8],
    ) -> Result<(Ino, Attr)> {
        if target.is_empty() || target.len() > MAX_SYMLINK || target.contains(&0) {
            return Err(MetaError::Invalid);
        }
        let node = NewNode {
            target,
            ..NewNode::new(parent, name, FileType::Symlink, 0o777, 0)
        };
        created(self.make_node(ctx, &node).await?)
    }

    /// `baseMeta.Link`: the name's checks, `GetAttr` (a directory is EPERM), the quota
    /// walk (`checkDirQuota`), `doLink`, then the parent's dir stat and its quota walk
    /// (`updateDirQuota`).
    async fn link(&mut self, ctx: &Ctx, ino: Ino, parent: Ino, name: &[u8]) -> Result<Attr> {
        check_new_entry(parent, name)?;
        if self.get_attr(ino).await?.typ == FileType::Directory {
            return Err(MetaError::Perm);
        }
        self.quota_walk(parent).await;
        let attr = self.do_link(ctx, ino, parent, name).await?;
        let length = attr.length;
        self.state()
            .update_dir_stat(parent, length as i64, align4k(length), 1);
        self.quota_walk(parent).await;
        Ok(attr)
    }

    /// `baseMeta.Unlink`: its checks, `doUnlink`, then the parent's dir stat and, outside
    /// the trash, its quota walk (`updateDirQuota`).
    async fn unlink(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<()> {
        check_unlink(ctx, parent, name)?;
        let attr = self.do_unlink(ctx, parent, name).await?;
        let length = if attr.typ == FileType::File {
            attr.length
        } else {
            0
        };
        self.state()
            .update_dir_stat(parent, -(length as i64), -align4k(length), -1);
        if !is_trash(parent) {
            self.quota_walk(parent).await;
        }
        Ok(())
    }

    /// `baseMeta.Rmdir`: its checks, `doRmdir`, then forgetting the directory's parent
    /// (outside the trash), the parent's dir stat and its quota walk (`updateDirQuota`,
    /// from a trash directory too).
    async fn rmdir(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<()> {
        check_rmdir(ctx, parent, name)?;
        let ino = self.do_rmdir(ctx, parent, name).await?;
        let state = self.state();
        if !is_trash(parent) {
            state.forget_dir_parent(ino);
        }
        state.update_dir_stat(parent, 0, -align4k(0), -1);
        self.quota_walk(parent).await;
        Ok(())
    }

    async fn rename(
        &mut self,
        ctx: &Ctx,
        parent_src: Ino,
        name_src: &[u8],
        parent_dst: Ino,
        name_dst: &[u8],
        flags: u32,
    ) -> Result<(Ino, Attr)> {
        let r = Rename {
            parent_src,
            name_src,
            parent_dst,
            name_dst,
            flags,
        };
        self.check_and_walk_rename(ctx, &r).await?;
        let done = self.do_rename(ctx, &r).await?;
        rename_bookkeeping(self.state(), &r, &done);
        Ok((done.ino, done.attr))
    }

    /// `baseMeta.Lookup` (no permission check, as the Go benchmark calls it): `..` of the
    /// root is the root, `.` and `..` are `GetAttr`s, `.trash` at the root is the trash;
    /// anything else is `doLookup`, and a directory found keeps its parent.
    async fn lookup(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<(Ino, Attr)> {
        let name = if name == b".." && parent == ROOT_INODE {
            b"."
        } else {
            name
        };
        if name == b".." {
            let attr = self.get_attr(parent).await?;
            if attr.typ != FileType::Directory {
                return Err(MetaError::NotDir);
            }
            return Ok((attr.parent, self.get_attr(attr.parent).await?));
        }
        if name == b"." {
            return Ok((parent, self.get_attr(parent).await?));
        }
        if parent == ROOT_INODE && name == TRASH_NAME {
            return Ok((TRASH_INODE, self.get_attr(TRASH_INODE).await?));
        }
        let (ino, attr) = self.do_lookup(ctx, parent, name).await?;
        if attr.typ == FileType::Directory && !is_trash(parent) {
            self.state().keep_dir_parent(ino, parent);
        }
        Ok((ino, attr))
    }

    async fn resolve(&mut self, ctx: &Ctx, parent: Ino, path: &[u8]) -> Result<(Ino, Attr)> {
        self.do_resolve(ctx, parent, path).await
    }

    async fn getattr(&mut self, ino: Ino) -> Result<Attr> {
        self.get_attr(ino).await
    }

    async fn setattr(&mut self, ctx: &Ctx, ino: Ino, set: &SetAttr) -> Result<Attr> {
        self.do_setattr(ctx, ino, set).await
    }

    async fn access(&mut self, ctx: &Ctx, ino: Ino, mask: u16) -> Result<()> {
        if ctx.uid == 0 {
            return Ok(());
        }
        let attr = self.get_attr(ino).await?;
        access(ctx, &attr, mask)
    }

    async fn readdir(&mut self, ctx: &Ctx, ino: Ino, plus: bool) -> Result<Vec<Entry>> {
        self.read_dir(ctx, ino, plus).await
    }

    async fn list_dir(&mut self, ctx: &Ctx, ino: Ino, plus: bool) -> Result<u64> {
        self.list_dir_pages(ctx, ino, plus).await
    }

    async fn setxattr(
        &mut self,
        ino: Ino,
        name: &[u8],
        value: &[u8],
        flags: XattrFlags,
    ) -> Result<()> {
        if name.is_empty() {
            return Err(MetaError::Invalid);
        }
        self.do_setxattr(ino, &Xattr { name, value, flags }).await
    }

    async fn getxattr(&mut self, ino: Ino, name: &[u8]) -> Result<Vec<u8>> {
        self.do_getxattr(ino, name).await
    }

    async fn removexattr(&mut self, ino: Ino, name: &[u8]) -> Result<()> {
        if name.is_empty() {
            return Err(MetaError::Invalid);
        }
        self.do_removexattr(ino, name).await
    }

    async fn listxattr(&mut self, ino: Ino) -> Result<Vec<Vec<u8>>> {
        self.do_listxattr(ino).await
    }

    async fn readlink(&mut self, ino: Ino) -> Result<Vec<u8>> {
        self.read_link(ino).await
    }

    async fn new_slice(&mut self) -> Result<u64> {
        self.next_slice().await
    }

    fn take_slice_id(&mut self) -> Option<u64> {
        self.state_mut().take_slice_id()
    }

    async fn write(&mut self, ino: Ino, indx: u32, slice: Slice, mtime: Timestamp) -> Result<()> {
        self.do_write(ino, ChunkWrite { indx, slice, mtime }).await
    }

    async fn read(&mut self, ino: Ino, indx: u32) -> Result<Vec<Slice>> {
        self.read_chunk(ino, indx).await
    }

    fn read_cached(&self, ino: Ino, indx: u32) -> Option<Arc<[Slice]>> {
        self.state().cached_chunk(ino, indx)
    }

    async fn truncate(&mut self, ctx: &Ctx, ino: Ino, length: u64) -> Result<Attr> {
        if length >= MAX_FILE_SIZE {
            return Err(MetaError::TooBig);
        }
        let done = self.do_truncate(ctx, ino, length).await;
        self.state().data().cache.forget_file(ino);
        let r = done?;
        self.update_parent_stat(ino, r.attr.parent, r.length, r.space)
            .await;
        Ok(r.attr)
    }

    async fn fallocate(&mut self, ctx: &Ctx, ino: Ino, range: FallocRange) -> Result<u64> {
        // The VFS's checks first (`VFS.Fallocate`: a size of 0, then EFBIG), then base's.
        if range.size == 0 {
            return Err(MetaError::Invalid);
        }
        match range.off.checked_add(range.size) {
            Some(end) if range.off < MAX_FILE_SIZE && end < MAX_FILE_SIZE => {}
            _ => return Err(MetaError::TooBig),
        }
        check_fallocate_args(range)?;
        let done = self.do_fallocate(ctx, ino, range).await;
        self.state().data().cache.forget_file(ino);
        let r = done?;
        self.update_parent_stat(ino, r.attr.parent, r.length, r.space)
            .await;
        Ok(r.attr.length)
    }

    async fn flush(&mut self) -> Result<()> {
        self.flush_background().await
    }

    fn sid(&mut self) -> u64 {
        self.state().sid()
    }

    fn client(&self) -> ClientState {
        self.state().clone()
    }

    async fn close(&mut self) -> Result<()> {
        self.close_session().await
    }

    async fn clean_session(&mut self, sid: u64) -> Result<()> {
        self.do_clean_stale_session(sid).await
    }

    fn deleted_pending(&mut self) -> usize {
        self.state().deleted_pending()
    }

    async fn free_deleted(&mut self) -> Result<()> {
        self.free_deleted_files().await
    }

    async fn null_round_trip(&mut self) -> Result<&'static str> {
        self.do_null_round_trip().await
    }

    fn stats(&self) -> SessionStats {
        SessionStats {
            heartbeats: self.state().data().heartbeats,
            ..self.session_stats()
        }
    }
}

/// `baseMeta`'s methods under [`Meta`]'s operations: `nextInode`, `Mknod`, `Rename`'s
/// checks and walks, `GetAttr`, the quota walk, `updateParentStat`, `NewSlice`,
/// `ReadLink`, `Readdir`, `Read`, the session's registration, heartbeat and close, and
/// the background flush. Every [`Storage`] has them; a family implements none.
pub trait BaseMeta: Storage {
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
                return Err(readlink_without_target(&attr));
            }
            self.state().data().cache.keep_symlink(ino, &target);
            Ok(target)
        }
    }

    /// The start of both ways of reading a directory (`Readdir`, `NewDirHandler`): its
    /// `GetAttr` and the read (and, with `plus`, search) permission. The inode `..` names
    /// (the root is its own parent).
    fn open_dir(
        &mut self,
        ctx: &Ctx,
        ino: Ino,
        plus: bool,
    ) -> impl Future<Output = Result<Ino>> + Send {
        async move {
            let attr = self.get_attr(ino).await?;
            access(ctx, &attr, if plus { 0o5 } else { 0o4 })?;
            Ok(if ino == ROOT_INODE {
                ROOT_INODE
            } else {
                attr.parent
            })
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
            let up = self.open_dir(ctx, ino, plus).await?;
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

    /// `baseMeta.NewDirHandler` and the handler's `List` calls to the end: the directory's
    /// attribute and access check (r, and x when `plus`), the parent's attribute for
    /// `..` when `plus` (not for the root, its own parent), then the engine's pages
    /// ([`Storage::do_list_dir`]). Counts `.` and `..` with the entries.
    fn list_dir_pages(
        &mut self,
        ctx: &Ctx,
        ino: Ino,
        plus: bool,
    ) -> impl Future<Output = Result<u64>> + Send {
        async move {
            let up = self.open_dir(ctx, ino, plus).await?;
            if plus && up != ino {
                self.get_attr(up).await?;
            }
            Ok(2 + self.do_list_dir(ino, plus).await?)
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
    /// ([`BaseMeta::flush_background`]).
    fn register(&mut self, registry: &SessionRegistry) -> impl Future<Output = Result<u64>> + Send {
        async move {
            for _ in 0..session::MAX_TAKEN_IDS {
                let sid = self.incr_counter("nextSession", 1).await? as u64;
                registry.opened(sid);
                self.state().data().sid = sid;
                let written = {
                    let _turn = registry.turn().await;
                    self.do_new_session(&session_info()).await
                };
                match written {
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
    /// due sends it, when one of the process's turns
    /// ([`session::SESSION_WRITES_AT_ONCE`]) is free; otherwise it stays due.
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
                        None
                    }
                    Some((registry, at)) if *at <= std::time::Instant::now() => {
                        Some(registry.clone())
                    }
                    _ => None,
                }
            };
            let Some(registry) = due else {
                return Ok(());
            };
            let Some(_turn) = registry.try_turn() else {
                return Ok(());
            };
            {
                let mut d = self.state().data();
                if let Some((_, at)) = &mut d.registered {
                    if *at > std::time::Instant::now() {
                        // Another worker of this client sent it meanwhile.
                        return Ok(());
                    }
                    *at = session::next_heartbeat();
                }
                d.heartbeats += 1;
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

impl<S: Storage + ?Sized> BaseMeta for S {}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SessionOptions;
    use metabench_schema::DirStat;

    fn attr(typ: FileType, length: u64) -> Attr {
        Attr {
            length,
            ..Attr::type_only(typ)
        }
    }

    fn rename(flags: u32) -> Rename<'static> {
        Rename {
            parent_src: 10,
            name_src: b"a",
            parent_dst: 20,
            name_dst: b"b",
            flags,
        }
    }

    fn stat(length: i64, space: i64, inodes: i64) -> DirStat {
        DirStat {
            length,
            space,
            inodes,
        }
    }

    #[test]
    fn rename_bookkeeping_follows_base_rename() {
        // A 5000-byte file replaces a 100-byte file in another directory.
        let s = ClientState::new(true, &SessionOptions::default());
        let done = Renamed {
            ino: 7,
            attr: attr(FileType::File, 5000),
            moved: true,
            target: Some((8, attr(FileType::File, 100))),
        };
        rename_bookkeeping(&s, &rename(0), &done);
        assert_eq!(
            s.data().dir_stats.drain(),
            vec![(10, stat(-5000, -8192, -1)), (20, stat(4900, 4096, 0))]
        );

        // A directory exchanged with a directory: each keeps the other's old parent.
        let s = ClientState::new(true, &SessionOptions::default());
        let done = Renamed {
            ino: 7,
            attr: attr(FileType::Directory, 4096),
            moved: true,
            target: Some((8, attr(FileType::Directory, 4096))),
        };
        rename_bookkeeping(&s, &rename(RENAME_EXCHANGE), &done);
        assert_eq!((s.dir_parent(7), s.dir_parent(8)), (Some(20), Some(10)));
        assert_eq!(
            s.data().dir_stats.drain(),
            vec![(10, stat(0, 0, 0)), (20, stat(0, 0, 0))]
        );

        // Two names of one inode: nothing moved, yet both parents count an entry of no
        // length (align4K(0) is 4096), as JuiceFS does with the zero attribute doRename
        // leaves.
        let s = ClientState::new(true, &SessionOptions::default());
        let done = Renamed {
            ino: 7,
            attr: attr(FileType::File, 5000),
            moved: false,
            target: None,
        };
        rename_bookkeeping(&s, &rename(0), &done);
        assert_eq!(
            s.data().dir_stats.drain(),
            vec![(10, stat(0, -4096, -1)), (20, stat(0, 4096, 1))]
        );
    }
}
