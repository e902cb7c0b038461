//! Pure logic shared by the three engines (Redis, SQL, TKV): no I/O here.

use crate::meta::{Ctx, NewNode, Rename, SetAttr};
use crate::parent_rule::ParentRule;
use crate::MetaError;
use metabench_schema::{Attr, FileType, Ino, Timestamp, ROOT_INODE, TRASH_INODE};

/// What `ReadLink` answers when the engine found no target for `ino` (`base.go`,
/// `baseMeta.ReadLink` after `doReadlink`): EINVAL for a node that is not a symlink, EIO
/// for a symlink whose target is missing. `attr` is the node's, read after the miss.
pub(crate) fn readlink_without_target(attr: &Attr) -> MetaError {
    if attr.typ == FileType::Symlink {
        MetaError::Io
    } else {
        MetaError::Invalid
    }
}

/// The name of the trash directory under the root.
pub(crate) const TRASH_NAME: &[u8] = b".trash";

/// JuiceFS's `FlagImmutable`: the node is neither changed nor removed.
pub(crate) const FLAG_IMMUTABLE: u8 = 1;
/// JuiceFS's `FlagAppend`: the node only grows.
pub(crate) const FLAG_APPEND: u8 = 2;
/// JuiceFS's `FlagSkipTrash`: the node's deletion skips the trash (inherited from the
/// parent).
pub(crate) const FLAG_SKIP_TRASH: u8 = 32;
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
/// Write and search permission: what changing a directory's entries needs.
pub(crate) const MASK_WX: u16 = 2 | 1;

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

/// Where a session's background work runs, the same for every family (a line of their
/// `fidelity_notes`).
pub(crate) const BACKGROUND_WORK_NOTE: &str =
    "Background work (dir-stat flush, counter flush, freeing the data of deleted files) runs \
         where the client profile puts it: once after the timed window (`gobench`), or between \
         each client's calls while the window runs (`mount`: flushes every second, a deleted \
         file's data freed right after the call that deleted it). JuiceFS runs it on its own \
         goroutines and connections, concurrently with the calls; a metabench client pauses its \
         calls for it. Each sweep level reports its passes, round trips and client time apart; \
         `ops` runs it untimed between calls, `parity`'s native side between phases. Files \
         queued by a session that a failure replaced are not freed by its successor.";

/// The root (mode 0777) or the trash (`TRASH_INODE`, 0555) directory as `juicefs format`
/// (`doInit`) writes it: owned by root, nlink 2, length 4096, parent 1, times `now`.
pub(crate) fn format_dir_attr(ino: Ino, now: Timestamp) -> Attr {
    let mode = if ino == TRASH_INODE { 0o555 } else { 0o777 };
    let mut a = Attr::new(FileType::Directory, mode, 0, 0, 0, ROOT_INODE);
    a.atime = now;
    a.mtime = now;
    a.ctime = now;
    a
}

/// The times `doInit` of `pkg/meta/redis.go` and `tkv.go` gives the root and the trash:
/// `time.Now().Unix()`, whole seconds.
pub(crate) fn init_time() -> Timestamp {
    Timestamp {
        sec: Timestamp::now().sec,
        nsec: 0,
    }
}

/// What `GetAttr` answers for the root or the trash when the engine holds no record of
/// it (`baseMeta.GetAttr`): their format attribute with zero times. `None` otherwise.
pub(crate) fn implicit_dir_attr(ino: Ino) -> Option<Attr> {
    (ino == ROOT_INODE || ino == TRASH_INODE).then(|| format_dir_attr(ino, Timestamp::default()))
}

/// `baseMeta.Access` on an attribute already read: root may do anything, others need
/// the `mask` bits (4 read, 2 write, 1 execute) of their class.
pub(crate) fn access(ctx: &Ctx, attr: &Attr, mask: u16) -> std::result::Result<(), MetaError> {
    if ctx.uid == 0 || attr.allows(ctx.uid, &ctx.gids, mask) {
        Ok(())
    } else {
        Err(MetaError::Access)
    }
}

