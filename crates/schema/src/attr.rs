//! Inode attributes (`Attr` in `pkg/meta/interface.go`) and their 72-byte encoding.

use crate::decode::{DecodeError, Reader};

/// An inode number.
pub type Ino = u64;

/// The root directory of every volume.
pub const ROOT_INODE: Ino = 1;

/// The trash directory (`TrashInode`), created by `juicefs format` when trash is on.
pub const TRASH_INODE: Ino = 0x7FFF_FFFF_1000_0000;

/// Node types as JuiceFS numbers them (`TypeFile` …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[repr(u8)]
pub enum FileType {
    /// Regular file.
    File = 1,
    /// Directory.
    Directory = 2,
    /// Symbolic link.
    Symlink = 3,
    /// Named pipe.
    Fifo = 4,
    /// Block device.
    BlockDev = 5,
    /// Character device.
    CharDev = 6,
    /// Unix socket.
    Socket = 7,
}

impl FileType {
    /// Decodes JuiceFS's type number.
    pub fn from_u8(v: u8) -> Result<Self, DecodeError> {
        Ok(match v {
            1 => Self::File,
            2 => Self::Directory,
            3 => Self::Symlink,
            4 => Self::Fifo,
            5 => Self::BlockDev,
            6 => Self::CharDev,
            7 => Self::Socket,
            _ => {
                return Err(DecodeError::Invalid {
                    what: "file type",
                    value: v as u64,
                })
            }
        })
    }

    /// The type number JuiceFS stores.
    pub fn as_u8(self) -> u8 {
        self as u8
    }
}

/// A point in time split as JuiceFS splits it: whole seconds and the nanosecond rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Timestamp {
    /// Seconds since the Unix epoch.
    pub sec: i64,
    /// Nanoseconds, 0..1e9.
    pub nsec: u32,
}

impl Timestamp {
    /// The current wall-clock time.
    pub fn now() -> Self {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Self {
            sec: d.as_secs() as i64,
            nsec: d.subsec_nanos(),
        }
    }

    /// Nanoseconds from `earlier` to this time (negative when `earlier` is later).
    pub fn nanos_since(self, earlier: Timestamp) -> i128 {
        i128::from(self.sec - earlier.sec) * 1_000_000_000 + i128::from(self.nsec)
            - i128::from(earlier.nsec)
    }

    /// The time as microseconds plus the remaining nanoseconds (0..999), the SQL layout.
    pub fn to_sql(self) -> (i64, i32) {
        (
            self.sec * 1_000_000 + (self.nsec / 1000) as i64,
            (self.nsec % 1000) as i32,
        )
    }

    /// Rebuilds a time from the SQL layout (µs column plus ns rest).
    pub fn from_sql(usec: i64, nsec_rest: i32) -> Self {
        Self {
            sec: usec.div_euclid(1_000_000),
            nsec: (usec.rem_euclid(1_000_000) * 1000) as u32 + nsec_rest.max(0) as u32,
        }
    }
}

/// Inode attributes, field for field as JuiceFS keeps them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr {
    /// Flag bits (immutable, append, …).
    pub flags: u8,
    /// Node type.
    pub typ: FileType,
    /// The 12 permission bits, including suid, sgid and sticky.
    pub mode: u16,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Device number of a block or character device.
    pub rdev: u32,
    /// Last access.
    pub atime: Timestamp,
    /// Last data change.
    pub mtime: Timestamp,
    /// Last metadata change.
    pub ctime: Timestamp,
    /// Directory: 2 + subdirectories; file: hard links.
    pub nlink: u32,
    /// File length; 4096 for a directory; target length for a symlink.
    pub length: u64,
    /// Parent directory; 0 for a hard-linked file (parents kept elsewhere).
    pub parent: Ino,
    /// Access ACL id, 0 for none.
    pub access_acl: u32,
    /// Default ACL id, 0 for none.
    pub default_acl: u32,
    /// Storage tier, 0 by default.
    pub tier: u8,
}

/// Length of a plain encoded attribute (71 bytes of fields and one zero pad).
pub const ATTR_LEN: usize = 72;

