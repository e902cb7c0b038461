//! The operations of JuiceFS's metadata benchmark (`pkg/meta/benchmarks_test.go`), each
//! with the setup the Go benchmark does untimed and the call it times.

use crate::population::{Drawn, Picker, Pool, Population};
use metabench_engine::{Ctx, FallocRange, Meta, MetaError, Result, SetAttr, XattrFlags};
use metabench_schema::{FileType, Ino, Slice, Timestamp, CHUNK_SIZE};
use std::fmt;
use std::str::FromStr;

/// One benchmark operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// `Mkdir(parent, "d{i}")`.
    Mkdir,
    /// `Rename` of a directory `d{i}` → `d{i+1}`.
    Mvdir,
    /// `Rmdir(parent, "dir")` after an untimed mkdir.
    Rmdir,
    /// `Resolve(parent, "d/d/d/d/d")`; JuiceFS's benchmark gets ENOTSUP.
    Resolve,
    /// `Readdir(plus)` of a directory with 10 files.
    Readdir10,
    /// `Readdir(plus)` of a directory with 1000 files.
    Readdir1k,
    /// `Mknod(parent, "f{i}", file)`.
    Mknod,
    /// `Create(parent, "f{i}")`.
    Create,
    /// `Rename` of a file `f{i}` → `f{i+1}`.
    Rename,
    /// `Unlink(parent, "file")` after an untimed create.
    Unlink,
    /// `Lookup(parent, "file")`.
    Lookup,
    /// `GetAttr(file)`.
    Getattr,
    /// `SetAttr(file, mode ^= 1)`.
    Setattr,
    /// `Access(file, read)` as uid 1.
    Access,
    /// `SetXattr(file, "key", "value{i%10}")`.
    Setxattr,
    /// `GetXattr(file, "key")`.
    Getxattr,
    /// `RemoveXattr(file, "key")` after an untimed set.
    Removexattr,
    /// `ListXattr` of a file with 1 xattr.
    Listxattr1,
    /// `ListXattr` of a file with 10 xattrs.
    Listxattr10,
    /// `Link(file, parent, "l{i}")`.
    Link,
    /// `Symlink(parent, "s{i}", "/benchSymlink/source")`.
    Symlink,
    /// `ReadLink(symlink)` (commented out in the Go file; kept here).
    Readlink,
    /// `NewSlice()`.
    Newchunk,
    /// `NewSlice()` + `Write` of a 1 KiB slice at the next offset.
    Write,
    /// `Read(file, chunk 0)` of a chunk with 1 slice.
    Read1,
    /// `Read(file, chunk 0)` of a chunk with 10 slices.
    Read10,
    /// NNBench's create + write + close: `Create`, `NewSlice`, `Write` of 1 KiB.
    CreateWrite,
    /// NNBench's open: `Lookup` then `GetAttr`.
    Open,
    /// `Truncate(file)` to 1 MiB and back to 4 KiB in turn (a truncate by path: flags 0).
    Truncate,
    /// `Fallocate(file, mode 0, end, 4 KiB)`: grows the file by 4 KiB (`fallocate -l`).
    Fallocate,
    /// A mount's listing of a directory (`ls`): `NewDirHandler`, then `DirHandler.List`
    /// page by page to the end, with attributes (readdirplus); of a directory of 1000
    /// files, or of directories of a `--tree`.
    Listdir,
}

/// Writes into one file before the runner moves to a fresh one, so chunks stay below
/// JuiceFS's compaction thresholds (MySQL's blob holds ~2730 slices).
const WRITES_PER_FILE: u64 = 1000;

/// The lengths `truncate` sets in turn: both inside chunk 0, so each call appends one hole.
const TRUNCATE_LONG: u64 = 1 << 20;
const TRUNCATE_SHORT: u64 = 4 << 10;

/// The entries `listdir` lists in its own directory (no `--tree`): its 1000 files, `.`
/// and `..`.
pub const LISTDIR_OWN_ENTRIES: u64 = 1002;

/// What each `fallocate` call adds to the file.
const FALLOCATE_STEP: u64 = 4 << 10;

impl Op {
    /// The operations of NNBench as JuiceFS's comparison ran them, in order.
    pub const NNBENCH: [Op; 4] = [Op::CreateWrite, Op::Open, Op::Rename, Op::Unlink];

