//! [`TkvSession`]: one JuiceFS client of the TKV family. Its storage steps ([`Storage`])
//! are written once over [`Txn`]: the same `kvtxn` calls in the
//! same order as `pkg/meta/tkv.go`, with SkipDirMtime and SkipDirNlink as the session's
//! options say (sid 0, TrashDays treated as 0); rename is in `rename.rs`, the client
//! logic over them in [`crate::base`]. Backends only move bytes.

use super::kv::{txn, CallCounter, KeyRange, KvBackend, TxErr, Txn};
use super::reads::{parents_of, quota_parents};
use crate::base::{Background, BaseMeta, ClientState, Storage, INODE_BATCH};
use crate::meta::{Ctx, Entry, SetAttr, XattrFlags};
use crate::retry::decode_attr as decode;
use crate::rules::ParentRule;
use crate::rules::{
    check_not_pinned, check_parent_to_add, check_parent_to_remove, check_sticky, is_trash,
    looked_up_attr, merge_attr, new_child_attr, orphan_attr, parent_gains, RENAME_NOREPLACE,
};
use crate::{ChunkWrite, Made, MetaError, NewNode, Rename, Renamed, Result, SessionStats, Xattr};
use metabench_schema::tkv::TkvKeys;
use metabench_schema::{
    align4k, Attr, Dentry, DirStat, FileType, Format, Ino, Slice, Timestamp, TRASH_INODE,
};
use std::sync::Arc;

/// Attributes fetched per `gets` by readdir (`fillAttr` batch).
const READDIR_BATCH: usize = 4096;
/// Directories per dir-stat flush transaction (`groupBatch(batch, 20)`).
const DIR_STAT_GROUP: usize = 20;
const SLICE_BYTES: usize = 24;

/// One JuiceFS client on a TKV volume.
pub struct TkvSession {
    pub(super) kv: Arc<dyn KvBackend>,
    pub(super) calls: CallCounter,
    pub(super) keys: TkvKeys,
    format: Format,
    pub(super) retries: u64,
    /// ns of attempts that conflicted and were retried ([`SessionStats::retry_waste_ns`]).
    pub(super) retry_waste_ns: u64,
    /// Their round trips ([`SessionStats::retried_round_trips`]).
    pub(super) retried_round_trips: u64,
    /// What the client keeps between calls (`baseMeta`'s fields).
    pub(super) base: ClientState,
}

/// `deleteKeys(prefix)`: a keys-only scan of the prefix, then a delete of each key.
pub(super) async fn delete_keys(tx: &mut Txn, prefix: &[u8]) -> std::result::Result<(), TxErr> {
    for (k, _) in tx
        .scan(KeyRange::new(prefix, &TkvKeys::prefix_end(prefix)).keys_only())
        .await?
    {
        tx.delete(&k);
    }
    Ok(())
}

impl TkvSession {
    pub(super) fn new(
        kv: Arc<dyn KvBackend>,
        calls: CallCounter,
        keys: TkvKeys,
        format: Format,
        base: ClientState,
    ) -> Self {
        Self {
            base,
            kv,
            calls,
            keys,
            format,
            retries: 0,
            retry_waste_ns: 0,
            retried_round_trips: 0,
        }
    }

    /// The volume format this session loaded at start.
    pub fn format(&self) -> &Format {
        &self.format
    }

    /// A `simpleTxn` (read-only; never committed).
    fn simple(&self) -> Txn {
        Txn::simple(self.kv.clone(), self.calls.clone())
    }

    /// `doFlushStats`: one `incrCounter` transaction per non-zero counter.
    async fn flush_stats(&mut self) -> Result<()> {
        let mut taken = self.base.take_pending_stats();
        let (space, inodes) = (taken.space, taken.inodes);
        if space != 0 {
            self.incr_counter("usedSpace", space).await?;
            taken.space_written();
        }
        if inodes != 0 {
            self.incr_counter("totalInodes", inodes).await?;
            taken.inodes_written();
        }
        Ok(())
    }

