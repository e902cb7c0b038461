//! Bulk loading for `metabench fill` on a transactional KV, as `kvMeta.LoadMeta`
//! (`pkg/meta/tkv.go`) loads a dump: blind puts, a batch in one commit where it fits one
//! (where the backend caps a transaction's writes, e.g. etcd's `--max-txn-ops`, batches
//! are small, but a directory's sub-directories go together). Where the backend takes
//! several commits at once (etcd, [`KvBackend::commits_at_once`]), as `LoadMeta`'s
//! concurrent writers send them, a wave of batches goes out together, and a batch that
//! does not fit one commit goes out as a wave of its own: see
//! [`TkvBulk::write_in_order`].

use super::kv::{KvBackend, KvError, KvResult, Write};
use super::session::TkvSession;
use crate::fill::{
    reserve_ids, write_each, Batch, BulkLoad, DirNode, EntryNode, Node, Shape, Totals,
    BATCH_ENTRIES,
};
use crate::{MetaError, Result};
use async_trait::async_trait;
use futures_util::future::join_all;
use metabench_schema::tkv::{pack_counter, parse_counter, TkvKeys};
use metabench_schema::{Dentry, Ino};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// A TKV session used for bulk writes.
pub(super) struct TkvBulk {
    pub(super) s: TkvSession,
    pub(super) kv: Arc<dyn KvBackend>,
    pub(super) keys: TkvKeys,
    /// Why the volume may not be consistent after a failure ([`BulkLoad::take_stray`]).
    pub(super) stray: Option<String>,
}

fn kv(e: KvError) -> MetaError {
    MetaError::Engine(e.to_string())
}

/// How many puts [`puts`] makes of `batch`, without making them.
fn put_count(batch: &Batch) -> usize {
    let nodes: usize = batch
        .entries
        .iter()
        .map(|e| match &e.node {
            Node::Dir | Node::HardLink => 0,
            Node::Symlink { .. } => 2,
            Node::File {
                attr,
                chunks,
                xattr,
            } => 1 + chunks.len() + xattr.is_some() as usize + (attr.nlink > 1) as usize,
        })
        .sum();
    batch.dirs.len() * 2 + batch.entries.len() + nodes
}

/// The puts of one batch: its directory records, then its entries and their nodes.
fn puts(keys: &TkvKeys, batch: &Batch) -> Vec<Write> {
    let mut w = dir_puts(keys, &batch.dirs);
    w.extend(entry_puts(keys, &batch.entries));
    w
}

/// The puts of directory records: attribute and dir stat.
fn dir_puts<'a>(keys: &TkvKeys, dirs: impl IntoIterator<Item = &'a DirNode>) -> Vec<Write> {
    let mut w = Vec::new();
    for d in dirs {
        w.push((keys.inode(d.ino), Some(d.attr.encode())));
        w.push((keys.dir_stat(d.ino), Some(d.stat.encode().to_vec())));
    }
    w
}

/// The puts of entries and the nodes they make: keys no earlier batch wrote.
fn entry_puts(keys: &TkvKeys, entries: &[EntryNode]) -> Vec<Write> {
    let mut w: Vec<Write> = Vec::with_capacity(entries.len() * 2);
    for e in entries {
        let entry = Dentry {
            typ: e.typ,
            inode: e.ino,
        };
        w.push((keys.entry(e.parent, &e.name), Some(entry.encode().to_vec())));
        match &e.node {
            Node::Dir | Node::HardLink => {}
            Node::Symlink { attr, target } => {
                w.push((keys.inode(e.ino), Some(attr.encode())));
                w.push((keys.symlink(e.ino), Some(target.clone())));
            }
            Node::File {
                attr,
                chunks,
                xattr,
            } => {
                w.push((keys.inode(e.ino), Some(attr.encode())));
                for (indx, s) in chunks {
                    w.push((keys.chunk(e.ino, *indx), Some(s.encode().to_vec())));
                }
                if let Some((name, value)) = xattr {
                    w.push((keys.xattr(e.ino, name), Some(value.clone())));
                }
                if attr.nlink > 1 {
                    let n = pack_counter(attr.nlink as i64);
                    w.push((keys.parent(e.ino, e.parent), Some(n.to_vec())));
                }
            }
        }
    }
    w
}