    /// Every operation of the Go benchmark, in its order.
    pub const GOLANG: [Op; 26] = [
        Op::Mkdir,
        Op::Mvdir,
        Op::Rmdir,
        Op::Resolve,
        Op::Readdir10,
        Op::Readdir1k,
        Op::Mknod,
        Op::Create,
        Op::Rename,
        Op::Unlink,
        Op::Lookup,
        Op::Getattr,
        Op::Setattr,
        Op::Access,
        Op::Setxattr,
        Op::Getxattr,
        Op::Removexattr,
        Op::Listxattr1,
        Op::Listxattr10,
        Op::Link,
        Op::Symlink,
        Op::Readlink,
        Op::Newchunk,
        Op::Write,
        Op::Read1,
        Op::Read10,
    ];

    /// The operations JuiceFS's Go benchmark does not time: NNBench's two, the resizes a
    /// mounted client sends (`ftruncate`, `fallocate`), and a mount's paged listing.
    pub const EXTRA: [Op; 5] = [
        Op::CreateWrite,
        Op::Open,
        Op::Truncate,
        Op::Fallocate,
        Op::Listdir,
    ];

    /// Every operation metabench knows: the Go benchmark's, then [`Op::EXTRA`].
    pub const ALL: [Op; 31] = {
        let mut all = [Op::Mkdir; 31];
        let mut i = 0;
        while i < 26 {
            all[i] = Op::GOLANG[i];
            i += 1;
        }
        while i < 31 {
            all[i] = Op::EXTRA[i - 26];
            i += 1;
        }
        all
    };

    /// The name JuiceFS's benchmark prints.
    pub fn name(self) -> &'static str {
        match self {
            Op::Mkdir => "mkdir",
            Op::Mvdir => "mvdir",
            Op::Rmdir => "rmdir",
            Op::Resolve => "resolve",
            Op::Readdir10 => "readdir_10",
            Op::Readdir1k => "readdir_1k",
            Op::Mknod => "mknod",
            Op::Create => "create",
            Op::Rename => "rename",
            Op::Unlink => "unlink",
            Op::Lookup => "lookup",
            Op::Getattr => "getattr",
            Op::Setattr => "setattr",
            Op::Access => "access",
            Op::Setxattr => "setxattr",
            Op::Getxattr => "getxattr",
            Op::Removexattr => "removexattr",
            Op::Listxattr1 => "listxattr_1",
            Op::Listxattr10 => "listxattr_10",
            Op::Link => "link",
            Op::Symlink => "symlink",
            Op::Readlink => "readlink",
            Op::Newchunk => "newchunk",
            Op::Write => "write",
            Op::Read1 => "read_1",
            Op::Read10 => "read_10",
            Op::CreateWrite => "create_write",
            Op::Open => "open",
            Op::Truncate => "truncate",
            Op::Fallocate => "fallocate",
            Op::Listdir => "listdir",
        }
    }

    /// The members of a `--tree` this operation draws its targets from; `None` for an
    /// operation that keeps working in its own directory (writes, and reads of a set-up
    /// they need, such as `read_10`).
    pub fn tree_pool(self) -> Option<Pool> {
        match self {
            Op::Lookup | Op::Open => Some(Pool::Names),
            Op::Getattr | Op::Access => Some(Pool::Inodes),
            Op::Read1 | Op::Getxattr | Op::Listxattr1 => Some(Pool::Files),
            Op::Readlink => Some(Pool::Symlinks),
            Op::Listdir => Some(Pool::Dirs),
            _ => None,
        }
    }

    /// The entries a `listdir` call lists, on average: over the directories drawn from
    /// `tree`, or of its own directory of 1000 files; `None` for another operation.
    pub fn entries_per_call(self, tree: Option<&Population>) -> Option<f64> {
        if self != Op::Listdir {
            return None;
        }
        match tree {
            Some(t) => t.reach(self.name()).and_then(|r| r.entries_per_draw()),
            None => Some(LISTDIR_OWN_ENTRIES as f64),
        }
    }

    /// How metabench runs the call where a JuiceFS client would answer from memory.
    pub fn note(self, client_cache: bool) -> Option<&'static str> {
        match (self, client_cache) {
            (Op::Read1 | Op::Read10, false) => Some(
                "every call reads the engine; the Go client serves repeats from its chunk cache (--client-cache)",
            ),
            (Op::Read1 | Op::Read10, true) => {
                Some("Go client chunk cache: only the first call reaches the engine")
            }
            (Op::Readlink, false) => Some(
                "every call reads the engine; the Go client serves repeats from its symlink cache (--client-cache)",
            ),
            (Op::Readlink, true) => {
                Some("Go client symlink cache: only the first call reaches the engine")
            }
            (Op::Newchunk, _) => {
                Some("slice ids come in batches of 4096 as in JuiceFS: one counter round trip per 4096 calls")
            }
            (Op::Write, _) => Some("includes NewSlice; a fresh file every 1000 writes keeps chunks below compaction"),
            (Op::CreateWrite, _) => Some("NNBench create+write+close: Create, NewSlice and one 1 KiB Write (close costs no metadata call)"),
            (Op::Open, _) => Some("NNBench open: Lookup then GetAttr"),
            (Op::Truncate, _) => Some("1 MiB and 4 KiB in turn, each appending a hole; a fresh file every 1000 calls keeps chunks below compaction"),
            (Op::Fallocate, _) => Some("mode 0: the file grows by 4 KiB per call (no hole is written)"),
            (Op::Listdir, _) => Some("a mount's listing with attributes: NewDirHandler, then DirHandler.List page by page to the end (pages of 4096 entries on TKV and SQLite, 40960 on MySQL and PostgreSQL; Redis reads the whole directory at once)"),
            (Op::Mkdir | Op::Mknod | Op::Create | Op::Symlink, _) => {
                Some("inode ids come in batches of 1024, prefetched in the background as in JuiceFS")
            }
            _ => None,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Op {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let s = s.trim().to_ascii_lowercase();
        Op::ALL
            .iter()
            .copied()
            .find(|o| o.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Op::ALL.iter().map(|o| o.name()).collect();
                format!("unknown operation '{s}' (known: {})", names.join(", "))
            })
    }
}

