//! Bulk loading for `metabench fill` on SQL engines, as `dbMeta.LoadMeta` (`pkg/meta/sql.go`)
//! loads a dump: multi-row inserts per table (xorm's batch `Insert`), a whole batch in
//! one transaction with its share of `usedSpace` and `totalInodes`.

use super::rows::node_args;
use super::SqlSession;
use crate::fill::{reserve_ids, Batch, BulkLoad, Node, Totals};
use crate::sql::conn::{Arg, DbError};
use crate::{MetaError, Result};
use async_trait::async_trait;
use metabench_schema::sql::{NodeRow, NODE_COLUMNS};
use metabench_schema::Ino;
use std::sync::Arc;

/// An SQL session used for bulk writes.
pub(crate) struct SqlBulk {
    pub(crate) s: SqlSession,
}

fn db(e: DbError) -> MetaError {
    MetaError::Engine(e.msg)
}

/// Rows of one table in a batch, with their values.
struct Rows<'a> {
    table: &'static str,
    columns: &'static [&'static str],
    args: Vec<Arg<'a>>,
}

impl<'a> Rows<'a> {
    fn new(table: &'static str, columns: &'static [&'static str]) -> Self {
        Self {
            table,
            columns,
            args: Vec::new(),
        }
    }

    fn push(&mut self, row: impl IntoIterator<Item = Arg<'a>>) {
        self.args.extend(row);
    }

    /// The multi-row INSERT, in MySQL form (rendered per dialect by the caller).
    fn statement(&self) -> String {
        let n = self.args.len() / self.columns.len();
        let row = format!("({})", vec!["?"; self.columns.len()].join(","));
        let cols: Vec<String> = self.columns.iter().map(|c| format!("`{c}`")).collect();
        format!(
            "INSERT INTO `{{p}}{}` ({}) VALUES {}",
            self.table,
            cols.join(","),
            vec![row; n].join(",")
        )
    }
}

const EDGE: &[&str] = &["parent", "name", "inode", "type"];
const DIR_STATS: &[&str] = &["inode", "data_length", "used_space", "used_inodes"];
const SYMLINK: &[&str] = &["inode", "target"];
const XATTR: &[&str] = &["inode", "name", "value"];
const CHUNK: &[&str] = &["inode", "indx", "slices"];
const CHUNK_REF: &[&str] = &["chunkid", "size", "refs"];

impl SqlBulk {
    async fn exec(&mut self, template: &str, args: &[Arg<'_>]) -> Result<()> {
        let sql: crate::sql::conn::Sql =
            Arc::from(self.s.st.dialect.render(template, &self.s.st.prefix));
        self.s.exec(&sql, args).await.map_err(db)?;
        Ok(())
    }

    async fn insert(&mut self, rows: &Rows<'_>) -> Result<()> {
        if rows.args.is_empty() {
            return Ok(());
        }
        self.exec(&rows.statement(), &rows.args).await
    }

    async fn write_rows(&mut self, batch: &Batch, added: &Totals) -> Result<()> {
        let mut nodes = Rows::new("node", &NODE_COLUMNS);
        let mut edges = Rows::new("edge", EDGE);
        let mut stats = Rows::new("dir_stats", DIR_STATS);
        let mut symlinks = Rows::new("symlink", SYMLINK);
        let mut xattrs = Rows::new("xattr", XATTR);
        let mut chunks = Rows::new("chunk", CHUNK);
        let mut refs = Rows::new("chunk_ref", CHUNK_REF);
        let mut slices: Vec<[u8; metabench_schema::slice::SLICE_LEN]> = Vec::new();
        // directories first: the base's rows (made by mkdir) are replaced
        let dirs: Vec<Ino> = batch.dirs.iter().map(|d| d.ino).collect();
        self.delete_dirs(&dirs).await?;
        for d in &batch.dirs {
            nodes.push(node_args(&NodeRow::from_attr(d.ino, &d.attr)));
            stats.push([
                Arg::I64(d.ino as i64),
                Arg::I64(d.stat.length),
                Arg::I64(d.stat.space),
                Arg::I64(d.stat.inodes),
            ]);
        }
        for e in &batch.entries {
            if let Node::File { chunks: c, .. } = &e.node {
                slices.extend(c.iter().map(|(_, s)| s.encode()));
            }
        }
        let mut next_slice = slices.iter();
        for e in &batch.entries {
            edges.push([
                Arg::I64(e.parent as i64),
                Arg::Bytes(&e.name),
                Arg::I64(e.ino as i64),
                Arg::I32(e.typ.as_u8() as i32),
            ]);
            match &e.node {
                Node::Dir | Node::HardLink => {}
                Node::Symlink { attr, target } => {
                    nodes.push(node_args(&NodeRow::from_attr(e.ino, attr)));
                    symlinks.push([Arg::I64(e.ino as i64), Arg::Bytes(target)]);
                }
                Node::File {
                    attr,
                    chunks: c,
                    xattr,
                } => {
                    nodes.push(node_args(&NodeRow::from_attr(e.ino, attr)));
                    for (indx, s) in c {
                        let encoded = next_slice.next().expect("one encoding per slice");
                        chunks.push([
                            Arg::I64(e.ino as i64),
                            Arg::I32(*indx as i32),
                            Arg::Bytes(&encoded[..]),
                        ]);
                        refs.push([Arg::I64(s.id as i64), Arg::I32(s.size as i32), Arg::I32(1)]);
                    }
                    if let Some((name, value)) = xattr {
                        let name = std::str::from_utf8(name).map_err(|_| MetaError::Invalid)?;
                        xattrs.push([Arg::I64(e.ino as i64), Arg::Str(name), Arg::Bytes(value)]);
                    }
                }
            }
        }
        for rows in [&nodes, &edges, &stats, &symlinks, &xattrs, &chunks, &refs] {
            self.insert(rows).await?;
        }
        for (name, v) in [("usedSpace", added.space), ("totalInodes", added.inodes)] {
            self.exec(
                "UPDATE `{p}counter` SET `value`=`value`+? WHERE `name`=?",
                &[Arg::I64(v), Arg::Str(name)],
            )
            .await?;
        }
        Ok(())
    }

    /// Deletes the node and dir-stat rows of directories about to be written.
    async fn delete_dirs(&mut self, dirs: &[Ino]) -> Result<()> {
        if dirs.is_empty() {
            return Ok(());
        }
        let list = vec!["?"; dirs.len()].join(",");
        let args: Vec<Arg> = dirs.iter().map(|&i| Arg::I64(i as i64)).collect();
        for table in ["node", "dir_stats"] {
            self.exec(
                &format!("DELETE FROM `{{p}}{table}` WHERE `inode` IN ({list})"),
                &args,
            )
            .await?;
        }
        Ok(())
    }
}

#[async_trait]
impl BulkLoad for SqlBulk {
    async fn reserve(&mut self, name: &str, n: u64) -> Result<u64> {
        reserve_ids(&mut self.s, name, n).await
    }

    async fn write(&mut self, batch: &Batch, added: &Totals) -> Result<()> {
        self.s.begin().await.map_err(db)?;
        match self.write_rows(batch, added).await {
            Ok(()) => self.s.commit().await.map_err(db),
            Err(e) => {
                let _ = self.s.rollback().await;
                Err(e)
            }
        }
    }
}
