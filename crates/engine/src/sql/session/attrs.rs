//! Attributes, directory listings and extended attributes on an SQL session
//! (`doGetAttr`, `doLookup`, `doSetAttr`, `doReaddir`, `doSetXattr`).

use super::rows::*;
use super::sql_session::SqlSession;
use super::tx_err::final_error;
use super::txn::{ro_txn, simple, txn};
use crate::rules::merge_attr;
use crate::sql::conn::Arg;
use crate::{Ctx, Entry, MetaError, Result, SetAttr, Xattr, XattrFlags};
use metabench_schema::sql::{Dialect, NodeRow};
use metabench_schema::{Attr, Ino, Timestamp, TRASH_INODE};

impl SqlSession {
    pub(super) async fn getattr_inner(&mut self, ino: Ino) -> Result<Attr> {
        let st = self.st.clone();
        let n = simple!(self, {
            let rows = self.fetch(&st.node_get, &[Arg::I64(ino as i64)]).await?;
            match rows.first() {
                Some(r) => parse_node(r, 0)?,
                None => return Err(MetaError::NotFound.into()),
            }
        })?;
        Ok(n.to_attr()?)
    }

    /// `dbMeta.doLookup`: the entry joined with its node, one statement.
    pub(super) async fn lookup_txn(&mut self, parent: Ino, name: &[u8]) -> Result<(Ino, Attr)> {
        let st = self.st.clone();
        let n = simple!(self, {
            let rows = self
                .fetch(&st.lookup, &[Arg::I64(parent as i64), Arg::Bytes(name)])
                .await?;
            match rows.first() {
                Some(r) => parse_node(r, 0)?,
                None => return Err(MetaError::NotFound.into()),
            }
        })?;
        Ok((n.inode as Ino, n.to_attr()?))
    }

    pub(super) async fn setattr_txn(&mut self, ctx: &Ctx, ino: Ino, set: &SetAttr) -> Result<Attr> {
        let st = self.st.clone();
        txn!(self, [ino], {
            let cur = self.get_node(ino, true).await?.ok_or(MetaError::NotFound)?;
            let cattr = cur.to_attr()?;
            if cattr.parent > TRASH_INODE {
                return Err(MetaError::Perm.into());
            }
            let now = Timestamp::now();
            match merge_attr(ctx, &cattr, set, now)? {
                None => cattr,
                Some(mut dirty) => {
                    dirty.ctime = now;
                    let n = NodeRow::from_attr(ino, &dirty);
                    self.exec(
                        &st.node_setattr,
                        &[
                            Arg::I32(n.flags as i32),
                            Arg::I32(n.mode as i32),
                            Arg::I32(n.uid as i32),
                            Arg::I32(n.gid as i32),
                            Arg::I64(n.atime),
                            Arg::I64(n.mtime),
                            Arg::I64(n.ctime),
                            Arg::I32(n.atimensec as i32),
                            Arg::I32(n.mtimensec as i32),
                            Arg::I32(n.ctimensec as i32),
                            Arg::I32(n.access_acl_id.unwrap_or(0) as i32),
                            Arg::I32(n.default_acl_id.unwrap_or(0) as i32),
                            Arg::I32(n.tier_id.unwrap_or(0) as i32),
                            Arg::I64(ino as i64),
                        ],
                    )
                    .await?;
                    dirty
                }
            }
        })
    }

    pub(super) async fn read_entries(
        &mut self,
        ino: Ino,
        plus: bool,
        out: &mut Vec<Entry>,
    ) -> Result<()> {
        let st = self.st.clone();
        let sql = if plus { &st.readdir_plus } else { &st.readdir };
        let rows = self.rows_of_inode(sql, ino).await?;
        for r in &rows {
            let e = parse_edge(r, 0).map_err(|e| MetaError::Engine(e.msg))?;
            if e.name.is_empty() {
                tracing::error!(
                    "corrupt entry with empty name: inode {} parent {ino}",
                    e.inode
                );
                continue;
            }
            let attr = if plus {
                parse_node(r, 5)
                    .map_err(|e| final_error(e, false))?
                    .to_attr()?
            } else {
                Attr::type_only(file_type(e.typ)?)
            };
            out.push(Entry {
                name: e.name,
                inode: e.inode,
                attr,
            });
        }
        Ok(())
    }

