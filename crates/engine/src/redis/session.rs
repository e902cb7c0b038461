//! [`RedisSession`]: one JuiceFS client on Redis. Its storage steps ([`Storage`]) send
//! command for command what `pkg/meta/redis.go` sends, with SkipDirMtime as the session's
//! options say; rename is in `rename.rs`, the background work's steps in
//! `background.rs`, and the client logic over them in [`crate::base`].

use super::reads::quota_parents;
use super::txn::{txn, Conn};
use super::wire::command;
use crate::base::{Background, BaseMeta, ClientState, Storage, INODE_BATCH};
use crate::meta::{Ctx, Entry, SetAttr, XattrFlags};
use crate::retry::decode_attr as decode;
use crate::rules::{
    check_not_pinned, check_parent_to_add, check_parent_to_remove, check_sticky, is_trash,
    merge_attr, new_child_attr, orphan_attr, parent_gains, touch,
};
use crate::{ChunkWrite, Made, MetaError, NewNode, Rename, Renamed, Result, SessionStats, Xattr};
use metabench_schema::redis_keys::{names, RedisKeys};
use metabench_schema::{
    align4k, Attr, Dentry, DirStat, FileType, Format, Ino, Slice, Timestamp, TRASH_INODE,
};
use redis::cmd;

/// Attributes fetched per MGET by readdir (`batchSize`).
pub(super) const READDIR_BATCH: usize = 4096;

/// `HDEL` of directory `ino`'s field in each of `hashes` (dir stats, quotas), as
/// `doRmdir` and `doRename` clear a removed directory's records.
pub(super) fn hdel_dir_fields<'a>(
    p: &mut redis::Pipeline,
    keys: &RedisKeys,
    hashes: impl IntoIterator<Item = &'a &'a str>,
    ino: Ino,
) {
    let field = ino.to_string();
    for h in hashes {
        p.cmd("HDEL").arg(keys.named(h)).arg(&field);
    }
}

/// One JuiceFS client on a Redis volume: its own connection, inode and slice id ranges,
/// buffered dir stats, pending deleted files and (optionally) client-side caches.
pub struct RedisSession {
    pub(super) conn: Conn,
    /// Shared connection for the background inode prefetch (not counted).
    bg: super::shared::Shared,
    pub(super) keys: RedisKeys,
    pub(super) format: Format,
    pub(super) retries: u64,
    /// ns of attempts that conflicted and were retried ([`SessionStats::retry_waste_ns`]).
    pub(super) retry_waste_ns: u64,
    /// Their round trips ([`SessionStats::retried_round_trips`]).
    pub(super) retried_round_trips: u64,
    /// What the client keeps between calls (`baseMeta`'s fields).
    pub(super) base: ClientState,
    /// `shaLookup` and `shaResolve`: the Lua scripts a registered session loaded.
    pub(super) sha_lookup: Option<String>,
    pub(super) sha_resolve: Option<String>,
}

impl RedisSession {
    /// A session of client `base` on connection `conn`.
    pub(super) fn new(
        conn: Conn,
        bg: super::shared::Shared,
        keys: RedisKeys,
        format: Format,
        base: ClientState,
    ) -> Self {
        Self {
            base,
            conn,
            bg,
            keys,
            format,
            retries: 0,
            retry_waste_ns: 0,
            retried_round_trips: 0,
            sha_lookup: None,
            sha_resolve: None,
        }
    }

    /// The volume format this session loaded at start.
    pub fn format(&self) -> &Format {
        &self.format
    }
}

impl Storage for RedisSession {
    crate::base::storage::client_state_in!(base);

    /// `redisMeta.incrCounter`: one `INCRBY`. The id counters hold the last id taken, so
    /// the next unused one is the answer plus one.
    async fn incr_counter(&mut self, name: &str, by: i64) -> Result<i64> {
        let (key, last_taken) = match name {
            "nextInode" => (names::NEXT_INODE, true),
            "nextChunk" => (names::NEXT_CHUNK, true),
            "nextSession" => (names::NEXT_SESSION, false),
            other => (other, false),
        };
        let v: i64 = self
            .conn
            .query(cmd("INCRBY").arg(self.keys.named(key)).arg(by))
            .await?;
        Ok(if last_taken { v + 1 } else { v })
    }

