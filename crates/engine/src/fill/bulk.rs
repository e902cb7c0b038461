//! [`BulkLoad`]: what an engine family implements for `metabench fill` (its
//! `redis/fill.rs`, `sql/session/fill.rs`, `tkv/fill.rs`). A leaf beside the tree's
//! [`super::shape`]: [`crate::Engine::bulk_loader`] opens one, [`super::fill`] drives it.

use super::shape::{Batch, Shape, Totals, BATCH_ENTRIES};
use crate::base::Storage;
use crate::{MetaError, Result};
use async_trait::async_trait;

/// An engine's bulk writer for `metabench fill` (one connection).
#[async_trait]
pub trait BulkLoad: Send {
    /// Entries per batch of a tree of `shape`: as many as one transaction of this
    /// engine takes.
    fn batch_entries(&self, _shape: &Shape) -> usize {
        BATCH_ENTRIES
    }

    /// Writes one transaction may hold, where the engine caps them (etcd's
    /// `--max-txn-ops`): consecutive batches are then written together while their
    /// [`BulkLoad::cost`] fits.
    fn write_budget(&self) -> Option<usize> {
        None
    }

    /// Writes a batch takes (with [`BulkLoad::write_budget`]).
    fn cost(&self, _batch: &Batch) -> usize {
        0
    }

    /// Reserves `n` ids of the counter `name` (`nextInode`, `nextChunk`) in one
    /// `incrCounter`, as a client reserves its batches, and returns the first.
    async fn reserve(&mut self, name: &str, n: u64) -> Result<u64>;

    /// Writes one batch in one transaction: directory records (attribute and dir stat),
    /// entries, the nodes they make (attribute, chunks, symlink target, extended
    /// attribute, a hard-linked file's parents), and `added` to the volume's `usedSpace`
    /// and `totalInodes`. On a TKV whose cap on a transaction's writes the batch exceeds,
    /// several, the last guarded; [`BulkLoad::write_in_order`] sends such a batch as a
    /// wave instead, which is taken back whole.
    async fn write(&mut self, batch: &Batch, added: &Totals) -> Result<()>;

    /// Transactions [`BulkLoad::write_in_order`] takes at once: 1 (the default) unless
    /// the engine can have several in flight and still leave only the first batches
    /// written (etcd's waves, `tkv/fill.rs`), short of [`BulkLoad::take_stray`].
    fn in_flight(&self) -> usize {
        1
    }

    /// Writes `batches` (each with what it adds to the volume's counters) in order, in
    /// one transaction each, up to [`BulkLoad::in_flight`] of them at once, so that the
    /// ones written are always the first ones: how many were written, and why the next
    /// one was not when that is fewer than all.
    async fn write_in_order(&mut self, batches: &[(Batch, Totals)]) -> (usize, Option<MetaError>) {
        write_each(self, batches).await
    }

    /// After a [`BulkLoad::write_in_order`] that failed: why the volume may not be
    /// consistent, when the writer could not take back what it sent, or could not tell
    /// whether it landed (none by default, where a transaction lands whole or not at all).
    fn take_stray(&mut self) -> Option<String> {
        None
    }
}

/// [`BulkLoad::write_in_order`] one transaction at a time.
pub(crate) async fn write_each<L: BulkLoad + ?Sized>(
    loader: &mut L,
    batches: &[(Batch, Totals)],
) -> (usize, Option<MetaError>) {
    for (written, (batch, added)) in batches.iter().enumerate() {
        if let Err(e) = loader.write(batch, added).await {
            return (written, Some(e));
        }
    }
    (batches.len(), None)
}

/// [`BulkLoad::reserve`] over a session's `incrCounter` (each family's bulk writer
/// reserves on its session): adds `n` to the counter `name` and returns the first of the
/// `n` ids that reserves.
pub(crate) async fn reserve_ids<S: Storage>(s: &mut S, name: &str, n: u64) -> Result<u64> {
    let next = s.incr_counter(name, n as i64).await?;
    Ok(next as u64 - n)
}
