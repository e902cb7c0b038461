//! The pure checks of the client, written once for every family: no I/O, no state. They
//! depend only on [`crate::types`], [`crate::error`] and `metabench_schema`, and are
//! used by the client logic ([`crate::base`]) and by each family's `do*` steps, as the
//! checks of `pkg/meta/base.go` and those shared by `redis.go`, `sql.go` and `tkv.go`.
//!
//! - [`names`]: `baseMeta`'s checks of names and rename flags before any I/O;
//! - [`access`]: permission bits, inode flags and the parent's checks of `do*` steps;
//! - [`attrs`]: the attributes built without I/O (`doInit`, `doMknod`, `mergeAttr`);
//! - [`parent`]: when a parent directory is rewritten (`SkipDirMtime`, `SkipDirNlink`);
//! - [`rename`]: `doRename`'s checks and link moves once its nodes are read;
//! - [`resize`]: `Truncate` and `Fallocate`'s checks, lengths and holes.

pub(crate) mod access;
pub(crate) mod attrs;
pub(crate) mod names;
pub(crate) mod parent;
pub(crate) mod rename;
pub(crate) mod resize;

pub(crate) use access::{
    access, check_not_pinned, check_parent_to_add, check_parent_to_remove, check_sticky,
    FLAG_APPEND, FLAG_IMMUTABLE, FLAG_SKIP_TRASH,
};
pub(crate) use attrs::{
    format_dir_attr, implicit_dir_attr, init_time, looked_up_attr, merge_attr, new_child_attr,
    orphan_attr, readlink_without_target,
};
pub(crate) use names::{
    check_new_entry, check_rename, check_rmdir, check_unlink, is_trash, MAX_SYMLINK,
    RENAME_EXCHANGE, RENAME_NOREPLACE, RENAME_RESTORE, TRASH_NAME,
};
pub(crate) use parent::{parent_gains, touch, ParentRule};
pub(crate) use rename::{check_rename_nodes, move_between_parents};
pub(crate) use resize::{check_fallocate_args, Holes, Resize, TruncateHoles};

/// What the rules' tests build their cases from.
#[cfg(test)]
pub(crate) mod testing {
    use crate::types::Ctx;
    use metabench_schema::{Attr, FileType};

    /// A caller with `uid` and `gids` (the first the primary group).
    pub(crate) fn ctx(uid: u32, gids: &[u32]) -> Ctx {
        Ctx {
            uid,
            gids: gids.to_vec(),
            pid: 1,
        }
    }

    /// A regular file of `uid`:`gid` with permission bits `mode`.
    pub(crate) fn file(uid: u32, gid: u32, mode: u16) -> Attr {
        let mut a = Attr::new(FileType::File, mode, 0, uid, gid, 1);
        a.mode = mode;
        a
    }
}