    /// `doUpdateDirStat`: per 20 directories `T{gets U…; set U…}`; missing or negative
    /// records are recomputed by `doSyncDirStat`.
    async fn update_dir_stats(&mut self, batch: Vec<(Ino, DirStat)>) -> Result<()> {
        let mut sync = Vec::new();
        for group in batch.chunks(DIR_STAT_GROUP) {
            let keys: Vec<Vec<u8>> = group.iter().map(|(i, _)| self.keys.dir_stat(*i)).collect();
            let missing = txn!(self, |tx| {
                let mut missing = Vec::new();
                for (i, raw) in tx.gets(&keys).await?.into_iter().enumerate() {
                    let (ino, delta) = group[i];
                    let Some(raw) = raw else {
                        missing.push(ino);
                        continue;
                    };
                    let mut st = DirStat::decode(&raw)?;
                    st.add(delta);
                    if st.length < 0 || st.space < 0 || st.inodes < 0 {
                        missing.push(ino);
                        continue;
                    }
                    tx.set(&keys[i], &st.encode()).await?;
                }
                Ok(missing)
            })?;
            sync.extend(missing);
        }
        for ino in sync {
            self.sync_dir_stat(ino).await?;
        }
        Ok(())
    }

    /// `doSyncDirStat`: `calcDirStat` (a listing with attributes), then
    /// `T{get A<ino>I; set U<ino>}`; a conflict means another client synced it.
    async fn sync_dir_stat(&mut self, ino: Ino) -> Result<()> {
        // calcDirStat lists with doReaddir only (no GetAttr, no `.` and `..`).
        let mut entries = Vec::new();
        match self.read_entries(ino, true, &mut entries).await {
            Ok(()) => {}
            Err(MetaError::NotFound) => return Ok(()),
            Err(e) => return Err(e),
        }
        let mut st = DirStat::default();
        for e in &entries {
            st.add_child(e.attr.typ == FileType::File, e.attr.length);
        }
        let (ki, ku) = (self.keys.inode(ino), self.keys.dir_stat(ino));
        let mut tx = Txn::new(self.kv.clone(), self.calls.clone());
        let r: std::result::Result<(), TxErr> = async {
            if tx.get(&ki).await?.is_none() {
                return Err(MetaError::NotFound.into());
            }
            tx.set(&ku, &st.encode()).await?;
            Ok(())
        }
        .await;
        let r = match r {
            Ok(()) => tx.commit().await.map_err(TxErr::from),
            Err(e) => Err(e),
        };
        match r {
            Ok(()) | Err(TxErr::Retry(_)) | Err(TxErr::Meta(MetaError::NotFound)) => Ok(()),
            Err(TxErr::Meta(e)) => Err(e),
        }
    }

    /// `doDeleteFileData`: `T{scan A<ino>C keysOnly}`, per chunk
    /// `T{get C; delete C; incrBy K<id><size> -1 …}` (then `T{delete K}` for slices left
    /// with no reference, as after deleting their objects), finally `T{delete D<ino><len>}`.
    async fn delete_file_data(&mut self, ino: Ino, length: u64) -> Result<()> {
        {
            let prefix = self.keys.chunk_prefix(ino);
            let end = TkvKeys::prefix_end(&prefix);
            let chunks = txn!(self, |tx| {
                Ok(tx.scan(KeyRange::new(&prefix, &end).keys_only()).await?)
            })?;
            for (ck, _) in chunks {
                let zero = txn!(self, [ino], |tx| {
                    let mut zero = Vec::new();
                    let buf = tx.get(&ck).await?.unwrap_or_default();
                    tx.delete(&ck);
                    for s in Slice::decode_all(&buf)? {
                        if s.id > 0 {
                            let k = self.keys.slice_ref(s.id, s.size);
                            if tx.incr_by(&k, -1).await? < 0 {
                                zero.push(k);
                            }
                        }
                    }
                    Ok(zero)
                })?;
                for k in zero {
                    txn!(self, |tx| {
                        tx.delete(&k);
                        Ok(())
                    })?;
                }
            }
            let kd = self.keys.delfile(ino, length);
            txn!(self, |tx| {
                tx.delete(&kd);
                Ok(())
            })?;
        }
        Ok(())
    }
}

