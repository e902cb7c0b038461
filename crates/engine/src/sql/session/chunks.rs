//! Chunks on an SQL session: `dbMeta.doWrite`, `doRead`, `doTruncate` and `doFallocate`.

use super::rows::*;
use super::sql_session::SqlSession;
use super::tx_err::TxErr;
use super::txn::{simple, txn};
use crate::base::{BaseMeta, ResizeSteps};
use crate::rules::TruncateHoles;
use crate::sql::conn::Arg;
use crate::types::{FallocRange, Resized};
use crate::{ChunkWrite, Ctx, MetaError, Result};
use metabench_schema::sql::{Dialect, NodeRow};
use metabench_schema::{Attr, Ino, Slice, Timestamp};

impl SqlSession {
    pub(super) async fn write_txn(&mut self, ino: Ino, w: ChunkWrite) -> Result<()> {
        let ChunkWrite { indx, slice, mtime } = w;
        let st = self.st.clone();
        let buf = slice.encode();
        let (parent, dlen, dspace) = txn!(self, [ino], {
            let mut n = self.get_node(ino, true).await?.ok_or(MetaError::NotFound)?;
            if n.typ != TYPE_FILE {
                return Err(MetaError::Perm.into());
            }
            let (length, dlen, dspace) = w.grow(n.length as u64);
            n.length = length as i64;
            let parent = n.parent.unwrap_or(0);
            let parents = self.quota_parents(ino, parent as Ino).await?;
            self.check_space_quota(dspace, &parents).await;
            let now = Timestamp::now();
            set_mtime(&mut n, mtime);
            set_ctime(&mut n, now);
            let d = self
                .exec(
                    &st.chunk_upsert,
                    &[
                        Arg::I64(ino as i64),
                        Arg::I32(indx as i32),
                        Arg::Bytes(&buf),
                        Arg::Bytes(&buf),
                    ],
                )
                .await?;
            let inserted = st.dialect == Dialect::Mysql && d.rows_affected == 1;
            self.exec(
                &st.chunkref_insert,
                &[
                    Arg::I64(slice.id as i64),
                    Arg::I32(slice.size as i32),
                    Arg::I32(1),
                ],
            )
            .await?;
            let [m, c, mn, cn] = time_args(&n);
            let length = Arg::I64(n.length);
            self.exec(
                &st.node_update_write,
                &[m, c, mn, cn, length, Arg::I64(ino as i64)],
            )
            .await?;
            if !inserted {
                // counts the slices for the compaction trigger (errors ignored)
                let _ = self.fetch(&st.chunk_get, &chunk_key(ino, indx)).await;
            }
            (parent, dlen, dspace)
        })?;
        self.base.data().cache.forget_chunk(ino, indx);
        self.update_parent_stat(ino, parent as Ino, dlen, dspace)
            .await;
        Ok(())
    }

    /// `dbMeta.getParents` inside a transaction: the parent, or for a hard-linked file
    /// (parent 0) the distinct parents of its edges (one `SELECT`).
    async fn quota_parents(
        &mut self,
        ino: Ino,
        parent: Ino,
    ) -> std::result::Result<Vec<Ino>, TxErr> {
        if parent > 0 {
            return Ok(vec![parent]);
        }
        let st = self.st.clone();
        let rows = self
            .fetch(&st.edges_of_inode, &[Arg::I64(ino as i64)])
            .await?;
        let mut parents = rows
            .iter()
            .map(|r| r.int(1).map(|p| p as Ino))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        parents.sort_unstable();
        parents.dedup();
        Ok(parents)
    }

    /// `dbMeta.appendSlice`: appends `slice` to the chunk row (`UPDATE … slices || ?`, or
    /// `concat` on MySQL), inserting the row when none was updated.
    async fn append_slice(
        &mut self,
        ino: Ino,
        indx: u32,
        slice: Slice,
    ) -> std::result::Result<(), TxErr> {
        let st = self.st.clone();
        let buf = slice.encode();
        let (ino, indx) = (Arg::I64(ino as i64), Arg::I32(indx as i32));
        let d = self
            .exec(&st.chunk_append, &[Arg::Bytes(&buf), ino, indx])
            .await?;
        if d.rows_affected == 0 {
            self.exec(&st.chunk_insert, &[ino, indx, Arg::Bytes(&buf)])
                .await?;
        }
        Ok(())
    }