    /// The same `INCRBY nextinode` on the shared connection (not counted).
    fn prefetch_inodes(&mut self) -> Background<Option<i64>> {
        let bg = self.bg.clone();
        let key = self.keys.named(names::NEXT_INODE);
        Box::pin(async move {
            let v: i64 = bg
                .query(cmd("INCRBY").arg(key).arg(INODE_BATCH))
                .await
                .map_err(|e| tracing::warn!("prefetch inodes: {e}"))
                .ok()?;
            Some(v + 1)
        })
    }

    /// `redisMeta.doMknod` (its checks, quota walk and inode are `BaseMeta::make_node`'s).
    async fn do_mknod(&mut self, ctx: &Ctx, ino: Ino, node: &NewNode<'_>) -> Result<Made> {
        let (parent, name, typ, target) = (node.parent, node.name, node.typ, node.target);
        let (ki, kd) = (self.keys.inode(parent), self.keys.entries(parent));
        let kn = self.keys.inode(ino);
        let keys = self.keys.clone();
        let rule = self.base.parent_rule();
        txn!(self, vec![ki.clone(), kd.clone()], |c| {
            let pbuf: Option<Vec<u8>> = c.query(command!("GET", &ki)).await?;
            let mut pattr = decode(&pbuf.ok_or(MetaError::NotFound)?)?;
            check_parent_to_add(ctx, &pattr)?;
            let found: Option<Vec<u8>> = c.query(command!("HGET", &kd, name)).await?;
            if let Some(buf) = found {
                let d = Dentry::decode(&buf)?;
                let mut existing = None;
                if typ == FileType::File || typ == FileType::Directory {
                    let a: Option<Vec<u8>> = c.query(command!("GET", keys.inode(d.inode))).await?;
                    existing = Some(match a {
                        Some(b) => decode(&b)?,
                        None => orphan_attr(d.typ, parent),
                    });
                }
                return Ok(Made::Existing(d.inode, existing));
            }
            let now = Timestamp::now();
            let attr = new_child_attr(ctx, &pattr, node, now);
            let update_parent = parent_gains(&mut pattr, typ, now, rule);
            let mut p = redis::pipe();
            p.atomic();
            p.cmd("SET").arg(&kn).arg(attr.encode());
            if update_parent {
                p.cmd("SET").arg(&ki).arg(pattr.encode());
            }
            if typ == FileType::Symlink {
                p.cmd("SET").arg(keys.symlink(ino)).arg(target);
            }
            p.cmd("HSET")
                .arg(&kd)
                .arg(name)
                .arg(&Dentry { typ, inode: ino }.encode()[..]);
            if typ == FileType::Directory {
                let field = ino.to_string();
                for h in [
                    names::DIR_USED_INODES,
                    names::DIR_DATA_LENGTH,
                    names::DIR_USED_SPACE,
                ] {
                    p.cmd("HSET").arg(keys.named(h)).arg(&field).arg("0");
                }
            }
            p.cmd("INCRBY")
                .arg(keys.named(names::USED_SPACE))
                .arg(align4k(0));
            p.cmd("INCR").arg(keys.named(names::TOTAL_INODES));
            c.exec(&p).await?;
            Ok(Made::New(attr))
        })
    }

    async fn do_rename(&mut self, ctx: &Ctx, r: &Rename<'_>) -> Result<Renamed> {
        self.rename_txn(ctx, r).await
    }

    /// `redisMeta.doGetAttr`: a plain `GET i{ino}`.
    async fn do_getattr(&mut self, ino: Ino) -> Result<Attr> {
        let buf: Option<Vec<u8>> = self
            .conn
            .query(command!("GET", self.keys.inode(ino)))
            .await?;
        Ok(Attr::decode(&buf.ok_or(MetaError::NotFound)?)?)
    }

