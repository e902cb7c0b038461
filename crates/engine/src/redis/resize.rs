//! Resizing a file on Redis: `doTruncate` and `doFallocate` of `pkg/meta/redis.go`, and
//! the `getParents` read that they and `doWrite` make for the quota check.

use super::reads::{get_attr, quota_parents};
use super::session::RedisSession;
use super::txn::{txn, Conn, TxErr};
use crate::base::{BaseMeta, ResizeSteps};
use crate::rules::{Holes, Resize, TruncateHoles};
use crate::types::{FallocRange, Resized};
use crate::{Ctx, Result};
use metabench_schema::redis_keys::{names, RedisKeys};
use metabench_schema::{Ino, Slice, CHUNK_SIZE};
use redis::cmd;

/// From this many chunks between the old and the new length on, `doTruncate` finds the
/// chunks to zero with `SCAN` instead of naming each one.
const SCAN_FROM_CHUNKS: u64 = 10_000;

impl ResizeSteps for RedisSession {
    /// `doTruncate` (flags 0, permission checked): `WATCH i{ino}`, `GET`, the parents for
    /// the quota check, then `SET`, the holes (`RPUSH` of the first chunk, `RPUSHX` of
    /// each chunk between, `RPUSH` of the last) and `INCRBY usedSpace` in one
    /// `MULTI … EXEC`. A truncate to the length the file has writes nothing.
    async fn do_truncate(&mut self, ctx: &Ctx, ino: Ino, length: u64) -> Result<Resized> {
        self.resize(ctx, ino, Resize::Truncate(length)).await
    }

    /// `doFallocate`: `WATCH i{ino}`, `GET`, the parents for the quota check, then `SET`,
    /// one `RPUSH` hole per chunk of a zeroed or punched range inside the old length, and
    /// `INCRBY usedSpace` (also when nothing grew) in one `MULTI … EXEC`.
    async fn do_fallocate(&mut self, ctx: &Ctx, ino: Ino, range: FallocRange) -> Result<Resized> {
        self.resize(ctx, ino, Resize::Fallocate(range)).await
    }
}

impl RedisSession {
    /// The transaction of `doTruncate` and `doFallocate`: `WATCH i{ino}`, `GET`, `op`'s
    /// checks (nothing more when it writes nothing), `getParents` for the quota check,
    /// then `SET` of the inode, the holes and `INCRBY usedSpace` in one `MULTI … EXEC`.
    async fn resize(&mut self, ctx: &Ctx, ino: Ino, op: Resize) -> Result<Resized> {
        let ki = self.keys.inode(ino);
        let keys = self.keys.clone();
        txn!(self, vec![ki.clone()], |c| {
            let attr = get_attr(&mut c, &ki).await?;
            let (done, holes) = Resized::resize(ctx, attr, op)?;
            let Some(holes) = holes else {
                return Ok(done);
            };
            let parents = quota_parents(&mut c, &keys, ino, &done.attr).await?;
            self.check_space_quota(done.space, &parents).await;
            let mut p = redis::pipe();
            p.atomic();
            p.cmd("SET").arg(&ki).arg(done.attr.encode());
            match holes {
                Holes::Truncate(holes) => {
                    let between: Vec<u32> =
                        if (holes.right - holes.left) / CHUNK_SIZE >= SCAN_FROM_CHUNKS {
                            scan_chunks(&mut c, &keys, ino, &holes).await?
                        } else {
                            holes.between.clone().collect()
                        };
                    push_hole(&mut p, &keys, ino, holes.head);
                    let whole = TruncateHoles::whole_chunk().encode();
                    for indx in between {
                        p.cmd("RPUSHX").arg(keys.chunk(ino, indx)).arg(&whole[..]);
                    }
                    if let Some(tail) = holes.tail {
                        push_hole(&mut p, &keys, ino, tail);
                    }
                }
                Holes::Fallocate(holes) => {
                    for hole in holes {
                        push_hole(&mut p, &keys, ino, hole);
                    }
                }
            }
            p.cmd("INCRBY")
                .arg(keys.named(names::USED_SPACE))
                .arg(done.space);
            c.exec(&p).await?;
            Ok(done)
        })
    }
}

/// `RPUSH c{ino}_{indx}` of one hole (a zeroed range of chunk `indx`).
fn push_hole(p: &mut redis::Pipeline, keys: &RedisKeys, ino: Ino, (indx, hole): (u32, Slice)) {
    p.cmd("RPUSH")
        .arg(keys.chunk(ino, indx))
        .arg(&hole.encode()[..]);
}

/// The chunks of `ino` strictly between the head's and the last one, found by `SCAN …
/// MATCH c{ino}_* COUNT 10000` (one request per cursor step), as `doTruncate` does for a
/// resize over 10,000 chunks or more.
async fn scan_chunks(
    c: &mut Conn,
    keys: &RedisKeys,
    ino: Ino,
    holes: &TruncateHoles,
) -> std::result::Result<Vec<u32>, TxErr> {
    let pattern = format!("{}c{ino}_*", keys.prefix());
    let skip = keys.prefix().len() + format!("c{ino}_").len();
    let mut found = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, page): (u64, Vec<String>) = c
            .query(
                cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(10_000),
            )
            .await?;
        for key in page {
            match key.get(skip..).and_then(|i| i.parse::<u32>().ok()) {
                Some(indx) if holes.between.contains(&indx) => found.push(indx),
                Some(_) => {}
                None => tracing::error!("parse {key}: not a chunk key"),
            }
        }
        if next == 0 {
            return Ok(found);
        }
        cursor = next;
    }
}