impl Storage for TkvSession {
    crate::base::storage::client_state_in!(base);

    /// `incrCounter` in its own transaction: `T{incrBy C<name> delta}`.
    async fn incr_counter(&mut self, name: &str, delta: i64) -> Result<i64> {
        let key = self.keys.counter(name);
        txn!(self, |tx| { Ok(tx.incr_by(&key, delta).await?) })
    }

    /// Its own transaction with uncounted calls, retried as `txn` retries conflicts.
    fn prefetch_inodes(&mut self) -> Background<Option<i64>> {
        let kv = self.kv.clone();
        let key = self.keys.counter("nextInode");
        Box::pin(async move {
            for i in 0..crate::retry::MAX_TRIES {
                let mut tx = Txn::new(kv.clone(), CallCounter::default());
                let r = match tx.incr_by(&key, INODE_BATCH as i64).await {
                    Ok(v) => tx.commit().await.map(|_| v),
                    Err(e) => Err(e),
                };
                match r {
                    Ok(v) => return Some(v),
                    Err(super::kv::KvError::Conflict(_)) => {
                        tokio::time::sleep(crate::retry::backoff_random_square(i)).await
                    }
                    Err(e) => {
                        tracing::warn!("prefetch inodes: {e}");
                        return None;
                    }
                }
            }
            None
        })
    }

    /// `kvMeta.doMknod` (its checks, quota walk and inode are `BaseMeta::make_node`'s).
    async fn do_mknod(&mut self, ctx: &Ctx, ino: Ino, node: &NewNode<'_>) -> Result<Made> {
        let (parent, name, typ, target) = (node.parent, node.name, node.typ, node.target);
        let keys = self.keys.clone();
        let (ki, ke, kn) = (
            keys.inode(parent),
            keys.entry(parent, name),
            keys.inode(ino),
        );
        let (skip_mtime, skip_nlink) = self.base.dir_skips();
        txn!(self, [parent], |tx| {
            let rs = tx.gets(&[ki.clone(), ke.clone()]).await?;
            let mut pattr = decode(rs[0].as_ref().ok_or(MetaError::NotFound)?)?;
            check_parent_to_add(ctx, &pattr)?;
            if let Some(buf) = &rs[1] {
                let d = Dentry::decode(buf)?;
                let mut existing = None;
                if typ == FileType::File || typ == FileType::Directory {
                    existing = Some(match tx.get(&keys.inode(d.inode)).await? {
                        Some(b) => decode(&b)?,
                        None => orphan_attr(d.typ, parent),
                    });
                }
                return Ok(Made::Existing(d.inode, existing));
            }
            let now = Timestamp::now();
            let attr = new_child_attr(ctx, &pattr, node, now);
            let rule = ParentRule::kv(skip_mtime, skip_nlink, tx.retry());
            let update_parent = parent_gains(&mut pattr, typ, now, rule);
            tx.set(&ke, &Dentry { typ, inode: ino }.encode()).await?;
            if update_parent {
                tx.set(&ki, &pattr.encode()).await?;
            }
            tx.set(&kn, &attr.encode()).await?;
            if typ == FileType::Symlink {
                tx.set(&keys.symlink(ino), target).await?;
            } else if typ == FileType::Directory {
                tx.set(&keys.dir_stat(ino), &DirStat::default().encode())
                    .await?;
            }
            Ok(Made::New(attr))
        })
    }

    /// metabench's TKV sessions do not exchange or restore entries: ENOTSUP.
    fn check_rename_flags(&self, flags: u32) -> Result<()> {
        if flags == 0 || flags == RENAME_NOREPLACE {
            Ok(())
        } else {
            Err(MetaError::NotSupported)
        }
    }

    async fn do_rename(&mut self, ctx: &Ctx, r: &Rename<'_>) -> Result<Renamed> {
        self.rename_txn(ctx, r).await
    }

