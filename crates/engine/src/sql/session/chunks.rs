//! Chunks on an SQL session: `dbMeta.doWrite` and `doRead`.

use super::rows::*;
use super::txn::{simple, txn};
use super::SqlSession;
use crate::base::Storage;
use crate::sql::conn::Arg;
use crate::{ChunkWrite, MetaError, Result};
use metabench_schema::sql::Dialect;
use metabench_schema::{align4k, Ino, Slice, Timestamp, CHUNK_SIZE};

impl SqlSession {
    pub(super) async fn write_txn(&mut self, ino: Ino, w: ChunkWrite) -> Result<()> {
        let ChunkWrite { indx, slice, mtime } = w;
        let st = self.st.clone();
        let buf = slice.encode();
        let (parent, dlen, dspace) = txn!(self, {
            let mut n = self.get_node(ino, true).await?.ok_or(MetaError::NotFound)?;
            if n.typ != TYPE_FILE {
                return Err(MetaError::Perm.into());
            }
            let newleng = indx as u64 * CHUNK_SIZE + slice.pos as u64 + slice.len as u64;
            let (mut dlen, mut dspace) = (0i64, 0i64);
            if newleng > n.length as u64 {
                dlen = newleng as i64 - n.length;
                dspace = align4k(newleng) - align4k(n.length as u64);
                n.length = newleng as i64;
            }
            let parent = n.parent.unwrap_or(0);
            // checkQuota(…, getParents(…)) inside the transaction, as the other families:
            // the parents are read even when no quota check follows.
            let parents: Vec<Ino> = if parent > 0 {
                vec![parent as Ino]
            } else {
                let rows = self
                    .fetch(&st.edges_of_inode, &[Arg::I64(ino as i64)])
                    .await?;
                rows.iter()
                    .map(|r| r.int(1).map(|p| p as Ino))
                    .collect::<std::result::Result<_, _>>()?
            };
            if dspace > 0 {
                for p in parents {
                    self.quota_walk(p).await;
                }
            }
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
                let _ = self
                    .fetch(
                        &st.chunk_get,
                        &[Arg::I64(ino as i64), Arg::I32(indx as i32)],
                    )
                    .await;
            }
            (parent, dlen, dspace)
        })?;
        self.base.cache.forget_chunk(ino, indx);
        self.update_parent_stat(ino, parent as Ino, dlen, dspace)
            .await;
        Ok(())
    }

    /// `dbMeta.doRead`: the chunk row's slices, none when there is no row.
    pub(super) async fn read_slices(&mut self, ino: Ino, indx: u32) -> Result<Vec<Slice>> {
        let st = self.st.clone();
        let buf = simple!(self, {
            let rows = self
                .fetch(
                    &st.chunk_get,
                    &[Arg::I64(ino as i64), Arg::I32(indx as i32)],
                )
                .await?;
            match rows.first() {
                Some(r) => r.bytes(3)?.to_vec(),
                None => Vec::new(),
            }
        })?;
        Ok(Slice::decode_all(&buf)?)
    }
}
