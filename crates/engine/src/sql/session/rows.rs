//! Rows of the JuiceFS tables as an SQL session reads and writes them: node and edge
//! columns, times, trash names and `mergeAttr`.

use super::tx_err::TxErr;
use crate::rules::ParentRule;
use crate::sql::conn::{Arg, DbError, Row};
use crate::{MetaError, Result};
use metabench_schema::sql::NodeRow;
use metabench_schema::{FileType, Ino, Timestamp};

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
/// `rule` applied to a parent row (see [`ParentRule::touch`]): its times move to `now`
/// when it is written anyway (`update`) or its mtime is due. Returns whether it must be
/// written.
pub(super) fn touch_parent(
    rule: &ParentRule,
    pn: &mut NodeRow,
    update: bool,
    now: Timestamp,
) -> bool {
    let mtime = Timestamp::from_sql(pn.mtime, pn.mtimensec as i32);
    if update || rule.mtime_due(mtime, now) {
        set_mtime(pn, now);
        set_ctime(pn, now);
        return true;
    }
    false
}

/// The time arguments of an `UPDATE … SET mtime=?, ctime=?, mtimensec=?, ctimensec=?`.
pub(super) fn time_args(n: &NodeRow) -> [Arg<'static>; 4] {
    [
        Arg::I64(n.mtime),
        Arg::I64(n.ctime),
        Arg::I32(n.mtimensec as i32),
        Arg::I32(n.ctimensec as i32),
    ]
}

/// The arguments of a parent update: its times, then `WHERE inode = ?`.
pub(super) fn parent_args(pn: &NodeRow) -> [Arg<'static>; 5] {
    let [m, c, mn, cn] = time_args(pn);
    [m, c, mn, cn, Arg::I64(pn.inode)]
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

/// An xattr row's key as its statements take it: the inode, then the name (EINVAL, as
/// [`xattr_name`], for an empty one or one that is not UTF-8).
pub(super) fn xattr_key(ino: Ino, name: &[u8]) -> Result<[Arg<'_>; 2]> {
    Ok([Arg::I64(ino as i64), Arg::Str(xattr_name(name)?)])
}

/// A chunk row's key as its statements take it: the inode, then the chunk's index.
pub(super) fn chunk_key(ino: Ino, indx: u32) -> [Arg<'static>; 2] {
    [Arg::I64(ino as i64), Arg::I32(indx as i32)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use metabench_schema::Attr;

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
