//! Bulk loading for `metabench fill` on a transactional KV, as `kvMeta.LoadMeta`
//! (`pkg/meta/tkv.go`) loads a dump: blind puts, a batch in one commit (batches are
//! small enough where the backend caps a transaction's writes, e.g. etcd's
//! `--max-txn-ops`).

use super::kv::{KvBackend, KvError, Write};
use super::session::TkvSession;
use crate::fill::{reserve_ids, Batch, BulkLoad, Node, Shape, Totals, BATCH_ENTRIES};
use crate::{MetaError, Result};
use async_trait::async_trait;
use metabench_schema::tkv::{pack_counter, parse_counter, TkvKeys};
use metabench_schema::Dentry;
use std::sync::Arc;

/// A TKV session used for bulk writes.
pub(super) struct TkvBulk {
    pub(super) s: TkvSession,
    pub(super) kv: Arc<dyn KvBackend>,
    pub(super) keys: TkvKeys,
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

/// The puts of one batch.
fn puts(keys: &TkvKeys, batch: &Batch) -> Vec<Write> {
    let mut w: Vec<Write> = Vec::with_capacity(batch.entries.len() * 2 + batch.dirs.len() * 2);
    for d in &batch.dirs {
        w.push((keys.inode(d.ino), Some(d.attr.encode())));
        w.push((keys.dir_stat(d.ino), Some(d.stat.encode().to_vec())));
    }
    for e in &batch.entries {
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
        let mut writes = puts(&self.keys, batch);
        let counters = [
            self.keys.counter("usedSpace"),
            self.keys.counter("totalInodes"),
        ];
        for attempt in 1.. {
            // the counters in the same commit, on the condition that nobody moved them
            let now = self.kv.batch_get(&counters).await.map_err(kv)?;
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
            writes.extend(tail);
            let per = self.kv.commit_every().unwrap_or(usize::MAX).max(1);
            let mut parts = writes.chunks(per).peekable();
            let mut result = Ok(());
            while let Some(part) = parts.next() {
                // the observed counters guard the last commit, which writes them
                let guard: &[(Vec<u8>, i64)] = if parts.peek().is_none() {
                    &observed
                } else {
                    &[]
                };
                result = self.kv.commit(guard, part).await;
                if result.is_err() {
                    break;
                }
            }
            match result {
                Ok(()) => return Ok(()),
                Err(KvError::Conflict(_)) if attempt < crate::retry::MAX_TRIES => {
                    writes.truncate(writes.len() - 2);
                }
                Err(e) => return Err(kv(e)),
            }
        }
        unreachable!("the loop returns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_put_count_is_the_puts_made() {
        let shape = crate::fill::shape::every_feature((64 << 20) + 1);
        let l = crate::fill::shape::test_layout(shape);
        let keys = TkvKeys::for_volume(b"v");
        for b in l.batches(7) {
            assert_eq!(put_count(&b), puts(&keys, &b).len());
        }
    }
}