/// The working state of one operation on one client: its directory, the file it works
/// on, and the iteration counter.
#[derive(Debug, Clone)]
pub struct OpState {
    op: Op,
    /// The operation's own directory.
    pub dir: Ino,
    /// The file (or symlink) the operation works on, if any.
    pub target: Ino,
    /// Iterations done.
    pub i: u64,
    write_offset: u32,
    writes_in_file: u64,
    files: u64,
    mode: u16,
    xattr_value: [u8; 6],
    tag: String,
    /// Who the timed calls run as: root, and the unprivileged user of `access`; made once,
    /// so a timed call allocates nothing of the runner's.
    ctx: Ctx,
    user: Ctx,
    /// The fixed name the timed call uses (`{tag}file`, `{tag}dir`), made once.
    fixed_name: Vec<u8>,
    /// The numbered names of the next timed call (`{tag}f{i}`, `{tag}f{i+1}`), written
    /// by the untimed [`OpState::prepare`] into buffers that are reused.
    next: [Vec<u8>; 2],
    /// Over a populated volume (`--tree`): where the read's next target comes from,
    /// drawn by the untimed [`OpState::prepare`] into `dir` and `fixed_name`, or `target`.
    picker: Option<Picker>,
}

/// The xattr name `getxattr` asks for over a tree: the one `metabench fill` sets on some
/// files. A file without it answers ENOATTR after the same engine round trip.
const TREE_XATTR: &[u8] = b"user.metabench";

/// `NewSlice` as a JuiceFS client makes it: from the client's batch at once while it
/// lasts ([`Meta::take_slice_id`]: no boxed future), else the call that fetches the next.
async fn new_slice(meta: &mut dyn Meta) -> Result<u64> {
    match meta.take_slice_id() {
        Some(id) => Ok(id),
        None => meta.new_slice().await,
    }
}

/// Writes `{tag}{prefix}{i}` into `buf`, reusing its allocation.
fn write_name(buf: &mut Vec<u8>, tag: &str, prefix: &str, i: u64) {
    use std::io::Write as _;
    buf.clear();
    let _ = write!(buf, "{tag}{prefix}{i}");
}

impl OpState {
    /// `{tag}{prefix}{i}`: a numbered name of this client (untimed setup only).
    fn name(&self, prefix: &str, i: u64) -> Vec<u8> {
        format!("{}{prefix}{i}", self.tag).into_bytes()
    }

    /// The numbered names the timed call uses, for iteration `i`: (prefix, its first
    /// number); the second name, when used, is the next number.
    fn numbered(&self) -> Option<(&'static str, u64)> {
        let i = self.i;
        match self.op {
            Op::Mkdir | Op::Mvdir => Some(("d", i)),
            Op::Mknod | Op::Create | Op::Rename | Op::CreateWrite => Some(("f", i)),
            Op::Link => Some(("l", i)),
            Op::Symlink => Some(("s", i)),
            _ => None,
        }
    }

