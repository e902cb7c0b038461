//! Redis's storage steps of the background work that [`Meta::flush`] runs: the parents of
//! a hard-linked file (`doGetParents`), the dir-stat flush (`doUpdateDirStat`,
//! `doSyncDirStat`) and freeing the data of deleted files (`doDeleteFileData`,
//! `deleteChunk`, `doDeleteSlice`).
//!
//! [`Meta::flush`]: crate::Meta::flush

use super::session::RedisSession;
use super::txn::txn;
use super::wire::command;
use crate::{Entry, MetaError, Result};
use metabench_schema::redis_keys::{names, RedisKeys};
use metabench_schema::{DirStat, FileType, Ino, Slice, CHUNK_SIZE};
use redis::{cmd, FromRedisValue, Value};
use std::collections::HashMap;

/// Directories per HINCRBY pipeline (`groupBatch(batch, 1000)`).
const DIR_STAT_GROUP: usize = 1000;
/// Chunks per LLEN pipeline in `doDeleteFileData`.
const LLEN_GROUP: usize = 1000;

impl RedisSession {
    /// `redisMeta.doGetParents`: `HGETALL p{ino}`, the parents with a positive count.
    pub(super) async fn get_parents(&mut self, ino: Ino) -> Result<Vec<(Ino, i64)>> {
        let all: HashMap<String, String> = self
            .conn
            .query(command!("HGETALL", self.keys.parents(ino)))
            .await?;
        let mut parents: Vec<(Ino, i64)> = all
            .into_iter()
            .filter_map(|(p, n)| Some((p.parse().ok()?, n.parse().ok()?)))
            .filter(|(_, n)| *n > 0)
            .collect();
        parents.sort();
        Ok(parents)
    }

    /// `doUpdateDirStat`: one pipeline of `HEXISTS dirUsedSpace {ino}`, a `doSyncDirStat`
    /// for each directory without a record, then pipelines of `HINCRBY` for the others.
    pub(super) async fn update_dir_stats(&mut self, batch: Vec<(Ino, DirStat)>) -> Result<()> {
        let (kl, ks, ki) = (
            self.keys.named(names::DIR_DATA_LENGTH),
            self.keys.named(names::DIR_USED_SPACE),
            self.keys.named(names::DIR_USED_INODES),
        );
        let mut p = redis::pipe();
        for (ino, _) in &batch {
            p.cmd("HEXISTS").arg(&ks).arg(ino.to_string());
        }
        let exists: Vec<bool> = self.conn.pipeline(&p).await?;
        let mut present = Vec::with_capacity(batch.len());
        for ((ino, stat), there) in batch.into_iter().zip(exists) {
            if there {
                present.push((ino, stat));
            } else {
                match self.sync_dir_stat(ino).await {
                    Ok(_) | Err(MetaError::NotFound) => {}
                    Err(e) => tracing::warn!("sync dir stat for {ino}: {e}"),
                }
            }
        }
        for group in present.chunks(DIR_STAT_GROUP) {
            let mut p = redis::pipe();
            for (ino, stat) in group {
                let field = ino.to_string();
                if stat.length != 0 {
                    p.cmd("HINCRBY").arg(&kl).arg(&field).arg(stat.length);
                }
                if stat.space != 0 {
                    p.cmd("HINCRBY").arg(&ks).arg(&field).arg(stat.space);
                }
                if stat.inodes != 0 {
                    p.cmd("HINCRBY").arg(&ki).arg(&field).arg(stat.inodes);
                }
            }
            if !p.is_empty() {
                self.conn.pipeline::<Value>(&p).await?;
            }
        }
        Ok(())
    }

    /// `calcDirStat`: the usage of a directory's direct children, from `doReaddir` with
    /// attributes (HSCAN, then MGET).
    pub(super) async fn calc_dir_stat(&mut self, ino: Ino) -> Result<DirStat> {
        let mut entries: Vec<Entry> = Vec::new();
        self.scan_entries(ino, &mut entries).await?;
        self.fill_attrs(&mut entries).await?;
        let mut stat = DirStat::default();
        for e in &entries {
            stat.add_child(e.attr.typ == FileType::File, e.attr.length);
        }
        Ok(stat)
    }

