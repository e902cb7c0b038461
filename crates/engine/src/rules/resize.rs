//! The pure logic of `Truncate` and `Fallocate`, shared by the three engine families: the
//! checks of `baseMeta.Fallocate` (`pkg/meta/base.go`) and of each family's
//! `doTruncate` / `doFallocate` (`redis.go`, `sql.go`, `tkv.go`), the new length and its
//! dir-stat deltas, and the zero slices a resize appends. No I/O here. The values
//! ([`FallocRange`], [`Resized`]) are in [`crate::types`].

use super::access::{access, FLAG_APPEND, FLAG_IMMUTABLE};
use crate::types::{falloc, FallocRange, Resized};
use crate::{Ctx, MetaError, Result};
use metabench_schema::{Attr, FileType, Slice, Timestamp, CHUNK_SIZE, TRASH_INODE};
use std::ops::Range;

/// Write permission (`MODE_MASK_W`).
const MASK_W: u16 = 2;

impl Resized {
    /// `doTruncate` up to its writes, the same on every engine family: the checks
    /// ([`check_truncate`]), then `attr` at `length` bytes, stamped now, with the holes to
    /// append. No holes when the file has that length already: nothing is written then.
    pub fn truncate(ctx: &Ctx, attr: Attr, length: u64) -> Result<(Self, Option<TruncateHoles>)> {
        check_truncate(ctx, &attr)?;
        if length == attr.length {
            return Ok((Self::unchanged(attr), None));
        }
        let holes = TruncateHoles::new(attr.length, length);
        Ok((Self::to_length(attr, length, Timestamp::now()), Some(holes)))
    }

    /// `doFallocate` up to its writes, the same on every engine family: the checks
    /// ([`check_fallocate`]), then `attr` at its length after the call, stamped now, with
    /// the holes to append ([`fallocate_holes`]).
    pub fn fallocate(
        ctx: &Ctx,
        attr: Attr,
        range: FallocRange,
    ) -> Result<(Self, Vec<(u32, Slice)>)> {
        check_fallocate(ctx, &attr, range.mode)?;
        let old = attr.length;
        let holes = fallocate_holes(range, old);
        let length = fallocated_length(old, range);
        Ok((Self::to_length(attr, length, Timestamp::now()), holes))
    }
}

/// A resize as the Redis and TKV families run it, one transaction for both kinds:
/// [`Resized::resize`] up to the writes, then the writes of its [`Holes`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Resize {
    /// `doTruncate` to this length.
    Truncate(u64),
    /// `doFallocate` of this range.
    Fallocate(FallocRange),
}

/// The holes a resize appends: [`Resized::truncate`]'s or [`Resized::fallocate`]'s.
pub(crate) enum Holes {
    /// A truncate's head, chunks between and tail.
    Truncate(TruncateHoles),
    /// A fallocate's hole per chunk of its range (none when nothing is zeroed).
    Fallocate(Vec<(u32, Slice)>),
}

impl Resized {
    /// [`Resized::truncate`] or [`Resized::fallocate`], as `op` asks. No holes when
    /// nothing is written (a truncate to the length the file has); a fallocate always
    /// writes, even with no hole to append.
    pub(crate) fn resize(ctx: &Ctx, attr: Attr, op: Resize) -> Result<(Self, Option<Holes>)> {
        Ok(match op {
            Resize::Truncate(length) => {
                let (done, holes) = Self::truncate(ctx, attr, length)?;
                (done, holes.map(Holes::Truncate))
            }
            Resize::Fallocate(range) => {
                let (done, holes) = Self::fallocate(ctx, attr, range)?;
                (done, Some(Holes::Fallocate(holes)))
            }
        })
    }
}

/// `baseMeta.Fallocate` before any I/O: COLLAPSE_RANGE and INSERT_RANGE alone are
/// ENOTSUP and with other bits EINVAL; PUNCH_HOLE needs KEEP_SIZE; a zero size is EINVAL.
pub fn check_fallocate_args(FallocRange { mode, size, .. }: FallocRange) -> Result<()> {
    use falloc::*;
    if mode & COLLAPSE_RANGE != 0 && mode != COLLAPSE_RANGE {
        return Err(MetaError::Invalid);
    }
    if mode & INSERT_RANGE != 0 && mode != INSERT_RANGE {
        return Err(MetaError::Invalid);
    }
    if mode == INSERT_RANGE || mode == COLLAPSE_RANGE {
        return Err(MetaError::NotSupported);
    }
    if mode & PUNCH_HOLE != 0 && mode & KEEP_SIZE == 0 {
        return Err(MetaError::Invalid);
    }
    if size == 0 {
        return Err(MetaError::Invalid);
    }
    Ok(())
}