#[async_trait]
impl BulkLoad for TkvBulk {
    /// Where the backend caps a transaction's writes (etcd's `--max-txn-ops`, 128 by
    /// default): small batches (a few entries each), which the driver writes together
    /// while they fit one commit with the two counters ([`BulkLoad::write_budget`]).
    fn batch_entries(&self, _shape: &Shape) -> usize {
        match self.kv.commit_every() {
            None => BATCH_ENTRIES,
            Some(_) => 4,
        }
    }

    fn write_budget(&self) -> Option<usize> {
        self.kv.commit_every().map(|limit| limit.saturating_sub(2))
    }

    fn cost(&self, batch: &Batch) -> usize {
        put_count(batch)
    }

    async fn reserve(&mut self, name: &str, n: u64) -> Result<u64> {
        reserve_ids(&mut self.s, name, n).await
    }

    async fn write(&mut self, batch: &Batch, added: &Totals) -> Result<()> {
        self.commit_counted(puts(&self.keys, batch), added)
            .await
            .map_err(kv)
    }

    fn in_flight(&self) -> usize {
        self.kv.commits_at_once().max(1)
    }

    /// Where the backend takes several commits at once: waves of batches
    /// ([`TkvBulk::wave`]), each written whole or not at all.
    async fn write_in_order(&mut self, batches: &[(Batch, Totals)]) -> (usize, Option<MetaError>) {
        let mut done = 0;
        while done < batches.len() {
            let rest = &batches[done..];
            let (landed, failure) = match self.wave_len(rest) {
                0 => write_each(self, &rest[..1]).await,
                1 if self.fits_one_commit(&rest[0].0) => write_each(self, &rest[..1]).await,
                n => self.wave(&rest[..n]).await,
            };
            done += landed;
            if failure.is_some() {
                return (done, failure);
            }
        }
        (done, None)
    }

    fn take_stray(&mut self) -> Option<String> {
        self.stray.take()
    }
}

/// The directory records a wave of batches writes: each directory's last record in the
/// wave, with the batch that holds it when the wave makes the directory (its entry is in
/// the wave), else in the seal (a directory made before the wave, whose record is
/// rewritten).
struct WaveDirs<'a> {
    with_batch: Vec<Vec<&'a DirNode>>,
    sealed: Vec<&'a DirNode>,
}

impl<'a> WaveDirs<'a> {
    fn of(batches: &'a [(Batch, Totals)]) -> Self {
        let mut made = HashSet::new();
        let mut last: BTreeMap<Ino, (usize, &DirNode)> = BTreeMap::new();
        for (i, (b, _)) in batches.iter().enumerate() {
            made.extend(dirs_made(b));
            for d in &b.dirs {
                last.insert(d.ino, (i, d));
            }
        }
        let mut dirs = Self {
            with_batch: vec![Vec::new(); batches.len()],
            sealed: Vec::new(),
        };
        for (ino, (i, d)) in last {
            match made.contains(&ino) {
                true => dirs.with_batch[i].push(d),
                false => dirs.sealed.push(d),
            }
        }
        dirs
    }
}

/// The directories `batch` makes: its sub-directories' entries.
fn dirs_made(batch: &Batch) -> impl Iterator<Item = Ino> + '_ {
    batch
        .entries
        .iter()
        .filter(|e| matches!(e.node, Node::Dir))
        .map(|e| e.ino)
}

impl TkvBulk {
    /// The volume's `usedSpace` and `totalInodes` counters, in the order
    /// [`TkvBulk::commit_counted`] adds [`Totals::space`] and [`Totals::inodes`] to them.
    fn counter_keys(&self) -> [Vec<u8>; 2] {
        [
            self.keys.counter("usedSpace"),
            self.keys.counter("totalInodes"),
        ]
    }

    /// The most writes one commit takes (etcd's `--max-txn-ops`), if the backend caps them.
    fn commit_limit(&self) -> usize {
        self.kv.commit_every().unwrap_or(usize::MAX).max(1)
    }