    /// `redisMeta.doReadlink` with noatime: a plain `GET s{ino}`.
    async fn do_readlink(&mut self, ino: Ino) -> Result<Vec<u8>> {
        let t: Option<Vec<u8>> = self
            .conn
            .query(command!("GET", self.keys.symlink(ino)))
            .await?;
        Ok(t.unwrap_or_default())
    }

    /// Redis writes `usedSpace` and `totalInodes` inside each transaction
    /// (`redisMeta.doFlushStats` is empty): what was buffered is already written.
    async fn do_flush_stats(&mut self) -> Result<()> {
        let mut written = self.base.take_pending_stats();
        written.space_written();
        written.inodes_written();
        Ok(())
    }

    async fn do_setxattr(&mut self, ino: Ino, x: &Xattr<'_>) -> Result<()> {
        let Xattr { name, value, flags } = *x;
        let key = self.keys.xattr(ino);
        txn!(self, vec![key.clone()], |c| {
            match flags {
                XattrFlags::Any => {}
                XattrFlags::Create => {
                    let ok: bool = c.query(command!("HEXISTS", &key, name)).await?;
                    if ok {
                        return Err(MetaError::Exists.into());
                    }
                }
                XattrFlags::Replace => {
                    let ok: bool = c.query(command!("HEXISTS", &key, name)).await?;
                    if !ok {
                        return Err(MetaError::NoAttr.into());
                    }
                }
            }
            let mut p = redis::pipe();
            p.atomic();
            p.cmd("HSET").arg(&key).arg(name).arg(value);
            c.exec(&p).await?;
            Ok(())
        })
    }

    async fn do_removexattr(&mut self, ino: Ino, name: &[u8]) -> Result<()> {
        let key = self.keys.xattr(ino);
        // doRemoveXattr: the HDEL goes out as a plain pipeline, without MULTI.
        let n: u64 = txn!(self, vec![key.clone()], |c| {
            let mut p = redis::pipe();
            p.cmd("HDEL").arg(&key).arg(name);
            let (n,): (u64,) = c.pipeline(&p).await?;
            Ok(n)
        })?;
        if n == 0 {
            Err(MetaError::NoAttr)
        } else {
            Ok(())
        }
    }

    async fn do_read(&mut self, ino: Ino, indx: u32) -> Result<Vec<Slice>> {
        let vals: Vec<Vec<u8>> = self
            .conn
            .query(cmd("LRANGE").arg(self.keys.chunk(ino, indx)).arg(0).arg(-1))
            .await?;
        Ok(vals
            .iter()
            .map(|v| Slice::decode(v))
            .collect::<std::result::Result<Vec<_>, _>>()?)
    }

    /// `redisMeta.doReaddir`: the entries of `ino` after `.` and `..` (HSCAN), with
    /// their attributes when `plus` (MGET).
    async fn do_readdir(&mut self, ino: Ino, plus: bool, entries: &mut Vec<Entry>) -> Result<()> {
        self.scan_entries(ino, entries).await?;
        if plus {
            self.fill_attrs(entries).await?;
        }
        Ok(())
    }

    /// `redisDirHandler.List`: the whole directory at its first call (HSCAN, and the
    /// attributes in MGETs of 4096, two at a time), then pages served from memory.
    async fn do_list_dir(&mut self, ino: Ino, plus: bool) -> Result<u64> {
        let mut entries = Vec::new();
        self.do_readdir(ino, plus, &mut entries).await?;
        Ok(entries.len() as u64)
    }

    async fn do_get_parents(&mut self, ino: Ino) -> Result<Vec<(Ino, i64)>> {
        self.get_parents(ino).await
    }

    async fn do_update_dir_stat(&mut self, batch: Vec<(Ino, DirStat)>) -> Result<()> {
        self.update_dir_stats(batch).await
    }

    async fn do_delete_file_data(&mut self, ino: Ino, length: u64) -> Result<()> {
        self.delete_file_data(ino, length).await
    }

