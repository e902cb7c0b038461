//! The checks and bookkeeping `doRename` makes in `pkg/meta/redis.go` and `tkv.go` once
//! it has read both parents and the entry moved.

use super::access::{access, check_sticky, FLAG_APPEND, FLAG_IMMUTABLE, MASK_WX};
use super::names::RENAME_RESTORE;
use super::parent::ParentRule;
use crate::types::{Ctx, Rename};
use crate::MetaError;
use metabench_schema::{Attr, FileType, Ino, Timestamp, TRASH_INODE};

/// The checks `doRename` makes in `redis.go` and `tkv.go` once it has read the source
/// parent `sattr`, the destination parent `dattr` and the moved inode `ino` (`iattr`):
/// both parents are directories the caller may write and search, the destination is not
/// inside the trash (unless restoring), the moved inode is neither the destination nor
/// its parent, nothing involved is append-only or immutable, and a sticky source lets
/// only root, the file's owner or (for a non-directory) the directory's owner move it.
pub(crate) fn check_rename_nodes(
    ctx: &Ctx,
    r: &Rename<'_>,
    ino: Ino,
    [sattr, dattr, iattr]: [&Attr; 3],
) -> Result<(), MetaError> {
    let (ps, pd) = (r.parent_src, r.parent_dst);
    if sattr.typ != FileType::Directory {
        return Err(MetaError::NotDir);
    }
    access(ctx, sattr, MASK_WX)?;
    if dattr.typ != FileType::Directory {
        return Err(MetaError::NotDir);
    }
    if r.flags & RENAME_RESTORE == 0 && dattr.parent > TRASH_INODE {
        return Err(MetaError::NotFound);
    }
    access(ctx, dattr, MASK_WX)?;
    if ino == pd || ino == dattr.parent {
        return Err(MetaError::Perm);
    }
    if sattr.flags & (FLAG_APPEND | FLAG_IMMUTABLE) != 0
        || dattr.flags & FLAG_IMMUTABLE != 0
        || iattr.flags & (FLAG_APPEND | FLAG_IMMUTABLE) != 0
    {
        return Err(MetaError::Perm);
    }
    if ps != pd
        && sattr.mode & 0o1000 != 0
        && ctx.uid != 0
        && ctx.uid != iattr.uid
        && (ctx.uid != sattr.uid || iattr.typ == FileType::Directory)
    {
        return Err(MetaError::Access);
    }
    Ok(())
}

/// `doRename`'s bookkeeping in `redis.go` and `tkv.go` once the destination is dealt
/// with: EACCES from the source parent's sticky bit (`ctx` must own the entry `iattr` or
/// the parent `sattr`); then a directory (`typ`, as its entry says) moving to another
/// parent takes one link from `sattr` to the destination parent `dattr`; a file records
/// its new parent unless it is hard-linked (parent 0) — the link moves force both parents
/// to be written unless `rule` skips nlink; each parent is touched when it is written or
/// its mtime is due under `rule`, and the entry's ctime is `now`. Takes and returns
/// whether each parent must be written.
pub(crate) fn move_between_parents(
    ctx: &Ctx,
    r: &Rename<'_>,
    typ: FileType,
    [sattr, dattr, iattr]: [&mut Attr; 3],
    (mut supdate, mut dupdate): (bool, bool),
    now: Timestamp,
    rule: ParentRule,
) -> Result<(bool, bool), MetaError> {
    check_sticky(ctx, sattr, iattr.uid)?;
    iattr.ctime = now;
    if r.parent_src != r.parent_dst {
        if typ == FileType::Directory {
            iattr.parent = r.parent_dst;
            sattr.nlink = sattr.nlink.saturating_sub(1);
            dattr.nlink += 1;
            if rule.nlink_forces {
                (supdate, dupdate) = (true, true);
            }
        } else if iattr.parent > 0 {
            iattr.parent = r.parent_dst;
        }
    }
    Ok((
        rule.touch(sattr, supdate, now),
        rule.touch(dattr, dupdate, now),
    ))
}
