//! Directory usage statistics (`dirStat`), kept per directory when `DirStats` is on.

use crate::DecodeError;

/// Usage of one directory, counting its direct children only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DirStat {
    /// Sum of the lengths of regular-file children.
    pub length: i64,
    /// Sum of `align4k(length)` over all children.
    pub space: i64,
    /// Number of children.
    pub inodes: i64,
}

impl DirStat {
    /// Adds another delta.
    pub fn add(&mut self, other: DirStat) {
        self.length += other.length;
        self.space += other.space;
        self.inodes += other.inodes;
    }

    /// Counts one child, as `calcDirStat` does: a regular file (`is_file`) adds its
    /// `length`, every child adds `align4k` of its file length (4096 for the others) and
    /// one inode.
    pub fn add_child(&mut self, is_file: bool, length: u64) {
        let length = if is_file { length } else { 0 };
        self.add(DirStat {
            length: length as i64,
            space: crate::align4k(length),
            inodes: 1,
        });
    }

    /// Whether every field is zero.
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }

    /// The TKV `U<ino>` value: three big-endian i64.
    pub fn encode(&self) -> [u8; 24] {
        let mut b = [0u8; 24];
        b[0..8].copy_from_slice(&self.length.to_be_bytes());
        b[8..16].copy_from_slice(&self.space.to_be_bytes());
        b[16..24].copy_from_slice(&self.inodes.to_be_bytes());
        b
    }

    /// Decodes a TKV `U<ino>` value.
    pub fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        DecodeError::check_len("dir stat", buf, 24)?;
        let mut r = crate::decode::Reader(buf);
        Ok(Self {
            length: r.u64() as i64,
            space: r.u64() as i64,
            inodes: r.u64() as i64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_count_as_calc_dir_stat_counts_them() {
        let mut s = DirStat::default();
        s.add_child(true, 5000);
        s.add_child(false, 77);
        assert_eq!(
            s,
            DirStat {
                length: 5000,
                space: 8192 + 4096,
                inodes: 2
            }
        );
    }

    #[test]
    fn round_trip_and_add() {
        let mut s = DirStat {
            length: 10,
            space: 4096,
            inodes: 1,
        };
        s.add(DirStat {
            length: -10,
            space: -4096,
            inodes: -1,
        });
        assert!(s.is_zero());
        let s = DirStat {
            length: 1,
            space: -2,
            inodes: 3,
        };
        assert_eq!(DirStat::decode(&s.encode()).unwrap(), s);
        assert_eq!(DirStat::default().encode(), [0u8; 24]);
    }
}