    /// `dbMeta.getDirFetcher`, page after page as `DirHandler.List` asks to the end (pages
    /// of `DirBatchNum["db"]`: 40960 entries, 4096 on SQLite), each in a read-only
    /// transaction of two statements: the ids of the page's entries in name order from
    /// the last name listed, then those entries (joined with their nodes when `plus`).
    /// The last page is the first one short of a full page.
    pub(super) async fn list_entries(&mut self, ino: Ino, plus: bool) -> Result<u64> {
        let st = self.st.clone();
        let page = if st.dialect == Dialect::Sqlite {
            4096
        } else {
            40960
        };
        let render = |template: String| -> crate::sql::conn::Sql {
            std::sync::Arc::from(st.dialect.render(&template, &st.prefix))
        };
        let first_ids = render(format!(
            "SELECT `id` FROM `{{p}}edge` WHERE (parent = ?) ORDER BY `name` LIMIT {page}"
        ));
        let next_ids = render(format!(
            "SELECT `id` FROM `{{p}}edge` WHERE (parent = ? and name > ?) ORDER BY `name` LIMIT {page}"
        ));
        let cols = if plus {
            "`{p}edge`.`name`, `{p}node`.* FROM `{p}edge` INNER JOIN `{p}node` ON {p}edge.inode={p}node.inode"
        } else {
            "`{p}edge`.`id`, `{p}edge`.`name`, `{p}edge`.`type` FROM `{p}edge`"
        };
        let mut cursor: Option<Vec<u8>> = None;
        let mut listed = 0u64;
        loop {
            let (ids_sql, after) = (
                if cursor.is_some() {
                    &next_ids
                } else {
                    &first_ids
                },
                cursor.clone(),
            );
            let mut names: Vec<Vec<u8>> = ro_txn!(self, {
                let mut args = vec![Arg::I64(ino as i64)];
                if let Some(name) = &after {
                    args.push(Arg::Bytes(name));
                }
                let ids = self.fetch(ids_sql, &args).await?;
                let mut ids_args = Vec::with_capacity(ids.len());
                for r in &ids {
                    ids_args.push(Arg::I64(r.int(0)?));
                }
                // xorm's `In` over no ids still sends the statement, matching nothing.
                let within = if ids_args.is_empty() {
                    "0=1".to_owned()
                } else {
                    format!(
                        "`{{p}}edge`.`id` IN ({})",
                        vec!["?"; ids_args.len()].join(",")
                    )
                };
                let rows_sql = render(format!(
                    "SELECT {cols} WHERE {within} ORDER BY `{{p}}edge`.`name`"
                ));
                let name_col = usize::from(!plus);
                let mut names = Vec::with_capacity(ids_args.len());
                for r in &self.fetch(&rows_sql, &ids_args).await? {
                    if plus {
                        // parsed as `parseAttr` does: a client's work, and a corrupt row
                        // fails the listing as it fails JuiceFS's
                        parse_node(r, 1)?.to_attr()?;
                    }
                    names.push(r.bytes(name_col)?.to_vec());
                }
                names
            })?;
            listed += names.len() as u64;
            if names.len() < page {
                break;
            }
            cursor = names.pop();
        }
        Ok(listed)
    }

    pub(super) async fn setxattr_txn(&mut self, ino: Ino, x: &Xattr<'_>) -> Result<()> {
        let Xattr { name, value, flags } = *x;
        let name = xattr_name(name)?;
        let st = self.st.clone();
        txn!(self, {
            let rows = self
                .fetch(
                    &st.xattr_get_for_update,
                    &[Arg::I64(ino as i64), Arg::Str(name)],
                )
                .await?;
            let existing = match rows.first() {
                Some(r) => Some((r.int(0)?, r.bytes(3)?.to_vec())),
                None => None,
            };
            let insert = [Arg::I64(ino as i64), Arg::Str(name), Arg::Bytes(value)];
            let action = match (flags, &existing) {
                (XattrFlags::Create, Some(_)) => return Err(MetaError::Exists.into()),
                (XattrFlags::Replace, None) => return Err(MetaError::NoAttr.into()),
                (XattrFlags::Create, None) | (XattrFlags::Any, None) => Some(None),
                (XattrFlags::Replace, Some((id, _))) => Some(Some(*id)),
                (XattrFlags::Any, Some((id, v))) => (v.as_slice() != value).then_some(Some(*id)),
            };
            match action {
                None => {}
                Some(None) => {
                    if st.dialect == Dialect::Postgres {
                        self.fetch(&st.xattr_insert, &insert).await?;
                    } else {
                        self.exec(&st.xattr_insert, &insert).await?;
                    }
                }
                Some(Some(id)) => {
                    self.exec(
                        &st.xattr_update,
                        &[
                            Arg::Bytes(value),
                            Arg::I64(id),
                            Arg::I64(ino as i64),
                            Arg::Str(name),
                        ],
                    )
                    .await?;
                }
            }
        })
    }
}