/// The mode and gid of a new child as JuiceFS's `Mknod` computes them (Linux):
/// `mode & !umask` (permission bits only), then `inheritGid` and `inheritMode` from a
/// set-gid parent: the child takes the parent's group, a directory keeps the set-gid
/// bit, and another node loses it when it is group-executable and the caller (not root)
/// is not in the parent's group.
///
/// Returns `(mode, gid)`.
pub(crate) fn child_mode_gid(
    ctx: &Ctx,
    parent_mode: u16,
    parent_gid: u32,
    typ: FileType,
    mode: u16,
    umask: u16,
) -> (u16, u32) {
    let mut m = mode & 0o7777 & !umask;
    if parent_mode & 0o2000 == 0 {
        return (m, ctx.gid());
    }
    if typ == FileType::Directory {
        m |= 0o2000;
    } else if m & 0o2010 == 0o2010 && ctx.uid != 0 && !ctx.gids.contains(&parent_gid) {
        m &= !0o2000;
    }
    (m, parent_gid)
}

/// The attribute of a new child as every family's `doMknod` builds it: mode
/// and gid from [`child_mode_gid`], the caller's uid, all times `now`, nlink 2 and
/// length 4096 for a directory, nlink 1 and the target's length for a symlink, nlink 1
/// and length 0 otherwise; `rdev` kept only for a node that is neither a directory nor a
/// symlink; the skip-trash flag and the tier taken from the parent `pattr`.
pub(crate) fn new_child_attr(ctx: &Ctx, pattr: &Attr, node: &NewNode<'_>, now: Timestamp) -> Attr {
    let NewNode {
        parent,
        typ,
        mode,
        umask,
        rdev,
        target,
        ..
    } = *node;
    // inheritGid / inheritMode (Linux).
    let (mode, gid) = child_mode_gid(ctx, pattr.mode, pattr.gid, typ, mode, umask);
    let mut a = Attr::made_at(typ, mode, ctx.uid, gid, parent, now);
    a.flags = pattr.flags & FLAG_SKIP_TRASH;
    a.tier = pattr.tier;
    match typ {
        FileType::Symlink => a.length = target.len() as u64,
        FileType::Directory => {}
        _ => a.rdev = rdev,
    }
    a
}

/// `baseMeta.mergeAttr` (Linux, no ACL), shared by every family's `doSetAttr`: the
/// attribute to write, or `None` when nothing changes. A time with a negative second
/// means "now" (`SetAttrAtimeNow`, `SetAttrMtimeNow`); permission bits above 0o7777 are
/// dropped.
pub(crate) fn merge_attr(
    ctx: &Ctx,
    cur: &Attr,
    set: &SetAttr,
    now: Timestamp,
) -> Result<Option<Attr>, MetaError> {
    let mut dirty = cur.clone();
    let owner_change = set.uid.is_some() || set.gid.is_some();
    let mut want_mode = set.mode;
    if owner_change {
        if let Some(m) = want_mode.as_mut() {
            *m |= cur.mode & 0o6000;
        }
    }
    let mut changed = false;
    if cur.mode & 0o6000 != 0 && owner_change {
        // clearSUGID (Linux)
        if cur.typ != FileType::Directory {
            let keep = if ctx.uid != 0 || (cur.mode >> 3) & 1 != 0 {
                0o1777
            } else {
                0o3777
            };
            dirty.mode &= keep;
            if let Some(m) = want_mode.as_mut() {
                *m &= keep;
            }
        }
        changed = true;
    }
    changed |= merge_owner_mode(ctx, cur, set, want_mode.map(|m| m & 0o7777), &mut dirty)?;
    let may_write = access(ctx, cur, 2).is_ok() || ctx.uid == cur.uid;
    for (want, field) in [(set.atime, 0), (set.mtime, 1)] {
        let Some(t) = want else { continue };
        let curt = if field == 0 { cur.atime } else { cur.mtime };
        let newt = if t.sec < 0 {
            now
        } else if t != curt {
            if cur.uid == 0 && ctx.uid != 0 {
                return Err(MetaError::Perm);
            }
            t
        } else {
            continue;
        };
        if !may_write {
            return Err(MetaError::Access);
        }
        if field == 0 {
            dirty.atime = newt;
        } else {
            dirty.mtime = newt;
        }
        changed = true;
    }
    Ok(changed.then_some(dirty))
}