    /// `{tag}{name}`: a fixed name of this client.
    fn fixed(&self, name: &str) -> Vec<u8> {
        format!("{}{name}", self.tag).into_bytes()
    }

    /// Untimed setup (the Go benchmark's preparation) inside directory `dir`, which the
    /// caller created. Every name the state uses starts with `tag`, so clients sharing a
    /// directory never collide (the Go benchmark's names when `tag` is empty).
    pub async fn setup(op: Op, meta: &mut dyn Meta, dir: Ino, tag: &str) -> Result<Self> {
        let ctx = Ctx::root();
        let mut s = OpState {
            op,
            dir,
            target: 0,
            i: 0,
            write_offset: 0,
            writes_in_file: 0,
            files: 0,
            mode: 0o644,
            xattr_value: *b"value0",
            tag: tag.to_owned(),
            ctx: Ctx::root(),
            user: Ctx {
                uid: 1,
                gids: vec![1],
                pid: 100,
            },
            fixed_name: Vec::new(),
            next: [Vec::with_capacity(32), Vec::with_capacity(32)],
            picker: None,
        };
        s.fixed_name = s.fixed(match op {
            Op::Rmdir => "dir",
            _ => "file",
        });
        match op {
            Op::Mvdir => {
                meta.mkdir(&ctx, dir, &s.fixed("d0"), 0o755, 0).await?;
            }
            Op::Resolve => {
                let mut child = dir;
                for _ in 0..5 {
                    child = meta.mkdir(&ctx, child, b"d", 0o755, 0).await?.0;
                }
            }
            Op::Readdir10 | Op::Readdir1k | Op::Listdir => {
                let n = if op == Op::Readdir10 { 10 } else { 1000 };
                for j in 0..n {
                    meta.create(&ctx, dir, &s.name("f", j), 0o644, 0o022)
                        .await?;
                }
                s.target = dir;
            }
            Op::Rename => {
                meta.create(&ctx, dir, &s.fixed("f0"), 0o644, 0o022).await?;
            }
            Op::Lookup | Op::Getattr | Op::Setattr | Op::Access | Op::Open => {
                s.target = meta
                    .create(&ctx, dir, &s.fixed("file"), 0o644, 0o022)
                    .await?
                    .0;
            }
            Op::Setxattr | Op::Getxattr | Op::Removexattr | Op::Listxattr1 | Op::Listxattr10 => {
                s.target = meta
                    .create(&ctx, dir, &s.fixed("fxattr"), 0o644, 0o022)
                    .await?
                    .0;
                let n = match op {
                    Op::Getxattr => 1,
                    Op::Listxattr1 => 1,
                    Op::Listxattr10 => 10,
                    _ => 0,
                };
                for j in 0..n {
                    let key = if op == Op::Getxattr {
                        b"key".to_vec()
                    } else {
                        format!("key{j}").into_bytes()
                    };
                    meta.setxattr(s.target, &key, b"value", XattrFlags::Any)
                        .await?;
                }
            }
            Op::Link | Op::Symlink => {
                s.target = meta
                    .create(&ctx, dir, &s.fixed("source"), 0o644, 0o022)
                    .await?
                    .0;
            }
            Op::Readlink => {
                meta.create(&ctx, dir, &s.fixed("source"), 0o644, 0o022)
                    .await?;
                s.target = meta
                    .symlink(&ctx, dir, &s.fixed("slink"), b"/benchReadlink/source")
                    .await?
                    .0;
            }
            Op::Write | Op::Truncate | Op::Fallocate => {
                s.target = meta
                    .create(&ctx, dir, &s.fixed("file"), 0o644, 0o022)
                    .await?
                    .0;
            }
            Op::Read1 | Op::Read10 => {
                s.target = meta
                    .create(&ctx, dir, &s.fixed("file"), 0o644, 0o022)
                    .await?
                    .0;
                let n = if op == Op::Read1 { 1 } else { 10 };
                for j in 0..n {
                    let id = meta.new_slice().await?;
                    let slice = Slice::whole(j * 1024, id, 1024);
                    meta.write(s.target, 0, slice, Timestamp::now()).await?;
                }
            }
            Op::Mkdir
            | Op::Rmdir
            | Op::Mknod
            | Op::Create
            | Op::Unlink
            | Op::Newchunk
            | Op::CreateWrite => {}
        }
        Ok(s)
    }

