//! `baseMeta`'s checks of names and flags before any I/O (`pkg/meta/base.go`: `Mknod`,
//! `Link`, `Unlink`, `Rmdir`, `Rename`), and the names and flags they know.

use crate::types::{Ctx, Rename};
use crate::MetaError;
use metabench_schema::{Ino, ROOT_INODE, TRASH_INODE};

/// The name of the trash directory under the root.
pub(crate) const TRASH_NAME: &[u8] = b".trash";

/// `MaxSymlink`: the longest symlink target.
pub(crate) const MAX_SYMLINK: usize = 4096;

/// `RenameNoReplace`.
pub(crate) const RENAME_NOREPLACE: u32 = 1;

/// `RenameExchange`.
pub(crate) const RENAME_EXCHANGE: u32 = 2;

/// `RenameWhiteout`.
pub(crate) const RENAME_WHITEOUT: u32 = 4;

/// `RenameRestore` (internal: a rename out of the trash).
pub(crate) const RENAME_RESTORE: u32 = 1 << 5;

/// Whether `ino` is the trash directory or one of its per-hour children (`Ino.IsTrash`).
pub(crate) fn is_trash(ino: Ino) -> bool {
    ino >= TRASH_INODE
}

/// `checkInodeName`: not empty, no `/`, no NUL (EINVAL otherwise).
pub(crate) fn check_name(name: &[u8]) -> Result<(), MetaError> {
    if name.is_empty() || name.contains(&b'/') || name.contains(&0) {
        Err(MetaError::Invalid)
    } else {
        Ok(())
    }
}

/// `baseMeta.Mknod` / `Link` before a new entry `name` in `parent`: nothing is created in
/// the trash or as `.trash` (EPERM), `.` and `..` exist (EEXIST), and the name is valid.
pub(crate) fn check_new_entry(parent: Ino, name: &[u8]) -> Result<(), MetaError> {
    if is_trash(parent) || (parent == ROOT_INODE && name == TRASH_NAME) {
        return Err(MetaError::Perm);
    }
    if name == b"." || name == b".." {
        return Err(MetaError::Exists);
    }
    check_name(name)
}

/// `baseMeta.Unlink`: `.trash` stays, and only root removes from the trash (EPERM).
pub(crate) fn check_unlink(ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<(), MetaError> {
    if (parent == ROOT_INODE && name == TRASH_NAME) || (is_trash(parent) && ctx.uid != 0) {
        return Err(MetaError::Perm);
    }
    Ok(())
}

/// `baseMeta.Rmdir`: `.` is EINVAL, `..` ENOTEMPTY; `.trash`, the trash's hour
/// directories and, for users other than root, anything in the trash are EPERM.
pub(crate) fn check_rmdir(ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<(), MetaError> {
    if name == b"." {
        return Err(MetaError::Invalid);
    }
    if name == b".." {
        return Err(MetaError::NotEmpty);
    }
    if (parent == ROOT_INODE && name == TRASH_NAME)
        || parent == TRASH_INODE
        || (is_trash(parent) && ctx.uid != 0)
    {
        return Err(MetaError::Perm);
    }
    Ok(())
}

/// `baseMeta.Rename`'s checks: `.trash` is neither moved nor replaced, nothing moves into
/// the trash, only root moves out of it (EPERM), the new name is valid, and the flags are
/// 0, `RENAME_NOREPLACE`, `RENAME_EXCHANGE` or `RENAME_NOREPLACE | RENAME_RESTORE`
/// (whiteouts are ENOTSUP, anything else EINVAL).
pub(crate) fn check_rename(ctx: &Ctx, r: &Rename<'_>) -> Result<(), MetaError> {
    let (ps, pd) = (r.parent_src, r.parent_dst);
    if (ps == ROOT_INODE && r.name_src == TRASH_NAME)
        || (pd == ROOT_INODE && r.name_dst == TRASH_NAME)
    {
        return Err(MetaError::Perm);
    }
    if is_trash(pd) || (is_trash(ps) && ctx.uid != 0) {
        return Err(MetaError::Perm);
    }
    check_name(r.name_dst)?;
    match r.flags {
        0 | RENAME_NOREPLACE | RENAME_EXCHANGE => Ok(()),
        f if f == RENAME_NOREPLACE | RENAME_RESTORE => Ok(()),
        f if f == RENAME_WHITEOUT || f == RENAME_NOREPLACE | RENAME_WHITEOUT => {
            Err(MetaError::NotSupported)
        }
        _ => Err(MetaError::Invalid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::ctx;

    #[test]
    fn base_meta_checks() {
        fn mv<'a>(ps: Ino, ns: &'a [u8], pd: Ino, nd: &'a [u8], flags: u32) -> Rename<'a> {
            Rename {
                parent_src: ps,
                name_src: ns,
                parent_dst: pd,
                name_dst: nd,
                flags,
            }
        }
        macro_rules! err {
            ($e:expr, $v:ident) => {
                assert!(matches!($e, Err(MetaError::$v)), "{}", stringify!($e))
            };
        }
        let (root, user) = (ctx(0, &[0]), ctx(1, &[1]));
        assert!(check_name(b"ok").is_ok());
        for bad in [&b""[..], b"a/b", b"a\0"] {
            err!(check_name(bad), Invalid);
        }
        err!(check_new_entry(ROOT_INODE, TRASH_NAME), Perm);
        err!(check_new_entry(TRASH_INODE + 1, b"f"), Perm);
        err!(check_new_entry(5, b".."), Exists);
        assert!(check_new_entry(5, b"f").is_ok());
        err!(check_unlink(&root, ROOT_INODE, TRASH_NAME), Perm);
        err!(check_unlink(&user, TRASH_INODE + 1, b"f"), Perm);
        assert!(check_unlink(&root, TRASH_INODE + 1, b"f").is_ok());
        err!(check_rmdir(&root, 5, b"."), Invalid);
        err!(check_rmdir(&root, 5, b".."), NotEmpty);
        err!(check_rmdir(&root, TRASH_INODE, b"x"), Perm);
        assert!(check_rmdir(&root, TRASH_INODE + 1, b"x").is_ok());
        err!(
            check_rename(&root, &mv(ROOT_INODE, TRASH_NAME, 5, b"t", 0)),
            Perm
        );
        err!(
            check_rename(&root, &mv(5, b"a", TRASH_INODE, b"t", 0)),
            Perm
        );
        err!(
            check_rename(&user, &mv(TRASH_INODE + 1, b"a", 5, b"t", 0)),
            Perm
        );
        err!(check_rename(&root, &mv(5, b"a", 5, b"", 0)), Invalid);
        err!(
            check_rename(&root, &mv(5, b"a", 5, b"b", RENAME_WHITEOUT)),
            NotSupported
        );
        err!(check_rename(&root, &mv(5, b"a", 5, b"b", 99)), Invalid);
        assert!(check_rename(&root, &mv(TRASH_INODE + 1, b"a", 5, b"t", RENAME_EXCHANGE)).is_ok());
    }
}