impl Attr {
    /// A fresh attribute as `Mknod` builds it: `mode & !umask`, times set to `now`,
    /// nlink 2 and length 4096 for a directory, nlink 1 otherwise.
    pub fn new(typ: FileType, mode: u16, umask: u16, uid: u32, gid: u32, parent: Ino) -> Self {
        Self::made_at(typ, mode & !umask, uid, gid, parent, Timestamp::now())
    }

    /// A fresh attribute made at `now`, as [`Attr::new`] but with the mode as given (only
    /// its permission bits are kept).
    pub fn made_at(
        typ: FileType,
        mode: u16,
        uid: u32,
        gid: u32,
        parent: Ino,
        now: Timestamp,
    ) -> Self {
        let (nlink, length) = match typ {
            FileType::Directory => (2, 4096),
            _ => (1, 0),
        };
        Self {
            flags: 0,
            typ,
            mode: mode & 0o7777,
            uid,
            gid,
            rdev: 0,
            atime: now,
            mtime: now,
            ctime: now,
            nlink,
            length,
            parent,
            access_acl: 0,
            default_acl: 0,
            tier: 0,
        }
    }

    /// An attribute that carries only a type, as JuiceFS fills entries it has not read
    /// (readdir without attributes, `.` and `..`).
    pub fn type_only(typ: FileType) -> Self {
        Self {
            flags: 0,
            typ,
            mode: 0,
            uid: 0,
            gid: 0,
            rdev: 0,
            atime: Timestamp::default(),
            mtime: Timestamp::default(),
            ctime: Timestamp::default(),
            nlink: 0,
            length: 0,
            parent: 0,
            access_acl: 0,
            default_acl: 0,
            tier: 0,
        }
    }

    /// Encodes as `Attr.Marshal` does: 72 bytes, +8 with ACL ids, +1 with a tier.
    pub fn encode(&self) -> Vec<u8> {
        let has_acl = self.access_acl | self.default_acl != 0;
        let mut size = ATTR_LEN;
        if has_acl {
            size += 8;
        }
        if self.tier != 0 {
            size += 1;
        }
        let mut b = Vec::with_capacity(size);
        b.push(self.flags);
        b.extend_from_slice(
            &(((self.typ.as_u8() as u16) << 12) | (self.mode & 0o7777)).to_be_bytes(),
        );
        b.extend_from_slice(&self.uid.to_be_bytes());
        b.extend_from_slice(&self.gid.to_be_bytes());
        for t in [self.atime, self.mtime, self.ctime] {
            b.extend_from_slice(&t.sec.to_be_bytes());
            b.extend_from_slice(&t.nsec.to_be_bytes());
        }
        b.extend_from_slice(&self.nlink.to_be_bytes());
        b.extend_from_slice(&self.length.to_be_bytes());
        b.extend_from_slice(&self.rdev.to_be_bytes());
        b.extend_from_slice(&self.parent.to_be_bytes());
        if has_acl {
            b.extend_from_slice(&self.access_acl.to_be_bytes());
            b.extend_from_slice(&self.default_acl.to_be_bytes());
        }
        if self.tier != 0 {
            b.push(self.tier);
        }
        b.resize(size, 0);
        b
    }

    /// Decodes as `Attr.Unmarshal` does, accepting pre-1.0 records without a parent.
    pub fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        const FIXED: usize = 63;
        DecodeError::check_len("attr", buf, FIXED)?;
        let mut r = Reader(buf);
        let flags = r.u8();
        let tm = r.u16();
        let typ = FileType::from_u8((tm >> 12) as u8)?;
        let uid = r.u32();
        let gid = r.u32();
        let mut times = [Timestamp::default(); 3];
        for t in &mut times {
            t.sec = r.u64() as i64;
            t.nsec = r.u32();
        }
        let nlink = r.u32();
        let length = r.u64();
        let rdev = r.u32();
        let parent = if r.left() >= 8 { r.u64() } else { 0 };
        let (access_acl, default_acl) = if r.left() >= 8 {
            (r.u32(), r.u32())
        } else {
            (0, 0)
        };
        let tier = if r.left() >= 1 { r.u8() } else { 0 };
        Ok(Self {
            flags,
            typ,
            mode: tm & 0o7777,
            uid,
            gid,
            rdev,
            atime: times[0],
            mtime: times[1],
            ctime: times[2],
            nlink,
            length,
            parent,
            access_acl,
            default_acl,
            tier,
        })
    }

    /// Whether `uid`/`gids` may access this node with `mask` (4 read, 2 write, 1 exec),
    /// following `baseMeta.Access` (root may do anything but execute a non-executable file).
    pub fn allows(&self, uid: u32, gids: &[u32], mask: u16) -> bool {
        if uid == 0 {
            return true;
        }
        let mode = if uid == self.uid {
            (self.mode >> 6) & 7
        } else if gids.contains(&self.gid) {
            (self.mode >> 3) & 7
        } else {
            self.mode & 7
        };
        mode & mask == mask
    }
}

