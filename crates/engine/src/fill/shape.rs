//! The tree `metabench fill` writes, computed rather than held: every directory, entry,
//! inode number and slice id follows from the [`Shape`] and the first ids reserved, so a
//! tree of any size is produced in bounded batches ([`Layout::batches`]).
//!
//! The tree: a base directory (made by an ordinary `mkdir`) whose regular directories
//! form a complete `fanout`-ary tree in breadth-first order (directory 0 is the base);
//! each holds `files_per_dir` entries but the last, which holds what is left. Beside the
//! tree, `big_dirs` directories under the base hold `big_dir_files` entries each. Among
//! the entries, every `1/symlink_share`-th is a symlink, every `1/hardlink_share`-th a
//! second name (hard link) of the file before it, and every `1/xattr_share`-th file has
//! an extended attribute.

use metabench_schema::{align4k, Attr, DirStat, FileType, Ino, Slice, Timestamp, CHUNK_SIZE};

/// Entries an engine takes in one batch (one transaction) unless it asks for fewer
/// ([`super::BulkLoad::batch_entries`]).
pub const BATCH_ENTRIES: usize = 1000;

/// What tree to write, as `metabench fill` is asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// Entries that are not directories (files, symlinks, hard links), in all directories.
    pub files: u64,
    /// Entries per regular directory.
    pub files_per_dir: u64,
    /// Sub-directories per regular directory.
    pub fanout: u64,
    /// Very large directories under the base.
    pub big_dirs: u64,
    /// Entries of each very large directory (counted in `files`).
    pub big_dir_files: u64,
    /// Share of entries that are symlinks.
    pub symlink_share: f64,
    /// Share of entries that are hard links to the file before them.
    pub hardlink_share: f64,
    /// Share of files with an extended attribute.
    pub xattr_share: f64,
    /// Length of every regular file, with its chunks and slices (0: empty files).
    pub file_size: u64,
}

impl Default for Shape {
    fn default() -> Self {
        Self {
            files: 100_000,
            files_per_dir: 100,
            fanout: 10,
            big_dirs: 0,
            big_dir_files: 0,
            symlink_share: 0.01,
            hardlink_share: 0.005,
            xattr_share: 0.01,
            file_size: 0,
        }
    }
}

/// A share as a period: every `period`-th entry (0: never).
fn period(share: f64) -> u64 {
    if share <= 0.0 {
        0
    } else {
        (1.0 / share).round().max(1.0) as u64
    }
}

impl Shape {
    /// Checks the numbers make a tree; the error is one line.
    pub fn check(&self) -> Result<(), String> {
        if self.files_per_dir == 0 {
            return Err("--files-per-dir must be at least 1".into());
        }
        if self.fanout == 0 {
            return Err("--fanout must be at least 1".into());
        }
        if self.big_dirs.saturating_mul(self.big_dir_files) > self.files {
            return Err(format!(
                "--big-dirs {} × --big-dir-files {} is more than --files {}",
                self.big_dirs, self.big_dir_files, self.files
            ));
        }
        for (name, s) in [
            ("--symlinks", self.symlink_share),
            ("--hardlinks", self.hardlink_share),
            ("--xattrs", self.xattr_share),
        ] {
            if !(0.0..=0.5).contains(&s) {
                return Err(format!("{name} is a share from 0 to 0.5, not {s}"));
            }
        }
        Ok(())
    }

    /// Entries in the regular directories.
    fn tree_entries(&self) -> u64 {
        self.files - self.big_dirs * self.big_dir_files
    }

    /// Regular directories, the base among them.
    pub fn tree_dirs(&self) -> u64 {
        self.tree_entries().div_ceil(self.files_per_dir).max(1)
    }

    /// Chunks (and slices) of one regular file.
    pub fn chunks_per_file(&self) -> u64 {
        self.file_size.div_ceil(CHUNK_SIZE)
    }

    /// Directories made below the base.
    pub fn new_dirs(&self) -> u64 {
        self.tree_dirs() - 1 + self.big_dirs
    }

