//! Bulk loading for `metabench fill` on Redis, as `redisMeta.loadEntry` / `LoadMeta`
//! (`pkg/meta/redis.go`) load a dump: one `MULTI … EXEC` pipeline per batch (`TxPipeline`),
//! entries by `HSET` of many fields, slices by `RPUSH`, dir stats by `HSET` of the three
//! dir-stat hashes, hard-linked files' parents in `p{ino}`, and the batch's share of
//! `usedSpace` and `totalInodes` by `INCRBY` in the same transaction.

use super::session::RedisSession;
use crate::fill::{reserve_ids, Batch, BulkLoad, DirNode, Node, Totals};
use crate::Result;
use async_trait::async_trait;
use metabench_schema::redis_keys::names;
use metabench_schema::{Dentry, Ino};
use redis::{cmd, pipe, Pipeline};
use std::collections::BTreeMap;

/// A Redis session's connection used for bulk writes.
pub(super) struct RedisBulk {
    pub(super) s: RedisSession,
}

impl RedisBulk {
    /// `HSET`s a directory's dir stat into the three dir-stat hashes.
    fn dir_stat(&self, p: &mut Pipeline, d: &DirNode) {
        let field = d.ino.to_string();
        let values = [d.stat.length, d.stat.space, d.stat.inodes];
        for (hash, v) in names::DIR_STAT_HASHES.into_iter().zip(values) {
            p.cmd("HSET")
                .arg(self.s.keys.named(hash))
                .arg(&field)
                .arg(v);
        }
    }

    async fn send(&mut self, p: &Pipeline) -> Result<()> {
        self.s.conn.pipeline::<()>(p).await?;
        Ok(())
    }
}

#[async_trait]
impl BulkLoad for RedisBulk {
    async fn reserve(&mut self, name: &str, n: u64) -> Result<u64> {
        reserve_ids(&mut self.s, name, n).await
    }

    async fn write(&mut self, batch: &Batch, added: &Totals) -> Result<()> {
        let keys = &self.s.keys;
        let mut p = pipe();
        p.atomic();
        for d in &batch.dirs {
            p.cmd("SET").arg(keys.inode(d.ino)).arg(d.attr.encode());
            self.dir_stat(&mut p, d);
        }
        // entries, one HSET per directory (loadEntry's HSET of up to `batch` fields)
        let mut by_parent: BTreeMap<Ino, redis::Cmd> = BTreeMap::new();
        for e in &batch.entries {
            let c = by_parent.entry(e.parent).or_insert_with(|| {
                let mut c = cmd("HSET");
                c.arg(keys.entries(e.parent));
                c
            });
            c.arg(&e.name[..]).arg(
                &Dentry {
                    typ: e.typ,
                    inode: e.ino,
                }
                .encode()[..],
            );
            match &e.node {
                Node::Dir | Node::HardLink => {}
                Node::Symlink { attr, target } => {
                    p.cmd("SET").arg(keys.symlink(e.ino)).arg(&target[..]);
                    p.cmd("SET").arg(keys.inode(e.ino)).arg(attr.encode());
                }
                Node::File {
                    attr,
                    chunks,
                    xattr,
                } => {
                    for (indx, slice) in chunks {
                        p.cmd("RPUSH")
                            .arg(keys.chunk(e.ino, *indx))
                            .arg(&slice.encode()[..]);
                    }
                    if let Some((name, value)) = xattr {
                        p.cmd("HSET")
                            .arg(keys.xattr(e.ino))
                            .arg(&name[..])
                            .arg(&value[..]);
                    }
                    if attr.nlink > 1 {
                        // every name of a filled file is in its parent
                        p.cmd("HSET")
                            .arg(keys.parents(e.ino))
                            .arg(e.parent)
                            .arg(attr.nlink);
                    }
                    p.cmd("SET").arg(keys.inode(e.ino)).arg(attr.encode());
                }
            }
        }
        for c in by_parent.into_values() {
            p.add_command(c);
        }
        p.cmd("INCRBY")
            .arg(keys.named(names::USED_SPACE))
            .arg(added.space);
        p.cmd("INCRBY")
            .arg(keys.named(names::TOTAL_INODES))
            .arg(added.inodes);
        self.send(&p).await
    }
}