/// `doTruncate`'s checks of the stored attribute, as `Truncate(…, flags 0, …,
/// skipPermCheck false)` makes them (a truncate by path): EPERM unless a regular file that
/// is neither immutable nor append-only and not in the trash, then EACCES without write
/// permission.
pub fn check_truncate(ctx: &Ctx, attr: &Attr) -> Result<()> {
    if attr.typ != FileType::File
        || attr.flags & (FLAG_IMMUTABLE | FLAG_APPEND) != 0
        || attr.parent > TRASH_INODE
    {
        return Err(MetaError::Perm);
    }
    access(ctx, attr, MASK_W)
}

/// `doFallocate`'s checks of the stored attribute: EPIPE for a FIFO, EPERM unless a
/// regular file that is not immutable, EACCES without write permission, and EPERM for an
/// append-only file with any mode bit but KEEP_SIZE.
pub fn check_fallocate(ctx: &Ctx, attr: &Attr, mode: u8) -> Result<()> {
    if attr.typ == FileType::Fifo {
        return Err(MetaError::BrokenPipe);
    }
    if attr.typ != FileType::File || attr.flags & FLAG_IMMUTABLE != 0 {
        return Err(MetaError::Perm);
    }
    access(ctx, attr, MASK_W)?;
    if attr.flags & FLAG_APPEND != 0 && mode & !falloc::KEEP_SIZE != 0 {
        return Err(MetaError::Perm);
    }
    Ok(())
}

/// The length a file of `old` bytes has after `fallocate(mode, off, size)`: `off + size`
/// when that is beyond the end and KEEP_SIZE is not set, else `old`.
pub fn fallocated_length(old: u64, FallocRange { mode, off, size }: FallocRange) -> u64 {
    if off + size > old && mode & falloc::KEEP_SIZE == 0 {
        off + size
    } else {
        old
    }
}

/// A hole of `len` bytes at `pos` in a chunk (both below the chunk size).
fn hole(pos: u64, len: u64) -> Slice {
    Slice::hole(pos as u32, len as u32)
}

/// The holes `doTruncate` appends when a file goes from `old` to `new` bytes (either way),
/// with `left` the smaller length and `right` the larger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruncateHoles {
    /// The smaller of the two lengths.
    pub left: u64,
    /// The larger of the two lengths.
    pub right: u64,
    /// Always appended: the chunk holding `left`, zeroed from `left` to `right` or to
    /// the chunk's end.
    pub head: (u32, Slice),
    /// The chunks strictly between the head's and the last one: each that exists gets a
    /// whole-chunk hole ([`TruncateHoles::whole_chunk`]). Redis names them all (RPUSHX
    /// skips the missing ones), SQL selects the existing rows and TKV scans their keys.
    pub between: Range<u32>,
    /// The chunk holding `right`, zeroed up to `right`, when the range spans chunks and
    /// `right` is not at a chunk boundary.
    pub tail: Option<(u32, Slice)>,
}

impl TruncateHoles {
    /// The holes for a resize from `old` to `new` bytes.
    pub fn new(old: u64, new: u64) -> Self {
        let (left, right) = (old.min(new), old.max(new));
        let first = left / CHUNK_SIZE;
        let spans = right > (first + 1) * CHUNK_SIZE;
        let head_len = if spans {
            CHUNK_SIZE - left % CHUNK_SIZE
        } else {
            right - left
        };
        let tail = (spans && right % CHUNK_SIZE > 0)
            .then(|| ((right / CHUNK_SIZE) as u32, hole(0, right % CHUNK_SIZE)));
        Self {
            left,
            right,
            head: (first as u32, hole(left % CHUNK_SIZE, head_len)),
            between: (first as u32 + 1)..((right / CHUNK_SIZE) as u32),
            tail,
        }
    }

    /// The hole appended to each existing chunk in [`TruncateHoles::between`].
    pub fn whole_chunk() -> Slice {
        hole(0, CHUNK_SIZE)
    }
}

