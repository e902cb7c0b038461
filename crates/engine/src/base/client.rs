//! The one implementation of [`Meta`]: `baseMeta`'s methods (`pkg/meta/base.go`) over any
//! family's [`Storage`] steps. A call costs one boxed future (the `dyn Meta` the runner
//! holds), a slice id from the client's batch or a cached chunk none
//! ([`Meta::take_slice_id`], [`Meta::read_cached`]); the steps and the helpers under it
//! are plain `impl Future`s.

use super::{ClientState, Storage};
use crate::common::{
    check_new_entry, check_rmdir, check_unlink, is_trash, RENAME_EXCHANGE, TRASH_NAME,
};
use crate::meta::{ChunkWrite, NewNode, Rename, Renamed, SetAttr, Xattr};
use crate::resize::{check_fallocate_args, FallocRange};
use crate::{Ctx, Entry, Made, Meta, MetaError, Result, SessionStats, XattrFlags};
use async_trait::async_trait;
use metabench_schema::{align4k, Attr, FileType, Ino, Slice, Timestamp, ROOT_INODE, TRASH_INODE};
use std::sync::Arc;

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
        if target.is_empty() || target.len() > crate::common::MAX_SYMLINK || target.contains(&0) {
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
        crate::common::access(ctx, &attr, mask)
    }

    async fn readdir(&mut self, ctx: &Ctx, ino: Ino, plus: bool) -> Result<Vec<Entry>> {
        self.read_dir(ctx, ino, plus).await
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
        self.session_stats()
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