    /// Whether entry `g` opens its directory.
    fn first_of_dir(&self, g: u64) -> bool {
        let tree = self.tree_entries();
        if g < tree {
            g.is_multiple_of(self.files_per_dir)
        } else {
            (g - tree).is_multiple_of(self.big_dir_files.max(1))
        }
    }

    /// What entry `g` is.
    fn kind_at(&self, g: u64) -> Kind {
        self.kind_of(g, self.first_of_dir(g))
    }

    /// Files, symlinks and hard links, counted over every entry (one pass, no memory).
    pub fn counts(&self) -> (u64, u64, u64) {
        (0..self.files).fold((0, 0, 0), |(f, s, h), g| match self.kind_at(g) {
            Kind::File => (f + 1, s, h),
            Kind::Symlink => (f, s + 1, h),
            Kind::HardLink => (f, s, h + 1),
        })
    }

    /// The ids to reserve: inode numbers and slice ids. Entry `g` has slot `g` (a hard
    /// link's stays unused, as ids a client reserved and never used do), and the runs end
    /// at the last id used, so `juicefs load` of the volume's dump finds the same
    /// `nextInode` and `nextChunk`.
    pub fn ids_to_reserve(&self) -> (u64, u64) {
        let last = |wanted: fn(Kind) -> bool| {
            (0..self.files)
                .rev()
                .find(|&g| wanted(self.kind_at(g)))
                .map_or(0, |g| g + 1)
        };
        let nodes = last(|k| k != Kind::HardLink);
        let files = last(|k| k == Kind::File);
        (self.new_dirs() + nodes, files * self.chunks_per_file())
    }

    /// What entry `g` (counted over all directories) is.
    fn kind_of(&self, g: u64, first_of_dir: bool) -> Kind {
        let sym = period(self.symlink_share);
        let hard = period(self.hardlink_share);
        if sym > 0 && g % sym == sym - 1 {
            Kind::Symlink
        } else if hard > 0 && !first_of_dir && g % hard == hard / 2 + 1 && {
            // the entry before must be a file
            !matches!(self.kind_of(g - 1, true), Kind::Symlink | Kind::HardLink)
        } {
            Kind::HardLink
        } else {
            Kind::File
        }
    }
}

/// Kinds of non-directory entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Symlink,
    HardLink,
}

/// The ids a fill took: the first inode and slice id of its reserved runs, the base
/// directory and the time every node is stamped with.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// The tree's shape.
    pub shape: Shape,
    /// The base directory (already made).
    pub base: Ino,
    /// The base's parent.
    pub base_parent: Ino,
    /// The first of the inode numbers reserved ([`Shape::ids_to_reserve`]).
    pub first_inode: Ino,
    /// The first of the slice ids reserved.
    pub first_slice: u64,
    /// Owner of every node.
    pub uid: u32,
    /// Group of every node.
    pub gid: u32,
    /// Times of every node.
    pub now: Timestamp,
}

/// A directory's own record: its attribute and its dir stat (what its entries add up to).
#[derive(Debug, Clone, PartialEq)]
pub struct DirNode {
    /// The directory's inode.
    pub ino: Ino,
    /// Its attribute (nlink counts its sub-directories).
    pub attr: Attr,
    /// Its dir stat.
    pub stat: DirStat,
}

/// What an entry points at.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A sub-directory: only the entry here; its record comes as a [`DirNode`].
    Dir,
    /// A regular file, with its chunks (one whole slice each, index and slice).
    File {
        /// Its attribute.
        attr: Attr,
        /// Chunks with data: (chunk index, slice).
        chunks: Vec<(u32, Slice)>,
        /// An extended attribute (name, value), if it has one.
        xattr: Option<(Vec<u8>, Vec<u8>)>,
    },
    /// A symbolic link.
    Symlink {
        /// Its attribute.
        attr: Attr,
        /// Its target.
        target: Vec<u8>,
    },
    /// A second name of the file `ino` (the entry before it, same directory).
    HardLink,
}

/// One entry of a directory.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryNode {
    /// The directory holding it.
    pub parent: Ino,
    /// Its name.
    pub name: Vec<u8>,
    /// The inode it names.
    pub ino: Ino,
    /// Its type (for the entry record).
    pub typ: FileType,
    /// What it is.
    pub node: Node,
}

