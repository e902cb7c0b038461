//! The value types of the engine: what the operations of [`crate::Meta`] take and answer,
//! what a session is opened with, and what an engine says about itself. A leaf: it
//! depends on `metabench_schema` only, so every other module (the pure rules, the client
//! logic, the families) can use it without pulling anything else in.

use metabench_schema::{align4k, Attr, FileType, Format, Ino, Slice, Timestamp};
use std::collections::BTreeMap;

/// Who performs an operation (`meta.Context`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ctx {
    /// User id.
    pub uid: u32,
    /// Group ids, the primary first.
    pub gids: Vec<u32>,
    /// Process id.
    pub pid: u32,
}

impl Ctx {
    /// uid 0, gid 0: what JuiceFS's Go benchmark uses (`Background()`).
    pub fn root() -> Self {
        Self {
            uid: 0,
            gids: vec![0],
            pid: 1,
        }
    }

    /// The primary group.
    pub fn gid(&self) -> u32 {
        self.gids.first().copied().unwrap_or(0)
    }
}

/// One entry returned by `readdir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Name (`.` and `..` included).
    pub name: Vec<u8>,
    /// Inode.
    pub inode: Ino,
    /// Attributes; for `.` and `..` only `typ` is meaningful unless `plus` filled them.
    pub attr: Attr,
}

/// Attribute changes for `setattr`; `None` leaves a field alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetAttr {
    /// New permission bits.
    pub mode: Option<u16>,
    /// New owner.
    pub uid: Option<u32>,
    /// New group.
    pub gid: Option<u32>,
    /// New access time.
    pub atime: Option<Timestamp>,
    /// New modification time.
    pub mtime: Option<Timestamp>,
}

/// `setxattr` flags, as in `setxattr(2)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum XattrFlags {
    /// Create or replace.
    #[default]
    Any,
    /// Fail with EEXIST if present (XATTR_CREATE).
    Create,
    /// Fail with ENOATTR if absent (XATTR_REPLACE).
    Replace,
}

/// What `SetXattr` sets: `name` (not empty) to `value`, as `flags` allow.
#[derive(Debug, Clone, Copy)]
pub struct Xattr<'a> {
    /// The attribute's name.
    pub name: &'a [u8],
    /// Its value.
    pub value: &'a [u8],
    /// Create, replace or either.
    pub flags: XattrFlags,
}

/// What `Write` records: `slice` at its place in chunk `indx`, and the file's new mtime.
#[derive(Debug, Clone, Copy)]
pub struct ChunkWrite {
    /// The chunk's index in the file.
    pub indx: u32,
    /// The slice record written.
    pub slice: Slice,
    /// The file's modification time after the write.
    pub mtime: Timestamp,
}

impl ChunkWrite {
    /// What the write does to a file of `length` bytes (`doWrite` in `pkg/meta/redis.go`,
    /// `sql.go` and `tkv.go`): its new length, and the length and space it adds
    /// (4 KiB-aligned), both 0 when the write ends inside the file.
    pub(crate) fn grow(&self, length: u64) -> (u64, i64, i64) {
        let end = self.indx as u64 * metabench_schema::CHUNK_SIZE
            + self.slice.pos as u64
            + self.slice.len as u64;
        if end > length {
            let space = metabench_schema::align4k(end) - metabench_schema::align4k(length);
            (end, (end - length) as i64, space)
        } else {
            (length, 0, 0)
        }
    }

    /// [`ChunkWrite::grow`] applied to the file's attribute, as Redis and TKV `doWrite`
    /// apply it: the length grown; returns the length and space added.
    pub(crate) fn grow_attr(&self, attr: &mut Attr) -> (i64, i64) {
        let (length, dlen, dspace) = self.grow(attr.length);
        attr.length = length;
        (dlen, dspace)
    }

    /// The times `doWrite` gives the file's attribute: the write's mtime, ctime now.
    pub(crate) fn touch(&self, attr: &mut Attr) {
        attr.mtime = self.mtime;
        attr.ctime = Timestamp::now();
    }
}