    /// `doGetAttr`: `S{get A<ino>I}`.
    async fn do_getattr(&mut self, ino: Ino) -> Result<Attr> {
        let mut tx = self.simple();
        let buf = tx.get(&self.keys.inode(ino)).await.map_err(TxErr::from)?;
        Ok(Attr::decode(&buf.ok_or(MetaError::NotFound)?)?)
    }

    /// `doReadlink` with noatime: `S{get A<ino>S}`.
    async fn do_readlink(&mut self, ino: Ino) -> Result<Vec<u8>> {
        let mut tx = self.simple();
        let t = tx.get(&self.keys.symlink(ino)).await.map_err(TxErr::from)?;
        Ok(t.unwrap_or_default())
    }

    /// `doSetXattr`: `T{get A<ino>X<name>; set (only if the value changed)}`.
    async fn do_setxattr(&mut self, ino: Ino, x: &Xattr<'_>) -> Result<()> {
        let Xattr { name, value, flags } = *x;
        // TiKV cannot store an empty value (kvMeta.doSetXattr refuses it there).
        if value.is_empty() && self.kv.name() == "tikv" {
            return Err(MetaError::Invalid);
        }
        let k = self.keys.xattr(ino, name);
        txn!(self, |tx| {
            let old = tx.get(&k).await?;
            match (flags, &old) {
                (XattrFlags::Create, Some(_)) => return Err(MetaError::Exists.into()),
                (XattrFlags::Replace, None) => return Err(MetaError::NoAttr.into()),
                _ => {}
            }
            if old.as_deref() != Some(value) {
                tx.set(&k, value).await?;
            }
            Ok(())
        })
    }

    async fn do_removexattr(&mut self, ino: Ino, name: &[u8]) -> Result<()> {
        let k = self.keys.xattr(ino, name);
        txn!(self, |tx| {
            if tx.get(&k).await?.is_none() {
                return Err(MetaError::NoAttr.into());
            }
            tx.delete(&k);
            Ok(())
        })
    }

    /// `doRead`: `S{get A<ino>C<indx>}`.
    async fn do_read(&mut self, ino: Ino, indx: u32) -> Result<Vec<Slice>> {
        let mut tx = self.simple();
        let buf = tx
            .get(&self.keys.chunk(ino, indx))
            .await
            .map_err(TxErr::from)?;
        Ok(Slice::decode_all(&buf.unwrap_or_default())?)
    }

    async fn do_readdir(&mut self, ino: Ino, plus: bool, entries: &mut Vec<Entry>) -> Result<()> {
        self.read_entries(ino, plus, entries).await
    }

    async fn do_list_dir(&mut self, ino: Ino, plus: bool) -> Result<u64> {
        self.list_entries(ino, plus).await
    }

    /// `doGetParents`: `S{scan A<ino>P}`, the parents with a positive count.
    async fn do_get_parents(&mut self, ino: Ino) -> Result<Vec<(Ino, i64)>> {
        let prefix = self.keys.parent_prefix(ino);
        let mut tx = self.simple();
        let rows = tx
            .scan(KeyRange::new(&prefix, &TkvKeys::prefix_end(&prefix)))
            .await
            .map_err(TxErr::from)?;
        Ok(parents_of(&prefix, rows))
    }

    async fn do_update_dir_stat(&mut self, batch: Vec<(Ino, DirStat)>) -> Result<()> {
        self.update_dir_stats(batch).await
    }

    async fn do_flush_stats(&mut self) -> Result<()> {
        self.flush_stats().await
    }

    async fn do_delete_file_data(&mut self, ino: Ino, length: u64) -> Result<()> {
        self.delete_file_data(ino, length).await
    }