/// What an engine writes at once: directories' records and entries, each entry with
/// the node it makes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// Directory records (the base's among them: it is rewritten).
    pub dirs: Vec<DirNode>,
    /// Entries.
    pub entries: Vec<EntryNode>,
    /// Non-directory entries in this batch (what progress counts).
    pub files: u64,
}

impl Batch {
    /// Appends the batch that follows this one: the two written at once leave the same
    /// whole tree as written one after the other (a directory's later record replaces its
    /// earlier one).
    pub fn absorb(&mut self, next: Batch) {
        for d in next.dirs {
            self.put_dir(d);
        }
        self.entries.extend(next.entries);
        self.files += next.files;
    }

    /// Adds a directory's record, replacing an earlier one of the same directory.
    fn put_dir(&mut self, d: DirNode) {
        match self.dirs.iter_mut().find(|x| x.ino == d.ino) {
            Some(x) => *x = d,
            None => self.dirs.push(d),
        }
    }
}

/// The totals a finished fill adds to the volume's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Inodes made (directories, files, symlinks; not hard links).
    pub inodes: i64,
    /// Space they use, as `usedSpace` counts it.
    pub space: i64,
    /// Directories made.
    pub dirs: u64,
    /// Regular files made.
    pub files: u64,
    /// Symlinks made.
    pub symlinks: u64,
    /// Hard links made.
    pub hardlinks: u64,
    /// Extended attributes set.
    pub xattrs: u64,
    /// Bytes of file length.
    pub bytes: u64,
}

impl Totals {
    /// Entries that are not directories (files, symlinks, hard links): what `--files`
    /// counts.
    pub fn names(&self) -> u64 {
        self.files + self.symlinks + self.hardlinks
    }

    /// Adds another part's totals.
    pub fn merge(&mut self, o: &Totals) {
        self.inodes += o.inodes;
        self.space += o.space;
        self.dirs += o.dirs;
        self.files += o.files;
        self.symlinks += o.symlinks;
        self.hardlinks += o.hardlinks;
        self.xattrs += o.xattrs;
        self.bytes += o.bytes;
    }

    /// Adds what a batch makes.
    pub fn add(&mut self, batch: &Batch) {
        self.dirs += batch
            .entries
            .iter()
            .filter(|e| matches!(e.node, Node::Dir))
            .count() as u64;
        for e in &batch.entries {
            match &e.node {
                Node::Dir => {
                    self.inodes += 1;
                    self.space += align4k(0);
                }
                Node::File { attr, xattr, .. } => {
                    self.inodes += 1;
                    self.files += 1;
                    self.space += align4k(attr.length);
                    self.bytes += attr.length;
                    self.xattrs += xattr.is_some() as u64;
                }
                Node::Symlink { .. } => {
                    self.inodes += 1;
                    self.symlinks += 1;
                    // Mknod counts a symlink as align4K(0), whatever its length
                    self.space += align4k(0);
                }
                Node::HardLink => self.hardlinks += 1,
            }
        }
    }
}

impl Layout {
    /// Inode of regular directory `d` (0 is the base).
    fn tree_dir_ino(&self, d: u64) -> Ino {
        if d == 0 {
            self.base
        } else {
            self.first_inode + d - 1
        }
    }

    /// Inode of very large directory `b`.
    fn big_dir_ino(&self, b: u64) -> Ino {
        self.first_inode + self.shape.tree_dirs() - 1 + b
    }

    /// The inode of entry slot `g`.
    fn slot_ino(&self, g: u64) -> Ino {
        self.first_inode + self.shape.new_dirs() + g
    }

    /// The entries of regular directory `d`: global indexes.
    fn tree_dir_entries(&self, d: u64) -> std::ops::Range<u64> {
        let k = self.shape.files_per_dir;
        let n = self.shape.tree_entries();
        (d * k).min(n)..((d + 1) * k).min(n)
    }

    /// The sub-directories of regular directory `d`.
    fn tree_subdirs(&self, d: u64) -> std::ops::Range<u64> {
        let f = self.shape.fanout;
        let n = self.shape.tree_dirs();
        (d * f + 1).min(n)..(d * f + f + 1).min(n)
    }