    /// Whether `batch` and the two counters fit one commit: then it is written as one,
    /// which lands whole or not at all by itself.
    fn fits_one_commit(&self, batch: &Batch) -> bool {
        put_count(batch) + 2 <= self.commit_limit()
    }

    /// How many of `batches`, from the first, make one wave: as many as go out in at most
    /// [`BulkLoad::in_flight`] commits (a batch of more writes than one commit takes goes
    /// out as several, and makes a wave of its own where it is alone), with the records of
    /// the directories made before the wave within one commit beside the counters (they go
    /// in the seal). 0 when even the first batch's records of older directories do not fit
    /// it: that batch is written as [`write_each`] writes it.
    fn wave_len(&self, batches: &[(Batch, Totals)]) -> usize {
        let limit = self.commit_limit();
        let (mut made, mut before) = (HashSet::new(), HashSet::new());
        let mut commits = 0;
        for (n, (b, _)) in batches.iter().enumerate() {
            made.extend(dirs_made(b));
            before.extend(
                b.dirs
                    .iter()
                    .map(|d| d.ino)
                    .filter(|ino| !made.contains(ino)),
            );
            commits += put_count(b).div_ceil(limit).max(1);
            if before.len() * 2 + 2 > limit || (n > 0 && commits > self.in_flight()) {
                return n;
            }
        }
        batches.len()
    }

    /// One wave, written whole or not at all:
    ///
    /// 1. What the batches make (entries, their nodes, the records of the directories
    ///    the wave makes: keys no earlier wave wrote, [`WaveDirs`]) goes out at once, a
    ///    commit per batch (several for a batch of more writes than one commit takes), in
    ///    whatever order they land: blind puts, which no commit can refuse for another's
    ///    sake.
    /// 2. Then one commit (the seal) writes the records of the directories made before
    ///    the wave and adds the wave to the counters, on the condition that nobody moved
    ///    them.
    /// 3. If any of it fails, the keys of all its commits are deleted again (one that
    ///    failed may have landed all the same), which an etcd out of room still accepts,
    ///    and the volume is as the wave before left it; where the deletes fail too,
    ///    [`BulkLoad::take_stray`] says so.
    ///
    /// A seal that fails and yet landed (a timeout: [`TkvBulk::commit_counted`] reads the
    /// counters back) leaves the wave standing. A process killed within a wave leaves the
    /// wave's keys beside a volume that does not count them.
    async fn wave(&mut self, batches: &[(Batch, Totals)]) -> (usize, Option<MetaError>) {
        let dirs = WaveDirs::of(batches);
        let limit = self.commit_limit();
        let made: Vec<Vec<Write>> = batches
            .iter()
            .zip(&dirs.with_batch)
            .flat_map(|((b, _), d)| {
                let mut w = entry_puts(&self.keys, &b.entries);
                w.extend(dir_puts(&self.keys, d.iter().copied()));
                w.chunks(limit).map(<[Write]>::to_vec).collect::<Vec<_>>()
            })
            .collect();
        let backend = &self.kv;
        let landed = join_all(made.iter().map(|w| backend.commit(&[], w))).await;
        let mut failure = landed.iter().find_map(|r| r.clone().err()).map(kv);
        if failure.is_none() {
            let mut added = Totals::default();
            for (_, t) in batches {
                added.merge(t);
            }
            let seal = dir_puts(&self.keys, dirs.sealed);
            match self.commit_counted(seal, &added).await {
                Ok(()) => return (batches.len(), None),
                Err(e) => failure = Some(kv(e)),
            }
        }
        // every commit of the wave: one that failed may have landed all the same (a
        // timeout), and deleting a key no commit wrote is harmless
        let undo: Vec<Vec<u8>> = made.iter().flatten().map(|(k, _)| k.clone()).collect();
        if let Err(e) = self.kv.delete_keys(&undo).await {
            self.stray = Some(format!(
                "deleting the keys of the {} commits of the refused wave failed too ({e})",
                made.len()
            ));
        }
        (0, failure)
    }