/// The holes `doFallocate` appends: with ZERO_RANGE or PUNCH_HOLE, the part of
/// `[off, off + size)` inside the old length `old`, one hole per chunk it touches.
pub fn fallocate_holes(
    FallocRange { mode, off, size }: FallocRange,
    old: u64,
) -> Vec<(u32, Slice)> {
    let mut holes = Vec::new();
    if mode & (falloc::ZERO_RANGE | falloc::PUNCH_HOLE) == 0 || off >= old {
        return holes;
    }
    let (mut off, mut size) = (off, size.min(old - off));
    while size > 0 {
        let coff = off % CHUNK_SIZE;
        let len = size.min(CHUNK_SIZE - coff);
        holes.push(((off / CHUNK_SIZE) as u32, hole(coff, len)));
        off += len;
        size -= len;
    }
    holes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::falloc::*;

    const C: u64 = CHUNK_SIZE;

    use FallocRange as R;

    #[test]
    fn fallocate_arguments_as_base_checks_them() {
        assert!(check_fallocate_args(R::new(0, 0, 1)).is_ok());
        assert!(check_fallocate_args(R::new(KEEP_SIZE | PUNCH_HOLE, 0, 1)).is_ok());
        assert!(check_fallocate_args(R::new(ZERO_RANGE, 0, 1)).is_ok());
        let err = |m, s| check_fallocate_args(R::new(m, 0, s)).unwrap_err().kind();
        assert_eq!(err(COLLAPSE_RANGE, 1), "ENOTSUP");
        assert_eq!(err(INSERT_RANGE, 1), "ENOTSUP");
        assert_eq!(err(COLLAPSE_RANGE | KEEP_SIZE, 1), "EINVAL");
        assert_eq!(err(INSERT_RANGE | KEEP_SIZE, 1), "EINVAL");
        assert_eq!(err(PUNCH_HOLE, 1), "EINVAL");
        assert_eq!(err(0, 0), "EINVAL");
    }

    #[test]
    fn attribute_checks() {
        let root = Ctx::root();
        let user = Ctx {
            uid: 7,
            gids: vec![7],
            pid: 1,
        };
        let file = Attr::new(FileType::File, 0o644, 0, 0, 0, 2);
        assert!(check_truncate(&root, &file).is_ok());
        assert_eq!(check_truncate(&user, &file).unwrap_err().kind(), "EACCES");
        let mut trashed = file.clone();
        trashed.parent = TRASH_INODE + 1;
        assert_eq!(check_truncate(&root, &trashed).unwrap_err().kind(), "EPERM");
        let mut append = file.clone();
        append.flags = FLAG_APPEND;
        assert_eq!(check_truncate(&root, &append).unwrap_err().kind(), "EPERM");
        assert!(check_fallocate(&root, &append, KEEP_SIZE).is_ok());
        assert_eq!(
            check_fallocate(&root, &append, ZERO_RANGE)
                .unwrap_err()
                .kind(),
            "EPERM"
        );
        let fifo = Attr::new(FileType::Fifo, 0o644, 0, 0, 0, 2);
        assert_eq!(
            check_fallocate(&root, &fifo, 0).unwrap_err().kind(),
            "EPIPE"
        );
        let dir = Attr::new(FileType::Directory, 0o755, 0, 0, 0, 2);
        assert_eq!(check_truncate(&root, &dir).unwrap_err().kind(), "EPERM");
        assert_eq!(check_fallocate(&root, &dir, 0).unwrap_err().kind(), "EPERM");
        assert_eq!(
            check_fallocate(&user, &file, 0).unwrap_err().kind(),
            "EACCES"
        );
    }

    #[test]
    fn lengths_and_deltas() {
        assert_eq!(fallocated_length(100, R::new(0, 50, 100)), 150);
        assert_eq!(fallocated_length(100, R::new(KEEP_SIZE, 50, 100)), 100);
        assert_eq!(fallocated_length(100, R::new(0, 10, 20)), 100);
        let mut a = Attr::new(FileType::File, 0o644, 0, 0, 0, 2);
        a.length = 5000;
        let r = Resized::to_length(a, 100, Timestamp { sec: 9, nsec: 1 });
        assert_eq!((r.length, r.space, r.attr.length), (-4900, -4096, 100));
        assert_eq!(
            (r.attr.mtime, r.attr.ctime),
            (Timestamp { sec: 9, nsec: 1 }, Timestamp { sec: 9, nsec: 1 })
        );
    }

    #[test]
    fn truncate_holes_within_one_chunk() {
        let h = TruncateHoles::new(100, 5000);
        assert_eq!(h.head, (0, hole(100, 4900)));
        assert!(h.between.is_empty());
        assert_eq!(h.tail, None);
        // Shrinking zeroes the same range.
        assert_eq!(TruncateHoles::new(5000, 100), h);
        // Up to the end of the chunk exactly: still one hole.
        assert_eq!(TruncateHoles::new(0, C).head, (0, hole(0, C)));
        assert_eq!(TruncateHoles::new(0, C).tail, None);
    }

    #[test]
    fn truncate_holes_across_chunks() {
        let h = TruncateHoles::new(C + 10, 4 * C + 7);
        assert_eq!(h.head, (1, hole(10, C - 10)));
        assert_eq!(h.between, 2..4);
        assert_eq!(h.tail, Some((4, hole(0, 7))));
        // `right` on a chunk boundary: no tail.
        let h = TruncateHoles::new(0, 3 * C);
        assert_eq!((h.between, h.tail), (1..3, None));
        assert_eq!(TruncateHoles::whole_chunk(), hole(0, C));
    }

    #[test]
    fn fallocate_holes_only_zero_inside_the_old_length() {
        assert!(fallocate_holes(R::new(0, 0, 100), 1000).is_empty());
        assert!(fallocate_holes(R::new(ZERO_RANGE, 1000, 100), 1000).is_empty());
        assert_eq!(
            fallocate_holes(R::new(PUNCH_HOLE | KEEP_SIZE, 10, 100), 50),
            vec![(0, hole(10, 40))]
        );
        assert_eq!(
            fallocate_holes(R::new(ZERO_RANGE, C - 5, 20), 2 * C),
            vec![(0, hole(C - 5, 5)), (1, hole(0, 15))]
        );
    }
}
