//! Rows of the JuiceFS tables as an SQL session reads and writes them: node and edge
//! columns, times, trash names and `mergeAttr`.

use super::txn::TxErr;
use crate::common::{access, merge_owner_mode};
use crate::sql::conn::{Arg, DbError, Row};
use crate::{Ctx, MetaError, Result, SetAttr};
use metabench_schema::sql::NodeRow;
use metabench_schema::{Attr, FileType, Ino, Timestamp};

pub(super) const TYPE_FILE: i64 = 1;
pub(super) const TYPE_DIR: i64 = 2;
pub(super) const TYPE_SYMLINK: i64 = 3;

/// The 19 `node` values as bound parameters, INT columns as `int4`.
pub(crate) fn node_args(row: &NodeRow) -> [Arg<'static>; 19] {
    let v = row.values();
    let int32 = [1, 2, 3, 4, 5, 9, 10, 11, 12, 14, 16, 17, 18];
    let mut out = [Arg::I64(0); 19];
    for (i, x) in v.iter().enumerate() {
        out[i] = if int32.contains(&i) {
            Arg::I32(*x as i32)
        } else {
            Arg::I64(*x)
        };
    }
    out
}

pub(super) fn parse_node(r: &Row, off: usize) -> std::result::Result<NodeRow, TxErr> {
    let mut v = [None; 19];
    for (i, x) in v.iter_mut().enumerate() {
        *x = r.opt_int(off + i)?;
    }
    Ok(NodeRow::from_values(v)?)
}

/// An `edge` row.
#[derive(Debug, Clone)]
pub(super) struct EdgeRow {
    pub(super) id: i64,
    pub(super) name: Vec<u8>,
    pub(super) inode: Ino,
    pub(super) typ: i64,
}

pub(super) fn parse_edge(r: &Row, off: usize) -> std::result::Result<EdgeRow, DbError> {
    Ok(EdgeRow {
        id: r.int(off)?,
        name: r.bytes(off + 2)?.to_vec(),
        inode: r.int(off + 3)? as Ino,
        typ: r.int(off + 4)?,
    })
}

pub(super) fn file_type(t: i64) -> std::result::Result<FileType, MetaError> {
    Ok(FileType::from_u8(t as u8)?)
}

/// `getMtime`: the node's mtime in ns.
pub(super) fn mtime_ns(n: &NodeRow) -> i64 {
    n.mtime * 1000 + n.mtimensec
}

pub(super) fn ns(t: Timestamp) -> i64 {
    t.sec * 1_000_000_000 + t.nsec as i64
}

pub(super) fn set_mtime(n: &mut NodeRow, t: Timestamp) {
    let (us, rest) = t.to_sql();
    n.mtime = us;
    n.mtimensec = rest as i64;
}

pub(super) fn set_ctime(n: &mut NodeRow, t: Timestamp) {
    let (us, rest) = t.to_sql();
    n.ctime = us;
    n.ctimensec = rest as i64;
}

pub(super) fn xattr_name(name: &[u8]) -> Result<&str> {
    if name.is_empty() {
        return Err(MetaError::Invalid);
    }
    std::str::from_utf8(name).map_err(|_| MetaError::Invalid)
}

/// The trash sub-directory of the hour of `secs` (UTC): `YYYY-MM-DD-HH`.
pub(super) fn trash_hour(secs: i64) -> String {
    // civil_from_days (Howard Hinnant)
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let h = secs.rem_euclid(86_400) / 3600;
    format!("{y:04}-{m:02}-{d:02}-{h:02}")
}

/// `trashEntry`: `<parent>-<inode>-<name>`, cut to 255 bytes.
pub(super) fn trash_entry(parent: Ino, inode: Ino, name: &[u8]) -> Vec<u8> {
    let mut s = format!("{parent}-{inode}-").into_bytes();
    s.extend_from_slice(name);
    s.truncate(255);
    s
}

pub(super) fn unix_now() -> i64 {
    Timestamp::now().sec
}