    async fn do_null_round_trip(&mut self) -> Result<&'static str> {
        self.conn.query::<()>(&cmd("PING")).await?;
        Ok("PING")
    }

    async fn do_link(&mut self, ctx: &Ctx, ino: Ino, parent: Ino, name: &[u8]) -> Result<Attr> {
        let (ki, kd, kn) = (
            self.keys.inode(parent),
            self.keys.entries(parent),
            self.keys.inode(ino),
        );
        let kp = self.keys.parents(ino);
        let rule = self.base.parent_rule();
        let iattr = txn!(self, vec![ki.clone(), kd.clone(), kn.clone()], |c| {
            let rs: Vec<Option<Vec<u8>>> = c.query(cmd("MGET").arg(&ki).arg(&kn)).await?;
            let (Some(pb), Some(ib)) = (&rs[0], &rs[1]) else {
                return Err(MetaError::NotFound.into());
            };
            let mut pattr = decode(pb)?;
            check_parent_to_add(ctx, &pattr)?;
            let now = Timestamp::now();
            let update_parent = rule.touch(&mut pattr, false, now);
            let mut iattr = decode(ib)?;
            if iattr.typ == FileType::Directory {
                return Err(MetaError::Perm.into());
            }
            check_not_pinned(&iattr)?;
            let old_parent = iattr.parent;
            iattr.parent = 0;
            iattr.ctime = now;
            iattr.nlink += 1;
            let exists: Option<Vec<u8>> = c.query(command!("HGET", &kd, name)).await?;
            if exists.is_some() {
                return Err(MetaError::Exists.into());
            }
            let mut p = redis::pipe();
            p.atomic();
            p.cmd("HSET").arg(&kd).arg(name).arg(
                &Dentry {
                    typ: iattr.typ,
                    inode: ino,
                }
                .encode()[..],
            );
            if update_parent {
                p.cmd("SET").arg(&ki).arg(pattr.encode());
            }
            p.cmd("SET").arg(&kn).arg(iattr.encode());
            if old_parent > 0 {
                p.cmd("HINCRBY").arg(&kp).arg(old_parent.to_string()).arg(1);
            }
            p.cmd("HINCRBY").arg(&kp).arg(parent.to_string()).arg(1);
            c.exec(&p).await?;
            Ok(iattr)
        })?;
        Ok(iattr)
    }

    async fn do_unlink(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<Attr> {
        let (ki, kd) = (self.keys.inode(parent), self.keys.entries(parent));
        let keys = self.keys.clone();
        let rule = self.base.parent_rule();
        let (typ, ino, attr) = txn!(self, vec![ki.clone(), kd.clone()], |c| {
            let buf: Option<Vec<u8>> = c.query(command!("HGET", &kd, name)).await?;
            let d = Dentry::decode(&buf.ok_or(MetaError::NotFound)?)?;
            if d.typ == FileType::Directory {
                return Err(MetaError::Perm.into());
            }
            let kn = keys.inode(d.inode);
            c.watch(std::slice::from_ref(&kn)).await?;
            let rs: Vec<Option<Vec<u8>>> = c.query(cmd("MGET").arg(&ki).arg(&kn)).await?;
            let mut pattr = decode(rs[0].as_ref().ok_or(MetaError::NotFound)?)?;
            check_parent_to_remove(ctx, &pattr)?;
            let now = Timestamp::now();
            let update_parent = !is_trash(parent) && rule.touch(&mut pattr, false, now);
            let mut attr = None;
            if let Some(b) = &rs[1] {
                let mut a = decode(b)?;
                check_sticky(ctx, &pattr, a.uid)?;
                check_not_pinned(&a)?;
                a.ctime = now;
                a.nlink = a.nlink.saturating_sub(1);
                attr = Some(a);
            } else {
                tracing::warn!("no attribute for inode {} ({parent}, {:?})", d.inode, name);
            }
            // A missing attribute reads as JuiceFS's zero Attr: nlink 0, parent 0.
            let (nlink, aparent, length) = attr
                .as_ref()
                .map_or((0, 0, 0), |a| (a.nlink, a.parent, a.length));
            let mut p = redis::pipe();
            p.atomic();
            p.cmd("HDEL").arg(&kd).arg(name);
            if update_parent {
                p.cmd("SET").arg(&ki).arg(pattr.encode());
            }
            if nlink > 0 {
                let a = attr.as_ref().expect("nlink > 0 only with an attribute");
                p.cmd("SET").arg(&kn).arg(a.encode());
                if aparent == 0 {
                    p.cmd("HINCRBY")
                        .arg(keys.parents(d.inode))
                        .arg(parent.to_string())
                        .arg(-1);
                }
            } else {
                match d.typ {
                    FileType::File => {
                        p.cmd("ZADD")
                            .arg(keys.named(names::DEL_FILES))
                            .arg(now.sec)
                            .arg(RedisKeys::delfile_member(d.inode, length));
                        p.cmd("DEL").arg(&kn);
                        p.cmd("INCRBY")
                            .arg(keys.named(names::USED_SPACE))
                            .arg(-align4k(length));
                        p.cmd("DECR").arg(keys.named(names::TOTAL_INODES));
                    }
                    other => {
                        if other == FileType::Symlink {
                            p.cmd("DEL").arg(keys.symlink(d.inode));
                        }
                        p.cmd("DEL").arg(&kn);
                        p.cmd("INCRBY")
                            .arg(keys.named(names::USED_SPACE))
                            .arg(-align4k(0));
                        p.cmd("DECR").arg(keys.named(names::TOTAL_INODES));
                    }
                }
                p.cmd("DEL").arg(keys.xattr(d.inode));
                if aparent == 0 {
                    p.cmd("DEL").arg(keys.parents(d.inode));
                }
            }
            c.exec(&p).await?;
            Ok((d.typ, d.inode, attr))
        })?;
        let (nlink, length) = attr.as_ref().map_or((0, 0), |a| (a.nlink, a.length));
        if typ == FileType::File && nlink == 0 {
            self.base.file_deleted(ino, length);
        }
        Ok(attr.unwrap_or(Attr::type_only(typ)))
    }

    async fn do_rmdir(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<Ino> {
        let (ki, kd) = (self.keys.inode(parent), self.keys.entries(parent));
        let keys = self.keys.clone();
        let ino = txn!(self, vec![ki.clone(), kd.clone()], |c| {
            let buf: Option<Vec<u8>> = c.query(command!("HGET", &kd, name)).await?;
            let d = Dentry::decode(&buf.ok_or(MetaError::NotFound)?)?;
            if d.typ != FileType::Directory {
                return Err(MetaError::NotDir.into());
            }
            let (kn, kdn) = (keys.inode(d.inode), keys.entries(d.inode));
            c.watch(&[kn.clone(), kdn.clone()]).await?;
            let rs: Vec<Option<Vec<u8>>> = c.query(cmd("MGET").arg(&ki).arg(&kn)).await?;
            let mut pattr = decode(rs[0].as_ref().ok_or(MetaError::NotFound)?)?;
            check_parent_to_remove(ctx, &pattr)?;
            let now = Timestamp::now();
            pattr.nlink = pattr.nlink.saturating_sub(1);
            touch(&mut pattr, now);
            let cnt: u64 = c.query(command!("HLEN", &kdn)).await?;
            if cnt > 0 {
                return Err(MetaError::NotEmpty.into());
            }
            if let Some(b) = &rs[1] {
                let a = decode(b)?;
                check_sticky(ctx, &pattr, a.uid)?;
            } else {
                tracing::warn!("no attribute for inode {} ({parent}, {:?})", d.inode, name);
            }
            let mut p = redis::pipe();
            p.atomic();
            p.cmd("HDEL").arg(&kd).arg(name);
            if !is_trash(parent) {
                p.cmd("SET").arg(&ki).arg(pattr.encode());
            }
            p.cmd("DEL").arg(&kn);
            p.cmd("DEL").arg(keys.xattr(d.inode));
            p.cmd("INCRBY")
                .arg(keys.named(names::USED_SPACE))
                .arg(-align4k(0));
            p.cmd("DECR").arg(keys.named(names::TOTAL_INODES));
            let hashes = names::DIR_STAT_HASHES
                .iter()
                .chain(&names::DIR_QUOTA_HASHES);
            hdel_dir_fields(&mut p, &keys, hashes, d.inode);
            c.exec(&p).await?;
            Ok(d.inode)
        })?;
        Ok(ino)
    }

    /// `redisMeta.doLookup`: one `EVALSHA` when a registered session loaded the lookup
    /// script, else HGET then GET (`registered.rs`).
    async fn do_lookup(&mut self, _ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<(Ino, Attr)> {
        self.lookup_entry(parent, name).await
    }

    async fn do_resolve(&mut self, ctx: &Ctx, parent: Ino, path: &[u8]) -> Result<(Ino, Attr)> {
        self.resolve_path(ctx, parent, path).await
    }

    async fn do_setattr(&mut self, ctx: &Ctx, ino: Ino, set: &SetAttr) -> Result<Attr> {
        let ki = self.keys.inode(ino);
        txn!(self, vec![ki.clone()], |c| {
            let buf: Option<Vec<u8>> = c.query(command!("GET", &ki)).await?;
            let cur = decode(&buf.ok_or(MetaError::NotFound)?)?;
            if cur.parent > TRASH_INODE {
                return Err(MetaError::Perm.into());
            }
            let now = Timestamp::now();
            match merge_attr(ctx, &cur, set, now)? {
                None => Ok(cur),
                Some(mut dirty) => {
                    dirty.ctime = now;
                    let mut p = redis::pipe();
                    p.atomic();
                    p.cmd("SET").arg(&ki).arg(dirty.encode());
                    c.exec(&p).await?;
                    Ok(dirty)
                }
            }
        })
    }

    async fn do_getxattr(&mut self, ino: Ino, name: &[u8]) -> Result<Vec<u8>> {
        let v: Option<Vec<u8>> = self
            .conn
            .query(command!("HGET", self.keys.xattr(ino), name))
            .await?;
        v.ok_or(MetaError::NoAttr)
    }

    async fn do_listxattr(&mut self, ino: Ino) -> Result<Vec<Vec<u8>>> {
        let mut names: Vec<Vec<u8>> = self
            .conn
            .query(command!("HKEYS", self.keys.xattr(ino)))
            .await?;
        let buf: Option<Vec<u8>> = self
            .conn
            .query(command!("GET", self.keys.inode(ino)))
            .await?;
        let attr = Attr::decode(&buf.ok_or(MetaError::NotFound)?)?;
        // setXAttrACL
        if attr.access_acl != 0 {
            names.push(b"system.posix_acl_access".to_vec());
        }
        if attr.default_acl != 0 {
            names.push(b"system.posix_acl_default".to_vec());
        }
        Ok(names)
    }

    async fn do_write(&mut self, ino: Ino, w: ChunkWrite) -> Result<()> {
        let ChunkWrite { indx, slice, .. } = w;
        let ki = self.keys.inode(ino);
        let kc = self.keys.chunk(ino, indx);
        let keys = self.keys.clone();
        let (parent, dlen, dspace) = txn!(self, vec![ki.clone()], |c| {
            let buf: Option<Vec<u8>> = c.query(command!("GET", &ki)).await?;
            let mut attr = decode(&buf.ok_or(MetaError::NotFound)?)?;
            if attr.typ != FileType::File {
                return Err(MetaError::Perm.into());
            }
            let (dlen, dspace) = w.grow_attr(&mut attr);
            let parents = quota_parents(&mut c, &keys, ino, &attr).await?;
            self.check_space_quota(dspace, &parents).await;
            w.touch(&mut attr);
            let mut p = redis::pipe();
            p.atomic();
            p.cmd("RPUSH").arg(&kc).arg(&slice.encode()[..]);
            p.cmd("SET").arg(&ki).arg(attr.encode());
            if dspace > 0 {
                p.cmd("INCRBY")
                    .arg(keys.named(names::USED_SPACE))
                    .arg(dspace);
            }
            c.exec(&p).await?;
            Ok((attr.parent, dlen, dspace))
        })?;
        self.base.data().cache.forget_chunk(ino, indx);
        self.update_parent_stat(ino, parent, dlen, dspace).await;
        Ok(())
    }

    fn session_stats(&self) -> SessionStats {
        SessionStats {
            round_trips: self.conn.round_trips(),
            retries: self.retries,
            lock_wait_ns: self.base.lock_wait_ns(),
            retry_waste_ns: self.retry_waste_ns,
            retried_round_trips: self.retried_round_trips,
            commands: self.conn.commands(),
            ..SessionStats::default()
        }
    }
}

impl RedisSession {
    /// The entries of directory `ino` (`hscan d{ino}`), appended with type-only attributes.
    pub(super) async fn scan_entries(&mut self, ino: Ino, entries: &mut Vec<Entry>) -> Result<()> {
        let key = self.keys.entries(ino);
        let mut cursor: u64 = 0;
        loop {
            let (next, kvs): (u64, Vec<Vec<u8>>) = self
                .conn
                .query(
                    cmd("HSCAN")
                        .arg(&key)
                        .arg(cursor)
                        .arg("MATCH")
                        .arg("*")
                        .arg("COUNT")
                        .arg(10000),
                )
                .await?;
            for kv in kvs.chunks_exact(2) {
                if kv[0].is_empty() {
                    tracing::error!("corrupt entry with empty name in directory {ino}");
                    continue;
                }
                let d = Dentry::decode(&kv[1])?;
                entries.push(Entry {
                    name: kv[0].clone(),
                    inode: d.inode,
                    attr: Attr::type_only(d.typ),
                });
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }

    /// `fillAttr`: MGET of the entries' attributes, 4096 keys per request; above one
    /// batch, two requests are in flight at a time as JuiceFS's two goroutines are.
    pub(super) async fn fill_attrs(&mut self, entries: &mut [Entry]) -> Result<()> {
        let keys = self.keys.clone();
        let mget = |es: &[Entry]| {
            let mut c = cmd("MGET");
            for e in es {
                c.arg(keys.inode(e.inode));
            }
            c
        };
        let apply = |es: &mut [Entry], rs: Vec<Option<Vec<u8>>>| -> Result<()> {
            for (e, r) in es.iter_mut().zip(rs) {
                if let Some(b) = r {
                    e.attr = Attr::decode(&b)?;
                }
            }
            Ok(())
        };
        if entries.is_empty() {
            return Ok(());
        }
        if entries.len() <= READDIR_BATCH {
            let rs: Vec<Option<Vec<u8>>> = self.conn.query(&mget(entries)).await?;
            return apply(entries, rs);
        }
        let mut batches: Vec<&mut [Entry]> = entries.chunks_mut(READDIR_BATCH).collect();
        while !batches.is_empty() {
            let take = batches.len().min(2);
            let mut pair: Vec<&mut [Entry]> = batches.drain(..take).collect();
            if pair.len() == 2 {
                let (c1, c2) = (mget(pair[0]), mget(pair[1]));
                type Attrs = Vec<Option<Vec<u8>>>;
                let (r1, r2): (Attrs, Attrs) = self.conn.query_two(&c1, &c2).await?;
                let second = pair.pop().expect("two batches");
                apply(pair.pop().expect("two batches"), r1)?;
                apply(second, r2)?;
            } else {
                let one = pair.pop().expect("one batch");
                let rs: Vec<Option<Vec<u8>>> = self.conn.query(&mget(one)).await?;
                apply(one, rs)?;
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for RedisSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSession")
            .field("volume", &self.format.name)
            .field("round_trips", &self.conn.round_trips())
            .field("retries", &self.retries)
            .finish()
    }
}