/// How a session behaves where the Go client answers from memory, and the JuiceFS
/// `Config` fields that change its transactions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionOptions {
    /// Reproduce the Go client's caches: `read` answers from the chunk cache after the
    /// first call (until this session writes the inode), `readlink` from the symlink
    /// cache. Off by default, so every call reaches the engine and the figure is the
    /// engine's.
    pub client_cache: bool,
    /// Delete for good even when the volume keeps a trash (as `juicefs rmr --skip-trash`),
    /// so nothing a run creates lands in a volume's `.trash`. The command line always sets
    /// it; JuiceFS's own benchmark formats with TrashDays 0, which behaves the same. The
    /// Redis and TKV engines always delete for good (see their `fidelity_notes`).
    pub skip_trash: bool,
    /// `Config.SkipDirMtime`: a parent directory's mtime and ctime are not rewritten by a
    /// create, link, unlink or rename while they are younger than this (TKV: this times
    /// the transaction's tries). 0, as in the Go benchmark, rewrites them every time; a
    /// mount's default is 100 ms.
    pub skip_dir_mtime: std::time::Duration,
    /// `Config.SkipDirNlink`, which JuiceFS honours on TKV only: from this many retries of
    /// one transaction on, a directory's nlink change no longer forces its parent to be
    /// written. 0, as in the Go benchmark, never skips; a mount's default is 20.
    pub skip_dir_nlink: u32,
    /// Register the session as a mount does (`NewSession(true)`): a session id from the
    /// `nextSession` counter, a session record with this process's info, refreshed every
    /// 12 s by the background work (`doRefreshSession`) and removed at close
    /// (`doCleanStaleSession`); on Redis the Lua scripts are loaded, so `lookup` is one
    /// `EVALSHA` and `resolve` works. Off, as in the Go benchmark (`NewSession(false)`).
    pub register: bool,
}

/// Which JuiceFS client a run models.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ClientProfile {
    /// JuiceFS's Go metadata benchmark (`pkg/meta/benchmarks_test.go`): `NewClient`
    /// defaults (`meta.DefaultConf()`), no session registered, no client caches.
    #[default]
    Gobench,
    /// `juicefs mount` with its default flags (`cmd/flags.go`): SkipDirMtime 100 ms,
    /// SkipDirNlink 20, a registered session (`NewSession(true)`: a session record with
    /// heartbeats; Redis's Lua scripts), the client's chunk and symlink caches, and its
    /// background work
    /// (dir stats and counters flushed every second, deleted files freed right away)
    /// while the timed window runs.
    Mount,
}

impl ClientProfile {
    /// Every profile, in the order the help text lists them.
    pub const ALL: [ClientProfile; 2] = [ClientProfile::Gobench, ClientProfile::Mount];

    /// Its name on the command line and in results (`gobench`, `mount`).
    pub fn name(self) -> &'static str {
        match self {
            ClientProfile::Gobench => "gobench",
            ClientProfile::Mount => "mount",
        }
    }

    /// The profile named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// One line on which client it is, for results.
    pub fn describe(self) -> &'static str {
        match self {
            ClientProfile::Gobench => {
                "gobench: JuiceFS's Go benchmark client (pkg/meta/benchmarks_test.go: NewClient \
                 defaults, no session registered)"
            }
            ClientProfile::Mount => {
                "mount: a `juicefs mount` with default flags (cmd/flags.go: --skip-dir-mtime \
                 100ms, --skip-dir-nlink 20, a registered session, its caches and its \
                 background work)"
            }
        }
    }

    /// The session settings of this profile (nothing goes to the trash in either).
    pub fn session_options(self) -> SessionOptions {
        match self {
            ClientProfile::Gobench => SessionOptions {
                client_cache: false,
                skip_trash: true,
                skip_dir_mtime: std::time::Duration::ZERO,
                skip_dir_nlink: 0,
                register: false,
            },
            ClientProfile::Mount => SessionOptions {
                client_cache: true,
                skip_trash: true,
                skip_dir_mtime: std::time::Duration::from_millis(100),
                skip_dir_nlink: 20,
                register: true,
            },
        }
    }

    /// Whether the client's background work (dir-stat and counter flushes, freeing a
    /// deleted file's data) runs while the timed window runs, as in a mounted client,
    /// rather than once after it.
    pub fn background_in_window(self) -> bool {
        self == ClientProfile::Mount
    }
}