    /// An attribute stamped with the fill's owner and time.
    fn attr(&self, typ: FileType, mode: u16, parent: Ino) -> Attr {
        Attr::made_at(typ, mode, self.uid, self.gid, parent, self.now)
    }

    /// What entry `g` adds to its directory's dir stat.
    fn stat_of(&self, g: u64, first_of_dir: bool) -> DirStat {
        let mut stat = DirStat::default();
        match self.shape.kind_of(g, first_of_dir) {
            Kind::File | Kind::HardLink => stat.add_child(true, self.shape.file_size),
            Kind::Symlink => stat.add_child(false, 0),
        }
        stat
    }

    /// A directory's record: nlink from its `subdirs`, and its dir stat so far.
    fn dir_node(&self, ino: Ino, parent: Ino, subdirs: u64, stat: DirStat) -> DirNode {
        let mut attr = self.attr(FileType::Directory, 0o755, parent);
        attr.nlink = 2 + subdirs as u32;
        DirNode { ino, attr, stat }
    }

    /// Entry `g` in directory `parent`.
    fn entry(&self, g: u64, parent: Ino, first_of_dir: bool) -> EntryNode {
        let shape = &self.shape;
        let kind = shape.kind_of(g, first_of_dir);
        let ino = match kind {
            Kind::HardLink => self.slot_ino(g - 1),
            _ => self.slot_ino(g),
        };
        match kind {
            Kind::Symlink => {
                let target = format!("../target-{g}").into_bytes();
                let mut attr = self.attr(FileType::Symlink, 0o777, parent);
                attr.length = target.len() as u64;
                EntryNode {
                    parent,
                    name: format!("l{g}").into_bytes(),
                    ino,
                    typ: FileType::Symlink,
                    node: Node::Symlink { attr, target },
                }
            }
            Kind::HardLink => EntryNode {
                parent,
                name: format!("h{g}").into_bytes(),
                ino,
                typ: FileType::File,
                node: Node::HardLink,
            },
            Kind::File => {
                let mut attr = self.attr(FileType::File, 0o644, parent);
                if shape.kind_of(g + 1, false) == Kind::HardLink && !self.last_of_dir(g) {
                    attr.nlink = 2;
                    attr.parent = 0;
                }
                attr.length = shape.file_size;
                let per = shape.chunks_per_file();
                let chunks = (0..per)
                    .map(|c| {
                        let size = (shape.file_size - c * CHUNK_SIZE).min(CHUNK_SIZE) as u32;
                        (
                            c as u32,
                            Slice::whole(0, self.first_slice + g * per + c, size),
                        )
                    })
                    .collect();
                let x = period(shape.xattr_share);
                let xattr = (x > 0 && g % x == x / 3)
                    .then(|| (b"user.metabench".to_vec(), format!("v{g}").into_bytes()));
                EntryNode {
                    parent,
                    name: format!("f{g}").into_bytes(),
                    ino,
                    typ: FileType::File,
                    node: Node::File {
                        attr,
                        chunks,
                        xattr,
                    },
                }
            }
        }
    }

    /// Whether entry `g` is the last of its directory (the next one starts another).
    fn last_of_dir(&self, g: u64) -> bool {
        let tree = self.shape.tree_entries();
        if g < tree {
            (g + 1).is_multiple_of(self.shape.files_per_dir) || g + 1 == tree
        } else {
            (g - tree + 1).is_multiple_of(self.shape.big_dir_files.max(1))
        }
    }

    /// Every batch of the tree, in order, each of at most about `max_entries` entries:
    /// bounded memory at any size. Each batch leaves a whole tree behind it: a
    /// sub-directory's entry comes with its (empty) record, and every page of a
    /// directory's entries with the directory's record as those entries make it (nlink,
    /// dir stat so far), so a fill stopped between two batches is consistent.
    pub fn batches(&self, max_entries: usize) -> Batches<'_> {
        Batches {
            layout: self,
            max_entries: max_entries.max(1),
            dir: 0,
            next_entry: None,
            stat: DirStat::default(),
            big: false,
        }
    }
}