    /// After the commit that writes the counters failed with `error`, meaning to move
    /// them as `counts` says (`usedSpace` and `totalInodes`, each from before to after):
    /// whether it landed all the same. `Some(false)` when the engine refused it before
    /// applying it ([`KvError::Refused`]: an etcd 3.5 out of room, which then refuses the
    /// read-back too; [`KvError::Conflict`]: its guard on the counters failed); otherwise
    /// (an error that may hide its landing, a timeout) the counters are read back:
    /// `Some(true)` when they hold what it wrote, `Some(false)` when they hold what they
    /// held before it, `None` for anything else or nothing readable.
    async fn landed_all_the_same(&self, counts: [(i64, i64); 2], error: &KvError) -> Option<bool> {
        if matches!(error, KvError::Refused(_) | KvError::Conflict(_)) {
            return Some(false);
        }
        let [(space_before, space_after), (inodes_before, inodes_after)] = counts;
        let now = self.kv.batch_get(&self.counter_keys()).await.ok()?;
        let now: Vec<i64> = now
            .iter()
            .map(|v| parse_counter(v.as_ref().map(|(v, _)| v.as_slice())))
            .collect();
        match (now[0], now[1]) {
            _ if (space_before, inodes_before) == (space_after, inodes_after) => None,
            (s, i) if (s, i) == (space_after, inodes_after) => Some(true),
            (s, i) if (s, i) == (space_before, inodes_before) => Some(false),
            _ => None,
        }
    }