/// What `Mknod` makes and where (`baseMeta.Mknod`'s `parent`, `name`, `_type`, `mode`,
/// `cumask`, `rdev` and `path`): the same for every engine family.
#[derive(Debug, Clone, Copy)]
pub struct NewNode<'a> {
    /// The directory it is made in.
    pub parent: Ino,
    /// Its name there.
    pub name: &'a [u8],
    /// The node's type.
    pub typ: FileType,
    /// Permission bits asked for.
    pub mode: u16,
    /// The caller's umask.
    pub umask: u16,
    /// Device number (devices only).
    pub rdev: u32,
    /// A symlink's target (empty otherwise).
    pub target: &'a [u8],
}

impl<'a> NewNode<'a> {
    /// `name` in `parent`, of `typ` with `mode` and `umask`, no device and no target.
    pub fn new(parent: Ino, name: &'a [u8], typ: FileType, mode: u16, umask: u16) -> Self {
        Self {
            parent,
            name,
            typ,
            mode,
            umask,
            rdev: 0,
            target: b"",
        }
    }
}

/// What `Rename` moves: `name_src` in `parent_src` to `name_dst` in `parent_dst`, with
/// `flags` (`RENAME_NOREPLACE`, `RENAME_EXCHANGE`, …).
#[derive(Debug, Clone, Copy)]
pub struct Rename<'a> {
    /// The source directory.
    pub parent_src: Ino,
    /// The source name.
    pub name_src: &'a [u8],
    /// The destination directory.
    pub parent_dst: Ino,
    /// The destination name.
    pub name_dst: &'a [u8],
    /// The rename flags (0 = replace allowed).
    pub flags: u32,
}

/// What `doRename` did (its `inode`, `attr`, `tinode` and `tattr`), for `baseMeta.Rename`'s
/// bookkeeping after it.
#[derive(Debug, Clone)]
pub struct Renamed {
    /// The moved inode.
    pub ino: Ino,
    /// Its attribute after the move (what `rename` answers).
    pub attr: Attr,
    /// Whether anything moved: `false` when the source is the destination or both names
    /// are one inode, where JuiceFS leaves the attribute it reports zero.
    pub moved: bool,
    /// The entry the destination held (replaced, or exchanged with): its inode and its
    /// attribute after the change.
    pub target: Option<(Ino, Attr)>,
}

/// What a session's mknod transaction ([`crate::Storage::do_mknod`]) found or made; with
/// the inode it allocated, what [`crate::base::BaseMeta::make_node`] answers.
#[derive(Debug)]
pub enum Made {
    /// The new node's attribute.
    New(Attr),
    /// The name exists: its inode and attribute (read only for files and directories).
    Existing(Ino, Option<Attr>),
}

/// The engine families metabench speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// Redis (or a compatible server).
    Redis,
    /// MySQL or MariaDB.
    Mysql,
    /// PostgreSQL.
    Postgres,
    /// SQLite.
    Sqlite,
    /// etcd (TKV).
    Etcd,
    /// TiKV (TKV), or a TiKV-compatible stand-in.
    Tikv,
    /// metabench's in-process TKV store.
    Memkv,
    /// FoundationDB (TKV).
    Fdb,
}

impl EngineKind {
    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Redis => "redis",
            Self::Mysql => "mysql",
            Self::Postgres => "postgres",
            Self::Sqlite => "sqlite",
            Self::Etcd => "etcd",
            Self::Tikv => "tikv",
            Self::Memkv => "memkv",
            Self::Fdb => "fdb",
        }
    }
}

