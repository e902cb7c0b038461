//! Dir-stat deltas buffered per directory until the background flush (`updateDirStat`).

use metabench_schema::{DirStat, Ino};
use std::collections::HashMap;

/// Dir-stat deltas buffered per directory (`updateDirStat`), flushed by [`crate::Meta::flush`].
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

    /// Takes the deltas, sorted by inode. A directory whose changes cancelled out stays
    /// in the batch, as in JuiceFS's `dirStats` map.
    pub fn drain(&mut self) -> Vec<(Ino, DirStat)> {
        let mut v: Vec<_> = self.pending.drain().collect();
        v.sort_by_key(|(i, _)| *i);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_merges_and_keeps_cancelled_directories() {
        let mut b = DirStatBuffer::default();
        b.update(5, 10, 4096, 1);
        b.update(5, -10, -4096, -1);
        b.update(3, 0, 4096, 1);
        let space = DirStat {
            length: 0,
            space: 4096,
            inodes: 1,
        };
        assert_eq!(b.drain(), vec![(3, space), (5, DirStat::default())]);
        assert!(b.drain().is_empty());
    }
}
