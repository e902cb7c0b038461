//! Resizing a file on the TKV family: `doTruncate` and `doFallocate` of `pkg/meta/tkv.go`,
//! and the `getParents` read that they and `doWrite` make for the quota check.

use super::kv::{txn, KeyRange, TxErr, Txn};
use super::reads::{get_attr, quota_parents};
use super::session::TkvSession;
use crate::base::{BaseMeta, ResizeSteps};
use crate::rules::{Holes, Resize, TruncateHoles};
use crate::types::{FallocRange, Resized};
use crate::{Ctx, Result};
use metabench_schema::{Ino, Slice};

/// `kvTxn.append` as etcd and TiKV do it: a get, then a set of the value with `hole`
/// after it. (FoundationDB's `AppendIfFits` reads nothing; see its fidelity notes.)
async fn append(tx: &mut Txn, key: &[u8], hole: Slice) -> std::result::Result<(), TxErr> {
    let mut value = tx.get(key).await?.unwrap_or_default();
    value.extend_from_slice(&hole.encode());
    tx.set(key, &value).await?;
    Ok(())
}

impl ResizeSteps for TkvSession {
    /// `kvMeta.doTruncate` (flags 0, permission checked): the inode's get, the parents for
    /// the quota check, a scan of the chunks between (when the range spans more than two
    /// chunks) with a hole set after each, the first (and last) chunk's append, and the
    /// inode's set. A truncate to the length the file has writes nothing.
    async fn do_truncate(&mut self, ctx: &Ctx, ino: Ino, length: u64) -> Result<Resized> {
        self.resize(ctx, ino, Resize::Truncate(length)).await
    }

    /// `kvMeta.doFallocate`: the inode's get, the parents for the quota check, the inode's
    /// set, then an append per chunk of a zeroed or punched range inside the old length.
    async fn do_fallocate(&mut self, ctx: &Ctx, ino: Ino, range: FallocRange) -> Result<Resized> {
        self.resize(ctx, ino, Resize::Fallocate(range)).await
    }
}

impl TkvSession {
    /// The transaction of `doTruncate` and `doFallocate`: the inode's get, `op`'s checks
    /// (nothing more when it writes nothing), the parents for the quota check, then the
    /// holes and the inode's set, in the order each of the two writes them.
    async fn resize(&mut self, ctx: &Ctx, ino: Ino, op: Resize) -> Result<Resized> {
        let keys = self.keys.clone();
        let kn = keys.inode(ino);
        txn!(self, [ino], |tx| {
            let attr = get_attr(&mut tx, &kn).await?;
            let (done, holes) = Resized::resize(ctx, attr, op)?;
            let Some(holes) = holes else {
                return Ok(done);
            };
            let parents = quota_parents(&mut tx, &keys, ino, &done.attr).await?;
            self.check_space_quota(done.space, &parents).await;
            match holes {
                Holes::Truncate(holes) => {
                    if !holes.between.is_empty() {
                        let whole = TruncateHoles::whole_chunk().encode();
                        let (from, to) = (
                            keys.chunk(ino, holes.between.start),
                            keys.chunk(ino, holes.between.end),
                        );
                        for (k, mut v) in tx.scan(KeyRange::new(&from, &to)).await? {
                            v.extend_from_slice(&whole);
                            tx.set(&k, &v).await?;
                        }
                    }
                    let (indx, head) = holes.head;
                    append(&mut tx, &keys.chunk(ino, indx), head).await?;
                    if let Some((indx, tail)) = holes.tail {
                        append(&mut tx, &keys.chunk(ino, indx), tail).await?;
                    }
                    tx.set(&kn, &done.attr.encode()).await?;
                }
                Holes::Fallocate(holes) => {
                    tx.set(&kn, &done.attr.encode()).await?;
                    for (indx, hole) in holes {
                        append(&mut tx, &keys.chunk(ino, indx), hole).await?;
                    }
                }
            }
            Ok(done)
        })
    }
}