    /// Makes the reads of this state draw their targets from `tree` (`--tree`), with
    /// random numbers from `seed`; an operation that does not read from a tree is left
    /// as it is. An error when the tree has nothing this operation reads.
    pub fn draw_from(&mut self, tree: &std::sync::Arc<Population>, seed: u64) -> Result<()> {
        self.picker = match self.op.tree_pool() {
            Some(pool) => Some(tree.picker(self.op.name(), pool, seed)?),
            None => None,
        };
        Ok(())
    }

    /// Untimed preparation before each timed call (the Go benchmark's `StopTimer` blocks),
    /// including the names the call will use.
    pub async fn prepare(&mut self, meta: &mut dyn Meta) -> Result<()> {
        if let Some(picker) = &mut self.picker {
            match picker.draw() {
                Drawn::Name { parent, name } => {
                    self.dir = parent;
                    self.fixed_name.clear();
                    self.fixed_name.extend_from_slice(name);
                }
                Drawn::Inode(ino) => self.target = ino,
            }
            return Ok(());
        }
        if let Some((prefix, i)) = self.numbered() {
            let [first, second] = &mut self.next;
            write_name(first, &self.tag, prefix, i);
            write_name(second, &self.tag, prefix, i + 1);
        }
        let ctx = &self.ctx;
        match self.op {
            Op::Rmdir => {
                meta.mkdir(ctx, self.dir, &self.fixed_name, 0o755, 0)
                    .await?;
            }
            Op::Unlink => {
                meta.create(ctx, self.dir, &self.fixed_name, 0o644, 0o022)
                    .await?;
            }
            Op::Removexattr => {
                meta.setxattr(self.target, b"key", b"value", XattrFlags::Any)
                    .await?;
            }
            Op::Write | Op::Truncate if self.writes_in_file >= WRITES_PER_FILE => {
                self.files += 1;
                let name = self.name("file", self.files);
                self.target = meta
                    .create(&self.ctx, self.dir, &name, 0o644, 0o022)
                    .await?
                    .0;
                self.writes_in_file = 0;
                self.write_offset = 0;
            }
            _ => {}
        }
        Ok(())
    }

    /// The calls a JuiceFS client answers from its own memory when it can, answered as
    /// plain function calls, as Go's are: `NewSlice` while the client's id batch lasts
    /// ([`Meta::take_slice_id`]) and `Read` of a cached chunk ([`Meta::read_cached`]).
    /// Whether it answered (such an answer cannot fail); if not, the call needs
    /// [`OpState::call`], which then makes it in full.
    #[inline]
    pub fn answer_in_client(&mut self, meta: &mut dyn Meta) -> bool {
        let answered = match self.op {
            Op::Newchunk => meta.take_slice_id().is_some(),
            Op::Read1 | Op::Read10 => meta.read_cached(self.target, 0).is_some(),
            _ => false,
        };
        self.i += u64::from(answered);
        answered
    }

