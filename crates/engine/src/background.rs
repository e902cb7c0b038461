//! Client-side state every backend keeps as a JuiceFS client does: id ranges handed out
//! locally, and buffered dir-stat deltas flushed in the background.

use metabench_schema::{DirStat, Ino};
use std::collections::HashMap;

/// Inode ids are fetched 1024 at a time (`inodeBatch`).
pub const INODE_BATCH: u64 = 1024;
/// Slice ids are fetched 4096 at a time (`sliceIdBatch`).
pub const SLICE_BATCH: u64 = 4096;

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
}

/// Dir-stat deltas buffered per directory (`updateDirStat`), flushed by `Meta::flush`.
#[derive(Debug, Default)]
pub struct DirStatBuffer {
    pending: HashMap<Ino, DirStat>,
}

impl DirStatBuffer {
    /// Records a change of `length`, `space` and `inodes` below directory `dir`.
    pub fn update(&mut self, dir: Ino, length: i64, space: i64, inodes: i64) {
        self.pending.entry(dir).or_default().add(DirStat {
            length,
            space,
            inodes,
        });
    }

    /// Takes the non-zero deltas, sorted by inode.
    pub fn drain(&mut self) -> Vec<(Ino, DirStat)> {
        let mut v: Vec<_> = self.pending.drain().filter(|(_, s)| !s.is_zero()).collect();
        v.sort_by_key(|(i, _)| *i);
        v
    }

    /// Forgets a directory that was removed.
    pub fn forget(&mut self, dir: Ino) {
        self.pending.remove(&dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_skip_root() {
        let mut r = IdRange::new(0, 4);
        assert_eq!((r.take(), r.take(), r.take()), (Some(2), Some(3), None));
        let mut r = IdRange::new(10, 12);
        assert_eq!(r.left(), 2);
        assert_eq!((r.take(), r.take(), r.take()), (Some(10), Some(11), None));
    }

    #[test]
    fn buffer_merges_and_drops_zero() {
        let mut b = DirStatBuffer::default();
        b.update(5, 10, 4096, 1);
        b.update(5, -10, -4096, -1);
        b.update(3, 0, 4096, 1);
        assert_eq!(
            b.drain(),
            vec![(
                3,
                DirStat {
                    length: 0,
                    space: 4096,
                    inodes: 1
                }
            )]
        );
        assert!(b.drain().is_empty());
    }
}