/// The owner and mode part of JuiceFS's `mergeAttr` (Linux, no ACL), for [`merge_attr`]:
/// checks and applies `set.gid`, then `set.uid`, then `mode` (the mode
/// asked for, after any `clearSUGID` the caller did) from `cur` onto `dirty`.
///
/// Only root or the owner may change the group, and a non-root owner only to one of its
/// own groups; only root may change the owner. A non-root caller outside the file's
/// group loses a set-gid bit it asks for, and only the owner or root may change the
/// permission bits or add set-uid/set-gid. Returns whether anything changed, or
/// [`MetaError::Perm`].
fn merge_owner_mode(
    ctx: &Ctx,
    cur: &Attr,
    set: &SetAttr,
    mode: Option<u16>,
    dirty: &mut Attr,
) -> Result<bool, MetaError> {
    let mut changed = false;
    if let Some(gid) = set.gid {
        if ctx.uid != 0 && ctx.uid != cur.uid {
            return Err(MetaError::Perm);
        }
        if cur.gid != gid {
            if ctx.uid != 0 && !ctx.gids.contains(&gid) {
                return Err(MetaError::Perm);
            }
            dirty.gid = gid;
            changed = true;
        }
    }
    if let Some(uid) = set.uid {
        if cur.uid != uid {
            if ctx.uid != 0 {
                return Err(MetaError::Perm);
            }
            dirty.uid = uid;
            changed = true;
        }
    }
    if let Some(mut m) = mode {
        if ctx.uid != 0 && m & 0o2000 != 0 && !ctx.gids.contains(&cur.gid) {
            m &= 0o5777;
        }
        if m != cur.mode {
            if ctx.uid != 0
                && ctx.uid != cur.uid
                && (cur.mode & 0o1777 != m & 0o1777
                    || m & 0o2000 > cur.mode & 0o2000
                    || m & 0o4000 > cur.mode & 0o4000)
            {
                return Err(MetaError::Perm);
            }
            dirty.mode = m;
            changed = true;
        }
    }
    Ok(changed)
}