    /// The timed call, exactly as the Go benchmark makes it, once the client could not
    /// answer it from memory ([`OpState::answer_in_client`]). It allocates nothing of the
    /// runner's: names and contexts were made by [`OpState::setup`] and
    /// [`OpState::prepare`].
    pub async fn call(&mut self, meta: &mut dyn Meta) -> Result<()> {
        let i = self.i;
        self.i += 1;
        match self.op {
            Op::Setattr => self.mode ^= 1,
            Op::Setxattr => self.xattr_value[5] = b'0' + (i % 10) as u8,
            _ => {}
        }
        let s = &*self;
        let (ctx, dir, target) = (&s.ctx, s.dir, s.target);
        let [first, second] = &s.next;
        let outcome = match s.op {
            Op::Mkdir => meta.mkdir(ctx, dir, first, 0o755, 0).await.map(drop),
            Op::Mvdir => meta.rename(ctx, dir, first, dir, second, 0).await.map(drop),
            Op::Rmdir => meta.rmdir(ctx, dir, &s.fixed_name).await,
            Op::Resolve => meta.resolve(ctx, dir, b"d/d/d/d/d").await.map(drop),
            Op::Readdir10 | Op::Readdir1k => meta.readdir(ctx, dir, true).await.map(drop),
            Op::Listdir => meta.list_dir(ctx, target, true).await.map(drop),
            Op::Mknod => meta
                .mknod(ctx, dir, first, FileType::File, 0o644, 0o022, 0)
                .await
                .map(drop),
            Op::Create => meta.create(ctx, dir, first, 0o644, 0o022).await.map(drop),
            Op::Rename => meta.rename(ctx, dir, first, dir, second, 0).await.map(drop),
            Op::Unlink => meta.unlink(ctx, dir, &s.fixed_name).await,
            Op::Lookup => meta.lookup(ctx, dir, &s.fixed_name).await.map(drop),
            Op::Getattr => meta.getattr(target).await.map(drop),
            Op::Setattr => {
                let set = SetAttr {
                    mode: Some(s.mode),
                    ..Default::default()
                };
                meta.setattr(ctx, target, &set).await.map(drop)
            }
            Op::Access => match meta.access(&s.user, target, 4).await {
                Ok(()) | Err(MetaError::Access) => Ok(()),
                Err(e) => Err(e),
            },
            Op::Setxattr => {
                meta.setxattr(target, b"key", &s.xattr_value, XattrFlags::Any)
                    .await
            }
            Op::Getxattr if s.picker.is_some() => match meta.getxattr(target, TREE_XATTR).await {
                Ok(_) | Err(MetaError::NoAttr) => Ok(()),
                Err(e) => Err(e),
            },
            Op::Getxattr => meta.getxattr(target, b"key").await.map(drop),
            Op::Removexattr => meta.removexattr(target, b"key").await,
            Op::Listxattr1 | Op::Listxattr10 => meta.listxattr(target).await.map(drop),
            Op::Link => meta.link(ctx, target, dir, first).await.map(drop),
            Op::Symlink => meta
                .symlink(ctx, dir, first, b"/benchSymlink/source")
                .await
                .map(drop),
            Op::Readlink => meta.readlink(target).await.map(drop),
            Op::Newchunk => meta.new_slice().await.map(drop),
            Op::Write => {
                let id = new_slice(meta).await?;
                let slice = Slice::whole(s.write_offset, id, 1024);
                meta.write(target, 0, slice, Timestamp::now()).await
            }
            Op::CreateWrite => {
                let (ino, _) = meta.create(ctx, dir, first, 0o644, 0o022).await?;
                let id = new_slice(meta).await?;
                let slice = Slice::whole(0, id, 1024);
                meta.write(ino, 0, slice, Timestamp::now()).await
            }
            Op::Open => {
                let (ino, _) = meta.lookup(ctx, dir, &s.fixed_name).await?;
                meta.getattr(ino).await.map(drop)
            }
            Op::Read1 | Op::Read10 => meta.read(target, 0).await.map(drop),
            Op::Truncate => {
                let length = if i.is_multiple_of(2) {
                    TRUNCATE_LONG
                } else {
                    TRUNCATE_SHORT
                };
                meta.truncate(ctx, target, length).await.map(drop)
            }
            Op::Fallocate => {
                let range = FallocRange {
                    mode: 0,
                    off: i * FALLOCATE_STEP,
                    size: FALLOCATE_STEP,
                };
                meta.fallocate(ctx, target, range).await.map(drop)
            }
        };
        if self.op == Op::Truncate && outcome.is_ok() {
            self.writes_in_file += 1;
        }
        if self.op == Op::Write && outcome.is_ok() {
            self.writes_in_file += 1;
            self.write_offset += 1024;
            if (self.write_offset + 1024) as u64 > CHUNK_SIZE {
                self.write_offset = 0;
            }
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reads_draw_from_a_tree() {
        assert_eq!(Op::Lookup.tree_pool(), Some(Pool::Names));
        assert_eq!(Op::Getattr.tree_pool(), Some(Pool::Inodes));
        assert_eq!(Op::Readlink.tree_pool(), Some(Pool::Symlinks));
        assert_eq!(Op::Read1.tree_pool(), Some(Pool::Files));
        assert_eq!(Op::Listdir.tree_pool(), Some(Pool::Dirs));
        assert_eq!(Op::Create.tree_pool(), None);
        assert_eq!(Op::Read10.tree_pool(), None);
        assert_eq!(Op::Listdir.entries_per_call(None), Some(1002.0));
        assert_eq!(Op::Getattr.entries_per_call(None), None);
    }

    #[test]
    fn names_parse_back() {
        for op in Op::ALL {
            assert_eq!(op.name().parse::<Op>().unwrap(), op);
        }
        assert_eq!(" MKDIR ".parse::<Op>().unwrap(), Op::Mkdir);
        let err = "mkdirs".parse::<Op>().unwrap_err();
        assert!(err.contains("unknown operation 'mkdirs'") && err.contains("readdir_1k"));
    }
}