    /// Commits `writes` with `added` to the volume's `usedSpace` and `totalInodes`, in the
    /// same commit, on the condition that nobody moved the counters since they were read;
    /// read again and retried if somebody did. Where the backend caps a commit's writes and
    /// `writes` exceed it, they go out as several commits, the last guarded: only a batch
    /// whose records of older directories alone fill a commit comes here that way
    /// ([`TkvBulk::wave_len`] 0), and its earlier commits are not taken back on failure:
    /// [`BulkLoad::take_stray`] says so.
    ///
    /// A last commit that fails with an error that may hide its landing (a timeout) is
    /// checked by reading the counters back ([`TkvBulk::landed_all_the_same`]): if it
    /// landed, the writes are written; if that cannot be told, [`BulkLoad::take_stray`]
    /// says so.
    async fn commit_counted(&mut self, mut writes: Vec<Write>, added: &Totals) -> KvResult<()> {
        let counters = self.counter_keys();
        for attempt in 1.. {
            let now = self.kv.batch_get(&counters).await?;
            let mut observed = Vec::with_capacity(2);
            let mut tail = Vec::with_capacity(2);
            for ((key, value), add) in counters.iter().zip(&now).zip([added.space, added.inodes]) {
                let (old, version) = match value {
                    Some((v, version)) => (parse_counter(Some(v)), *version),
                    None => (0, 0),
                };
                observed.push((key.clone(), version));
                tail.push((key.clone(), Some(pack_counter(old + add).to_vec())));
            }
            let counted = [0, 1].map(|i| {
                let old = parse_counter(now[i].as_ref().map(|(v, _)| v.as_slice()));
                (old, old + [added.space, added.inodes][i])
            });
            writes.extend(tail);
            let per = self.commit_limit();
            let parts = writes.chunks(per).len();
            let mut result = Ok(());
            let mut landed = 0;
            for (n, part) in writes.chunks(per).enumerate() {
                // the observed counters guard the last commit, which writes them
                let guard: &[(Vec<u8>, i64)] = if n + 1 == parts { &observed } else { &[] };
                result = self.kv.commit(guard, part).await;
                if result.is_err() {
                    break;
                }
                landed += 1;
            }
            let e = match result {
                Ok(()) => return Ok(()),
                Err(KvError::Conflict(_)) if attempt < crate::retry::MAX_TRIES => {
                    writes.truncate(writes.len() - 2);
                    continue;
                }
                Err(e) => e,
            };
            let verdict = match landed + 1 == parts {
                true => self.landed_all_the_same(counted, &e).await,
                false => Some(false),
            };
            match verdict {
                Some(true) => return Ok(()),
                None => {
                    self.stray =
                        Some("whether the commit of the counters landed could not be told".into())
                }
                Some(false) if landed > 0 => {
                    self.stray = Some(format!(
                        "{landed} commits of a batch too large for one landed before one \
                         failed, and were not taken back"
                    ))
                }
                Some(false) => {}
            }
            return Err(e);
        }
        unreachable!("the loop returns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tkv::kv::{KeyRange, Version, Versioned};
    use crate::tkv::mem::MemKv;
    use crate::tkv::TkvEngine;
    use crate::{Engine, EngineKind, MetaUrl};
    use metabench_schema::{Attr, DirStat, FileType, Format, ROOT_INODE};
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    #[test]
    fn the_put_count_is_the_puts_made() {
        let shape = crate::fill::shape::every_feature((64 << 20) + 1);
        let l = crate::fill::shape::test_layout(shape);
        let keys = TkvKeys::for_volume(b"v");
        for b in l.batches(7) {
            assert_eq!(put_count(&b), puts(&keys, &b).len());
        }
    }

    /// memkv as etcd takes a bulk writer's commits: at most 128 writes each, several at
    /// once and landing in another order than sent (of every 4, the last sent lands
    /// first), with the faults of [`Faults`].
    struct AsEtcd {
        store: MemKv,
        faults: Faults,
        /// Commits of the counters still to land before the one `faults.seal` describes,
        /// and what that one meets.
        seal: std::sync::Mutex<(usize, Seal)>,
        full: AtomicBool,
        commits: AtomicUsize,
    }

    /// How [`AsEtcd`] deviates from a store with room for everything.
    #[derive(Debug, Clone, Copy)]
    struct Faults {
        /// Out of room once it holds this many keys: every commit and batch read refused,
        /// deletes alone too, as etcd 3.5.1 does under its NOSPACE alarm (they are
        /// transactions), while plain deletes ([`KvBackend::delete_keys`]) are still
        /// taken, unless `deletes_too`.
        room: usize,
        deletes_too: bool,
        /// What the fill's commit of the counters (a wave's seal, or a lone batch's
        /// commit) after `seals_before` others meets.
        seal: Seal,
        seals_before: usize,
        /// Commits taken at once ([`KvBackend::commits_at_once`]): 1 writes every batch
        /// in a commit of its own ([`BulkLoad::write`]), not in waves.
        at_once: usize,
    }

    impl Default for Faults {
        fn default() -> Self {
            Self {
                room: usize::MAX,
                deletes_too: false,
                seal: Seal::Lands,
                seals_before: 0,
                at_once: 4,
            }
        }
    }

    /// What the fill's next commit of the counters meets.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Seal {
        /// It lands, as every commit with room left does.
        Lands,
        /// It lands and yet reports a timeout.
        LandsAndTimesOut,
        /// It lands, fills etcd up, and reports a timeout: the counters' read-back is
        /// refused, so whether it landed cannot be told.
        LandsFillsUpAndTimesOut,
        /// It finds etcd out of room: refused unapplied, and so is all that follows.
        FindsNoRoom,
    }

    impl AsEtcd {
        fn room_left(&self) -> KvResult<()> {
            match self.full.load(Ordering::Relaxed) || self.store.len() >= self.faults.room {
                true => Err(KvError::Refused("out of room".into())),
                false => Ok(()),
            }
        }

        /// What the next seal meets (after the one `faults.seal` describes, they land, as
        /// every other commit does).
        fn next_seal(&self) -> Seal {
            let mut next = self.seal.lock().unwrap();
            match next.0 {
                0 => std::mem::replace(&mut next.1, Seal::Lands),
                _ => {
                    next.0 -= 1;
                    Seal::Lands
                }
            }
        }
    }

    #[async_trait]
    impl KvBackend for AsEtcd {
        fn name(&self) -> &'static str {
            "memkv as etcd"
        }
        fn commit_every(&self) -> Option<usize> {
            Some(128)
        }
        fn commits_at_once(&self) -> usize {
            self.faults.at_once
        }
        async fn get(&self, key: &[u8]) -> KvResult<Versioned> {
            self.store.get(key).await
        }
        async fn batch_get(&self, keys: &[Vec<u8>]) -> KvResult<Vec<Versioned>> {
            self.room_left()?;
            self.store.batch_get(keys).await
        }
        async fn scan(&self, range: KeyRange<'_>) -> KvResult<Vec<(Vec<u8>, Vec<u8>, Version)>> {
            self.store.scan(range).await
        }
        async fn exist(&self, prefix: &[u8]) -> KvResult<bool> {
            self.store.exist(prefix).await
        }
        async fn commit(&self, observed: &[(Vec<u8>, Version)], writes: &[Write]) -> KvResult<()> {
            assert!(writes.len() <= 128, "{} writes in one commit", writes.len());
            let sent = self.commits.fetch_add(1, Ordering::Relaxed);
            for _ in 0..3 - sent % 4 {
                tokio::task::yield_now().await;
            }
            // a fill's commit of the counters with the records beside them
            let counted = writes.iter().any(|(k, _)| k == b"CtotalInodes") && writes.len() > 2;
            let seal = match counted {
                true => self.next_seal(),
                false => Seal::Lands,
            };
            if seal == Seal::FindsNoRoom {
                self.full.store(true, Ordering::Relaxed);
            }
            self.room_left()?;
            self.store.commit(observed, writes).await?;
            match seal {
                Seal::LandsAndTimesOut => Err(KvError::Other("timed out".into())),
                Seal::LandsFillsUpAndTimesOut => {
                    self.full.store(true, Ordering::Relaxed);
                    Err(KvError::Other("timed out".into()))
                }
                _ => Ok(()),
            }
        }
        async fn delete_keys(&self, keys: &[Vec<u8>]) -> KvResult<()> {
            if self.faults.deletes_too {
                self.room_left()?;
            }
            self.store.delete_keys(keys).await
        }
        async fn delete_prefix(&self, prefix: &[u8]) -> KvResult<()> {
            self.store.delete_prefix(prefix).await
        }
        async fn server_info(&self) -> KvResult<crate::ServerInfo> {
            self.store.server_info().await
        }
    }