    /// `doSyncDirStat`: recomputes a directory's record and writes it, if the directory
    /// still exists (`WATCH i{ino}; EXISTS; MULTI HSET×3 EXEC; UNWATCH`).
    pub(super) async fn sync_dir_stat(&mut self, ino: Ino) -> Result<DirStat> {
        let stat = self.calc_dir_stat(ino).await?;
        let key = self.keys.inode(ino);
        let keys = self.keys.clone();
        txn!(self, vec![key.clone()], |c| {
            let n: u64 = c.query(command!("EXISTS", &key)).await?;
            if n == 0 {
                return Err(MetaError::NotFound.into());
            }
            let field = ino.to_string();
            let mut p = redis::pipe();
            p.atomic();
            p.cmd("HSET")
                .arg(keys.named(names::DIR_DATA_LENGTH))
                .arg(&field)
                .arg(stat.length);
            p.cmd("HSET")
                .arg(keys.named(names::DIR_USED_SPACE))
                .arg(&field)
                .arg(stat.space);
            p.cmd("HSET")
                .arg(keys.named(names::DIR_USED_INODES))
                .arg(&field)
                .arg(stat.inodes);
            c.exec(&p).await?;
            Ok(stat)
        })
    }

    /// Pipelined `LLEN c{ino}_{indx}` per chunk below `length`, `deleteChunk` for each
    /// non-empty one, then `ZREM delfiles "{ino}:{length}"`.
    pub(super) async fn delete_file_data(&mut self, ino: Ino, length: u64) -> Result<()> {
        let mut indx: u32 = 0;
        while (indx as u64) * CHUNK_SIZE < length {
            let mut p = redis::pipe();
            let mut idxs = Vec::new();
            while (indx as u64) * CHUNK_SIZE < length && idxs.len() < LLEN_GROUP {
                p.cmd("LLEN").arg(self.keys.chunk(ino, indx));
                idxs.push(indx);
                indx += 1;
            }
            let lens: Vec<i64> = self.conn.pipeline(&p).await?;
            for (i, n) in idxs.into_iter().zip(lens) {
                if n > 0 {
                    self.delete_chunk(ino, i).await?;
                }
            }
        }
        self.conn
            .query::<i64>(
                cmd("ZREM")
                    .arg(self.keys.named(names::DEL_FILES))
                    .arg(RedisKeys::delfile_member(ino, length)),
            )
            .await?;
        Ok(())
    }

    /// `deleteChunk`: `WATCH c; LRANGE; MULTI DEL c, HINCRBY sliceRef k{id}_{size} -1 … EXEC;
    /// UNWATCH`, then `doDeleteSlice` (`HDEL sliceRef`) for slices no longer referenced.
    async fn delete_chunk(&mut self, ino: Ino, indx: u32) -> Result<()> {
        let key = self.keys.chunk(ino, indx);
        let sref = self.keys.named(names::SLICE_REF);
        let unreferenced: Vec<(u64, u32)> = txn!(self, vec![key.clone()], |c| {
            let vals: Vec<Vec<u8>> = c.query(cmd("LRANGE").arg(&key).arg(0).arg(-1)).await?;
            if vals.is_empty() {
                return Ok(Vec::new());
            }
            let slices: Vec<Slice> = match vals
                .iter()
                .map(|v| Slice::decode(v))
                .collect::<std::result::Result<Vec<_>, _>>()
            {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!("corrupt value for inode {ino} chunk index {indx}: {e}");
                    Vec::new()
                }
            };
            let mut p = redis::pipe();
            p.atomic();
            p.cmd("DEL").arg(&key);
            let mut todel = Vec::new();
            for s in slices.iter().filter(|s| s.id > 0) {
                p.cmd("HINCRBY")
                    .arg(&sref)
                    .arg(RedisKeys::slice_ref_field(s.id, s.size))
                    .arg(-1);
                todel.push((s.id, s.size));
            }
            let replies = c.exec(&p).await?;
            let mut gone = Vec::new();
            for (s, v) in todel.into_iter().zip(replies.into_iter().skip(1)) {
                if i64::from_redis_value(v).unwrap_or(0) < 0 {
                    gone.push(s);
                }
            }
            Ok(gone)
        })?;
        for (id, size) in unreferenced {
            self.conn
                .query::<i64>(
                    cmd("HDEL")
                        .arg(&sref)
                        .arg(RedisKeys::slice_ref_field(id, size)),
                )
                .await?;
        }
        Ok(())
    }
}
