//! Reads that Redis transactions share: the inode record, and `getParents` for the quota
//! check of `doWrite`, `doTruncate` and `doFallocate` (`pkg/meta/redis.go`).

use super::txn::{Conn, TxErr};
use super::wire::command;
use crate::retry::decode_attr as decode;
use crate::MetaError;
use metabench_schema::redis_keys::RedisKeys;
use metabench_schema::{Attr, Ino};
use std::collections::HashMap;

/// `redisMeta.getParents`: the parent, or for a hard-linked file (parent 0) the parents
/// with a positive count in its `p{ino}` hash (one `HGETALL`).
pub(crate) async fn quota_parents(
    c: &mut Conn,
    keys: &RedisKeys,
    ino: Ino,
    attr: &Attr,
) -> std::result::Result<Vec<Ino>, TxErr> {
    if attr.parent > 0 {
        return Ok(vec![attr.parent]);
    }
    let all: HashMap<String, String> = c.query(command!("HGETALL", keys.parents(ino))).await?;
    Ok(all
        .into_iter()
        .filter(|(_, n)| n.parse::<i64>().unwrap_or(0) > 0)
        .filter_map(|(p, _)| p.parse::<Ino>().ok())
        .collect())
}

/// Reads the inode record inside a transaction: ENOENT when there is none.
pub(crate) async fn get_attr(c: &mut Conn, key: &str) -> std::result::Result<Attr, TxErr> {
    let buf: Option<Vec<u8>> = c.query(command!("GET", key)).await?;
    decode(&buf.ok_or(MetaError::NotFound)?)
}
