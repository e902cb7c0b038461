//! Reads over a populated volume (`--tree PATH`): the read operations pick their targets
//! from the entries that already exist under a directory of the volume, as production
//! clients read a full volume, rather than from the few entries metabench made.
//!
//! Before the run, untimed, [`Population::walk`] lists the tree read-only (plain
//! `Readdir`, no attributes, nothing written, no atime), keeping every directory and a
//! uniform sample of at most `max_names` names (reservoir sampling, so any tree fits in
//! bounded memory). Each read operation draws from the pool that suits it ([`Pool`]):
//! `lookup` and `open` a name, `getattr` and `access` an inode, `read_1`, `getxattr` and
//! `listxattr_1` a regular file, `readlink` a symlink, `listdir` a directory. The draws follow a [`KeyDist`]
//! over the pool, whose members are in inode order, so that `latest` favours the newest
//! inodes. A shared [`Reach`] per operation counts the draws and the distinct targets
//! they reached, for the results and to check the spread against the distribution.

use crate::dist::{KeyDist, KeySampler};
use metabench_engine::{Ctx, Meta, MetaError, Result};
use metabench_report::table::thousands as group;
use metabench_report::{ReachRecord, ReadsFrom};
use metabench_schema::{FileType, Ino};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The name metabench's own namespace has under the root: never read as part of a tree.
const OWN_NAMESPACE: &[u8] = b".metabench";

/// The seed of the walk's reservoir sample: the same tree always gives the same sample.
const SAMPLE_SEED: u64 = 0x6d65_7461_6265_6e63;

/// One name of the tree: its directory, the name and the inode it points at.
#[derive(Debug, Clone)]
struct Named {
    parent: Ino,
    name: Box<[u8]>,
    ino: Ino,
    typ: FileType,
}

/// Which members of the tree an operation draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// Every name: `lookup`, `open`.
    Names,
    /// Every inode (directories, files, symlinks), each once: `getattr`, `access`.
    Inodes,
    /// Regular files, each once: `read_1`, `getxattr`, `listxattr_1`.
    Files,
    /// Symlinks: `readlink`.
    Symlinks,
    /// Directories (the tree's own among them): `listdir`.
    Dirs,
}

impl Pool {
    /// The pool's name in notes and results.
    pub fn name(self) -> &'static str {
        match self {
            Pool::Names => "names",
            Pool::Inodes => "inodes",
            Pool::Files => "files",
            Pool::Symlinks => "symlinks",
            Pool::Dirs => "directories",
        }
    }
}

/// What to read from: the `--tree` options.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeSpec {
    /// The tree's directory, a path in the volume (`/fill-1a2b`).
    pub path: String,
    /// How the reads pick among the tree's members.
    pub keys: KeyDist,
    /// Names kept at most: a larger tree is read through a uniform sample of this many.
    pub max_names: usize,
}

/// The draws of one operation over its pool, shared by all its clients: how many, and
/// which members they reached (a bit each).
#[derive(Debug)]
pub struct Reach {
    pool: Pool,
    draws: AtomicU64,
    /// Directories only: the entries the drawn directories held (`.` and `..` counted).
    entries: AtomicU64,
    seen: Box<[AtomicU64]>,
}

