//! Permission checks on attributes already read: `baseMeta.Access`, and the checks every
//! family's `doMknod`, `doLink`, `doUnlink`, `doRmdir` and `doRename` make of a parent and
//! an entry (`pkg/meta/redis.go`, `sql.go`, `tkv.go`), with the inode flags they read.

use crate::types::Ctx;
use crate::MetaError;
use metabench_schema::{Attr, FileType, TRASH_INODE};

/// JuiceFS's `FlagImmutable`: the node is neither changed nor removed.
pub(crate) const FLAG_IMMUTABLE: u8 = 1;

/// JuiceFS's `FlagAppend`: the node only grows.
pub(crate) const FLAG_APPEND: u8 = 2;

/// JuiceFS's `FlagSkipTrash`: the node's deletion skips the trash (inherited from the
/// parent).
pub(crate) const FLAG_SKIP_TRASH: u8 = 32;

/// Write and search permission: what changing a directory's entries needs.
pub(crate) const MASK_WX: u16 = 2 | 1;

/// `baseMeta.Access` on an attribute already read: root may do anything, others need
/// the `mask` bits (4 read, 2 write, 1 execute) of their class.
pub(crate) fn access(ctx: &Ctx, attr: &Attr, mask: u16) -> std::result::Result<(), MetaError> {
    if ctx.uid == 0 || attr.allows(ctx.uid, &ctx.gids, mask) {
        Ok(())
    } else {
        Err(MetaError::Access)
    }
}

/// The parent's checks before an entry is added (`doMknod`, `doLink`), in JuiceFS's
/// order: ENOTDIR unless a directory, ENOENT inside the trash, EACCES without write and
/// search permission, EPERM when immutable.
pub(crate) fn check_parent_to_add(ctx: &Ctx, pattr: &Attr) -> Result<(), MetaError> {
    if pattr.typ != FileType::Directory {
        return Err(MetaError::NotDir);
    }
    if pattr.parent > TRASH_INODE {
        return Err(MetaError::NotFound);
    }
    access(ctx, pattr, MASK_WX)?;
    if pattr.flags & FLAG_IMMUTABLE != 0 {
        return Err(MetaError::Perm);
    }
    Ok(())
}

/// The parent's checks before an entry is removed (`doUnlink`, `doRmdir`): ENOTDIR
/// unless a directory, EACCES without write and search permission, EPERM when
/// append-only or immutable.
pub(crate) fn check_parent_to_remove(ctx: &Ctx, pattr: &Attr) -> Result<(), MetaError> {
    if pattr.typ != FileType::Directory {
        return Err(MetaError::NotDir);
    }
    access(ctx, pattr, MASK_WX)?;
    check_not_pinned(pattr)
}

/// EPERM for an append-only or immutable node: it is not unlinked, replaced, moved or
/// linked to.
pub(crate) fn check_not_pinned(attr: &Attr) -> Result<(), MetaError> {
    if attr.flags & (FLAG_APPEND | FLAG_IMMUTABLE) != 0 {
        Err(MetaError::Perm)
    } else {
        Ok(())
    }
}

/// The sticky-bit rule: in a directory with `S_ISVTX` only root, the directory's owner and
/// the entry's owner (`entry_uid`) remove or replace the entry (EACCES otherwise).
pub(crate) fn check_sticky(ctx: &Ctx, pattr: &Attr, entry_uid: u32) -> Result<(), MetaError> {
    if ctx.uid != 0 && pattr.mode & 0o1000 != 0 && ctx.uid != pattr.uid && ctx.uid != entry_uid {
        Err(MetaError::Access)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{ctx, file};
    use metabench_schema::ROOT_INODE;

    #[test]
    fn parent_checks_keep_juicefs_order() {
        let owner = ctx(5, &[5]);
        let other = ctx(6, &[6]);
        let mut d = file(5, 5, 0o755);
        d.typ = FileType::Directory;
        assert!(check_parent_to_add(&owner, &d).is_ok());
        assert!(matches!(
            check_parent_to_add(&other, &d),
            Err(MetaError::Access)
        ));
        d.parent = TRASH_INODE + 1;
        assert!(matches!(
            check_parent_to_add(&other, &d),
            Err(MetaError::NotFound)
        ));
        d.parent = ROOT_INODE;
        d.flags = FLAG_APPEND;
        assert!(
            check_parent_to_add(&owner, &d).is_ok(),
            "appending is adding"
        );
        assert!(matches!(
            check_parent_to_remove(&owner, &d),
            Err(MetaError::Perm)
        ));
        d.flags = FLAG_IMMUTABLE;
        assert!(matches!(
            check_parent_to_add(&owner, &d),
            Err(MetaError::Perm)
        ));
        d.typ = FileType::File;
        assert!(matches!(
            check_parent_to_add(&owner, &d),
            Err(MetaError::NotDir)
        ));
        assert!(matches!(
            check_parent_to_remove(&owner, &d),
            Err(MetaError::NotDir)
        ));
    }

    #[test]
    fn sticky_directories_keep_others_entries() {
        let (root, owner, other) = (ctx(0, &[0]), ctx(5, &[5]), ctx(6, &[6]));
        let mut d = file(5, 5, 0o1777);
        d.typ = FileType::Directory;
        assert!(check_sticky(&root, &d, 7).is_ok());
        assert!(check_sticky(&owner, &d, 7).is_ok());
        assert!(check_sticky(&other, &d, 6).is_ok());
        assert!(matches!(
            check_sticky(&other, &d, 7),
            Err(MetaError::Access)
        ));
        d.mode = 0o777;
        assert!(check_sticky(&other, &d, 7).is_ok());
    }
}
