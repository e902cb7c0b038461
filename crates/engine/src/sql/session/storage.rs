//! The storage steps of an SQL session (JuiceFS's `engine` interface as `pkg/meta/sql.go`
//! implements it): each `do*` step is one transaction of this family, most written beside
//! their concern (`namespace.rs`, `attrs.rs`, `chunks.rs`, `background.rs`).

use super::rows::*;
use super::sql_session::SqlSession;
use super::txn::{incr_counter_bg, ro_txn, simple, tx_lock_of, txn};
use crate::base::{Background, Storage, INODE_BATCH};
use crate::sql::conn::{Arg, ErrKind};
use crate::{
    ChunkWrite, Ctx, Entry, Made, MetaError, NewNode, Rename, Renamed, Result, SessionStats,
    SetAttr, Xattr,
};
use metabench_schema::{Attr, DirStat, Ino, Slice};

impl Storage for SqlSession {
    crate::base::storage::client_state_in!(base);

    /// `incrCounter`: one transaction of `SELECT … FOR UPDATE` and UPDATE (or INSERT).
    async fn incr_counter(&mut self, name: &str, by: i64) -> Result<i64> {
        let st = self.st.clone();
        txn!(self, {
            let rows = self
                .fetch(&st.counter_get_for_update, &[Arg::Str(name)])
                .await?;
            let v = match rows.first() {
                Some(r) => r.int(1)?,
                None => 0,
            } + by;
            if rows.is_empty() {
                self.exec(&st.counter_insert, &[Arg::Str(name), Arg::I64(v)])
                    .await?;
            } else {
                self.exec(&st.counter_update, &[Arg::I64(v), Arg::Str(name)])
                    .await?;
            }
            v
        })
    }

    /// The same transaction on the engine's shared connection (not counted), under the
    /// SQLite writer lock.
    fn prefetch_inodes(&mut self) -> Background<Option<i64>> {
        let (bg, target, st) = (self.bg.clone(), self.target.clone(), self.st.clone());
        let (base, dialect) = (self.base.clone(), self.st.dialect);
        Box::pin(async move {
            // `incrCounter`'s `txn`, which takes no lock but SQLite's.
            let _g = base.tx_lock(tx_lock_of(dialect, &[])).await;
            let mut guard = bg.lock().await;
            if guard.is_none() {
                match target.connect().await {
                    Ok(c) => *guard = Some(c),
                    Err(e) => {
                        tracing::warn!("prefetch inodes: {e}");
                        return None;
                    }
                }
            }
            let conn = guard.as_mut().expect("connected above");
            match incr_counter_bg(conn, &st, "nextInode", INODE_BATCH).await {
                Ok(v) => Some(v as i64),
                Err(e) => {
                    tracing::warn!("prefetch inodes: {}", e.msg);
                    if e.kind == ErrKind::Broken {
                        *guard = None;
                    }
                    None
                }
            }
        })
    }
    async fn do_mknod(&mut self, ctx: &Ctx, ino: Ino, node: &NewNode<'_>) -> Result<Made> {
        let mut found = None;
        match self.mknod_txn(ctx, ino, node, &mut found).await {
            Ok(attr) => Ok(Made::New(attr)),
            Err(MetaError::Exists) => Ok(match found {
                Some((ino, attr)) => Made::Existing(ino, Some(attr)),
                None => Made::Existing(0, None),
            }),
            Err(e) => Err(e),
        }
    }

    async fn do_rename(&mut self, ctx: &Ctx, r: &Rename<'_>) -> Result<Renamed> {
        self.rename_txn(ctx, r).await
    }

    async fn do_getattr(&mut self, ino: Ino) -> Result<Attr> {
        self.getattr_inner(ino).await
    }

    /// `dbMeta.doReadlink` with noatime: one SELECT of the symlink row.
    async fn do_readlink(&mut self, ino: Ino) -> Result<Vec<u8>> {
        let st = self.st.clone();
        simple!(self, {
            let rows = self.fetch(&st.symlink_get, &[Arg::I64(ino as i64)]).await?;
            match rows.first() {
                Some(r) => r.bytes(1)?.to_vec(),
                None => Vec::new(),
            }
        })
    }