impl Reach {
    fn new(pool: Pool, members: usize) -> Self {
        Self {
            pool,
            draws: AtomicU64::new(0),
            entries: AtomicU64::new(0),
            seen: (0..members.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    fn record(&self, key: usize, entries: u64) {
        self.draws.fetch_add(1, Ordering::Relaxed);
        if entries > 0 {
            self.entries.fetch_add(entries, Ordering::Relaxed);
        }
        let bit = 1u64 << (key % 64);
        let word = &self.seen[key / 64];
        if word.load(Ordering::Relaxed) & bit == 0 {
            word.fetch_or(bit, Ordering::Relaxed);
        }
    }

    /// Draws made so far.
    pub fn draws(&self) -> u64 {
        self.draws.load(Ordering::Relaxed)
    }

    /// Directories only: the entries per draw, `.` and `..` counted, as the listings
    /// return them; `None` for other pools or before a draw.
    pub fn entries_per_draw(&self) -> Option<f64> {
        let draws = self.draws();
        (self.pool == Pool::Dirs && draws > 0)
            .then(|| self.entries.load(Ordering::Relaxed) as f64 / draws as f64)
    }

    /// Distinct members they reached.
    pub fn distinct(&self) -> u64 {
        self.seen
            .iter()
            .map(|w| u64::from(w.load(Ordering::Relaxed).count_ones()))
            .sum()
    }
}

/// A directory tree of the volume, listed once, that reads draw their targets from.
#[derive(Debug)]
pub struct Population {
    spec: TreeSpec,
    /// The sampled names, in inode order.
    names: Vec<Named>,
    /// Every directory of the tree (its root among them) and the inodes of the sampled
    /// names, each once, in order; with their types.
    inodes: Vec<(Ino, FileType)>,
    /// Regular files among `inodes`.
    files: Vec<Ino>,
    /// Symlinks among `inodes`.
    symlinks: Vec<Ino>,
    /// Every directory of the tree, its own first, with the names it holds.
    dirs: Vec<(Ino, u64)>,
    /// What the walk found, whole (not only the sample).
    found: Found,
    /// The draws of each operation, by name.
    reach: Mutex<BTreeMap<&'static str, Arc<Reach>>>,
}

/// What a walk found in the whole tree.
#[derive(Debug, Clone, Copy, Default)]
struct Found {
    names: u64,
    dirs: u64,
    files: u64,
    symlinks: u64,
    seconds: f64,
}

impl Population {
    /// Lists the tree at `spec.path` read-only through `meta`, untimed: every directory,
    /// and a uniform sample of at most `spec.max_names` names. A path that is missing or
    /// not a directory, or a tree with no names, is an error in one line.
    pub async fn walk(meta: &mut dyn Meta, spec: TreeSpec) -> Result<Population> {
        let started = std::time::Instant::now();
        let ctx = Ctx::root();
        let root = resolve(meta, &ctx, &spec.path).await?;
        let mut rng = SmallRng::seed_from_u64(SAMPLE_SEED);
        let mut found = Found::default();
        let mut names: Vec<Named> = Vec::new();
        let mut dirs: Vec<(Ino, u64)> = vec![(root, 0)];
        let mut next = 0;
        while let Some(&(dir, _)) = dirs.get(next) {
            let at = next;
            next += 1;
            for e in meta.readdir(&ctx, dir, false).await? {
                if e.name == b"." || e.name == b".." || (dir == 1 && e.name == OWN_NAMESPACE) {
                    continue;
                }
                found.names += 1;
                dirs[at].1 += 1;
                match e.attr.typ {
                    FileType::Directory => {
                        found.dirs += 1;
                        dirs.push((e.inode, 0));
                    }
                    FileType::File => found.files += 1,
                    FileType::Symlink => found.symlinks += 1,
                    _ => {}
                }
                let named = Named {
                    parent: dir,
                    name: e.name.into_boxed_slice(),
                    ino: e.inode,
                    typ: e.attr.typ,
                };
                // Reservoir sampling (Algorithm R): after k names, each is kept with
                // probability max_names / k.
                if names.len() < spec.max_names {
                    names.push(named);
                } else {
                    let j = rng.random_range(0..found.names) as usize;
                    if j < spec.max_names {
                        names[j] = named;
                    }
                }
            }
        }
        if names.is_empty() {
            return Err(MetaError::Invalid);
        }
        names.sort_by_key(|n| (n.ino, n.parent));
        let mut inodes: Vec<(Ino, FileType)> = names.iter().map(|n| (n.ino, n.typ)).collect();
        inodes.extend(dirs.iter().map(|&(d, _)| (d, FileType::Directory)));
        inodes.sort_unstable_by_key(|&(ino, _)| ino);
        inodes.dedup_by_key(|&mut (ino, _)| ino);
        let of_type = |t: FileType| -> Vec<Ino> {
            inodes
                .iter()
                .filter(|&&(_, typ)| typ == t)
                .map(|&(ino, _)| ino)
                .collect()
        };
        let (files, symlinks) = (of_type(FileType::File), of_type(FileType::Symlink));
        found.seconds = started.elapsed().as_secs_f64();
        Ok(Population {
            spec,
            names,
            inodes,
            files,
            symlinks,
            dirs,
            found,
            reach: Mutex::new(BTreeMap::new()),
        })
    }

    /// Members of `pool`.
    pub fn members(&self, pool: Pool) -> usize {
        match pool {
            Pool::Names => self.names.len(),
            Pool::Inodes => self.inodes.len(),
            Pool::Files => self.files.len(),
            Pool::Symlinks => self.symlinks.len(),
            Pool::Dirs => self.dirs.len(),
        }
    }

    /// What an operation drawing from `pool` reads, in a phrase for its note.
    pub fn note_for(&self, pool: Pool) -> String {
        format!(
            "targets: the {} {} under {} ({})",
            group(self.members(pool) as u64),
            pool.name(),
            self.spec.path,
            self.spec.keys
        )
    }

    /// A drawer of operation `op`'s targets from `pool` for one client, its random
    /// numbers from `seed`; an error in one line when the tree has none of them (no
    /// symlink for `readlink`). The draws of every client of `op` count in one [`Reach`].
    pub fn picker(self: &Arc<Self>, op: &'static str, pool: Pool, seed: u64) -> Result<Picker> {
        let members = self.members(pool);
        let sampler = KeySampler::new(self.spec.keys, members as u64).map_err(|_| {
            MetaError::Engine(format!(
                "{op} reads {} and the tree under {} has none",
                pool.name(),
                self.spec.path
            ))
        })?;
        let reach = self
            .reach
            .lock()
            .expect("reach lock")
            .entry(op)
            .or_insert_with(|| Arc::new(Reach::new(pool, members)))
            .clone();
        Ok(Picker {
            tree: Arc::clone(self),
            pool,
            sampler,
            rng: SmallRng::seed_from_u64(seed),
            reach,
        })
    }

    /// The draws of operation `op` so far, if it drew from the tree.
    pub fn reach(&self, op: &str) -> Option<Arc<Reach>> {
        self.reach.lock().expect("reach lock").get(op).cloned()
    }

    /// What the results record of the tree and of the draws made from it.
    pub fn record(&self) -> ReadsFrom {
        let reach = self.reach.lock().expect("reach lock");
        ReadsFrom {
            path: self.spec.path.clone(),
            keys: self.spec.keys.to_string(),
            names: self.found.names,
            dirs: self.found.dirs,
            files: self.found.files,
            symlinks: self.found.symlinks,
            sampled_names: self.names.len() as u64,
            walk_s: self.found.seconds,
            reach: reach
                .iter()
                .map(|(op, r)| {
                    let members = self.members(r.pool) as u64;
                    let draws = r.draws();
                    let expected = KeySampler::new(self.spec.keys, members)
                        .map(|s| s.expected_distinct(draws))
                        .unwrap_or(0.0);
                    ReachRecord {
                        op: (*op).to_owned(),
                        pool: r.pool.name().to_owned(),
                        members,
                        draws,
                        distinct: r.distinct(),
                        expected_distinct: expected,
                        entries_per_draw: r.entries_per_draw(),
                    }
                })
                .collect(),
        }
    }

    /// The line a run says once the tree is listed.
    pub fn line(&self) -> String {
        let f = &self.found;
        let sample = if self.names.len() as u64 == f.names {
            String::new()
        } else {
            format!(
                ", reading a uniform sample of {} of them (--tree-max)",
                group(self.names.len() as u64)
            )
        };
        format!(
            "reads draw from the tree under {}: {} names ({} files, {} symlinks, {} directories), \
             listed in {:.1} s{sample}; keys {}",
            self.spec.path,
            group(f.names),
            group(f.files),
            group(f.symlinks),
            group(f.dirs),
            f.seconds,
            self.spec.keys
        )
    }
}

/// The inode of directory `path` in the volume: `NotFound` or `NotDir` when it is none.
async fn resolve(meta: &mut dyn Meta, ctx: &Ctx, path: &str) -> Result<Ino> {
    let mut ino: Ino = 1;
    for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
        let (next, attr) = meta.lookup(ctx, ino, part.as_bytes()).await?;
        if attr.typ != FileType::Directory {
            return Err(MetaError::NotDir);
        }
        ino = next;
    }
    Ok(ino)
}

/// One client's drawer of one operation's targets over a [`Population`].
#[derive(Debug, Clone)]
pub struct Picker {
    tree: Arc<Population>,
    pool: Pool,
    sampler: KeySampler,
    rng: SmallRng,
    reach: Arc<Reach>,
}

/// A drawn target.
#[derive(Debug, Clone, Copy)]
pub enum Drawn<'a> {
    /// A name in a directory.
    Name {
        /// Its directory.
        parent: Ino,
        /// The name.
        name: &'a [u8],
    },
    /// An inode.
    Inode(Ino),
}

impl Picker {
    /// The next target, drawn from the distribution and counted in the operation's reach.
    pub fn draw(&mut self) -> Drawn<'_> {
        let key = self.sampler.sample(&mut self.rng) as usize;
        let tree = &*self.tree;
        let entries = match self.pool {
            Pool::Dirs => tree.dirs[key].1 + 2,
            _ => 0,
        };
        self.reach.record(key, entries);
        match self.pool {
            Pool::Names => {
                let n = &tree.names[key];
                Drawn::Name {
                    parent: n.parent,
                    name: &n.name,
                }
            }
            Pool::Inodes => Drawn::Inode(tree.inodes[key].0),
            Pool::Files => Drawn::Inode(tree.files[key]),
            Pool::Symlinks => Drawn::Inode(tree.symlinks[key]),
            Pool::Dirs => Drawn::Inode(tree.dirs[key].0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reach_counts_draws_and_distinct_members() {
        let r = Reach::new(Pool::Inodes, 130);
        for k in [0, 1, 1, 64, 129, 129, 129] {
            r.record(k, 0);
        }
        assert_eq!(r.draws(), 7);
        assert_eq!(r.distinct(), 4);
        assert_eq!(r.entries_per_draw(), None);
        let d = Reach::new(Pool::Dirs, 2);
        d.record(0, 1002);
        d.record(1, 4);
        assert_eq!(d.entries_per_draw(), Some(503.0));
    }
}