/// The batches of a [`Layout`], made as they are asked for.
pub struct Batches<'a> {
    layout: &'a Layout,
    max_entries: usize,
    /// The directory being written: a regular one, or a very large one when `big`.
    dir: u64,
    /// Within it: the next entry (`None`: its sub-directories' entries first).
    next_entry: Option<u64>,
    /// Its dir stat so far.
    stat: DirStat,
    big: bool,
}

impl Batches<'_> {
    /// Regular directory `d`'s sub-directories and very large directories (the base's).
    fn children(&self) -> (std::ops::Range<u64>, u64) {
        let l = self.layout;
        if self.big {
            (0..0, 0)
        } else if self.dir == 0 {
            (l.tree_subdirs(0), l.shape.big_dirs)
        } else {
            (l.tree_subdirs(self.dir), 0)
        }
    }
}

impl Iterator for Batches<'_> {
    type Item = Batch;

    fn next(&mut self) -> Option<Batch> {
        let l = self.layout;
        let shape = &l.shape;
        let mut batch = Batch::default();
        loop {
            if batch.entries.len() >= self.max_entries {
                break;
            }
            if !self.big && self.dir >= shape.tree_dirs() {
                self.big = true;
                self.dir = 0;
                self.next_entry = None;
            }
            if self.big && self.dir >= shape.big_dirs {
                break;
            }
            let (ino, entries, parent) = if self.big {
                let start = shape.tree_entries() + self.dir * shape.big_dir_files;
                (
                    l.big_dir_ino(self.dir),
                    start..start + shape.big_dir_files,
                    l.base,
                )
            } else if self.dir == 0 {
                (l.base, l.tree_dir_entries(0), l.base_parent)
            } else {
                let parent = l.tree_dir_ino((self.dir - 1) / shape.fanout);
                (
                    l.tree_dir_ino(self.dir),
                    l.tree_dir_entries(self.dir),
                    parent,
                )
            };
            let (subdirs, big) = self.children();
            let n_sub = subdirs.end - subdirs.start + big;
            let from = match self.next_entry {
                Some(g) => g,
                None => {
                    self.stat = DirStat::default();
                    let subs = subdirs
                        .map(|s| (format!("d{s}"), l.tree_dir_ino(s)))
                        .chain((0..big).map(|b| (format!("big{b}"), l.big_dir_ino(b))));
                    for (name, sub) in subs {
                        batch.entries.push(EntryNode {
                            parent: ino,
                            name: name.into_bytes(),
                            ino: sub,
                            typ: FileType::Directory,
                            node: Node::Dir,
                        });
                        batch.put_dir(l.dir_node(sub, ino, 0, DirStat::default()));
                        self.stat.add_child(false, 0);
                    }
                    entries.start
                }
            };
            let room = self.max_entries.saturating_sub(batch.entries.len()).max(1) as u64;
            let mut to = entries.end.min(from + room);
            if to < entries.end && shape.kind_of(to, to == entries.start) == Kind::HardLink {
                // a file and its second name go in the same batch: its nlink counts both
                to += 1;
            }
            for g in from..to {
                let first = g == entries.start;
                batch.entries.push(l.entry(g, ino, first));
                self.stat.add(l.stat_of(g, first));
                batch.files += 1;
            }
            batch.put_dir(l.dir_node(ino, parent, n_sub, self.stat));
            if to < entries.end {
                self.next_entry = Some(to);
            } else {
                self.dir += 1;
                self.next_entry = None;
            }
        }
        (!batch.entries.is_empty() || !batch.dirs.is_empty()).then_some(batch)
    }
}

/// A small tree with every feature on (3,000 entries, a big directory, 5 % symlinks and
/// hard links, 10 % xattrs, files of `file_size` bytes), for tests.
#[cfg(test)]
pub(crate) fn every_feature(file_size: u64) -> Shape {
    Shape {
        files: 3_000,
        files_per_dir: 20,
        fanout: 3,
        big_dirs: 1,
        big_dir_files: 500,
        symlink_share: 0.05,
        hardlink_share: 0.05,
        xattr_share: 0.1,
        file_size,
    }
}

