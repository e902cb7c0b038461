//! `metabench fill`: a populated volume, written in bulk as `juicefs load` writes a
//! dump (`pkg/meta` `LoadMeta` / `loadEntry` of `redis.go`, `sql.go`, `tkv.go`), but from
//! a tree computed on the fly ([`shape`]) rather than read from a dump, so its memory
//! stays bounded at any size.
//!
//! The result is what clients would have written: the base directory is made by an
//! ordinary `mkdir`; the ids come from the volume's counters (`incrCounter` of
//! `nextInode` and `nextChunk`, as a client reserves them); every directory's nlink and
//! dir stat, every hard-linked file's nlink and parents, and `usedSpace`/`totalInodes`
//! agree with the entries. Each family writes a batch in one transaction and as few
//! round trips as it can ([`BulkLoad`]): a `MULTI … EXEC` pipeline on Redis, multi-row
//! inserts on SQL, one commit of puts on a transactional KV (etcd: several commits at once,
//! [`BulkLoad::write_in_order`]).
//!
//! Every batch leaves a whole tree behind it ([`Layout::batches`]) and the batches that land
//! are always the first ones, so a fill stopped between batches (Ctrl-C), or by an engine
//! that refuses the next one (out of room), leaves a consistent volume holding the files
//! written so far.

pub mod bulk;
pub mod shape;

pub use bulk::BulkLoad;
pub(crate) use bulk::{reserve_ids, write_each};

pub use shape::{Batch, DirNode, EntryNode, Layout, Node, Shape, Totals, BATCH_ENTRIES};

use crate::{Ctx, Engine, MetaError, Result};
use metabench_schema::{Ino, Timestamp};

/// How a fill ended.
#[derive(Debug)]
pub enum FillEnd {
    /// Every batch was written.
    Done(Totals),
    /// Stopped between two batches: by Ctrl-C (`failure` is `None`), or because the
    /// engine refused a batch. The volume holds the `written` part, consistent, unless
    /// `stray` says otherwise.
    Stopped {
        /// Why the engine refused the next batch; `None` for a stop asked for.
        failure: Option<MetaError>,
        /// What the volume holds.
        written: Totals,
        /// Why the volume may not be consistent ([`BulkLoad::take_stray`]): writes of a
        /// refused transaction the engine would not take back, or one that could not be
        /// told to have landed; its entries, directories and counters may then disagree.
        stray: Option<String>,
    },
}

/// Fills directory `name` (made here, in `parent`) with the tree `shape` describes. `stop`
/// is asked before every [`BulkLoad::write_in_order`] of up to [`BulkLoad::in_flight`]
/// transactions; `started` hears how the engine takes the tree (batches of so many
/// entries) once the ids are reserved, `progress` the files each batch wrote.
pub async fn fill(
    engine: &dyn Engine,
    parent: Ino,
    name: &[u8],
    shape: &Shape,
    stop: &(dyn Fn() -> bool + Sync),
    started: &mut (dyn FnMut(&str) + Send),
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<FillEnd> {
    shape.check().map_err(MetaError::Engine)?;
    let ctx = Ctx::root();
    let mut session = engine.session(&crate::SessionOptions::default()).await?;
    let (base, _) = session.mkdir(&ctx, parent, name, 0o755, 0o022).await?;
    // the parent's dir stat, buffered by the session, is written now
    session.close().await?;
    let mut loader = engine.bulk_loader().await?;
    let mut layout = Layout {
        shape: shape.clone(),
        base,
        base_parent: parent,
        first_inode: 0,
        first_slice: 0,
        uid: ctx.uid,
        gid: ctx.gid(),
        now: Timestamp::now(),
    };
    let (inodes, slices) = shape.ids_to_reserve();
    layout.first_inode = loader.reserve("nextInode", inodes).await?;
    if slices > 0 {
        layout.first_slice = loader.reserve("nextChunk", slices).await?;
    }
    started(&match loader.write_budget() {
        Some(writes) => format!("in transactions of up to {writes} writes"),
        None => format!("in batches of {} entries", loader.batch_entries(shape)),
    });
    let mut written = Totals::default();
    let mut batches = layout.batches(loader.batch_entries(shape)).peekable();
    let mut wave: Vec<(Batch, Totals)> = Vec::with_capacity(loader.in_flight());
    loop {
        wave.clear();
        while wave.len() < loader.in_flight().max(1) {
            let Some(mut batch) = batches.next() else {
                break;
            };
            // where the engine caps a transaction's writes, as many small batches as fit
            if let Some(budget) = loader.write_budget() {
                let mut cost = loader.cost(&batch);
                while let Some(next) = batches.peek() {
                    let more = loader.cost(next);
                    if cost + more > budget {
                        break;
                    }
                    cost += more;
                    batch.absorb(batches.next().expect("peeked"));
                }
            }
            let mut added = Totals::default();
            added.add(&batch);
            wave.push((batch, added));
        }
        if wave.is_empty() {
            break;
        }
        if stop() {
            return Ok(FillEnd::Stopped {
                failure: None,
                written,
                stray: None,
            });
        }
        let (landed, failure) = loader.write_in_order(&wave).await;
        for (batch, added) in &wave[..landed] {
            written.merge(added);
            progress(batch.files);
        }
        if let Some(e) = failure {
            return Ok(FillEnd::Stopped {
                failure: Some(e),
                written,
                stray: loader.take_stray(),
            });
        }
    }
    Ok(FillEnd::Done(written))
}