    /// What a store holds, checked to be a whole tree: every entry's directory and node
    /// exist, every node but the root has an entry, each directory's nlink and dir stat
    /// count its entries, and the counters count the nodes (empty files: 4 KiB each).
    /// Returns the number of entries that are not directories.
    async fn whole_tree(store: &MemKv) -> usize {
        let all = store.scan(KeyRange::new(b"", b"")).await.unwrap();
        let ino = |k: &[u8]| Ino::from_le_bytes(k[1..9].try_into().unwrap());
        let (mut attrs, mut stats) = (HashMap::new(), HashMap::new());
        let mut entries: Vec<(Ino, Dentry)> = Vec::new();
        let mut counters = BTreeMap::new();
        for (k, v, _) in &all {
            match (k[0], k.get(9)) {
                (b'A', Some(b'I')) => {
                    attrs.insert(ino(k), Attr::decode(v).unwrap());
                }
                (b'A', Some(b'D')) => entries.push((ino(k), Dentry::decode(v).unwrap())),
                (b'U', _) => {
                    stats.insert(ino(k), DirStat::decode(v).unwrap());
                }
                (b'C', _) => {
                    counters.insert(k[1..].to_vec(), parse_counter(Some(v)));
                }
                _ => {}
            }
        }
        let mut named = HashMap::<Ino, usize>::new();
        let (mut children, mut subdirs) = (HashMap::<Ino, i64>::new(), HashMap::<Ino, u32>::new());
        for (parent, e) in &entries {
            assert!(
                attrs.contains_key(parent),
                "an entry in a missing directory {parent}"
            );
            assert!(
                attrs.contains_key(&e.inode),
                "an entry of a missing node {}",
                e.inode
            );
            *named.entry(e.inode).or_default() += 1;
            *children.entry(*parent).or_default() += 1;
            if e.typ == FileType::Directory {
                *subdirs.entry(*parent).or_default() += 1;
            }
        }
        for (i, attr) in &attrs {
            if *i == ROOT_INODE {
                continue;
            }
            assert!(named.contains_key(i), "node {i} has no entry");
            if attr.typ == FileType::Directory {
                assert_eq!(
                    attr.nlink,
                    2 + subdirs.get(i).copied().unwrap_or(0),
                    "dir {i}"
                );
                let stat = stats
                    .get(i)
                    .unwrap_or_else(|| panic!("dir {i} has no stat"));
                assert_eq!(
                    stat.inodes,
                    children.get(i).copied().unwrap_or(0),
                    "dir {i}"
                );
            }
        }
        let nodes = attrs.len() as i64 - 1;
        assert_eq!(counters[&b"totalInodes"[..]], nodes);
        assert_eq!(counters[&b"usedSpace"[..]], nodes * 4096);
        entries
            .iter()
            .filter(|(_, e)| e.typ != FileType::Directory)
            .count()
    }