/// `mergeAttr` for the fields [`SetAttr`] can change (Linux behaviour, no ACLs):
/// `None` when nothing changes.
pub(super) fn merge_attr(
    ctx: &Ctx,
    cur: &Attr,
    set: &SetAttr,
) -> std::result::Result<Option<Attr>, MetaError> {
    let mut dirty = cur.clone();
    let mut want_mode = set.mode;
    let owner = set.uid.is_some() || set.gid.is_some();
    if owner {
        want_mode = want_mode.map(|m| m | (cur.mode & 0o6000));
    }
    let mut changed = false;
    if cur.mode & 0o6000 != 0 && owner {
        // clearSUGID
        if cur.typ != FileType::Directory {
            let keep = if ctx.uid != 0 || (cur.mode >> 3) & 1 != 0 {
                0o1777
            } else {
                0o3777
            };
            dirty.mode &= keep;
            want_mode = want_mode.map(|m| m & keep);
        }
        changed = true;
    }
    changed |= merge_owner_mode(ctx, cur, set, want_mode.map(|m| m & 0o7777), &mut dirty)?;
    for (want, which) in [(set.atime, 0), (set.mtime, 1)] {
        let Some(t) = want else { continue };
        let curt = if which == 0 { cur.atime } else { cur.mtime };
        if curt != t {
            if cur.uid == 0 && ctx.uid != 0 {
                return Err(MetaError::Perm);
            }
            if ctx.uid != cur.uid && access(ctx, cur, 0o2).is_err() {
                return Err(MetaError::Access);
            }
            if which == 0 {
                dirty.atime = t;
            } else {
                dirty.mtime = t;
            }
            changed = true;
        }
    }
    Ok(changed.then_some(dirty))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> Ctx {
        Ctx::root()
    }

    fn user(uid: u32, gid: u32) -> Ctx {
        Ctx {
            uid,
            gids: vec![gid],
            pid: 1,
        }
    }

    #[test]
    fn merge_attr_changes_only_what_differs() {
        let cur = Attr::new(FileType::File, 0o644, 0, 7, 7, 1);
        assert_eq!(
            merge_attr(&root(), &cur, &SetAttr::default()).unwrap(),
            None
        );
        let same = SetAttr {
            mode: Some(0o644),
            ..Default::default()
        };
        assert_eq!(merge_attr(&root(), &cur, &same).unwrap(), None);
        let flip = SetAttr {
            mode: Some(0o645),
            ..Default::default()
        };
        assert_eq!(
            merge_attr(&root(), &cur, &flip).unwrap().unwrap().mode,
            0o645
        );
        // only root may give a file away; others get EPERM
        let chown = SetAttr {
            uid: Some(9),
            ..Default::default()
        };
        assert!(matches!(
            merge_attr(&user(7, 7), &cur, &chown),
            Err(MetaError::Perm)
        ));
        assert_eq!(merge_attr(&root(), &cur, &chown).unwrap().unwrap().uid, 9);
        // chown clears setuid of a file
        let mut suid = cur.clone();
        suid.mode = 0o4755;
        let a = merge_attr(&root(), &suid, &chown).unwrap().unwrap();
        assert_eq!(a.mode, 0o755);
    }

    #[test]
    fn node_args_bind_int_columns_as_int4() {
        let a = Attr::new(FileType::Directory, 0o755, 0, 1, 2, 1);
        let args = node_args(&NodeRow::from_attr(5, &a));
        assert!(matches!(args[0], Arg::I64(5)));
        assert!(matches!(args[1], Arg::I32(2)));
        assert!(matches!(args[3], Arg::I32(0o755)));
        assert!(matches!(args[13], Arg::I64(4096)));
        assert!(matches!(args[15], Arg::I64(1)));
    }

    #[test]
    fn trash_names() {
        assert_eq!(trash_hour(0), "1970-01-01-00");
        assert_eq!(trash_hour(1_795_315_196), "2026-11-22-02");
        assert_eq!(trash_hour(951_827_696), "2000-02-29-12");
        assert_eq!(trash_entry(1, 2, b"f"), b"1-2-f");
        assert_eq!(trash_entry(1, 2, &[b'x'; 300]).len(), 255);
    }

    #[test]
    fn names() {
        assert!(xattr_name(b"user.k").is_ok());
        assert!(xattr_name(b"").is_err());
        assert!(xattr_name(&[0xff]).is_err());
    }
}
