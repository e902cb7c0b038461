//! Reads that TKV transactions share: the inode record, and the parents of a file
//! (`getParents` for the quota check of `doWrite`, `doTruncate` and `doFallocate`, and
//! `doGetParents`) in `pkg/meta/tkv.go`.

use super::kv::{KeyRange, TxErr, Txn};
use crate::retry::decode_attr as decode;
use crate::MetaError;
use metabench_schema::tkv::{parse_counter, TkvKeys};
use metabench_schema::{Attr, Ino};

/// The parents in a scan of `A<ino>P`: (parent, link count) for counts above zero.
pub(crate) fn parents_of(prefix: &[u8], rows: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<(Ino, i64)> {
    let plen = prefix.len();
    rows.into_iter()
        .filter(|(k, _)| k.len() == plen + 8)
        .map(|(k, v)| {
            let p = u64::from_le_bytes(k[plen..].try_into().expect("8 bytes"));
            (p, parse_counter(Some(&v)))
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// `kvMeta.getParents`: the parent, or for a hard-linked file (parent 0) the parents with
/// a positive count under `A{ino}P` (one scan).
pub(crate) async fn quota_parents(
    tx: &mut Txn,
    keys: &TkvKeys,
    ino: Ino,
    attr: &Attr,
) -> std::result::Result<Vec<Ino>, TxErr> {
    if attr.parent > 0 {
        return Ok(vec![attr.parent]);
    }
    let prefix = keys.parent_prefix(ino);
    let rows = tx
        .scan(KeyRange::new(&prefix, &TkvKeys::prefix_end(&prefix)))
        .await?;
    Ok(parents_of(&prefix, rows)
        .into_iter()
        .map(|(p, _)| p)
        .collect())
}

/// Reads the inode record inside a transaction: ENOENT when there is none.
pub(crate) async fn get_attr(tx: &mut Txn, key: &[u8]) -> std::result::Result<Attr, TxErr> {
    let buf = tx.get(key).await?.ok_or(MetaError::NotFound)?;
    decode(&buf)
}