    async fn fill_as_etcd(name: &str, faults: Faults) -> (crate::fill::FillEnd, MemKv) {
        let shape = crate::fill::shape::every_feature(0);
        fill_shape_as_etcd(name, &shape, faults).await
    }

    async fn fill_shape_as_etcd(
        name: &str,
        shape: &crate::fill::shape::Shape,
        faults: Faults,
    ) -> (crate::fill::FillEnd, MemKv) {
        let store = MemKv::named(&format!("{name}-{}", std::process::id()));
        let kv = Arc::new(AsEtcd {
            store: store.clone(),
            faults,
            seal: std::sync::Mutex::new((faults.seals_before, faults.seal)),
            full: AtomicBool::new(false),
            commits: AtomicUsize::new(0),
        });
        let url = MetaUrl::parse(&format!("memkv://{name}")).unwrap();
        let engine = TkvEngine::with_backend(url, EngineKind::Memkv, kv, TkvKeys::default());
        let uuid = "00000000-0000-0000-0000-00000000fill";
        engine
            .format(&Format::new(name, uuid, "/tmp/metabench-unused/", 0))
            .await
            .unwrap();
        let end = crate::fill::fill(
            &engine,
            ROOT_INODE,
            b"filled",
            shape,
            &|| false,
            &mut |_| {},
            &mut |_| {},
        )
        .await
        .unwrap();
        (end, store)
    }

    /// What a fill that ended on its own wrote.
    fn done(end: crate::fill::FillEnd) -> Totals {
        let crate::fill::FillEnd::Done(written) = end else {
            panic!("{end:?}");
        };
        written
    }

    /// Why a fill that the engine stopped was stopped, what it wrote, and what its
    /// `stray` says.
    fn refused(end: crate::fill::FillEnd) -> (MetaError, Totals, Option<String>) {
        let crate::fill::FillEnd::Stopped {
            failure: Some(e),
            written,
            stray,
        } = end
        else {
            panic!("{end:?}");
        };
        (e, written, stray)
    }

    /// Fills with `faults`, which the fill must come through: every one of the 3,000 names
    /// written, and a whole tree.
    async fn fills_whole(name: &str, faults: Faults) {
        let (end, store) = fill_as_etcd(name, faults).await;
        let names = done(end).names();
        assert_eq!(names, 3_000, "{name}");
        assert_eq!(whole_tree(&store).await as u64, names, "{name}");
    }

    #[tokio::test]
    async fn waves_of_commits_at_once_leave_a_whole_tree() {
        fills_whole("waves-whole", Faults::default()).await;
    }

    /// Fills with `faults`, which run etcd out of room: the fill stops there with some of
    /// the names written, a whole tree, and no word of an inconsistent volume.
    async fn stops_whole_for_room(name: &str, faults: Faults) {
        let (end, store) = fill_as_etcd(name, faults).await;
        let (e, written, stray) = refused(end);
        assert_eq!(stray, None, "{name}");
        assert!(e.to_string().contains("out of room"), "{name}: {e}");
        let names = written.names();
        assert!(names > 0 && names < 3_000, "{name}: {written:?}");
        assert_eq!(whole_tree(&store).await as u64, names, "{name}");
    }