    /// Writes a resized node's length and times (the `Update` of `length`, `mtime`,
    /// `ctime`, `mtimensec` and `ctimensec`).
    async fn update_length(&mut self, ino: Ino, attr: &Attr) -> std::result::Result<(), TxErr> {
        let st = self.st.clone();
        let n = NodeRow::from_attr(ino, attr);
        let [m, c, mn, cn] = time_args(&n);
        self.exec(
            &st.node_update_write,
            &[m, c, mn, cn, Arg::I64(n.length), Arg::I64(ino as i64)],
        )
        .await?;
        Ok(())
    }

    /// `dbMeta.doRead`: the chunk row's slices, none when there is no row.
    pub(super) async fn read_slices(&mut self, ino: Ino, indx: u32) -> Result<Vec<Slice>> {
        let st = self.st.clone();
        let buf = simple!(self, {
            let rows = self.fetch(&st.chunk_get, &chunk_key(ino, indx)).await?;
            match rows.first() {
                Some(r) => r.bytes(3)?.to_vec(),
                None => Vec::new(),
            }
        })?;
        Ok(Slice::decode_all(&buf)?)
    }
}

impl ResizeSteps for SqlSession {
    /// `dbMeta.doTruncate` (flags 0, permission checked): the node `SELECT … FOR UPDATE`,
    /// the parents for the quota check, the existing chunks between (`SELECT indx … FOR
    /// UPDATE`, when the two ends' chunk indexes are more than one apart), a hole appended to each
    /// ([`SqlSession::append_slice`]), then the node's `UPDATE`. A truncate to the length
    /// the file has writes nothing.
    async fn do_truncate(&mut self, ctx: &Ctx, ino: Ino, length: u64) -> Result<Resized> {
        let st = self.st.clone();
        txn!(self, [ino], {
            let n = self.get_node(ino, true).await?.ok_or(MetaError::NotFound)?;
            let (done, holes) = Resized::truncate(ctx, n.to_attr()?, length)?;
            if let Some(holes) = holes {
                let parents = self.quota_parents(ino, done.attr.parent).await?;
                self.check_space_quota(done.space, &parents).await;
                let mut between = Vec::new();
                if !holes.between.is_empty() {
                    let rows = self
                        .fetch(
                            &st.chunk_indexes_between,
                            &[
                                Arg::I64(ino as i64),
                                Arg::I64(holes.between.start as i64 - 1),
                                Arg::I64(holes.between.end as i64),
                            ],
                        )
                        .await?;
                    for r in &rows {
                        between.push(r.int(0)? as u32);
                    }
                }
                let (indx, head) = holes.head;
                self.append_slice(ino, indx, head).await?;
                for indx in between {
                    self.append_slice(ino, indx, TruncateHoles::whole_chunk())
                        .await?;
                }
                if let Some((indx, tail)) = holes.tail {
                    self.append_slice(ino, indx, tail).await?;
                }
                self.update_length(ino, &done.attr).await?;
            }
            done
        })
    }

    /// `dbMeta.doFallocate`: the node `SELECT … FOR UPDATE`, the parents for the quota
    /// check, the node's `UPDATE`, then a hole appended per chunk of a zeroed or punched
    /// range inside the old length.
    async fn do_fallocate(&mut self, ctx: &Ctx, ino: Ino, range: FallocRange) -> Result<Resized> {
        txn!(self, [ino], {
            let n = self.get_node(ino, true).await?.ok_or(MetaError::NotFound)?;
            let (done, holes) = Resized::fallocate(ctx, n.to_attr()?, range)?;
            let parents = self.quota_parents(ino, done.attr.parent).await?;
            self.check_space_quota(done.space, &parents).await;
            self.update_length(ino, &done.attr).await?;
            for (indx, hole) in holes {
                self.append_slice(ino, indx, hole).await?;
            }
            done
        })
    }
}
