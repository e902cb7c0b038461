//! Ids handed out locally from batches fetched from a counter, as `baseMeta` does
//! (`nextInode`, `NewSlice`).

use metabench_schema::Ino;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// Inode ids are fetched 1024 at a time (`inodeBatch`).
pub const INODE_BATCH: u64 = 1024;
/// Slice ids are fetched 4096 at a time (`sliceIdBatch`).
pub const SLICE_BATCH: u64 = 4096;
/// A worker takes slice ids from its client's batch this many at a time
/// ([`SliceIds::take_run`]); a whole number of runs makes a batch.
pub const SLICE_RUN: u64 = 64;

/// A range of ids fetched from a counter and handed out locally.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdRange {
    next: u64,
    end: u64,
}

impl IdRange {
    /// The ids `[start, end)`.
    pub fn new(start: u64, end: u64) -> Self {
        Self { next: start, end }
    }

    /// Takes the next id, skipping 0 and 1 (root) as JuiceFS does.
    pub fn take(&mut self) -> Option<u64> {
        while self.next < self.end {
            let id = self.next;
            self.next += 1;
            if id > 1 {
                return Some(id);
            }
        }
        None
    }

    /// Ids left.
    pub fn left(&self) -> u64 {
        self.end.saturating_sub(self.next)
    }

    /// The `batch` ids before `end`: what a counter handed out when it answered `end`
    /// (the counter then holds the next unused id, as `allocateInodes` reads it).
    pub fn ending_at(end: u64, batch: u64) -> Self {
        Self::new(end.saturating_sub(batch), end)
    }
}

/// `inodeNeedPrefetch` (`base.go`): `utils.JitterIt(inodeBatch * 0.1)`, i.e. 102.4 ± up
/// to 5 whole ids. JuiceFS draws it once per client process; each session here is one
/// client, so each draws its own.
pub fn inode_need_prefetch() -> u64 {
    let d = INODE_BATCH as f64 * 0.1;
    let j = (d / 20.0) as i64;
    (d + rand::random_range(-j..=j) as f64) as u64
}

/// A session's inode ids as `baseMeta.nextInode` keeps them (`freeInodes` and
/// `prefetchedInodes`): handed out from the current range; when exactly
/// [`inode_need_prefetch`] are left, the caller starts fetching the next range in the
/// background (`go m.prefetchInodes()`, uncounted); when the range is used up, the
/// prefetched one is taken if it arrived, else the caller allocates inline.
#[derive(Debug)]
pub struct InodeIds {
    current: IdRange,
    prefetched: Option<tokio::task::JoinHandle<Option<IdRange>>>,
    need_prefetch: u64,
}

impl Default for InodeIds {
    fn default() -> Self {
        Self {
            current: IdRange::default(),
            prefetched: None,
            need_prefetch: inode_need_prefetch(),
        }
    }
}

impl InodeIds {
    /// The next id of the current range, and whether the caller should now start the
    /// background prefetch ([`InodeIds::prefetching`]); `None` when the range is used up.
    pub fn take(&mut self) -> Option<(Ino, bool)> {
        let id = self.current.take()?;
        let prefetch = self.prefetched.is_none() && self.current.left() == self.need_prefetch;
        Some((id, prefetch))
    }

    /// Keeps the background task fetching the next range.
    pub fn prefetching(&mut self, task: tokio::task::JoinHandle<Option<IdRange>>) {
        self.prefetched = Some(task);
    }

    /// With the current range used up: waits for a prefetch in flight (`prefetchMu`) and
    /// takes its range. False when there was none or it failed: allocate inline, then
    /// [`InodeIds::refill`].
    pub async fn take_prefetched(&mut self) -> bool {
        match self.prefetched.take() {
            Some(task) => match task.await {
                Ok(Some(range)) => {
                    self.current = range;
                    true
                }
                _ => false,
            },
            None => false,
        }
    }

    /// Replaces the current range with one allocated inline.
    pub fn refill(&mut self, range: IdRange) {
        self.current = range;
    }
}

impl Drop for InodeIds {
    fn drop(&mut self) {
        if let Some(task) = self.prefetched.take() {
            task.abort();
        }
    }
}

/// A client's slice ids as `baseMeta.NewSlice` keeps them (`freeSlices`): `[next, maxid)`
/// of the last `nextChunk` batch.
///
/// JuiceFS takes one id at a time under `freeMu`, a lock that costs as much as the rest
/// of Go's call. Here each worker takes a run of [`SLICE_RUN`] ids with one atomic step
/// and hands them out from its own handle ([`super::ClientState::take_slice_id`]), so an
/// id costs a plain increment. A worker's ids come in order, and a refill comes once the
/// batch is used up, as in JuiceFS; with several workers, their runs interleave. The only
/// ids skipped are the rest of a worker's run when the worker ends, as a client skips the
/// rest of its batch at exit.
///
/// Refills are made under `freeMu` ([`super::ClientState::ids`]), one at a time. A refill
/// writes `next` before `max` and a taker reads `max` before `next`, so a taker that sees
/// the new `max` sees the new `next`; one that read the old `max` finds `next` at or past
/// it (the counter only grows), or wins ids below it that no one else took, since `next`
/// changed under any other taker's compare-and-swap.
#[derive(Debug, Default)]
pub struct SliceIds {
    next: AtomicU64,
    max: AtomicU64,
}

