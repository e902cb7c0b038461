//! The background work of an SQL session, the storage steps of [`crate::Meta::flush`]:
//! `doGetParents`, `doUpdateDirStat` with `doSyncDirStat`, `doFlushStats` and
//! `doDeleteFileData`.

use super::rows::*;
use super::sql_session::SqlSession;
use super::tx_err::{final_error, TxErr};
use super::txn::{simple, txn};
use crate::sql::conn::{Arg, DbError, ErrKind};
use crate::{MetaError, Result};
use metabench_schema::sql::Dialect;
use metabench_schema::{DirStat, Ino, Slice};
use std::collections::BTreeMap;

/// `doUpdateDirStat` updates at most this many directories per transaction.
pub(super) const DIRSTAT_BATCH: usize = 1000;

impl SqlSession {
    /// `doSyncDirStat`: recomputes a directory's usage from its children and writes it.
    pub(super) async fn sync_dir_stat(&mut self, ino: Ino) -> Result<()> {
        let st = self.st.clone();
        let rows = self.rows_of_inode(&st.readdir_plus, ino).await?;
        let mut s = DirStat::default();
        for r in &rows {
            let n = parse_node(r, 5).map_err(|e| final_error(e, false))?;
            s.add_child(n.typ == TYPE_FILE, n.length as u64);
        }
        txn!(self, {
            if self.get_node(ino, false).await?.is_none() {
                return Err(MetaError::NotFound.into());
            }
            let vals = [Arg::I64(s.length), Arg::I64(s.space), Arg::I64(s.inodes)];
            match self
                .exec(
                    &st.dirstat_insert,
                    &[Arg::I64(ino as i64), vals[0], vals[1], vals[2]],
                )
                .await
            {
                Ok(_) => {}
                Err(e) if e.duplicate => {
                    self.exec(
                        &st.dirstat_set,
                        &[vals[0], vals[1], vals[2], Arg::I64(ino as i64)],
                    )
                    .await?;
                }
                Err(e) => return Err(e.into()),
            }
        })
    }

    /// `doFlushDirStat` / `doUpdateDirStat`.
    pub(super) async fn update_dir_stats(&mut self, batch: Vec<(Ino, DirStat)>) -> Result<()> {
        let st = self.st.clone();
        let mut missing = Vec::new();
        for group in batch.chunks(DIRSTAT_BATCH) {
            let mut nonexist = Vec::new();
            txn!(self, {
                nonexist.clear();
                for (ino, s) in group {
                    let d = self
                        .exec(
                            &st.dirstat_add,
                            &[
                                Arg::I64(s.length),
                                Arg::I64(s.space),
                                Arg::I64(s.inodes),
                                Arg::I64(*ino as i64),
                            ],
                        )
                        .await?;
                    // go-sql-driver reports changed rows, and `x = x + 0` changes none;
                    // sqlx asks MySQL for found rows.
                    let rows = if st.dialect == Dialect::Mysql && s.is_zero() {
                        0
                    } else {
                        d.rows_affected
                    };
                    if rows == 0 {
                        nonexist.push(*ino);
                    }
                }
            })?;
            missing.extend(nonexist);
        }
        for ino in missing {
            match self.sync_dir_stat(ino).await {
                Ok(()) | Err(MetaError::NotFound) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// `doDeleteFileData`: frees the chunks of a deleted file, then its `delfile` row.
    pub(super) async fn delete_file_data(&mut self, ino: Ino) -> Result<()> {
        let st = self.st.clone();
        let rows = self.rows_of_inode(&st.chunk_indexes, ino).await?;
        for r in rows {
            let indx = r.int(0).map_err(|e| MetaError::Engine(e.msg))?;
            let slices = txn!(self, {
                let rows = self
                    .fetch(&st.chunk_get_for_update, &chunk_key(ino, indx as u32))
                    .await?;
                match rows.first() {
                    None => Vec::new(),
                    Some(c) => {
                        let id = c.int(0)?;
                        let ss = Slice::decode_all(c.bytes(3)?).unwrap_or_default();
                        let mut deltas: BTreeMap<u64, i32> = BTreeMap::new();
                        for s in ss.iter().filter(|s| s.id > 0) {
                            *deltas.entry(s.id).or_default() -= 1;
                        }
                        let ids: Vec<(u64, i32)> = deltas.into_iter().collect();
                        for part in ids.chunks(st.txn_batch()) {
                            let mut args = Vec::with_capacity(part.len() * 3);
                            for (id, d) in part {
                                args.push(Arg::I64(*id as i64));
                                args.push(Arg::I32(*d));
                            }
                            for (id, _) in part {
                                args.push(Arg::I64(*id as i64));
                            }
                            self.exec(&st.chunkref_batch(part.len()), &args).await?;
                        }
                        let d = self
                            .exec(
                                &st.chunk_delete,
                                &[
                                    Arg::I64(ino as i64),
                                    Arg::I32(indx as i32),
                                    Arg::I64(id),
                                    Arg::I64(ino as i64),
                                ],
                            )
                            .await?;
                        if d.rows_affected == 0 {
                            let kind = if st.dialect == Dialect::Mysql {
                                ErrKind::Retry
                            } else {
                                ErrKind::Fatal
                            };
                            return Err(TxErr::Db(DbError {
                                kind,
                                duplicate: false,
                                msg: format!(
                                    "chunk {ino}:{indx} changed, try restarting transaction"
                                ),
                            }));
                        }
                        ss
                    }
                }
            })?;
            for s in slices.iter().filter(|s| s.id > 0) {
                let refs = simple!(self, {
                    let rows = self
                        .fetch(&st.chunkref_get, &[Arg::I64(s.id as i64)])
                        .await?;
                    match rows.first() {
                        Some(r) => Some(r.int(2)?),
                        None => None,
                    }
                })?;
                if matches!(refs, Some(r) if r <= 0) {
                    // deleteSlice: the objects (none: metabench writes no data), then
                    // doDeleteSlice
                    txn!(self, {
                        self.exec(&st.chunkref_delete, &[Arg::I64(s.id as i64)])
                            .await?;
                    })?;
                }
            }
        }
        txn!(self, {
            self.exec(&st.delfile_delete, &[Arg::I64(ino as i64)])
                .await?;
        })
    }
    /// `doGetParents`: the parents of a hard-linked file from its edges, with counts.
    pub(super) async fn get_parents(&mut self, ino: Ino) -> Result<Vec<(Ino, i64)>> {
        let st = self.st.clone();
        let rows = self.rows_of_inode(&st.edges_of_inode, ino).await?;
        let mut parents: BTreeMap<Ino, i64> = BTreeMap::new();
        for r in &rows {
            if let Ok(p) = r.int(1) {
                *parents.entry(p as Ino).or_default() += 1;
            }
        }
        Ok(parents.into_iter().collect())
    }

    /// `doFlushStats`: one transaction updating both counters.
    pub(super) async fn flush_stats(&mut self) -> Result<()> {
        let mut taken = self.base.take_pending_stats();
        let (space, inodes) = (taken.space, taken.inodes);
        if space == 0 && inodes == 0 {
            return Ok(());
        }
        let st = self.st.clone();
        txn!(self, {
            self.exec(&st.stats_inodes, &[Arg::I64(inodes)]).await?;
            self.exec(&st.stats_space, &[Arg::I64(space)]).await?;
        })?;
        taken.space_written();
        taken.inodes_written();
        Ok(())
    }
}
