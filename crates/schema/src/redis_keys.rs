//! Redis key names (`redis.go`: `inodeKey`, `entryKey`, …).
//!
//! Standalone Redis uses no prefix; Redis Cluster uses the hash tag `{N}` (N = the DB
//! number of the URL) so that every key of a volume lands in one slot. Hash fields are
//! never prefixed.

use crate::Ino;

/// Builds the key names of one volume.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedisKeys {
    prefix: String,
}

impl RedisKeys {
    /// Keys with the given prefix (empty for standalone Redis, `{N}` for a cluster).
    pub fn new(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
        }
    }

    /// `{prefix}{tag}{n}`, e.g. `i42`.
    fn numbered(&self, tag: &str, n: u64) -> String {
        concat(&[&self.prefix, tag, itoa::Buffer::new().format(n)])
    }

    /// The prefix in use.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// A plain named key such as `setting`, `nextinode`, `usedSpace` or `delfiles`.
    pub fn named(&self, name: &str) -> String {
        concat(&[&self.prefix, name])
    }

    /// `i{ino}`: the attribute string.
    pub fn inode(&self, ino: Ino) -> String {
        self.numbered("i", ino)
    }

    /// `d{ino}`: the directory's entry hash.
    pub fn entries(&self, ino: Ino) -> String {
        self.numbered("d", ino)
    }

    /// `p{ino}`: the parent counters of a hard-linked file.
    pub fn parents(&self, ino: Ino) -> String {
        self.numbered("p", ino)
    }

    /// `locked{sid}`: the set of lock keys a session holds.
    pub fn locked(&self, sid: u64) -> String {
        self.numbered("locked", sid)
    }

    /// `session{sid}`: the set of a session's sustained inodes.
    pub fn sustained(&self, sid: u64) -> String {
        self.numbered("session", sid)
    }

    /// `c{ino}_{indx}`: the slice list of one chunk.
    pub fn chunk(&self, ino: Ino, indx: u32) -> String {
        concat(&[
            &self.prefix,
            "c",
            itoa::Buffer::new().format(ino),
            "_",
            itoa::Buffer::new().format(indx),
        ])
    }

    /// `s{ino}`: a symlink target.
    pub fn symlink(&self, ino: Ino) -> String {
        self.numbered("s", ino)
    }

    /// `x{ino}`: the xattr hash.
    pub fn xattr(&self, ino: Ino) -> String {
        self.numbered("x", ino)
    }

    /// A member of `delfiles`: `{ino}:{length}`.
    pub fn delfile_member(ino: Ino, length: u64) -> String {
        concat(&[
            itoa::Buffer::new().format(ino),
            ":",
            itoa::Buffer::new().format(length),
        ])
    }

    /// A field of `sliceRef`: `k{id}_{size}`.
    pub fn slice_ref_field(id: u64, size: u32) -> String {
        concat(&[
            "k",
            itoa::Buffer::new().format(id),
            "_",
            itoa::Buffer::new().format(size),
        ])
    }
}

/// `parts` joined in one allocation of the key's size, as JuiceFS concatenates a key
/// (`"i" + strconv.FormatUint(…)`): a key is built for every command a call sends, and
/// formatting machinery there would be client CPU on every call.
fn concat(parts: &[&str]) -> String {
    let mut key = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for part in parts {
        key.push_str(part);
    }
    key
}

/// Names of the volume-wide keys.
pub mod names {
    /// The format JSON.
    pub const SETTING: &str = "setting";
    /// Last allocated inode (Redis stores one less than SQL/TKV).
    pub const NEXT_INODE: &str = "nextinode";
    /// Last allocated slice id.
    pub const NEXT_CHUNK: &str = "nextchunk";
    /// Last allocated session id.
    pub const NEXT_SESSION: &str = "nextsession";
    /// Registered sessions, scored by their expiry (Unix seconds).
    pub const ALL_SESSIONS: &str = "allSessions";
    /// Registered sessions' info (`SessionInfo` JSON) by id.
    pub const SESSION_INFOS: &str = "sessionInfos";
    /// The sessions of JuiceFS before 1.0: never prefixed (`legacySessions`).
    pub const LEGACY_SESSIONS: &str = "sessions";
    /// Bytes in use, updated inside every transaction that changes it.
    pub const USED_SPACE: &str = "usedSpace";
    /// Inodes in use.
    pub const TOTAL_INODES: &str = "totalInodes";
    /// Deleted files whose data is not yet freed.
    pub const DEL_FILES: &str = "delfiles";
    /// Slice reference counts minus one.
    pub const SLICE_REF: &str = "sliceRef";
    /// Dir stat: data length per directory.
    pub const DIR_DATA_LENGTH: &str = "dirDataLength";
    /// Dir stat: used space per directory.
    pub const DIR_USED_SPACE: &str = "dirUsedSpace";
    /// Dir stat: used inodes per directory.
    pub const DIR_USED_INODES: &str = "dirUsedInodes";
    /// Directory quota limits.
    pub const DIR_QUOTA: &str = "dirQuota";
    /// Directory quota usage, space.
    pub const DIR_QUOTA_USED_SPACE: &str = "dirQuotaUsedSpace";
    /// Directory quota usage, inodes.
    pub const DIR_QUOTA_USED_INODES: &str = "dirQuotaUsedInodes";
    /// The dir-stat hashes, in the order `doRmdir` clears a directory's fields.
    pub const DIR_STAT_HASHES: [&str; 3] = [DIR_DATA_LENGTH, DIR_USED_SPACE, DIR_USED_INODES];
    /// The directory-quota hashes, in the order `doRmdir` and `doRename` clear a
    /// directory's fields.
    pub const DIR_QUOTA_HASHES: [&str; 3] =
        [DIR_QUOTA, DIR_QUOTA_USED_SPACE, DIR_QUOTA_USED_INODES];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_juicefs() {
        let k = RedisKeys::default();
        assert_eq!(k.inode(1), "i1");
        assert_eq!(k.entries(12), "d12");
        assert_eq!(k.chunk(5, 3), "c5_3");
        assert_eq!(k.named(names::SETTING), "setting");
        let c = RedisKeys::new("{0}");
        assert_eq!(c.inode(1), "{0}i1");
        assert_eq!(c.xattr(2), "{0}x2");
        assert_eq!(RedisKeys::delfile_member(9, 100), "9:100");
        assert_eq!(RedisKeys::slice_ref_field(7, 1024), "k7_1024");
    }

    #[test]
    fn every_key_kind_with_the_widest_numbers() {
        let c = RedisKeys::new("{12}");
        let max = u64::MAX;
        assert_eq!(c.named("delfiles"), "{12}delfiles");
        assert_eq!(c.inode(max), "{12}i18446744073709551615");
        assert_eq!(c.entries(0), "{12}d0");
        assert_eq!(c.parents(10), "{12}p10");
        assert_eq!(c.locked(7), "{12}locked7");
        assert_eq!(c.sustained(99), "{12}session99");
        assert_eq!(
            c.chunk(max, u32::MAX),
            "{12}c18446744073709551615_4294967295"
        );
        assert_eq!(c.symlink(3), "{12}s3");
        assert_eq!(c.xattr(1 << 40), "{12}x1099511627776");
        assert_eq!(RedisKeys::default().chunk(1, 0), "c1_0");
    }
}