/// What a database holds, judged before anything is written.
#[derive(Debug, Clone, PartialEq)]
pub enum VolumeState {
    /// Nothing at all: safe to format.
    Empty,
    /// A JuiceFS volume.
    Volume(Box<Format>),
    /// Data that is not a JuiceFS volume; never touched.
    Foreign(String),
}

/// An engine's own limit on client connections (Redis `maxclients`, PostgreSQL's and
/// MariaDB's `max_connections`) and what of it is taken, read before a level opens its
/// sessions: each of metabench's clients holds one connection of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionLimit {
    /// The engine, as said in the line (`redis`, `postgres`, `mysql`).
    pub engine: &'static str,
    /// The setting's name (`maxclients`, `max_connections`).
    pub setting: &'static str,
    /// Its value.
    pub limit: u64,
    /// Slots of it that this user cannot take (PostgreSQL's reserved connections for a
    /// role that is not a superuser).
    pub reserved: u64,
    /// Connections open now (metabench's own administration connection among them).
    pub in_use: u64,
    /// How to raise it, with `{n}` for the value needed (`CONFIG SET maxclients {n}`).
    pub raise: &'static str,
}

impl ConnectionLimit {
    /// How many more connections the engine takes now.
    pub fn available(&self) -> u64 {
        self.limit.saturating_sub(self.reserved + self.in_use)
    }

    /// Whether `wanted` more connections fit.
    pub fn fits(&self, wanted: u64) -> bool {
        wanted <= self.available()
    }

    /// The one line that refuses `clients` clients (one connection each): the setting, its
    /// value and what is taken, the value needed and how to set it, or the clients that fit.
    pub fn refusal(&self, clients: u64) -> String {
        let needed = self.reserved + self.in_use + clients;
        let reserved = if self.reserved > 0 {
            format!(", {} reserved for superusers", self.reserved)
        } else {
            String::new()
        };
        format!(
            "{clients} clients need {clients} connections, but {engine} {setting} is {limit} \
             with {in_use} in use{reserved}: raise {setting} to at least {needed} ({how}) \
             or run at most {available} clients",
            engine = self.engine,
            setting = self.setting,
            limit = self.limit,
            in_use = self.in_use,
            how = self.raise.replace("{n}", &needed.to_string()),
            available = self.available(),
        )
    }
}

/// Facts about the server, for the results' context.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ServerInfo {
    /// Server software and version, e.g. `redis 7.0.15`.
    pub version: String,
    /// The settings a reader needs before comparing two runs, read from the server
    /// (durability such as `appendfsync` or `synchronous_commit`, memory such as
    /// `maxmemory` or `shared_buffers`, `max_connections`, members). A setting the server
    /// would not tell is `unknown (<why>)`, never left out nor guessed.
    pub settings: BTreeMap<String, String>,
    /// Set when the server only stands in for the engine (unistore for TiKV), or could
    /// not be told from a stand-in. Every output labels such runs.
    pub standin: Option<StandIn>,
}

/// What the engine holds, in bytes, by its own count ([`crate::Engine::footprint`]): what
/// a volume of so many files costs on it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Footprint {
    /// Bytes the figure counts.
    pub bytes: u64,
    /// The resident memory of the server process, where the engine says (Redis
    /// `used_memory_rss`).
    pub rss_bytes: Option<u64>,
    /// What the figure is and what it covers, e.g. `Redis used_memory (the whole server,
    /// every database)`.
    pub what: String,
}

/// A server that is, or may be, only a stand-in for the engine it answers as.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum StandIn {
    /// A stand-in: what results against it prove.
    Known(String),
    /// Not told apart from a stand-in: why, and what it may be.
    Unverified(String),
}