/// A layout of `shape` with fixed ids (base 2 in the root, inodes from 100, slices from 7),
/// for tests.
#[cfg(test)]
pub(crate) fn test_layout(shape: Shape) -> Layout {
    Layout {
        shape,
        base: 2,
        base_parent: 1,
        first_inode: 100,
        first_slice: 7,
        uid: 0,
        gid: 0,
        now: Timestamp::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeSet, HashMap, HashSet};

    use super::{every_feature, test_layout as layout};

    /// What the batches have written so far.
    #[derive(Default)]
    struct Written {
        dirs: HashMap<Ino, DirNode>,
        entries: HashMap<Ino, Vec<EntryNode>>,
        files: HashMap<Ino, Attr>,
        names: HashSet<(Ino, Vec<u8>)>,
    }

    impl Written {
        fn apply(&mut self, b: &Batch) {
            for d in &b.dirs {
                self.dirs.insert(d.ino, d.clone());
            }
            for e in &b.entries {
                assert!(
                    self.names.insert((e.parent, e.name.clone())),
                    "a name twice"
                );
                match &e.node {
                    Node::File { attr, .. } | Node::Symlink { attr, .. } => {
                        self.files.insert(e.ino, attr.clone());
                    }
                    _ => {}
                }
                self.entries.entry(e.parent).or_default().push(e.clone());
            }
        }

        /// The tree written so far is whole: every entry leads to a record, every
        /// directory's nlink and dir stat agree with its entries, every file's nlink with
        /// its names.
        fn check_whole(&self, file_size: u64) {
            let mut names_of: HashMap<Ino, u32> = HashMap::new();
            for (parent, entries) in &self.entries {
                let d = self
                    .dirs
                    .get(parent)
                    .expect("entries in a directory without record");
                let mut stat = DirStat::default();
                let mut subdirs = 0;
                for e in entries {
                    match &e.node {
                        Node::Dir => {
                            assert!(
                                self.dirs.contains_key(&e.ino),
                                "entry of a dir without record"
                            );
                            subdirs += 1;
                            stat.add_child(false, 0);
                        }
                        Node::Symlink { .. } => stat.add_child(false, 0),
                        Node::File { .. } | Node::HardLink => {
                            assert!(self.files.contains_key(&e.ino), "entry without node");
                            *names_of.entry(e.ino).or_default() += 1;
                            stat.add_child(true, file_size);
                        }
                    }
                }
                assert_eq!(d.attr.nlink, 2 + subdirs, "nlink of {parent}");
                assert_eq!(d.stat, stat, "dir stat of {parent}");
            }
            for (ino, d) in &self.dirs {
                if !self.entries.contains_key(ino) {
                    assert_eq!((d.attr.nlink, d.stat), (2, DirStat::default()));
                }
            }
            for (ino, n) in names_of {
                let a = &self.files[&ino];
                assert_eq!(a.nlink, n, "nlink of file {ino}");
                assert_eq!(a.parent == 0, n > 1);
            }
        }
    }

    /// Writes every batch and checks the tree is whole after each one, and at the end
    /// that it holds what the shape asks for.
    fn check_tree(shape: Shape, max_entries: usize) -> Totals {
        let l = layout(shape.clone());
        let mut w = Written::default();
        let mut totals = Totals::default();
        for b in l.batches(max_entries) {
            let extra = (shape.fanout + shape.big_dirs) as usize;
            assert!(
                b.entries.len() <= max_entries + extra,
                "batch of {}",
                b.entries.len()
            );
            totals.add(&b);
            w.apply(&b);
            w.check_whole(shape.file_size);
        }
        assert_eq!(w.dirs.len() as u64, shape.new_dirs() + 1);
        let all: u64 = totals.names();
        assert_eq!(all, shape.files);
        assert_eq!(totals.dirs, shape.new_dirs());
        totals
    }

    #[test]
    fn every_batch_leaves_a_whole_tree_with_every_feature() {
        let shape = Shape {
            files: 6_000,
            files_per_dir: 37,
            fanout: 3,
            big_dirs: 2,
            big_dir_files: 1_500,
            symlink_share: 0.05,
            hardlink_share: 0.03,
            xattr_share: 0.1,
            file_size: (64 << 20) + 5,
        };
        for max in [1000, 50, 7] {
            let t = check_tree(shape.clone(), max);
            assert!(
                t.symlinks > 250 && t.hardlinks > 100 && t.xattrs > 400,
                "{t:?}"
            );
            assert_eq!(t.bytes, t.files * ((64 << 20) + 5));
        }
    }

    #[test]
    fn batches_written_together_leave_a_whole_tree() {
        let shape = every_feature(1);
        let l = layout(shape.clone());
        let mut w = Written::default();
        let mut small = l.batches(3).peekable();
        while let Some(mut b) = small.next() {
            for _ in 0..4 {
                if let Some(next) = small.next() {
                    b.absorb(next);
                }
            }
            let mut inos: Vec<Ino> = b.dirs.iter().map(|d| d.ino).collect();
            inos.sort_unstable();
            inos.dedup();
            assert_eq!(
                inos.len(),
                b.dirs.len(),
                "a directory's record twice in a batch"
            );
            w.apply(&b);
            w.check_whole(shape.file_size);
        }
        assert_eq!(w.dirs.len() as u64, shape.new_dirs() + 1);
    }

    #[test]
    fn the_default_shares_make_hard_links_symlinks_and_xattrs() {
        let t = check_tree(
            Shape {
                files: 20_000,
                ..Shape::default()
            },
            BATCH_ENTRIES,
        );
        assert_eq!(
            (t.symlinks, t.hardlinks, t.xattrs),
            (200, 100, 200),
            "{t:?}"
        );
    }

    #[test]
    fn edge_shapes_are_whole() {
        for shape in [
            Shape {
                files: 0,
                ..Shape::default()
            },
            Shape {
                files: 1,
                files_per_dir: 1,
                fanout: 1,
                ..Shape::default()
            },
            Shape {
                files: 3_000,
                big_dirs: 1,
                big_dir_files: 3_000,
                ..Shape::default()
            },
        ] {
            check_tree(shape, BATCH_ENTRIES);
        }
    }

    #[test]
    fn ids_stay_in_the_reserved_runs_which_end_at_the_last_id_used() {
        for files in [5_000, 5_001, 4_999, 5_002] {
            let shape = Shape {
                files,
                files_per_dir: 10,
                file_size: (64 << 20) + 1,
                big_dirs: 1,
                big_dir_files: 1000,
                symlink_share: 0.05,
                hardlink_share: 0.05,
                ..Shape::default()
            };
            let l = layout(shape.clone());
            let mut inodes = BTreeSet::new();
            let mut slices = BTreeSet::new();
            for b in l.batches(BATCH_ENTRIES) {
                inodes.extend(b.dirs.iter().map(|d| d.ino).filter(|&i| i != l.base));
                for e in b.entries {
                    inodes.insert(e.ino);
                    if let Node::File { chunks, .. } = e.node {
                        slices.extend(chunks.iter().map(|(_, s)| s.id));
                    }
                }
            }
            let (n_inodes, n_slices) = shape.ids_to_reserve();
            assert_eq!(inodes.first(), Some(&l.first_inode));
            assert_eq!(inodes.last(), Some(&(l.first_inode + n_inodes - 1)));
            assert_eq!(slices.first(), Some(&l.first_slice));
            assert_eq!(slices.last(), Some(&(l.first_slice + n_slices - 1)));
            let (f, s, h) = shape.counts();
            assert_eq!(f + s + h, shape.files);
            assert!(s > 0 && h > 0);
        }
    }

    #[test]
    fn nonsense_shapes_are_refused_in_one_line() {
        let bad = Shape {
            files: 10,
            big_dirs: 1,
            big_dir_files: 11,
            ..Shape::default()
        };
        let e = bad.check().unwrap_err();
        assert!(e.contains("--big-dirs") && !e.contains('\n'));
        assert!(Shape {
            files_per_dir: 0,
            ..Shape::default()
        }
        .check()
        .is_err());
        assert!(Shape {
            symlink_share: 0.9,
            ..Shape::default()
        }
        .check()
        .is_err());
    }
}
