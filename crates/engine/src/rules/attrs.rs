//! The attributes JuiceFS builds without I/O: the root and the trash as `doInit` writes
//! them, a new child as `doMknod` makes it (`inheritGid`, `inheritMode`), `mergeAttr` of
//! `doSetAttr`, and what `doLookup`, `Mknod` and `ReadLink` answer for a missing record.

use super::access::{access, FLAG_SKIP_TRASH};
use crate::types::{Ctx, NewNode, SetAttr};
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{ctx, file};

    /// Root and trash as juicefs 1.4.2 formats them (goldens read from a Redis volume).
    #[test]
    fn format_attrs_match_juicefs() {
        for (ino, golden) in [
            (
                ROOT_INODE,
                &include_bytes!("../../../schema/testdata/redis_root_i1_1.4.2.bin")[..],
            ),
            (
                TRASH_INODE,
                &include_bytes!("../../../schema/testdata/redis_trash_1.4.2.bin")[..],
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