/// `align4K`: a size rounded up to 4 KiB, with 0 counted as 4096.
pub fn align4k(length: u64) -> i64 {
    if length == 0 {
        4096
    } else {
        length.div_ceil(4096) as i64 * 4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Attr {
        let mut a = Attr::new(FileType::File, 0o644, 0o022, 1000, 100, 7);
        a.atime = Timestamp {
            sec: 1_700_000_000,
            nsec: 5,
        };
        a.mtime = Timestamp {
            sec: 1_700_000_001,
            nsec: 6,
        };
        a.ctime = Timestamp {
            sec: 1_700_000_002,
            nsec: 7,
        };
        a.length = 12345;
        a
    }

    #[test]
    fn plain_attr_is_72_bytes_with_zero_pad() {
        let b = sample().encode();
        assert_eq!(b.len(), 72);
        assert_eq!(b[71], 0);
        assert_eq!(&b[1..3], &[0x11, 0xa4]); // type 1 << 12 | 0o644
        assert_eq!(&b[63..71], &7u64.to_be_bytes());
    }

    #[test]
    fn round_trip_with_acl_and_tier() {
        let mut a = sample();
        assert_eq!(Attr::decode(&a.encode()).unwrap(), a);
        a.access_acl = 3;
        a.tier = 2;
        let b = a.encode();
        assert_eq!(b.len(), 81);
        assert_eq!(Attr::decode(&b).unwrap(), a);
    }

    #[test]
    fn legacy_record_without_parent_decodes() {
        let b = sample().encode();
        let a = Attr::decode(&b[..63]).unwrap();
        assert_eq!(a.parent, 0);
        assert!(Attr::decode(&b[..40]).is_err());
    }

    /// The root inode `i1` as `juicefs format` 1.4.2 wrote it to Redis (captured with
    /// `redis-cli --no-raw GET i1`): dir, mode 0777, nlink 2, length 4096, parent 1.
    #[test]
    fn golden_root_from_juicefs_format() {
        let golden: &[u8] = include_bytes!("../testdata/redis_root_i1_1.4.2.bin");
        let a = Attr::decode(golden).unwrap();
        assert_eq!(a.typ, FileType::Directory);
        assert_eq!(a.mode, 0o777);
        assert_eq!(
            (a.uid, a.gid, a.nlink, a.length, a.parent),
            (0, 0, 2, 4096, 1)
        );
        assert_eq!(a.mtime.nsec, 0);
        assert_eq!(a.encode(), golden);
    }

    #[test]
    fn sql_times_split_microseconds() {
        let t = Timestamp {
            sec: 1795312228,
            nsec: 41_796_121,
        };
        assert_eq!(t.to_sql(), (1795312228041796, 121));
        assert_eq!(Timestamp::from_sql(1795312228041796, 121), t);
    }

    #[test]
    fn align_and_access() {
        assert_eq!(align4k(0), 4096);
        assert_eq!(align4k(1), 4096);
        assert_eq!(align4k(4097), 8192);
        let a = sample(); // 0o644 owned by 1000:100
        assert!(a.allows(1000, &[], 6));
        assert!(!a.allows(1, &[100], 2));
        assert!(a.allows(1, &[1], 4));
        assert!(a.allows(0, &[], 7));
    }
}