    async fn do_setxattr(&mut self, ino: Ino, x: &Xattr<'_>) -> Result<()> {
        self.setxattr_txn(ino, x).await
    }

    async fn do_removexattr(&mut self, ino: Ino, name: &[u8]) -> Result<()> {
        let key = xattr_key(ino, name)?;
        let st = self.st.clone();
        txn!(self, {
            let d = self.exec(&st.xattr_remove, &key).await?;
            if d.rows_affected == 0 {
                return Err(MetaError::NoAttr.into());
            }
        })
    }

    async fn do_read(&mut self, ino: Ino, indx: u32) -> Result<Vec<Slice>> {
        self.read_slices(ino, indx).await
    }

    async fn do_readdir(&mut self, ino: Ino, plus: bool, entries: &mut Vec<Entry>) -> Result<()> {
        self.read_entries(ino, plus, entries).await
    }

    async fn do_list_dir(&mut self, ino: Ino, plus: bool) -> Result<u64> {
        self.list_entries(ino, plus).await
    }

    async fn do_get_parents(&mut self, ino: Ino) -> Result<Vec<(Ino, i64)>> {
        self.get_parents(ino).await
    }

    async fn do_update_dir_stat(&mut self, batch: Vec<(Ino, DirStat)>) -> Result<()> {
        self.update_dir_stats(batch).await
    }

    async fn do_flush_stats(&mut self) -> Result<()> {
        self.flush_stats().await
    }

    async fn do_delete_file_data(&mut self, ino: Ino, _length: u64) -> Result<()> {
        self.delete_file_data(ino).await
    }

    async fn do_null_round_trip(&mut self) -> Result<&'static str> {
        self.stats.round_trips += 1;
        let r = match self.conn_or_reconnect().await {
            Ok(conn) => conn.simple_fetch("SELECT 1").await.map(drop),
            Err(e) => Err(e),
        };
        r.map(|()| "SELECT 1").map_err(|e| MetaError::Engine(e.msg))
    }
    async fn do_link(&mut self, ctx: &Ctx, ino: Ino, parent: Ino, name: &[u8]) -> Result<Attr> {
        self.link_txn(ctx, ino, parent, name).await
    }

    async fn do_unlink(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<Attr> {
        self.unlink_txn(ctx, parent, name).await
    }

    async fn do_rmdir(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<Ino> {
        self.rmdir_txn(ctx, parent, name).await
    }

    async fn do_lookup(&mut self, _ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<(Ino, Attr)> {
        self.lookup_txn(parent, name).await
    }

    async fn do_setattr(&mut self, ctx: &Ctx, ino: Ino, set: &SetAttr) -> Result<Attr> {
        self.setattr_txn(ctx, ino, set).await
    }

    async fn do_getxattr(&mut self, ino: Ino, name: &[u8]) -> Result<Vec<u8>> {
        let key = xattr_key(ino, name)?;
        let st = self.st.clone();
        simple!(self, {
            let rows = self.fetch(&st.xattr_get, &key).await?;
            match rows.first() {
                Some(r) => r.bytes(3)?.to_vec(),
                None => return Err(MetaError::NoAttr.into()),
            }
        })
    }

    async fn do_listxattr(&mut self, ino: Ino) -> Result<Vec<Vec<u8>>> {
        let st = self.st.clone();
        let i = Arg::I64(ino as i64);
        ro_txn!(self, {
            let rows = self.fetch(&st.xattr_list, &[i, i]).await?;
            let mut names = Vec::with_capacity(rows.len());
            for r in &rows {
                names.push(r.bytes(2)?.to_vec());
            }
            if self.get_node(ino, false).await?.is_none() {
                return Err(MetaError::NotFound.into());
            }
            names
        })
    }

    async fn do_write(&mut self, ino: Ino, w: ChunkWrite) -> Result<()> {
        self.write_txn(ino, w).await
    }

    fn session_stats(&self) -> SessionStats {
        SessionStats {
            lock_wait_ns: self.base.lock_wait_ns(),
            ..self.stats
        }
    }
}