    #[tokio::test]
    async fn a_wave_that_runs_out_of_room_is_taken_back_whole() {
        let faults = Faults {
            room: 4_000,
            ..Faults::default()
        };
        stops_whole_for_room("waves-room", faults).await;
    }

    #[tokio::test]
    async fn a_wave_the_engine_will_not_take_back_is_said_to_be_stray() {
        let (end, _store) = fill_as_etcd(
            "waves-stray",
            Faults {
                room: 4_000,
                deletes_too: true,
                ..Faults::default()
            },
        )
        .await;
        let (e, _, stray) = refused(end);
        let stray = stray.expect("the deletes were refused");
        assert!(e.to_string().contains("out of room"), "{e}");
        assert!(stray.contains("out of room"), "{stray}");
    }

    /// A last commit that lands and yet times out, of a wave or of a batch written in a
    /// commit of its own (one commit at a time), counts as written: the counters are read
    /// back.
    #[tokio::test]
    async fn a_last_commit_that_lands_and_yet_times_out_keeps_its_batches() {
        for at_once in [4, 1] {
            let faults = Faults {
                seal: Seal::LandsAndTimesOut,
                at_once,
                ..Faults::default()
            };
            fills_whole(&format!("timeout-{at_once}"), faults).await;
        }
    }

    /// etcd out of room just at a wave's last commit: refused unapplied, which etcd 3.5
    /// then also does to the counters' read-back. The wave is taken back, and the volume
    /// is whole: no "not consistent".
    #[tokio::test]
    async fn a_last_commit_refused_for_room_takes_its_wave_back_and_stays_whole() {
        // the fourth wave's: three waves stand
        let faults = Faults {
            seal: Seal::FindsNoRoom,
            seals_before: 3,
            ..Faults::default()
        };
        stops_whole_for_room("waves-seal-full", faults).await;
    }

    /// A last commit that fails in a way that may hide its landing, and whose read-back
    /// etcd refuses (out of room after it): whether it landed cannot be told, and the
    /// fill says the volume may not be consistent, in a wave and in a commit of its own.
    #[tokio::test]
    async fn a_last_commit_that_cannot_be_told_to_have_landed_is_said_to_be_stray() {
        for at_once in [4, 1] {
            let (end, _store) = fill_as_etcd(
                &format!("untold-{at_once}"),
                Faults {
                    seal: Seal::LandsFillsUpAndTimesOut,
                    seals_before: 2,
                    at_once,
                    ..Faults::default()
                },
            )
            .await;
            let (e, written, stray) = refused(end);
            assert!(e.to_string().contains("timed out"), "{at_once}: {e}");
            assert!(written.names() > 0, "{at_once}: {written:?}");
            let stray = stray.unwrap_or_else(|| panic!("{at_once}: no stray"));
            assert!(stray.contains("could not be told"), "{at_once}: {stray}");
        }
    }

    /// A directory of 60 sub-directories is one batch of more writes than a commit takes
    /// (its entries, their nodes and records): it goes out as several commits, and when
    /// etcd runs out of room within them, those that landed are taken back too.
    #[tokio::test]
    async fn a_batch_split_over_several_commits_is_taken_back_whole() {
        let shape = crate::fill::shape::Shape {
            fanout: 60,
            ..crate::fill::shape::every_feature(0)
        };
        let l = crate::fill::shape::test_layout(shape.clone());
        assert!(
            l.batches(4).any(|b| put_count(&b) + 2 > 128),
            "no batch is split"
        );
        let (end, store) = fill_shape_as_etcd("split-whole", &shape, Faults::default()).await;
        assert_eq!(whole_tree(&store).await as u64, done(end).names());
        for room in (40..1_200).step_by(29) {
            let name = format!("split-{room}");
            let (end, store) = fill_shape_as_etcd(
                &name,
                &shape,
                Faults {
                    room,
                    ..Faults::default()
                },
            )
            .await;
            let (e, written, stray) = refused(end);
            assert_eq!(stray, None, "room {room}");
            assert!(e.to_string().contains("out of room"), "{e}");
            assert_eq!(
                whole_tree(&store).await as u64,
                written.names(),
                "room {room}"
            );
        }
    }
}