    async fn do_null_round_trip(&mut self) -> Result<&'static str> {
        // Inode 0 is never allocated: its attribute key is always absent.
        let mut tx = self.simple();
        tx.get(&self.keys.inode(0)).await.map_err(TxErr::from)?;
        Ok("get of an absent key")
    }

    async fn do_link(&mut self, ctx: &Ctx, ino: Ino, parent: Ino, name: &[u8]) -> Result<Attr> {
        let keys = self.keys.clone();
        let (ki, kn, ke) = (
            keys.inode(parent),
            keys.inode(ino),
            keys.entry(parent, name),
        );
        let (skip_mtime, skip_nlink) = self.base.dir_skips();
        let iattr = txn!(self, [parent], |tx| {
            let rs = tx.gets(&[ki.clone(), kn.clone(), ke.clone()]).await?;
            let (Some(pb), Some(ib)) = (&rs[0], &rs[1]) else {
                return Err(MetaError::NotFound.into());
            };
            let mut pattr = decode(pb)?;
            check_parent_to_add(ctx, &pattr)?;
            let mut iattr = decode(ib)?;
            if iattr.typ == FileType::Directory {
                return Err(MetaError::Perm.into());
            }
            check_not_pinned(&iattr)?;
            if rs[2].is_some() {
                return Err(MetaError::Exists.into());
            }
            let now = Timestamp::now();
            let rule = ParentRule::kv(skip_mtime, skip_nlink, tx.retry());
            let update_parent = rule.touch(&mut pattr, false, now);
            let old_parent = iattr.parent;
            iattr.parent = 0;
            iattr.ctime = now;
            iattr.nlink += 1;
            tx.set(
                &ke,
                &Dentry {
                    typ: iattr.typ,
                    inode: ino,
                }
                .encode(),
            )
            .await?;
            if update_parent {
                tx.set(&ki, &pattr.encode()).await?;
            }
            tx.set(&kn, &iattr.encode()).await?;
            if old_parent > 0 {
                tx.incr_by(&keys.parent(ino, old_parent), 1).await?;
            }
            tx.incr_by(&keys.parent(ino, parent), 1).await?;
            Ok(iattr)
        })?;
        Ok(iattr)
    }

    async fn do_unlink(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<Attr> {
        let keys = self.keys.clone();
        let (ki, ke) = (keys.inode(parent), keys.entry(parent, name));
        let (skip_mtime, skip_nlink) = self.base.dir_skips();
        let (typ, ino, attr, space, inodes) = txn!(self, [parent], |tx| {
            let buf = tx.get(&ke).await?.ok_or(MetaError::NotFound)?;
            let d = Dentry::decode(&buf)?;
            if d.typ == FileType::Directory {
                return Err(MetaError::Perm.into());
            }
            let kn = keys.inode(d.inode);
            let rs = tx.gets(&[ki.clone(), kn.clone()]).await?;
            let mut pattr = decode(rs[0].as_ref().ok_or(MetaError::NotFound)?)?;
            check_parent_to_remove(ctx, &pattr)?;
            let now = Timestamp::now();
            // JuiceFS's zero Attr when the record is missing.
            let mut attr = Attr::type_only(FileType::File);
            if let Some(b) = &rs[1] {
                attr = decode(b)?;
                check_sticky(ctx, &pattr, attr.uid)?;
                check_not_pinned(&attr)?;
                attr.ctime = now;
                attr.nlink = attr.nlink.saturating_sub(1);
            } else {
                tracing::warn!("no attribute for inode {} ({parent}, {:?})", d.inode, name);
            }
            let rule = ParentRule::kv(skip_mtime, skip_nlink, tx.retry());
            let update_parent = !is_trash(parent) && rule.touch(&mut pattr, false, now);
            tx.delete(&ke);
            if update_parent {
                tx.set(&ki, &pattr.encode()).await?;
            }
            let (space, inodes) = drop_link(&mut tx, &keys, (&d, parent), &attr, now).await?;
            Ok((d.typ, d.inode, attr, space, inodes))
        })?;
        if typ == FileType::File && attr.nlink == 0 {
            self.base.file_deleted(ino, attr.length);
        }
        self.base.update_stats(space, inodes);
        Ok(attr)
    }

    async fn do_rmdir(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<Ino> {
        let keys = self.keys.clone();
        let (ki, ke) = (keys.inode(parent), keys.entry(parent, name));
        let (skip_mtime, skip_nlink) = self.base.dir_skips();
        let ino = txn!(self, [parent], |tx| {
            let buf = tx.get(&ke).await?.ok_or(MetaError::NotFound)?;
            let d = Dentry::decode(&buf)?;
            if d.typ != FileType::Directory {
                return Err(MetaError::NotDir.into());
            }
            let (kn, kq) = (keys.inode(d.inode), keys.dir_quota(d.inode));
            let rs = tx.gets(&[ki.clone(), kn.clone(), kq.clone()]).await?;
            let mut pattr = decode(rs[0].as_ref().ok_or(MetaError::NotFound)?)?;
            check_parent_to_remove(ctx, &pattr)?;
            if tx.exist(&keys.entry_prefix(d.inode)).await? {
                return Err(MetaError::NotEmpty.into());
            }
            let now = Timestamp::now();
            if let Some(b) = &rs[1] {
                let a = decode(b)?;
                check_sticky(ctx, &pattr, a.uid)?;
            } else {
                tracing::warn!("no attribute for inode {} ({parent}, {:?})", d.inode, name);
            }
            // kvMeta.doRmdir: the nlink change forces the write unless SkipDirNlink
            // skips it on this try; then the SkipDirMtime rule.
            pattr.nlink = pattr.nlink.saturating_sub(1);
            let rule = ParentRule::kv(skip_mtime, skip_nlink, tx.retry());
            if rule.touch(&mut pattr, rule.nlink_forces, now) && !is_trash(parent) {
                tx.set(&ki, &pattr.encode()).await?;
            }
            tx.delete(&ke);
            tx.delete(&keys.dir_stat(d.inode));
            if rs[2].is_some() {
                tx.delete(&kq);
            }
            tx.delete(&kn);
            delete_keys(&mut tx, &keys.xattr(d.inode, b"")).await?;
            Ok(d.inode)
        })?;
        self.base.update_stats(-align4k(0), -1);
        Ok(ino)
    }

    /// `doLookup`: `S{get A<p>D<name>; get A<ino>I}`.
    /// An entry whose inode record is missing answers with its type only.
    async fn do_lookup(&mut self, _ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<(Ino, Attr)> {
        let mut tx = self.simple();
        let buf = tx
            .get(&self.keys.entry(parent, name))
            .await
            .map_err(TxErr::from)?
            .ok_or(MetaError::NotFound)?;
        let d = Dentry::decode(&buf)?;
        let stored = tx
            .get(&self.keys.inode(d.inode))
            .await
            .map_err(TxErr::from)?;
        let attr = looked_up_attr(stored, (d.inode, d.typ), parent, name)?;
        Ok((d.inode, attr))
    }

    /// `doSetAttr`: `T{get A<ino>I; set A<ino>I}`.
    async fn do_setattr(&mut self, ctx: &Ctx, ino: Ino, set: &SetAttr) -> Result<Attr> {
        let kn = self.keys.inode(ino);
        txn!(self, [ino], |tx| {
            let cur = decode(&tx.get(&kn).await?.ok_or(MetaError::NotFound)?)?;
            if cur.parent > TRASH_INODE {
                return Err(MetaError::Perm.into());
            }
            let now = Timestamp::now();
            let Some(mut dirty) = merge_attr(ctx, &cur, set, now)? else {
                return Ok(cur);
            };
            dirty.ctime = now;
            tx.set(&kn, &dirty.encode()).await?;
            Ok(dirty)
        })
    }

    async fn do_getxattr(&mut self, ino: Ino, name: &[u8]) -> Result<Vec<u8>> {
        let mut tx = self.simple();
        tx.get(&self.keys.xattr(ino, name))
            .await
            .map_err(TxErr::from)?
            .ok_or(MetaError::NoAttr)
    }

    /// `doListXattr`: `T{scan A<ino>X keysOnly}`, then `S{get A<ino>I}` (for ACL names).
    async fn do_listxattr(&mut self, ino: Ino) -> Result<Vec<Vec<u8>>> {
        let prefix = self.keys.xattr(ino, b"");
        let end = TkvKeys::prefix_end(&prefix);
        let rows = txn!(self, |tx| {
            Ok(tx.scan(KeyRange::new(&prefix, &end).keys_only()).await?)
        })?;
        let names = rows
            .into_iter()
            .map(|(k, _)| k[prefix.len()..].to_vec())
            .collect();
        self.do_getattr(ino).await?;
        Ok(names)
    }

    /// `doWrite`: `T{gets[A<ino>I, A<ino>C<indx>]; set A<ino>I; set A<ino>C<indx>}`;
    /// hard-linked files add a scan of their parents.
    async fn do_write(&mut self, ino: Ino, w: ChunkWrite) -> Result<()> {
        let ChunkWrite { indx, slice, .. } = w;
        let keys = self.keys.clone();
        let (kn, kc) = (keys.inode(ino), keys.chunk(ino, indx));
        let (attr, dlen, dspace) = txn!(self, [ino], |tx| {
            let rs = tx.gets(&[kn.clone(), kc.clone()]).await?;
            let mut attr = decode(rs[0].as_ref().ok_or(MetaError::NotFound)?)?;
            if attr.typ != FileType::File {
                return Err(MetaError::Perm.into());
            }
            let old = rs[1].clone().unwrap_or_default();
            if old.len() % SLICE_BYTES != 0 {
                return Err(MetaError::Corrupt(format!(
                    "chunk {indx} of inode {ino} is {} bytes",
                    old.len()
                ))
                .into());
            }
            let (dlen, dspace) = w.grow_attr(&mut attr);
            let parents = quota_parents(&mut tx, &keys, ino, &attr).await?;
            self.check_space_quota(dspace, &parents).await;
            w.touch(&mut attr);
            let val = slice.encode();
            if old.chunks(SLICE_BYTES).any(|s| s == val) {
                tracing::warn!(
                    "write same slice for inode {ino} indx {indx} id {}",
                    slice.id
                );
                return Ok((attr, 0, 0));
            }
            let mut new = old;
            new.extend_from_slice(&val);
            tx.set(&kn, &attr.encode()).await?;
            tx.set(&kc, &new).await?;
            Ok((attr, dlen, dspace))
        })?;
        self.base.data().cache.forget_chunk(ino, indx);
        self.update_parent_stat(ino, attr.parent, dlen, dspace)
            .await;
        Ok(())
    }

    fn session_stats(&self) -> SessionStats {
        SessionStats {
            round_trips: self.calls.get(),
            retries: self.retries,
            lock_wait_ns: self.base.lock_wait_ns(),
            retry_waste_ns: self.retry_waste_ns,
            retried_round_trips: self.retried_round_trips,
            ..SessionStats::default()
        }
    }
}

/// The last step of `doUnlink`, and of `doRename` for a replaced entry: the entry `d`
/// is gone from `parent` and `attr` has already lost the link. A node that keeps links is
/// written back (a hard-linked one also drops a link from `parent`'s count); the last
/// link's node goes, with its data queued for deletion (a `D` key), a symlink's target,
/// its xattrs and its parent counts. Returns the space and inodes freed.
pub(super) async fn drop_link(
    tx: &mut Txn,
    keys: &TkvKeys,
    (d, parent): (&Dentry, Ino),
    attr: &Attr,
    now: Timestamp,
) -> std::result::Result<(i64, i64), TxErr> {
    let kn = keys.inode(d.inode);
    if attr.nlink > 0 {
        tx.set(&kn, &attr.encode()).await?;
        if attr.parent == 0 {
            tx.incr_by(&keys.parent(d.inode, parent), -1).await?;
        }
        return Ok((0, 0));
    }
    let space = match d.typ {
        FileType::File => {
            tx.set(&keys.delfile(d.inode, attr.length), &now.sec.to_be_bytes())
                .await?;
            -align4k(attr.length)
        }
        other => {
            if other == FileType::Symlink {
                tx.delete(&keys.symlink(d.inode));
            }
            -align4k(0)
        }
    };
    tx.delete(&kn);
    delete_keys(tx, &keys.xattr(d.inode, b"")).await?;
    if attr.parent == 0 {
        delete_keys(tx, &keys.parent_prefix(d.inode)).await?;
    }
    Ok((space, -1))
}

impl TkvSession {
    /// `doReaddir`: `T{scan A<dir>D..A<dir>E}`; with `plus`,
    /// `S{gets[A<dir>I, A<parent>I, child I…]}` per 4096.
    /// `kvMeta.getDirFetcher`, page after page as `DirHandler.List` asks to the end: a
    /// scan of up to `DirBatchNum["kv"]` (4096) entries from the start of the directory,
    /// or from the last name listed (one more: the cursor itself, dropped), then, when
    /// `plus`, one read of the page's attributes (`fillAttr`). The last page is the first
    /// one short of a full page.
    async fn list_entries(&mut self, ino: Ino, plus: bool) -> Result<u64> {
        let prefix = self.keys.entry_prefix(ino);
        let end = TkvKeys::prefix_end(&prefix);
        let mut cursor: Option<Vec<u8>> = None;
        let mut listed = 0u64;
        loop {
            let start = cursor.clone().unwrap_or_else(|| prefix.clone());
            let limit = READDIR_BATCH + usize::from(cursor.is_some());
            let mut rows = txn!(self, |tx| {
                Ok(tx.scan(KeyRange::new(&start, &end).limit(limit)).await?)
            })?;
            if cursor.is_some() {
                // the cursor may have been deleted meanwhile
                if rows.first().is_some_and(|(k, _)| *k == start) {
                    rows.remove(0);
                } else {
                    rows.truncate(READDIR_BATCH);
                }
            }
            if plus && !rows.is_empty() {
                let mut keys = Vec::with_capacity(rows.len());
                for (_, v) in &rows {
                    keys.push(self.keys.inode(Dentry::decode(v)?.inode));
                }
                let mut tx = self.simple();
                // decoded as `fillAttr` parses them: a client's work, and a corrupt
                // attribute fails the listing as it fails JuiceFS's
                for attr in tx.gets(&keys).await.map_err(TxErr::from)?.iter().flatten() {
                    Attr::decode(attr)?;
                }
            }
            listed += rows.len() as u64;
            let Some((last, _)) = rows.last() else { break };
            if rows.len() < READDIR_BATCH {
                break;
            }
            cursor = Some(last.clone());
        }
        Ok(listed)
    }

    async fn read_entries(&mut self, ino: Ino, plus: bool, out: &mut Vec<Entry>) -> Result<()> {
        let prefix = self.keys.entry_prefix(ino);
        let end = TkvKeys::prefix_end(&prefix);
        let plen = prefix.len();
        let rows = txn!(self, |tx| {
            Ok(tx.scan(KeyRange::new(&prefix, &end)).await?)
        })?;
        for (k, v) in rows {
            let name = k[plen..].to_vec();
            if name.is_empty() {
                continue;
            }
            let d = Dentry::decode(&v)?;
            out.push(Entry {
                name,
                inode: d.inode,
                attr: Attr::type_only(d.typ),
            });
        }
        // kvMeta.doReaddir fills the attributes of every entry it was given, `.` and `..`
        // included, as soon as there is one.
        if plus && !out.is_empty() {
            let keys: Vec<Vec<u8>> = out.iter().map(|e| self.keys.inode(e.inode)).collect();
            for (batch, entries) in keys
                .chunks(READDIR_BATCH)
                .zip(out.chunks_mut(READDIR_BATCH))
            {
                let mut tx = self.simple();
                let rs = tx.gets(batch).await.map_err(TxErr::from)?;
                for (e, r) in entries.iter_mut().zip(rs) {
                    if let Some(b) = r {
                        e.attr = Attr::decode(&b)?;
                    }
                }
            }
        }
        Ok(())
    }
}