impl SliceIds {
    /// The next `n` ids of the current batch, fewer if fewer are left; `None` when it is
    /// used up (or being refilled).
    pub fn take_run(&self, n: u64) -> Option<Range<u64>> {
        loop {
            let max = self.max.load(Ordering::Acquire);
            let next = self.next.load(Ordering::Acquire);
            if next >= max {
                return None;
            }
            let end = max.min(next + n);
            if self
                .next
                .compare_exchange_weak(next, end, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return Some(next..end);
            }
        }
    }

    /// The batch that `incrCounter("nextChunk", sliceIdBatch)` answered `counter` for.
    /// Called under `freeMu`, once the batch is used up.
    pub fn refill(&self, counter: u64) {
        self.next
            .store(counter.saturating_sub(SLICE_BATCH), Ordering::Release);
        self.max.store(counter, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_batches_hand_out_every_id_below_the_counter_in_runs() {
        let s = SliceIds::default();
        assert_eq!(s.take_run(SLICE_RUN), None);
        s.refill(1 + SLICE_BATCH);
        assert_eq!(s.take_run(2), Some(1..3));
        assert_eq!(s.take_run(SLICE_RUN), Some(3..3 + SLICE_RUN));
        let last = std::iter::from_fn(|| s.take_run(SLICE_RUN)).last();
        assert_eq!(last, Some(SLICE_BATCH + 3 - SLICE_RUN..SLICE_BATCH + 1));
        assert_eq!(s.take_run(SLICE_RUN), None);
    }

    /// `NewSlice` as the base layer runs it: the next id of the worker's run, else a new
    /// run without a lock, else a refill under `freeMu` (here a plain lock) once the batch
    /// is used up.
    fn new_slice(
        run: &mut Range<u64>,
        s: &SliceIds,
        free_mu: &std::sync::Mutex<()>,
        counter: &AtomicU64,
    ) -> u64 {
        let take = |run: &mut Range<u64>| {
            run.next().or_else(|| {
                *run = s.take_run(SLICE_RUN)?;
                run.next()
            })
        };
        if let Some(id) = take(run) {
            return id;
        }
        let _free_mu = free_mu.lock().unwrap();
        loop {
            if let Some(id) = take(run) {
                return id;
            }
            s.refill(counter.fetch_add(SLICE_BATCH, Ordering::SeqCst) + SLICE_BATCH);
        }
    }

    #[test]
    fn workers_taking_and_refilling_at_once_never_share_an_id() {
        let s = SliceIds::default();
        let free_mu = std::sync::Mutex::new(());
        let counter = AtomicU64::new(1);
        let per_worker = 3 * SLICE_BATCH as usize;
        let taken: Vec<u64> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        let mut run = 0..0;
                        (0..per_worker)
                            .map(|_| new_slice(&mut run, &s, &free_mu, &counter))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().unwrap())
                .collect()
        });
        let mut distinct = taken.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 4 * per_worker, "an id was handed out twice");
        let end = counter.load(Ordering::SeqCst);
        assert!(distinct.iter().all(|&id| (1..end).contains(&id)));
    }

    #[test]
    fn ranges_skip_root() {
        let mut r = IdRange::new(0, 4);
        assert_eq!((r.take(), r.take(), r.take()), (Some(2), Some(3), None));
        let mut r = IdRange::new(10, 12);
        assert_eq!(r.left(), 2);
        assert_eq!((r.take(), r.take(), r.take()), (Some(10), Some(11), None));
    }
}

#[cfg(test)]
mod inode_ids_tests {
    use super::*;

    #[test]
    fn the_prefetch_threshold_is_jitter_it_of_a_tenth_of_a_batch() {
        for _ in 0..200 {
            assert!((97..=107).contains(&inode_need_prefetch()));
        }
    }

    #[tokio::test]
    async fn a_prefetch_is_asked_once_when_exactly_the_threshold_is_left() {
        let mut ids = InodeIds::default();
        let need = ids.need_prefetch;
        ids.refill(IdRange::ending_at(INODE_BATCH, INODE_BATCH));
        let mut asked = Vec::new();
        while let Some((id, prefetch)) = ids.take() {
            if prefetch {
                asked.push(id);
                ids.prefetching(tokio::spawn(async {
                    Some(IdRange::ending_at(2 * INODE_BATCH, INODE_BATCH))
                }));
            }
        }
        // Ids 0 and 1 are skipped; the prefetch is asked for once, `need` ids before the end.
        assert_eq!(asked, [INODE_BATCH - 1 - need]);
        assert!(ids.take_prefetched().await);
        assert_eq!(ids.take().map(|(id, _)| id), Some(INODE_BATCH));
        assert!(!ids.take_prefetched().await, "nothing more in flight");
    }
}