impl StandIn {
    /// What a run's engine kind carries after the engine's name: `-standin`,
    /// `-unverified`.
    pub fn kind_suffix(&self) -> &'static str {
        match self {
            Self::Known(_) => "-standin",
            Self::Unverified(_) => "-unverified",
        }
    }

    /// The results' entry for it (a setting's name, and what it says).
    pub fn entry(&self) -> (&'static str, &str) {
        match self {
            Self::Known(what) => ("stand-in", what),
            Self::Unverified(why) => ("unverified", why),
        }
    }
}

/// The `fallocate(2)` mode bits JuiceFS knows (`fallocKeepSize` … `fallocInsertRange`).
pub mod falloc {
    /// `FALLOC_FL_KEEP_SIZE`: the file's length does not grow.
    pub const KEEP_SIZE: u8 = 0x01;
    /// `FALLOC_FL_PUNCH_HOLE` (with `KEEP_SIZE` only): the range reads as zeros.
    pub const PUNCH_HOLE: u8 = 0x02;
    /// `FALLOC_FL_COLLAPSE_RANGE`: ENOTSUP in JuiceFS.
    pub const COLLAPSE_RANGE: u8 = 0x08;
    /// `FALLOC_FL_ZERO_RANGE`: the range reads as zeros.
    pub const ZERO_RANGE: u8 = 0x10;
    /// `FALLOC_FL_INSERT_RANGE`: ENOTSUP in JuiceFS.
    pub const INSERT_RANGE: u8 = 0x20;
}

/// What `Fallocate` is asked: the [`falloc`] mode bits and the byte range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FallocRange {
    /// The [`falloc`] mode bits.
    pub mode: u8,
    /// Where the range starts.
    pub off: u64,
    /// How long it is.
    pub size: u64,
}

impl FallocRange {
    /// `size` bytes from `off`, with the [`falloc`] `mode` bits.
    pub fn new(mode: u8, off: u64, size: u64) -> Self {
        Self { mode, off, size }
    }
}

/// What a resize transaction did: the file's attribute after it, and the change of its
/// length and of its space (`dirStat`), which `updateParentStat` takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resized {
    /// The attribute after the resize.
    pub attr: Attr,
    /// New length minus old.
    pub length: i64,
    /// `align4K(new) - align4K(old)`.
    pub space: i64,
}

impl Resized {
    /// `attr` set to `length` bytes, stamped `now` (mtime and ctime), with its deltas
    /// from the length it had.
    pub fn to_length(mut attr: Attr, length: u64, now: Timestamp) -> Self {
        let old = attr.length;
        attr.length = length;
        attr.mtime = now;
        attr.ctime = now;
        Self {
            attr,
            length: length as i64 - old as i64,
            space: align4k(length) - align4k(old),
        }
    }

    /// `attr` left as it is (no write): a truncate to the length it has.
    pub fn unchanged(attr: Attr) -> Self {
        Self {
            attr,
            length: 0,
            space: 0,
        }
    }
}

#[cfg(test)]
mod connection_limit_tests {
    use super::ConnectionLimit;

    #[test]
    fn the_refusal_names_the_setting_and_the_value_needed() {
        let l = ConnectionLimit {
            engine: "redis",
            setting: "maxclients",
            limit: 50,
            reserved: 0,
            in_use: 2,
            raise: "CONFIG SET maxclients {n}",
        };
        assert_eq!(l.available(), 48);
        assert!(l.fits(48) && !l.fits(49));
        assert_eq!(
            l.refusal(100),
            "100 clients need 100 connections, but redis maxclients is 50 with 2 in use: \
             raise maxclients to at least 102 (CONFIG SET maxclients 102) or run at most 48 clients"
        );
        let pg = ConnectionLimit {
            engine: "postgres",
            setting: "max_connections",
            limit: 100,
            reserved: 3,
            in_use: 99,
            raise: "max_connections = {n} in postgresql.conf, then a restart",
        };
        assert_eq!(pg.available(), 0);
        assert!(pg
            .refusal(10)
            .contains(", 3 reserved for superusers: raise max_connections to at least 112"));
    }
}