/// Moves `attr`'s mtime and ctime to `now`.
pub(crate) fn touch(attr: &mut Attr, now: Timestamp) {
    attr.mtime = now;
    attr.ctime = now;
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

/// The attribute `doLookup` answers for the entry `name` of `parent` pointing at `ino`
/// (of type `typ`): the `stored` record, or the type alone when the record is missing
/// (logged, as JuiceFS logs it).
pub(crate) fn looked_up_attr(
    stored: Option<Vec<u8>>,
    (ino, typ): (Ino, FileType),
    parent: Ino,
    name: &[u8],
) -> crate::Result<Attr> {
    match stored {
        Some(b) => Ok(Attr::decode(&b)?),
        None => {
            tracing::warn!("no attribute for inode {ino} ({parent}, {name:?})");
            Ok(Attr::type_only(typ))
        }
    }
}

/// The attribute an entry of `typ` in `parent` reports when its inode record is missing
/// (mknod's EEXIST answer).
pub(crate) fn orphan_attr(typ: FileType, parent: Ino) -> Attr {
    let mut a = Attr::type_only(typ);
    a.parent = parent;
    a
}

/// The parent's side of a new entry of `typ` (`doMknod`): a directory adds a link, which
/// forces the parent to be written unless `rule` skips nlink; its mtime and ctime move to
/// `now` when it is written or its mtime is due. Returns whether it must be written.
pub(crate) fn parent_gains(
    pattr: &mut Attr,
    typ: FileType,
    now: Timestamp,
    rule: ParentRule,
) -> bool {
    let mut update = false;
    if typ == FileType::Directory {
        pattr.nlink += 1;
        update = rule.nlink_forces;
    }
    rule.touch(pattr, update, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parent_rule::ParentRule;
    use std::time::Duration;

    /// Root and trash as juicefs 1.4.2 formats them (goldens read from a Redis volume).
    #[test]
    fn format_attrs_match_juicefs() {
        for (ino, golden) in [
            (
                ROOT_INODE,
                &include_bytes!("../../schema/testdata/redis_root_i1_1.4.2.bin")[..],
            ),
            (
                TRASH_INODE,
                &include_bytes!("../../schema/testdata/redis_trash_1.4.2.bin")[..],
            ),
        ] {
            let t = Attr::decode(golden).unwrap().mtime;
            assert_eq!(format_dir_attr(ino, t).encode(), golden, "inode {ino}");
        }
        let implicit = implicit_dir_attr(TRASH_INODE).unwrap();
        assert_eq!(
            (implicit.mode, implicit.mtime),
            (0o555, Timestamp::default())
        );
        assert!(implicit_dir_attr(ROOT_INODE + 1).is_none());
    }

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

    fn ctx(uid: u32, gids: &[u32]) -> Ctx {
        Ctx {
            uid,
            gids: gids.to_vec(),
            pid: 1,
        }
    }

    #[test]
    fn plain_parent_applies_umask_and_callers_gid() {
        let c = ctx(5, &[7, 8]);
        assert_eq!(
            child_mode_gid(&c, 0o755, 9, FileType::File, 0o666, 0o022),
            (0o644, 7)
        );
        // Only permission bits survive, and a set-gid bit asked for is kept.
        assert_eq!(
            child_mode_gid(&c, 0o755, 9, FileType::File, 0o172_777, 0),
            (0o2777, 7)
        );
        assert_eq!(
            child_mode_gid(&ctx(5, &[]), 0o755, 9, FileType::File, 0o644, 0),
            (0o644, 0)
        );
    }

    #[test]
    fn setgid_parent_passes_group_and_bit_to_a_directory() {
        let c = ctx(5, &[7]);
        assert_eq!(
            child_mode_gid(&c, 0o2775, 9, FileType::Directory, 0o777, 0o022),
            (0o2755, 9)
        );
    }

    #[test]
    fn setgid_parent_strips_setgid_from_foreign_group_executables() {
        // Group-executable set-gid file, caller not in the parent's group: bit dropped.
        assert_eq!(
            child_mode_gid(&ctx(5, &[7]), 0o2775, 9, FileType::File, 0o2775, 0),
            (0o775, 9)
        );
        // In the group, or root: kept.
        assert_eq!(
            child_mode_gid(&ctx(5, &[7, 9]), 0o2775, 9, FileType::File, 0o2775, 0),
            (0o2775, 9)
        );
        assert_eq!(
            child_mode_gid(&ctx(0, &[7]), 0o2775, 9, FileType::File, 0o2775, 0),
            (0o2775, 9)
        );
        // Not group-executable: kept.
        assert_eq!(
            child_mode_gid(&ctx(5, &[7]), 0o2775, 9, FileType::File, 0o2764, 0),
            (0o2764, 9)
        );
    }

    fn file(uid: u32, gid: u32, mode: u16) -> Attr {
        let mut a = Attr::new(FileType::File, mode, 0, uid, gid, 1);
        a.mode = mode;
        a
    }

    /// The merged attribute if anything changed, or the error's kind.
    fn merge(
        c: &Ctx,
        cur: &Attr,
        set: SetAttr,
        mode: Option<u16>,
    ) -> Result<Option<Attr>, &'static str> {
        let mut dirty = cur.clone();
        match merge_owner_mode(c, cur, &set, mode, &mut dirty) {
            Ok(changed) => Ok(changed.then_some(dirty)),
            Err(e) => Err(e.kind()),
        }
    }

    #[test]
    fn owner_changes_need_root_or_owner_in_group() {
        let cur = file(5, 7, 0o644);
        let chgrp = |gid| SetAttr {
            gid: Some(gid),
            ..Default::default()
        };
        let chown = |uid| SetAttr {
            uid: Some(uid),
            ..Default::default()
        };
        assert_eq!(merge(&ctx(6, &[8]), &cur, chgrp(8), None), Err("EPERM"));
        assert_eq!(merge(&ctx(5, &[7]), &cur, chgrp(8), None), Err("EPERM"));
        assert_eq!(
            merge(&ctx(5, &[7, 8]), &cur, chgrp(8), None)
                .unwrap()
                .unwrap()
                .gid,
            8
        );
        assert_eq!(
            merge(&ctx(0, &[0]), &cur, chgrp(8), None)
                .unwrap()
                .unwrap()
                .gid,
            8
        );
        assert_eq!(merge(&ctx(5, &[7]), &cur, chgrp(7), None), Ok(None));
        assert_eq!(merge(&ctx(5, &[7]), &cur, chown(6), None), Err("EPERM"));
        assert_eq!(merge(&ctx(5, &[7]), &cur, chown(5), None), Ok(None));
        assert_eq!(
            merge(&ctx(0, &[0]), &cur, chown(6), None)
                .unwrap()
                .unwrap()
                .uid,
            6
        );
    }

    #[test]
    fn mode_changes_need_owner_and_group_for_setgid() {
        let cur = file(5, 7, 0o644);
        let none = SetAttr::default;
        assert_eq!(merge(&ctx(5, &[7]), &cur, none(), Some(0o644)), Ok(None));
        assert_eq!(
            merge(&ctx(5, &[7]), &cur, none(), Some(0o2755))
                .unwrap()
                .unwrap()
                .mode,
            0o2755
        );
        // Outside the file's group: the set-gid bit is dropped.
        assert_eq!(
            merge(&ctx(5, &[8]), &cur, none(), Some(0o2755))
                .unwrap()
                .unwrap()
                .mode,
            0o755
        );
        assert_eq!(
            merge(&ctx(6, &[7]), &cur, none(), Some(0o600)),
            Err("EPERM")
        );
        assert_eq!(
            merge(&ctx(0, &[0]), &cur, none(), Some(0o4600))
                .unwrap()
                .unwrap()
                .mode,
            0o4600
        );
    }

    #[test]
    fn new_child_takes_type_sizes_and_parent_flags() {
        let mut p = file(0, 9, 0o2775);
        p.typ = FileType::Directory;
        p.flags = 0xff;
        p.tier = 3;
        let now = Timestamp::now();
        let c = ctx(5, &[7]);
        let d = new_child_attr(
            &c,
            &p,
            &NewNode {
                rdev: 8,
                target: b"",
                ..NewNode::new(2, b"n", FileType::Directory, 0o777, 0o022)
            },
            now,
        );
        assert_eq!((d.mode, d.uid, d.gid, d.rdev), (0o2755, 5, 9, 0));
        assert_eq!((d.nlink, d.length, d.parent), (2, 4096, 2));
        assert_eq!((d.flags, d.tier), (FLAG_SKIP_TRASH, 3));
        assert_eq!((d.atime, d.mtime, d.ctime), (now, now, now));
        let s = new_child_attr(
            &c,
            &p,
            &NewNode {
                rdev: 8,
                target: b"eleven-char",
                ..NewNode::new(2, b"n", FileType::Symlink, 0o777, 0)
            },
            now,
        );
        assert_eq!((s.nlink, s.length, s.rdev), (1, 11, 0));
        let f = new_child_attr(
            &c,
            &p,
            &NewNode {
                rdev: 8,
                target: b"eleven-char",
                ..NewNode::new(2, b"n", FileType::File, 0o644, 0)
            },
            now,
        );
        assert_eq!(
            (f.nlink, f.length, f.rdev, f.typ),
            (1, 0, 8, FileType::File)
        );
        p.flags = 0;
        p.mode = 0o755;
        let f = new_child_attr(
            &c,
            &p,
            &NewNode {
                rdev: 0,
                target: b"",
                ..NewNode::new(2, b"n", FileType::File, 0o644, 0)
            },
            now,
        );
        assert_eq!((f.flags, f.gid), (0, 7));
    }

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

    #[test]
    fn a_new_directory_links_its_parent() {
        let bench = ParentRule::plain(Duration::ZERO);
        let now = Timestamp::now();
        let mut p = file(0, 0, 0o755);
        p.nlink = 2;
        p.mtime = Timestamp::default();
        assert!(parent_gains(&mut p, FileType::File, now, bench));
        assert_eq!((p.nlink, p.mtime, p.ctime), (2, now, now));
        // A parent whose mtime lies ahead is left alone by a file, not by a directory.
        let later = Timestamp {
            sec: now.sec + 60,
            nsec: 0,
        };
        p.mtime = later;
        assert!(!parent_gains(&mut p, FileType::File, now, bench));
        assert!(parent_gains(&mut p, FileType::Directory, now, bench));
        assert_eq!((p.nlink, p.mtime), (3, now));
    }

    #[test]
    fn merge_attr_changes_only_what_differs() {
        let now = Timestamp::now();
        let cur = Attr::new(FileType::File, 0o644, 0, 7, 7, 1);
        assert_eq!(
            merge_attr(&ctx(0, &[0]), &cur, &SetAttr::default(), now).unwrap(),
            None
        );
        let same = SetAttr {
            mode: Some(0o644),
            ..Default::default()
        };
        assert_eq!(merge_attr(&ctx(0, &[0]), &cur, &same, now).unwrap(), None);
        let flip = SetAttr {
            mode: Some(0o645),
            ..Default::default()
        };
        assert_eq!(
            merge_attr(&ctx(0, &[0]), &cur, &flip, now)
                .unwrap()
                .unwrap()
                .mode,
            0o645
        );
        // only root may give a file away; others get EPERM
        let chown = SetAttr {
            uid: Some(9),
            ..Default::default()
        };
        assert!(matches!(
            merge_attr(&ctx(7, &[7]), &cur, &chown, now),
            Err(MetaError::Perm)
        ));
        assert_eq!(
            merge_attr(&ctx(0, &[0]), &cur, &chown, now)
                .unwrap()
                .unwrap()
                .uid,
            9
        );
        // chown clears setuid of a file
        let mut suid = cur.clone();
        suid.mode = 0o4755;
        let a = merge_attr(&ctx(0, &[0]), &suid, &chown, now)
            .unwrap()
            .unwrap();
        assert_eq!(a.mode, 0o755);
        // a negative second is "now"; the same time again changes nothing; a stranger
        // may not set the times of a file it cannot write
        let touch_now = SetAttr {
            atime: Some(Timestamp { sec: -1, nsec: 0 }),
            ..Default::default()
        };
        let a = merge_attr(&ctx(7, &[7]), &cur, &touch_now, now)
            .unwrap()
            .unwrap();
        assert_eq!(a.atime, now);
        let same_time = SetAttr {
            mtime: Some(cur.mtime),
            ..Default::default()
        };
        assert_eq!(
            merge_attr(&ctx(7, &[7]), &cur, &same_time, now).unwrap(),
            None
        );
        assert!(matches!(
            merge_attr(&ctx(8, &[8]), &cur, &touch_now, now),
            Err(MetaError::Access)
        ));
    }
}
