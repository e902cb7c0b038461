//! When a namespace change rewrites a parent directory's attribute: JuiceFS's
//! `Config.SkipDirMtime` and `SkipDirNlink`, read as each family's `do*` steps read them
//! (`pkg/meta/redis.go`, `sql.go`, `tkv.go`), and the parent's side of a new entry.

use metabench_schema::{Attr, FileType, Timestamp};

/// When a parent directory's attribute is rewritten, for one attempt of one transaction:
/// JuiceFS's `Config.SkipDirMtime` and `SkipDirNlink` as each family's `do*` steps read
/// them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ParentRule {
    /// `SkipDirMtime`, already multiplied by the tries so far on TKV.
    pub skip_mtime: std::time::Duration,
    /// Whether a directory's nlink change forces the parent to be written: always on Redis
    /// and SQL; on TKV `SkipDirNlink <= 0 || tx.retry < SkipDirNlink`.
    pub nlink_forces: bool,
}

impl ParentRule {
    /// The rule of `redis.go` and `sql.go`: SkipDirMtime as set, nlink always written.
    pub fn plain(skip_dir_mtime: std::time::Duration) -> Self {
        Self {
            skip_mtime: skip_dir_mtime,
            nlink_forces: true,
        }
    }

    /// The rule of `tkv.go` for the try after `retry` retries:
    /// `SkipDirMtime*time.Duration(tx.retry+1)`, and an nlink change forces the write
    /// while `SkipDirNlink <= 0 || tx.retry < SkipDirNlink`.
    pub fn kv(skip_dir_mtime: std::time::Duration, skip_dir_nlink: u32, retry: u32) -> Self {
        Self {
            skip_mtime: skip_dir_mtime * (retry + 1),
            nlink_forces: skip_dir_nlink == 0 || retry < skip_dir_nlink,
        }
    }

    /// Whether a parent whose mtime is `mtime` gets `now` as its mtime and ctime:
    /// `now.Sub(mtime) >= SkipDirMtime`. With 0, unless its mtime is in the future.
    pub fn mtime_due(&self, mtime: Timestamp, now: Timestamp) -> bool {
        now.nanos_since(mtime) >= self.skip_mtime.as_nanos() as i128
    }

    /// Applies the rule to a parent that may have changed already (`update`, e.g. its
    /// nlink): moves its times to `now` when it is written anyway or its mtime is due.
    /// Returns whether it must be written.
    pub fn touch(&self, pattr: &mut Attr, update: bool, now: Timestamp) -> bool {
        if update || self.mtime_due(pattr.mtime, now) {
            touch(pattr, now);
            return true;
        }
        false
    }
}

/// Moves `attr`'s mtime and ctime to `now`.
pub(crate) fn touch(attr: &mut Attr, now: Timestamp) {
    attr.mtime = now;
    attr.ctime = now;
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
    use crate::rules::testing::file;
    use metabench_schema::Ino;
    use std::time::Duration;

    fn dir(parent: Ino) -> Attr {
        Attr {
            parent,
            ..Attr::type_only(FileType::Directory)
        }
    }

    /// `now.Sub(mtime) >= SkipDirMtime` (times the tries on TKV), and TKV's
    /// `SkipDirNlink <= 0 || tx.retry < SkipDirNlink`.
    #[test]
    fn skip_dir_mtime_and_nlink_follow_juicefs() {
        let at = |ms: i64| Timestamp {
            sec: 1_000 + ms.div_euclid(1000),
            nsec: (ms.rem_euclid(1000) * 1_000_000) as u32,
        };
        let mount = ParentRule::plain(Duration::from_millis(100));
        assert!(!mount.mtime_due(at(0), at(99)));
        assert!(mount.mtime_due(at(0), at(100)));
        let mut p = dir(1);
        p.nlink = 2;
        p.mtime = at(0);
        // A file within 100 ms leaves the parent unwritten; a directory writes it.
        assert!(!parent_gains(&mut p, FileType::File, at(50), mount));
        assert_eq!(p.mtime, at(0));
        assert!(parent_gains(&mut p, FileType::Directory, at(60), mount));
        assert_eq!((p.nlink, p.mtime), (3, at(60)));
        // TKV: the window grows with the tries; after SkipDirNlink retries the nlink
        // change no longer forces the write.
        let third_try = ParentRule::kv(Duration::from_millis(100), 20, 2);
        assert!(!third_try.mtime_due(at(0), at(299)));
        assert!(third_try.mtime_due(at(0), at(300)));
        assert!(third_try.nlink_forces);
        let late = ParentRule::kv(Duration::from_millis(100), 20, 20);
        assert!(!late.nlink_forces);
        p.mtime = at(0);
        assert!(!parent_gains(&mut p, FileType::Directory, at(10), late));
        assert_eq!((p.nlink, p.mtime), (4, at(0)));
        assert!(ParentRule::kv(Duration::ZERO, 0, 1000).nlink_forces);
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
}
