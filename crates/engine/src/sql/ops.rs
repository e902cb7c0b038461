//! [`SqlSession`]: one JuiceFS client on an SQL engine, sending exactly the statements of
//! `pkg/meta/sql.go` in the same transactions.
//!
//! Transactions follow `dbMeta.txn` (write: BEGIN … COMMIT, ROLLBACK on error, up to 50
//! attempts with an i² ms sleep on retryable errors), `dbMeta.roTxn` (a read-only,
//! repeatable-read transaction that always ends with ROLLBACK) and `dbMeta.simpleTxn`
//! (one autocommit statement, retried the same way). What the Go client does in the
//! background — dir-stat and volume-counter flushes, freeing deleted files' data — is
//! buffered here and done by [`Meta::flush`].

use super::conn::{Arg, Conn, DbError, Done, ErrKind, Row, Sql};
use super::dialect::Stmts;
use super::Target;
use crate::base::{Background, ClientState, Storage, INODE_BATCH};
use crate::common::{
    access, check_new_entry, check_parent_to_remove, check_rename, check_rmdir, check_sticky,
    check_unlink, child_mode_gid, is_trash, merge_owner_mode, FLAG_APPEND, FLAG_IMMUTABLE,
    FLAG_SKIP_TRASH, RENAME_EXCHANGE, RENAME_NOREPLACE, RENAME_RESTORE, RENAME_WHITEOUT,
    TRASH_NAME,
};
use crate::retry::{backoff_square, MAX_TRIES};
use crate::XattrFlags;
use crate::{Ctx, Entry, Made, Meta, MetaError, Result, SessionOptions, SessionStats, SetAttr};
use async_trait::async_trait;
use metabench_schema::sql::{Dialect, NodeRow};
use metabench_schema::{
    align4k, Attr, DirStat, FileType, Format, Ino, Slice, Timestamp, CHUNK_SIZE, ROOT_INODE,
    TRASH_INODE,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::{Mutex, OwnedMutexGuard};

const TYPE_FILE: i64 = 1;
const TYPE_DIR: i64 = 2;
const TYPE_SYMLINK: i64 = 3;
/// `doUpdateDirStat` updates at most this many directories per transaction.
const DIRSTAT_BATCH: usize = 1000;

/// Why a transaction attempt failed.
pub(crate) enum TxErr {
    /// An errno from the operation's logic: rolled back, not retried.
    Meta(MetaError),
    /// A parent update matched no row on MySQL (`syscall.EBUSY`): retried.
    Busy,
    /// A statement failed.
    Db(DbError),
    /// COMMIT failed.
    Commit(DbError),
}

impl From<MetaError> for TxErr {
    fn from(e: MetaError) -> Self {
        TxErr::Meta(e)
    }
}

impl From<DbError> for TxErr {
    fn from(e: DbError) -> Self {
        TxErr::Db(e)
    }
}

impl From<metabench_schema::DecodeError> for TxErr {
    fn from(e: metabench_schema::DecodeError) -> Self {
        TxErr::Meta(e.into())
    }
}

/// The error an operation returns after its last attempt.
fn final_error(e: TxErr, retryable: bool) -> MetaError {
    match e {
        TxErr::Meta(m) => m,
        TxErr::Busy => MetaError::Conflict(MAX_TRIES),
        TxErr::Db(d) | TxErr::Commit(d) if retryable => {
            tracing::debug!("giving up after {MAX_TRIES} tries: {}", d.msg);
            MetaError::Conflict(MAX_TRIES)
        }
        TxErr::Db(d) | TxErr::Commit(d) => MetaError::Engine(d.msg),
    }
}

/// A write transaction (`dbMeta.txn`). The body is a block evaluated inside the
/// transaction; `?` in it aborts the attempt.
macro_rules! txn {
    ($s:ident, $body:block) => {{
        let _guard = $s.write_guard().await;
        let mut attempt: u32 = 0;
        loop {
            let res: ::std::result::Result<_, TxErr> = async {
                $s.begin().await.map_err(TxErr::Db)?;
                #[allow(clippy::redundant_closure_call)]
                let v = $body;
                $s.commit().await.map_err(TxErr::Commit)?;
                Ok(v)
            }
            .await;
            match res {
                Ok(v) => break Ok(v),
                Err(e) => {
                    let retry = $s.abort(&e).await;
                    if retry && attempt + 1 < MAX_TRIES {
                        $s.stats.retries += 1;
                        tokio::time::sleep(backoff_square(attempt)).await;
                        attempt += 1;
                        continue;
                    }
                    break Err(final_error(e, retry));
                }
            }
        }
    }};
}

/// A read-only transaction (`dbMeta.roTxn`): always rolled back.
macro_rules! ro_txn {
    ($s:ident, $body:block) => {{
        let mut attempt: u32 = 0;
        loop {
            let res: ::std::result::Result<_, TxErr> = async {
                $s.begin_ro().await.map_err(TxErr::Db)?;
                Ok($body)
            }
            .await;
            let retry = match &res {
                Ok(_) => {
                    let _ = $s.rollback().await;
                    false
                }
                Err(e) => $s.abort(e).await,
            };
            match res {
                Ok(v) => break Ok(v),
                Err(e) if retry && attempt + 1 < MAX_TRIES => {
                    drop(e);
                    $s.stats.retries += 1;
                    tokio::time::sleep(backoff_square(attempt)).await;
                    attempt += 1;
                }
                Err(e) => break Err(final_error(e, retry)),
            }
        }
    }};
}

/// Autocommit reads (`dbMeta.simpleTxn`), retried on retryable errors.
macro_rules! simple {
    ($s:ident, $body:block) => {{
        let mut attempt: u32 = 0;
        loop {
            let res: ::std::result::Result<_, TxErr> = async { Ok($body) }.await;
            match res {
                Ok(v) => break Ok(v),
                Err(e) => {
                    let retry = matches!(&e, TxErr::Db(d) if d.kind != ErrKind::Fatal);
                    if retry && attempt + 1 < MAX_TRIES {
                        $s.stats.retries += 1;
                        tokio::time::sleep(backoff_square(attempt)).await;
                        attempt += 1;
                        continue;
                    }
                    break Err(final_error(e, retry));
                }
            }
        }
    }};
}

/// The 19 `node` values as bound parameters, INT columns as `int4`.
pub(crate) fn node_args(row: &NodeRow) -> [Arg<'static>; 19] {
    let v = row.values();
    let int32 = [1, 2, 3, 4, 5, 9, 10, 11, 12, 14, 16, 17, 18];
    let mut out = [Arg::I64(0); 19];
    for (i, x) in v.iter().enumerate() {
        out[i] = if int32.contains(&i) {
            Arg::I32(*x as i32)
        } else {
            Arg::I64(*x)
        };
    }
    out
}

fn parse_node(r: &Row, off: usize) -> std::result::Result<NodeRow, TxErr> {
    let mut v = [None; 19];
    for (i, x) in v.iter_mut().enumerate() {
        *x = r.opt_int(off + i)?;
    }
    Ok(NodeRow::from_values(v)?)
}

/// An `edge` row.
#[derive(Debug, Clone)]
struct EdgeRow {
    id: i64,
    name: Vec<u8>,
    inode: Ino,
    typ: i64,
}

fn parse_edge(r: &Row, off: usize) -> std::result::Result<EdgeRow, DbError> {
    Ok(EdgeRow {
        id: r.int(off)?,
        name: r.bytes(off + 2)?.to_vec(),
        inode: r.int(off + 3)? as Ino,
        typ: r.int(off + 4)?,
    })
}

fn file_type(t: i64) -> std::result::Result<FileType, MetaError> {
    Ok(FileType::from_u8(t as u8)?)
}

/// `getMtime`: the node's mtime in ns.
fn mtime_ns(n: &NodeRow) -> i64 {
    n.mtime * 1000 + n.mtimensec
}

fn ns(t: Timestamp) -> i64 {
    t.sec * 1_000_000_000 + t.nsec as i64
}

fn set_mtime(n: &mut NodeRow, t: Timestamp) {
    let (us, rest) = t.to_sql();
    n.mtime = us;
    n.mtimensec = rest as i64;
}

fn set_ctime(n: &mut NodeRow, t: Timestamp) {
    let (us, rest) = t.to_sql();
    n.ctime = us;
    n.ctimensec = rest as i64;
}

fn xattr_name(name: &[u8]) -> Result<&str> {
    if name.is_empty() {
        return Err(MetaError::Invalid);
    }
    std::str::from_utf8(name).map_err(|_| MetaError::Invalid)
}

/// The trash sub-directory of the hour of `secs` (UTC): `YYYY-MM-DD-HH`.
fn trash_hour(secs: i64) -> String {
    // civil_from_days (Howard Hinnant)
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let h = secs.rem_euclid(86_400) / 3600;
    format!("{y:04}-{m:02}-{d:02}-{h:02}")
}

/// `trashEntry`: `<parent>-<inode>-<name>`, cut to 255 bytes.
fn trash_entry(parent: Ino, inode: Ino, name: &[u8]) -> Vec<u8> {
    let mut s = format!("{parent}-{inode}-").into_bytes();
    s.extend_from_slice(name);
    s.truncate(255);
    s
}

fn unix_now() -> i64 {
    Timestamp::now().sec
}

/// One JuiceFS client on an SQL engine, with its own connection.
pub struct SqlSession {
    st: Arc<Stmts>,
    target: Arc<Target>,
    /// The engine's shared connection, used for the background inode prefetch.
    bg: Arc<Mutex<Option<Conn>>>,
    conn: Option<Conn>,
    stats: SessionStats,
    /// `Format.TrashDays`: deleted entries move to the trash when > 0.
    trash_days: i64,
    /// The trash sub-directory of the current hour (`subTrash`).
    sub_trash: Option<(String, Ino)>,
    /// SQLite: JuiceFS serialises all write transactions of a client (one writer).
    sqlite_lock: Option<Arc<Mutex<()>>>,
    /// What the client keeps between calls (`baseMeta`'s fields).
    base: ClientState,
}

impl SqlSession {
    pub(crate) async fn open(
        target: Arc<Target>,
        st: Arc<Stmts>,
        bg: Arc<Mutex<Option<Conn>>>,
        opts: SessionOptions,
    ) -> Result<Self> {
        let mut conn = target.connect().await?;
        // NewClient loads the format first.
        let rows = conn
            .fetch(&st.setting_get, &[Arg::Str("format")])
            .await
            .map_err(|e| MetaError::Engine(e.msg))?;
        let format = match rows.first() {
            Some(r) => Format::from_json(r.bytes(1).map_err(|e| MetaError::Engine(e.msg))?)
                .map_err(MetaError::Corrupt)?,
            None => {
                conn.close().await;
                return Err(MetaError::Engine(format!(
                    "no JuiceFS volume with table prefix {} in {} (format it first)",
                    st.prefix,
                    target.url.redacted()
                )));
            }
        };
        format.check_version().map_err(MetaError::Engine)?;
        Ok(Self {
            sqlite_lock: (st.dialect == Dialect::Sqlite).then(|| Arc::new(Mutex::new(()))),
            st,
            target,
            bg,
            conn: Some(conn),
            stats: SessionStats::default(),
            trash_days: if opts.skip_trash {
                0
            } else {
                format.trash_days
            },
            sub_trash: None,
            base: ClientState::new(format.dir_stats, opts.client_cache),
        })
    }

    /// The server's id of this session's connection: `CONNECTION_ID()` on MySQL (the
    /// general log's thread id), `pg_backend_pid()` on PostgreSQL, 0 on SQLite. Not
    /// counted in [`SessionStats`].
    pub async fn connection_id(&mut self) -> Result<u64> {
        let sql = match self.st.dialect {
            Dialect::Mysql => "SELECT CONNECTION_ID()",
            Dialect::Postgres => "SELECT pg_backend_pid()",
            Dialect::Sqlite => return Ok(0),
        };
        let c = self
            .conn_or_reconnect()
            .await
            .map_err(|e| MetaError::Engine(e.msg))?;
        let rows = c
            .simple_fetch(sql)
            .await
            .map_err(|e| MetaError::Engine(e.msg))?;
        let id = rows
            .first()
            .ok_or_else(|| MetaError::Engine("no connection id".into()))?
            .int(0)
            .map_err(|e| MetaError::Engine(e.msg))?;
        Ok(id as u64)
    }

    // ---- statements (each one counted) ------------------------------------------------

    async fn conn_or_reconnect(&mut self) -> std::result::Result<&mut Conn, DbError> {
        if self.conn.is_none() {
            match self.target.connect().await {
                Ok(c) => self.conn = Some(c),
                Err(e) => {
                    return Err(DbError {
                        kind: ErrKind::Broken,
                        duplicate: false,
                        msg: e.to_string(),
                    })
                }
            }
        }
        Ok(self.conn.as_mut().expect("connected above"))
    }

    fn note(&mut self, e: &DbError) {
        if e.kind == ErrKind::Broken {
            self.conn = None;
        }
    }

    async fn exec(&mut self, sql: &Sql, args: &[Arg<'_>]) -> std::result::Result<Done, DbError> {
        self.stats.round_trips += 1;
        let r = self.conn_or_reconnect().await?.exec(sql, args).await;
        if let Err(e) = &r {
            self.note(e);
        }
        r
    }

    async fn fetch(
        &mut self,
        sql: &Sql,
        args: &[Arg<'_>],
    ) -> std::result::Result<Vec<Row>, DbError> {
        self.stats.round_trips += 1;
        let r = self.conn_or_reconnect().await?.fetch(sql, args).await;
        if let Err(e) = &r {
            self.note(e);
        }
        r
    }

    async fn simple_stmt(&mut self, sql: &str) -> std::result::Result<(), DbError> {
        self.stats.round_trips += 1;
        let r = self.conn_or_reconnect().await?.simple(sql).await;
        if let Err(e) = &r {
            self.note(e);
        }
        r
    }

    async fn begin(&mut self) -> std::result::Result<(), DbError> {
        let s = self.st.begin;
        self.simple_stmt(s).await
    }

    async fn begin_ro(&mut self) -> std::result::Result<(), DbError> {
        for s in self.st.begin_ro {
            self.simple_stmt(s).await?;
        }
        Ok(())
    }

    async fn commit(&mut self) -> std::result::Result<(), DbError> {
        let s = self.st.commit;
        self.simple_stmt(s).await
    }

    async fn rollback(&mut self) -> std::result::Result<(), DbError> {
        if self.conn.is_none() {
            return Ok(());
        }
        let s = self.st.rollback;
        self.simple_stmt(s).await
    }

    /// Ends a failed attempt as database/sql and xorm do (ROLLBACK after a failed
    /// statement or an errno; nothing after a failed COMMIT except on SQLite, whose
    /// driver rolls back) and says whether JuiceFS would retry.
    async fn abort(&mut self, e: &TxErr) -> bool {
        match e {
            TxErr::Commit(d) => {
                if self.st.dialect == Dialect::Sqlite && d.kind != ErrKind::Broken {
                    let _ = self.rollback().await;
                }
                d.kind != ErrKind::Fatal
            }
            TxErr::Db(d) if d.kind == ErrKind::Broken => true,
            TxErr::Db(d) => {
                let _ = self.rollback().await;
                d.kind == ErrKind::Retry
            }
            TxErr::Busy => {
                let _ = self.rollback().await;
                true
            }
            TxErr::Meta(_) => {
                let _ = self.rollback().await;
                false
            }
        }
    }

    async fn write_guard(&self) -> Option<OwnedMutexGuard<()>> {
        match &self.sqlite_lock {
            Some(l) => Some(l.clone().lock_owned().await),
            None => None,
        }
    }

    // ---- row helpers ------------------------------------------------------------------

    async fn get_node(
        &mut self,
        ino: Ino,
        for_update: bool,
    ) -> std::result::Result<Option<NodeRow>, TxErr> {
        let st = self.st.clone();
        let sql = if for_update {
            &st.node_get_for_update
        } else {
            &st.node_get
        };
        let rows = self.fetch(sql, &[Arg::I64(ino as i64)]).await?;
        rows.first().map(|r| parse_node(r, 0)).transpose()
    }

    async fn get_edge(
        &mut self,
        parent: Ino,
        name: &[u8],
    ) -> std::result::Result<Option<EdgeRow>, DbError> {
        let st = self.st.clone();
        let rows = self
            .fetch(&st.edge_get, &[Arg::I64(parent as i64), Arg::Bytes(name)])
            .await?;
        rows.first().map(|r| parse_edge(r, 0)).transpose()
    }

    async fn insert_edge(
        &mut self,
        parent: Ino,
        name: &[u8],
        ino: Ino,
        typ: i64,
    ) -> std::result::Result<(), DbError> {
        let st = self.st.clone();
        let args = [
            Arg::I64(parent as i64),
            Arg::Bytes(name),
            Arg::I64(ino as i64),
            Arg::I32(typ as i32),
        ];
        if st.dialect == Dialect::Postgres {
            self.fetch(&st.edge_insert, &args).await.map(|_| ())
        } else {
            self.exec(&st.edge_insert, &args).await.map(|_| ())
        }
    }

    async fn delete_edge(&mut self, parent: Ino, e: &EdgeRow) -> std::result::Result<u64, DbError> {
        let st = self.st.clone();
        self.exec(
            &st.edge_delete,
            &[
                Arg::I64(parent as i64),
                Arg::Bytes(&e.name),
                Arg::I64(e.inode as i64),
                Arg::I32(e.typ as i32),
                Arg::I64(e.id),
            ],
        )
        .await
        .map(|d| d.rows_affected)
    }

    /// A parent-directory update; matching no row is a conflict (EBUSY, retried) on
    /// MySQL and ENOENT elsewhere.
    async fn update_parent(&mut self, sql: &Sql, pn: &NodeRow) -> std::result::Result<(), TxErr> {
        let d = self
            .exec(
                sql,
                &[
                    Arg::I64(pn.mtime),
                    Arg::I64(pn.ctime),
                    Arg::I32(pn.mtimensec as i32),
                    Arg::I32(pn.ctimensec as i32),
                    Arg::I64(pn.inode),
                ],
            )
            .await?;
        if d.rows_affected == 0 {
            return Err(if self.st.dialect == Dialect::Mysql {
                TxErr::Busy
            } else {
                TxErr::Meta(MetaError::NotFound)
            });
        }
        Ok(())
    }

    // ---- operations ---------------------------------------------------------------------

    /// `baseMeta.Mknod` + `dbMeta.doMknod`. On EEXIST of a file or directory the
    /// existing entry is returned in the error slot `found` (for `Create`).
    #[allow(clippy::too_many_arguments)]
    async fn mknod_txn(
        &mut self,
        ctx: &Ctx,
        parent: Ino,
        name: &[u8],
        typ: FileType,
        mode: u16,
        umask: u16,
        rdev: u32,
        path: &[u8],
        found: &mut Option<(Ino, Attr)>,
    ) -> Result<(Ino, Attr)> {
        check_new_entry(parent, name)?;
        let ino = self.next_inode().await?;
        let st = self.st.clone();
        let t = typ.as_u8() as i64;
        let attr = txn!(self, {
            *found = None;
            let mut pn = self
                .get_node(parent, false)
                .await?
                .ok_or(MetaError::NotFound)?;
            if pn.typ != TYPE_DIR {
                return Err(MetaError::NotDir.into());
            }
            let pattr = pn.to_attr()?;
            if pattr.parent > TRASH_INODE {
                return Err(MetaError::NotFound.into());
            }
            access(ctx, &pattr, 0o3)?;
            if pn.flags & i64::from(FLAG_IMMUTABLE) != 0 {
                return Err(MetaError::Perm.into());
            }
            if let Some(e) = self.get_edge(parent, name).await? {
                if matches!(typ, FileType::File | FileType::Directory) {
                    let a = match self.get_node(e.inode, false).await? {
                        Some(n) => n.to_attr()?,
                        None => {
                            let mut a = Attr::type_only(file_type(e.typ)?);
                            a.parent = parent;
                            a
                        }
                    };
                    *found = Some((e.inode, a));
                }
                return Err(MetaError::Exists.into());
            }
            let now = Timestamp::now();
            // inheritGid / inheritMode (Linux)
            let (cmode, gid) = child_mode_gid(ctx, pn.mode as u16, pn.gid as u32, typ, mode, umask);
            let mut a = Attr::new(typ, cmode, 0, ctx.uid, gid, parent);
            a.atime = now;
            a.mtime = now;
            a.ctime = now;
            match typ {
                FileType::Symlink => a.length = path.len() as u64,
                FileType::Directory => {}
                _ => a.rdev = rdev,
            }
            if pn.flags & i64::from(FLAG_SKIP_TRASH) != 0 {
                a.flags |= FLAG_SKIP_TRASH;
            }
            a.tier = pattr.tier;
            let mut update_parent = false;
            let mut nlink_adjust = 0;
            if typ == FileType::Directory {
                pn.nlink += 1;
                update_parent = true;
                nlink_adjust = 1;
            }
            if update_parent || ns(now) - mtime_ns(&pn) >= 0 {
                set_mtime(&mut pn, now);
                set_ctime(&mut pn, now);
                update_parent = true;
            }
            let row = NodeRow::from_attr(ino, &a);
            self.insert_edge(parent, name, ino, t).await?;
            self.exec(&st.node_insert, &node_args(&row)).await?;
            if typ == FileType::Symlink {
                self.exec(
                    &st.symlink_insert,
                    &[Arg::I64(ino as i64), Arg::Bytes(path)],
                )
                .await?;
            }
            if typ == FileType::Directory {
                self.exec(
                    &st.dirstat_insert,
                    &[Arg::I64(ino as i64), Arg::I64(0), Arg::I64(0), Arg::I64(0)],
                )
                .await?;
            }
            if update_parent {
                let sql = st.parent_update_nlink(nlink_adjust);
                self.update_parent(&sql, &pn).await?;
            }
            a
        })?;
        self.base.update_stats(align4k(0), 1);
        self.base.update_dir_stat(parent, 0, align4k(0), 1);
        Ok((ino, attr))
    }

    async fn do_link(&mut self, ctx: &Ctx, ino: Ino, parent: Ino, name: &[u8]) -> Result<Attr> {
        check_new_entry(parent, name)?;
        let cur = self.getattr_inner(ino).await?;
        if cur.typ == FileType::Directory {
            return Err(MetaError::Perm);
        }
        let st = self.st.clone();
        let attr = txn!(self, {
            let mut pn = self
                .get_node(parent, false)
                .await?
                .ok_or(MetaError::NotFound)?;
            if pn.typ != TYPE_DIR {
                return Err(MetaError::NotDir.into());
            }
            if pn.parent.unwrap_or(0) as u64 > TRASH_INODE {
                return Err(MetaError::NotFound.into());
            }
            access(ctx, &pn.to_attr()?, 0o3)?;
            if pn.flags & i64::from(FLAG_IMMUTABLE) != 0 {
                return Err(MetaError::Perm.into());
            }
            if self.get_edge(parent, name).await?.is_some() {
                return Err(MetaError::Exists.into());
            }
            let mut n = self.get_node(ino, true).await?.ok_or(MetaError::NotFound)?;
            if n.typ == TYPE_DIR {
                return Err(MetaError::Perm.into());
            }
            if n.flags & i64::from(FLAG_APPEND | FLAG_IMMUTABLE) != 0 {
                return Err(MetaError::Perm.into());
            }
            let now = Timestamp::now();
            let update_parent = ns(now) - mtime_ns(&pn) >= 0;
            if update_parent {
                set_mtime(&mut pn, now);
                set_ctime(&mut pn, now);
            }
            n.parent = Some(0);
            n.nlink += 1;
            set_ctime(&mut n, now);
            self.insert_edge(parent, name, ino, n.typ).await?;
            self.exec(
                &st.node_update_link,
                &[
                    Arg::I64(n.ctime),
                    Arg::I32(n.ctimensec as i32),
                    Arg::I32(n.nlink as i32),
                    Arg::I64(0),
                    Arg::I64(ino as i64),
                ],
            )
            .await?;
            if update_parent {
                self.update_parent(&st.parent_update_mtime, &pn).await?;
            }
            n.to_attr()?
        })?;
        self.base
            .update_dir_stat(parent, attr.length as i64, align4k(attr.length), 1);
        Ok(attr)
    }

    /// `checkTrash`: the trash sub-directory of this hour (`YYYY-MM-DD-HH`, UTC) when the
    /// volume keeps a trash and `parent` is not in it; 0 otherwise. Looked up (and made
    /// if missing) once per hour per session, as each JuiceFS client does.
    async fn check_trash(&mut self, parent: Ino) -> Result<Ino> {
        if self.trash_days == 0 || is_trash(parent) {
            return Ok(0);
        }
        let name = trash_hour(Timestamp::now().sec);
        if let Some((n, ino)) = &self.sub_trash {
            if *n == name {
                return Ok(*ino);
            }
        }
        let st = self.st.clone();
        let rows = simple!(self, {
            self.fetch(
                &st.edge_lookup_plain,
                &[Arg::I64(TRASH_INODE as i64), Arg::Bytes(name.as_bytes())],
            )
            .await?
        })?;
        let ino = match rows.first() {
            Some(r) => r.int(3).map_err(|e| MetaError::Engine(e.msg))? as Ino,
            None => self.make_trash_dir(&name).await?,
        };
        if ino <= TRASH_INODE {
            return Err(MetaError::Engine(format!("invalid trash inode {ino}")));
        }
        self.sub_trash = Some((name, ino));
        Ok(ino)
    }

    /// `doMknod` of a trash sub-directory: inode `TrashInode + nextTrash`, mode 0555,
    /// no parent update. An existing one (made by another client) is returned.
    async fn make_trash_dir(&mut self, name: &str) -> Result<Ino> {
        let st = self.st.clone();
        let created = txn!(self, {
            let pn = self
                .get_node(TRASH_INODE, false)
                .await?
                .ok_or(MetaError::NotFound)?;
            if pn.typ != TYPE_DIR {
                return Err(MetaError::NotDir.into());
            }
            let pattr = pn.to_attr()?;
            if pattr.parent > TRASH_INODE {
                return Err(MetaError::NotFound.into());
            }
            if pn.flags & i64::from(FLAG_IMMUTABLE) != 0 {
                return Err(MetaError::Perm.into());
            }
            if let Some(e) = self.get_edge(TRASH_INODE, name.as_bytes()).await? {
                // EEXIST for a directory reads the existing node too
                self.get_node(e.inode, false).await?;
                (e.inode, false)
            } else {
                let rows = self
                    .fetch(&st.counter_get_for_update, &[Arg::Str("nextTrash")])
                    .await?;
                let next = match rows.first() {
                    Some(r) => r.int(1)?,
                    None => 0,
                } + 1;
                if rows.is_empty() {
                    self.exec(&st.counter_insert, &[Arg::Str("nextTrash"), Arg::I64(next)])
                        .await?;
                } else {
                    self.exec(&st.counter_update, &[Arg::I64(next), Arg::Str("nextTrash")])
                        .await?;
                }
                let ino = TRASH_INODE + next as u64;
                let now = Timestamp::now();
                let mut a = Attr::new(FileType::Directory, 0o555, 0, 0, 0, TRASH_INODE);
                a.atime = now;
                a.mtime = now;
                a.ctime = now;
                if pn.flags & i64::from(FLAG_SKIP_TRASH) != 0 {
                    a.flags |= FLAG_SKIP_TRASH;
                }
                a.tier = pattr.tier;
                self.insert_edge(TRASH_INODE, name.as_bytes(), ino, TYPE_DIR)
                    .await?;
                self.exec(&st.node_insert, &node_args(&NodeRow::from_attr(ino, &a)))
                    .await?;
                self.exec(
                    &st.dirstat_insert,
                    &[Arg::I64(ino as i64), Arg::I64(0), Arg::I64(0), Arg::I64(0)],
                )
                .await?;
                (ino, true)
            }
        })?;
        if created.1 {
            self.base.update_stats(align4k(0), 1);
        }
        Ok(created.0)
    }

    async fn do_unlink(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<()> {
        check_unlink(ctx, parent, name)?;
        let trash = self.check_trash(parent).await?;
        let st = self.st.clone();
        // (node after the change, freed space, freed inodes, trash it went to)
        let mut outcome = (NodeRow::default(), 0i64, 0i64, 0);
        txn!(self, {
            let mut trash = trash;
            outcome = (NodeRow::default(), 0, 0, 0);
            let mut pn = self
                .get_node(parent, false)
                .await?
                .ok_or(MetaError::NotFound)?;
            let pattr = pn.to_attr()?;
            check_parent_to_remove(ctx, &pattr)?;
            let e = self
                .get_edge(parent, name)
                .await?
                .ok_or(MetaError::NotFound)?;
            if e.typ == TYPE_DIR {
                return Err(MetaError::Perm.into());
            }
            let entry = trash_entry(parent, e.inode, &e.name);
            let now = Timestamp::now();
            let mut n = match self.get_node(e.inode, true).await? {
                Some(mut n) => {
                    check_sticky(ctx, &pattr, n.uid as u32)?;
                    if n.flags & i64::from(FLAG_APPEND | FLAG_IMMUTABLE) != 0 {
                        return Err(MetaError::Perm.into());
                    }
                    if n.flags & i64::from(FLAG_SKIP_TRASH) != 0 {
                        trash = 0;
                    }
                    if trash > 0 && n.nlink > 1 {
                        // another link of this file may already be in the trash
                        let rows = self
                            .fetch(
                                &st.edge_get_full,
                                &[
                                    Arg::I64(trash as i64),
                                    Arg::Bytes(&entry),
                                    Arg::I64(e.inode as i64),
                                    Arg::I32(e.typ as i32),
                                ],
                            )
                            .await?;
                        if !rows.is_empty() {
                            trash = 0;
                        }
                    }
                    set_ctime(&mut n, now);
                    if trash == 0 {
                        n.nlink -= 1;
                    } else if n.parent.unwrap_or(0) > 0 {
                        n.parent = Some(trash as i64);
                    }
                    n
                }
                None => {
                    tracing::warn!("no attribute for inode {} ({parent})", e.inode);
                    trash = 0;
                    NodeRow {
                        inode: e.inode as i64,
                        ..NodeRow::default()
                    }
                }
            };
            let update_parent = !is_trash(parent) && ns(now) - mtime_ns(&pn) >= 0;
            if update_parent {
                set_mtime(&mut pn, now);
                set_ctime(&mut pn, now);
            }
            self.delete_edge(parent, &e).await?;
            let (mut space, mut inodes) = (0, 0);
            if n.nlink > 0 {
                self.exec(
                    &st.node_update_link,
                    &[
                        Arg::I64(n.ctime),
                        Arg::I32(n.ctimensec as i32),
                        Arg::I32(n.nlink as i32),
                        Arg::I64(n.parent.unwrap_or(0)),
                        Arg::I64(e.inode as i64),
                    ],
                )
                .await?;
                if trash > 0 {
                    inodes = 1;
                    space = if n.typ == TYPE_FILE {
                        align4k(n.length as u64)
                    } else {
                        align4k(0)
                    };
                    self.insert_edge(trash, &entry, e.inode, e.typ).await?;
                }
            } else {
                let ino = Arg::I64(e.inode as i64);
                match e.typ {
                    TYPE_FILE => {
                        // sid 0 (no registered session): never "opened", deleted at once
                        self.exec(
                            &st.delfile_insert,
                            &[ino, Arg::I64(n.length), Arg::I64(unix_now())],
                        )
                        .await?;
                        self.exec(&st.node_delete, &[ino]).await?;
                        space = -align4k(n.length as u64);
                        inodes = -1;
                    }
                    t => {
                        if t == TYPE_SYMLINK {
                            self.exec(&st.symlink_delete, &[ino]).await?;
                        }
                        self.exec(&st.node_delete, &[ino]).await?;
                        space = -align4k(0);
                        inodes = -1;
                    }
                }
                self.exec(&st.xattr_delete_all, &[ino]).await?;
            }
            if update_parent {
                self.update_parent(&st.parent_update_mtime, &pn).await?;
            }
            if n.typ == 0 {
                n.typ = e.typ;
            }
            outcome = (n, space, inodes, trash);
        })?;
        let (n, space, inodes, trash) = outcome;
        let ino = n.inode as Ino;
        let len = if n.typ == TYPE_FILE {
            n.length as u64
        } else {
            0
        };
        if trash == 0 {
            if n.typ == TYPE_FILE && n.nlink == 0 {
                self.base.file_deleted(ino, n.length as u64);
            }
            self.base.update_stats(space, inodes);
        } else {
            self.base.update_dir_stat(trash, len as i64, space, inodes);
        }
        self.base
            .update_dir_stat(parent, -(len as i64), -align4k(len), -1);
        if n.nlink == 0 {
            self.base.cache.forget_file(ino);
            self.base.cache.forget_symlink(ino);
        }
        Ok(())
    }

    async fn do_rmdir(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<()> {
        check_rmdir(ctx, parent, name)?;
        let trash = self.check_trash(parent).await?;
        let st = self.st.clone();
        let trashed = txn!(self, {
            let mut trash = trash;
            let mut pn = self
                .get_node(parent, false)
                .await?
                .ok_or(MetaError::NotFound)?;
            let pattr = pn.to_attr()?;
            check_parent_to_remove(ctx, &pattr)?;
            let e = self
                .get_edge(parent, name)
                .await?
                .ok_or(MetaError::NotFound)?;
            if e.typ != TYPE_DIR {
                return Err(MetaError::NotDir.into());
            }
            let mut n = self.get_node(e.inode, true).await?;
            let child = self
                .fetch(&st.edge_first_child, &[Arg::I64(e.inode as i64)])
                .await?;
            if !child.is_empty() {
                return Err(MetaError::NotEmpty.into());
            }
            if n.as_ref()
                .map(|n| n.flags & i64::from(FLAG_SKIP_TRASH) != 0)
                .unwrap_or(false)
            {
                trash = 0;
            }
            let now = Timestamp::now();
            match &mut n {
                Some(n) => {
                    check_sticky(ctx, &pattr, n.uid as u32)?;
                    if trash > 0 {
                        set_ctime(n, now);
                        n.parent = Some(trash as i64);
                    }
                }
                None => {
                    tracing::warn!("no attribute for inode {} ({parent})", e.inode);
                    trash = 0;
                }
            }
            pn.nlink -= 1;
            set_mtime(&mut pn, now);
            set_ctime(&mut pn, now);
            let ino = Arg::I64(e.inode as i64);
            self.delete_edge(parent, &e).await?;
            self.exec(&st.dirstat_delete, &[ino]).await?;
            self.exec(&st.dirquota_delete, &[ino]).await?;
            match (&n, trash) {
                (Some(n), t) if t > 0 => {
                    self.exec(
                        &st.node_update_ctime_parent,
                        &[
                            Arg::I64(n.ctime),
                            Arg::I32(n.ctimensec as i32),
                            Arg::I64(t as i64),
                            ino,
                        ],
                    )
                    .await?;
                    let entry = trash_entry(parent, e.inode, &e.name);
                    self.insert_edge(t, &entry, e.inode, TYPE_DIR).await?;
                }
                _ => {
                    self.exec(&st.node_delete, &[ino]).await?;
                    self.exec(&st.xattr_delete_all, &[ino]).await?;
                }
            }
            if !is_trash(parent) {
                // no check of the affected rows here in doRmdir
                self.exec(
                    &st.parent_update_rmdir,
                    &[
                        Arg::I64(pn.mtime),
                        Arg::I64(pn.ctime),
                        Arg::I32(pn.mtimensec as i32),
                        Arg::I32(pn.ctimensec as i32),
                        Arg::I64(pn.inode),
                    ],
                )
                .await?;
            }
            trash
        })?;
        if trashed == 0 {
            self.base.update_stats(-align4k(0), -1);
        } else {
            self.base.update_dir_stat(trashed, 0, align4k(0), 1);
        }
        self.base.update_dir_stat(parent, 0, -align4k(0), -1);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    async fn do_rename(
        &mut self,
        ctx: &Ctx,
        ps: Ino,
        ns_: &[u8],
        pd: Ino,
        nd: &[u8],
        flags: u32,
    ) -> Result<(Ino, Attr)> {
        check_rename(ctx, ps, ns_, pd, nd)?;
        match flags {
            0 | RENAME_NOREPLACE | RENAME_EXCHANGE => {}
            f if f == RENAME_NOREPLACE | RENAME_RESTORE => {}
            f if f == RENAME_WHITEOUT || f == RENAME_NOREPLACE | RENAME_WHITEOUT => {
                return Err(MetaError::NotSupported)
            }
            _ => return Err(MetaError::Invalid),
        }
        let exchange = flags == RENAME_EXCHANGE;
        let trash0 = self.check_trash(pd).await?;
        let st = self.st.clone();
        // (source inode, its attr, target node if any, target's type, freed space, inodes)
        struct Out {
            ino: Ino,
            attr: Attr,
            target: Option<NodeRow>,
            ttyp: i64,
            space: i64,
            inodes: i64,
            trash: Ino,
        }
        let out = txn!(self, {
            let mut trash = trash0;
            let mut spn = self.get_node(ps, false).await?.ok_or(MetaError::NotFound)?;
            let mut dpn = self.get_node(pd, false).await?.ok_or(MetaError::NotFound)?;
            if spn.typ != TYPE_DIR || dpn.typ != TYPE_DIR {
                return Err(MetaError::NotDir.into());
            }
            if spn.flags & i64::from(FLAG_APPEND | FLAG_IMMUTABLE) != 0
                || dpn.flags & i64::from(FLAG_IMMUTABLE) != 0
            {
                return Err(MetaError::Perm.into());
            }
            let spattr = spn.to_attr()?;
            let dpattr = dpn.to_attr()?;
            if flags & RENAME_RESTORE == 0 && dpattr.parent > TRASH_INODE {
                return Err(MetaError::NotFound.into());
            }
            access(ctx, &spattr, 0o3)?;
            access(ctx, &dpattr, 0o3)?;
            let se = self.get_edge(ps, ns_).await?.ok_or(MetaError::NotFound)?;
            if ps == pd && se.name == nd {
                let mut a = Attr::type_only(file_type(se.typ)?);
                a.parent = ps;
                Out {
                    ino: se.inode,
                    attr: a,
                    target: None,
                    ttyp: 0,
                    space: 0,
                    inodes: 0,
                    trash: 0,
                }
            } else {
                if se.inode == pd || se.inode == dpattr.parent {
                    return Err(MetaError::Perm.into());
                }
                let mut sn = self
                    .get_node(se.inode, false)
                    .await?
                    .ok_or(MetaError::NotFound)?;
                let sattr = sn.to_attr()?;
                if ps != pd
                    && spattr.mode & 0o1000 != 0
                    && ctx.uid != 0
                    && ctx.uid != sattr.uid
                    && (ctx.uid != spattr.uid || sattr.typ == FileType::Directory)
                {
                    return Err(MetaError::Access.into());
                }
                if sn.flags & i64::from(FLAG_APPEND | FLAG_IMMUTABLE) != 0 {
                    return Err(MetaError::Perm.into());
                }
                let de = self.get_edge(pd, nd).await?;
                let (mut supdate, mut dupdate) = (false, false);
                let (mut srcnlink, mut dstnlink) = (0i32, 0i32);
                let now = Timestamp::now();
                let mut dn: Option<NodeRow> = None;
                let mut same_inode = false;
                if let Some(de) = &de {
                    if flags & RENAME_NOREPLACE != 0 {
                        return Err(MetaError::Exists.into());
                    }
                    let mut n = match self.get_node(de.inode, true).await? {
                        Some(n) => n,
                        None => {
                            tracing::warn!("no attribute for inode {} ({pd})", de.inode);
                            trash = 0;
                            NodeRow {
                                inode: de.inode as i64,
                                typ: de.typ,
                                ..NodeRow::default()
                            }
                        }
                    };
                    if n.flags & i64::from(FLAG_APPEND | FLAG_IMMUTABLE) != 0 {
                        return Err(MetaError::Perm.into());
                    }
                    if n.flags & i64::from(FLAG_SKIP_TRASH) != 0 {
                        trash = 0;
                    }
                    set_ctime(&mut n, now);
                    if exchange {
                        if ps != pd {
                            if de.typ == TYPE_DIR {
                                n.parent = Some(ps as i64);
                                dpn.nlink -= 1;
                                dstnlink -= 1;
                                spn.nlink += 1;
                                srcnlink += 1;
                                supdate = true;
                                dupdate = true;
                            } else if n.parent.unwrap_or(0) > 0 {
                                n.parent = Some(ps as i64);
                            }
                        }
                    } else if de.inode == se.inode {
                        same_inode = true;
                    } else if se.typ == TYPE_DIR && de.typ != TYPE_DIR {
                        return Err(MetaError::NotDir.into());
                    } else if de.typ == TYPE_DIR {
                        if se.typ != TYPE_DIR {
                            return Err(MetaError::IsDir.into());
                        }
                        let child = self
                            .fetch(&st.edge_first_child, &[Arg::I64(de.inode as i64)])
                            .await?;
                        if !child.is_empty() {
                            return Err(MetaError::NotEmpty.into());
                        }
                        dpn.nlink -= 1;
                        dstnlink -= 1;
                        dupdate = true;
                        if trash > 0 {
                            n.parent = Some(trash as i64);
                        }
                    } else if trash == 0 {
                        n.nlink -= 1;
                    } else if n.parent.unwrap_or(0) > 0 {
                        n.parent = Some(trash as i64);
                    }
                    if !same_inode {
                        check_sticky(ctx, &dpattr, n.uid as u32)?;
                    }
                    dn = Some(n);
                } else if exchange {
                    return Err(MetaError::NotFound.into());
                }
                if same_inode {
                    Out {
                        ino: se.inode,
                        attr: sattr,
                        target: None,
                        ttyp: 0,
                        space: 0,
                        inodes: 0,
                        trash: 0,
                    }
                } else {
                    check_sticky(ctx, &spattr, sattr.uid)?;
                    if ps != pd {
                        if se.typ == TYPE_DIR {
                            sn.parent = Some(pd as i64);
                            spn.nlink -= 1;
                            srcnlink -= 1;
                            dpn.nlink += 1;
                            dstnlink += 1;
                            supdate = true;
                            dupdate = true;
                        } else if sn.parent.unwrap_or(0) > 0 {
                            sn.parent = Some(pd as i64);
                        }
                    }
                    if supdate || ns(now) - mtime_ns(&spn) >= 0 {
                        set_mtime(&mut spn, now);
                        set_ctime(&mut spn, now);
                        supdate = true;
                    }
                    if dupdate || ns(now) - mtime_ns(&dpn) >= 0 {
                        set_mtime(&mut dpn, now);
                        set_ctime(&mut dpn, now);
                        dupdate = true;
                    }
                    set_ctime(&mut sn, now);
                    let (mut space, mut inodes) = (0i64, 0i64);
                    if exchange {
                        let de = de.as_ref().expect("exchange needs a target");
                        let dn = dn.as_ref().expect("exchange needs a target");
                        self.exec(
                            &st.edge_update_target,
                            &[
                                Arg::I64(de.inode as i64),
                                Arg::I32(de.typ as i32),
                                Arg::I64(ps as i64),
                                Arg::Bytes(&se.name),
                            ],
                        )
                        .await?;
                        self.exec(
                            &st.edge_update_target,
                            &[
                                Arg::I64(se.inode as i64),
                                Arg::I32(se.typ as i32),
                                Arg::I64(pd as i64),
                                Arg::Bytes(&de.name),
                            ],
                        )
                        .await?;
                        self.exec(
                            &st.node_update_ctime_parent,
                            &[
                                Arg::I64(dn.ctime),
                                Arg::I32(dn.ctimensec as i32),
                                Arg::I64(dn.parent.unwrap_or(0)),
                                Arg::I64(dn.inode),
                            ],
                        )
                        .await?;
                    } else {
                        if self.delete_edge(ps, &se).await? != 1 {
                            return Err(TxErr::Db(DbError::decode("delete src failed".into())));
                        }
                        if let (Some(de), Some(dn)) = (&de, &dn) {
                            let dino = Arg::I64(de.inode as i64);
                            if trash > 0 {
                                inodes = 1;
                                space = if de.typ == TYPE_FILE {
                                    align4k(dn.length as u64)
                                } else {
                                    align4k(0)
                                };
                                self.exec(
                                    &st.node_update_ctime_parent,
                                    &[
                                        Arg::I64(dn.ctime),
                                        Arg::I32(dn.ctimensec as i32),
                                        Arg::I64(dn.parent.unwrap_or(0)),
                                        dino,
                                    ],
                                )
                                .await?;
                                let entry = trash_entry(pd, de.inode, &de.name);
                                self.insert_edge(trash, &entry, de.inode, de.typ).await?;
                            } else if de.typ != TYPE_DIR && dn.nlink > 0 {
                                self.exec(
                                    &st.node_update_link,
                                    &[
                                        Arg::I64(dn.ctime),
                                        Arg::I32(dn.ctimensec as i32),
                                        Arg::I32(dn.nlink as i32),
                                        Arg::I64(dn.parent.unwrap_or(0)),
                                        dino,
                                    ],
                                )
                                .await?;
                            } else {
                                if de.typ == TYPE_FILE {
                                    self.exec(
                                        &st.delfile_insert,
                                        &[dino, Arg::I64(dn.length), Arg::I64(unix_now())],
                                    )
                                    .await?;
                                    self.exec(&st.node_delete, &[dino]).await?;
                                    space = -align4k(dn.length as u64);
                                } else {
                                    if de.typ == TYPE_SYMLINK {
                                        self.exec(&st.symlink_delete, &[dino]).await?;
                                    }
                                    self.exec(&st.node_delete, &[dino]).await?;
                                    space = -align4k(0);
                                }
                                inodes = -1;
                                self.exec(&st.xattr_delete_all, &[dino]).await?;
                            }
                            self.delete_edge(pd, de).await?;
                            if de.typ == TYPE_DIR {
                                self.exec(&st.dirquota_delete, &[dino]).await?;
                            }
                        }
                        self.insert_edge(pd, nd, se.inode, se.typ).await?;
                    }
                    self.exec(
                        &st.node_update_ctime_parent,
                        &[
                            Arg::I64(sn.ctime),
                            Arg::I32(sn.ctimensec as i32),
                            Arg::I64(sn.parent.unwrap_or(0)),
                            Arg::I64(sn.inode),
                        ],
                    )
                    .await?;
                    if pd != ps && !is_trash(ps) && supdate {
                        if dupdate && dpn.inode < spn.inode {
                            let sql = st.parent_update_nlink(dstnlink);
                            self.update_parent(&sql, &dpn).await?;
                            dupdate = false;
                        }
                        let sql = st.parent_update_nlink(srcnlink);
                        self.update_parent(&sql, &spn).await?;
                    }
                    if dupdate {
                        let sql = st.parent_update_nlink(dstnlink);
                        self.update_parent(&sql, &dpn).await?;
                    }
                    Out {
                        ino: se.inode,
                        attr: sn.to_attr()?,
                        ttyp: de.as_ref().map(|d| d.typ).unwrap_or(0),
                        target: dn,
                        space,
                        inodes,
                        trash,
                    }
                }
            }
        })?;
        // baseMeta.Rename: dir stats of both parents and of a replaced target.
        let len = |typ: i64, l: i64| if typ == TYPE_FILE { l as u64 } else { 0 };
        let sl = len(out.attr.typ.as_u8() as i64, out.attr.length as i64);
        if ps != pd {
            self.base
                .update_dir_stat(ps, -(sl as i64), -align4k(sl), -1);
            self.base.update_dir_stat(pd, sl as i64, align4k(sl), 1);
        }
        if let Some(dn) = &out.target {
            let tl = len(out.ttyp, dn.length);
            if ps != pd || !exchange {
                self.base
                    .update_dir_stat(pd, -(tl as i64), -align4k(tl), -1);
            }
            if ps != pd && exchange {
                self.base.update_dir_stat(ps, tl as i64, align4k(tl), 1);
            }
            if !exchange && out.trash > 0 {
                self.base
                    .update_dir_stat(out.trash, tl as i64, out.space, out.inodes);
            } else if !exchange {
                if out.ttyp == TYPE_FILE && dn.nlink == 0 {
                    self.base.file_deleted(dn.inode as Ino, dn.length as u64);
                }
                self.base.update_stats(out.space, out.inodes);
            }
        }
        Ok((out.ino, out.attr))
    }

    async fn getattr_inner(&mut self, ino: Ino) -> Result<Attr> {
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

    async fn do_lookup(&mut self, parent: Ino, name: &[u8]) -> Result<(Ino, Attr)> {
        if name == b".." {
            if parent != ROOT_INODE {
                let a = self.getattr_inner(parent).await?;
                if a.typ != FileType::Directory {
                    return Err(MetaError::NotDir);
                }
                let p = a.parent;
                return Ok((p, self.getattr_inner(p).await?));
            }
            return Ok((parent, self.getattr_inner(parent).await?));
        }
        if name == b"." {
            return Ok((parent, self.getattr_inner(parent).await?));
        }
        if parent == ROOT_INODE && name == TRASH_NAME {
            return Ok((TRASH_INODE, self.getattr_inner(TRASH_INODE).await?));
        }
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

    async fn do_setattr(&mut self, ctx: &Ctx, ino: Ino, set: &SetAttr) -> Result<Attr> {
        let st = self.st.clone();
        txn!(self, {
            let cur = self.get_node(ino, true).await?.ok_or(MetaError::NotFound)?;
            let cattr = cur.to_attr()?;
            if cattr.parent > TRASH_INODE {
                return Err(MetaError::Perm.into());
            }
            let now = Timestamp::now();
            match merge_attr(ctx, &cattr, set)? {
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

    async fn do_readdir(&mut self, ctx: &Ctx, ino: Ino, plus: bool) -> Result<Vec<Entry>> {
        let mut attr = self.getattr_inner(ino).await?;
        access(ctx, &attr, if plus { 0o5 } else { 0o4 })?;
        if ino == ROOT_INODE {
            attr.parent = ROOT_INODE;
        }
        let mut out = vec![
            Entry {
                name: b".".to_vec(),
                inode: ino,
                attr: Attr::type_only(FileType::Directory),
            },
            Entry {
                name: b"..".to_vec(),
                inode: attr.parent,
                attr: Attr::type_only(FileType::Directory),
            },
        ];
        let st = self.st.clone();
        let rows = simple!(self, {
            let sql = if plus { &st.readdir_plus } else { &st.readdir };
            self.fetch(sql, &[Arg::I64(ino as i64)]).await?
        })?;
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
        Ok(out)
    }

    async fn do_setxattr(
        &mut self,
        ino: Ino,
        name: &[u8],
        value: &[u8],
        flags: XattrFlags,
    ) -> Result<()> {
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

    async fn do_write(
        &mut self,
        ino: Ino,
        indx: u32,
        slice: Slice,
        mtime: Timestamp,
    ) -> Result<()> {
        let st = self.st.clone();
        let buf = slice.encode();
        let (parent, dlen, dspace) = txn!(self, {
            let mut n = self.get_node(ino, true).await?.ok_or(MetaError::NotFound)?;
            if n.typ != TYPE_FILE {
                return Err(MetaError::Perm.into());
            }
            let newleng = indx as u64 * CHUNK_SIZE + slice.pos as u64 + slice.len as u64;
            let (mut dlen, mut dspace) = (0i64, 0i64);
            if newleng > n.length as u64 {
                dlen = newleng as i64 - n.length;
                dspace = align4k(newleng) - align4k(n.length as u64);
                n.length = newleng as i64;
            }
            let parent = n.parent.unwrap_or(0);
            if parent == 0 {
                // getParents inside the transaction, for the quota check
                self.fetch(&st.edges_of_inode, &[Arg::I64(ino as i64)])
                    .await?;
            }
            let now = Timestamp::now();
            set_mtime(&mut n, mtime);
            set_ctime(&mut n, now);
            let d = self
                .exec(
                    &st.chunk_upsert,
                    &[
                        Arg::I64(ino as i64),
                        Arg::I32(indx as i32),
                        Arg::Bytes(&buf),
                        Arg::Bytes(&buf),
                    ],
                )
                .await?;
            let inserted = st.dialect == Dialect::Mysql && d.rows_affected == 1;
            self.exec(
                &st.chunkref_insert,
                &[
                    Arg::I64(slice.id as i64),
                    Arg::I32(slice.size as i32),
                    Arg::I32(1),
                ],
            )
            .await?;
            self.exec(
                &st.node_update_write,
                &[
                    Arg::I64(n.mtime),
                    Arg::I64(n.ctime),
                    Arg::I32(n.mtimensec as i32),
                    Arg::I32(n.ctimensec as i32),
                    Arg::I64(n.length),
                    Arg::I64(ino as i64),
                ],
            )
            .await?;
            if !inserted {
                // counts the slices for the compaction trigger (errors ignored)
                let _ = self
                    .fetch(
                        &st.chunk_get,
                        &[Arg::I64(ino as i64), Arg::I32(indx as i32)],
                    )
                    .await;
            }
            (parent, dlen, dspace)
        })?;
        self.base.cache.forget_chunk(ino, indx);
        self.base
            .update_parent_stat(ino, parent as Ino, dlen, dspace);
        Ok(())
    }

    async fn do_read(&mut self, ino: Ino, indx: u32) -> Result<Vec<Slice>> {
        if let Some(s) = self.base.cache.chunk(ino, indx) {
            return Ok(s);
        }
        let st = self.st.clone();
        let buf = simple!(self, {
            let rows = self
                .fetch(
                    &st.chunk_get,
                    &[Arg::I64(ino as i64), Arg::I32(indx as i32)],
                )
                .await?;
            match rows.first() {
                Some(r) => r.bytes(3)?.to_vec(),
                None => Vec::new(),
            }
        })?;
        let slices = Slice::decode_all(&buf)?;
        if slices.is_empty() {
            let a = self.getattr_inner(ino).await?;
            if a.typ != FileType::File {
                return Err(MetaError::Perm);
            }
            return Ok(slices);
        }
        self.base.cache.keep_chunk(ino, indx, &slices);
        Ok(slices)
    }

    // ---- background work ------------------------------------------------------------------

    /// `doSyncDirStat`: recomputes a directory's usage from its children and writes it.
    async fn sync_dir_stat(&mut self, ino: Ino) -> Result<()> {
        let st = self.st.clone();
        let rows = simple!(self, {
            self.fetch(&st.readdir_plus, &[Arg::I64(ino as i64)])
                .await?
        })?;
        let mut s = DirStat::default();
        for r in &rows {
            let n = parse_node(r, 5).map_err(|e| final_error(e, false))?;
            let l = if n.typ == TYPE_FILE {
                n.length as u64
            } else {
                0
            };
            s.inodes += 1;
            s.length += l as i64;
            s.space += align4k(l);
        }
        txn!(self, {
            if self.get_node(ino, false).await?.is_none() {
                return Err(MetaError::NotFound.into());
            }
            let vals = [Arg::I64(s.length), Arg::I64(s.space), Arg::I64(s.inodes)];
            match self
                .exec(
                    &st.dirstat_insert,
                    &[Arg::I64(ino as i64), vals[0], vals[1], vals[2]],
                )
                .await
            {
                Ok(_) => {}
                Err(e) if e.duplicate => {
                    self.exec(
                        &st.dirstat_set,
                        &[vals[0], vals[1], vals[2], Arg::I64(ino as i64)],
                    )
                    .await?;
                }
                Err(e) => return Err(e.into()),
            }
        })
    }

    /// `doFlushDirStat` / `doUpdateDirStat`.
    async fn update_dir_stats(&mut self, batch: Vec<(Ino, DirStat)>) -> Result<()> {
        let st = self.st.clone();
        let mut missing = Vec::new();
        for group in batch.chunks(DIRSTAT_BATCH) {
            let mut nonexist = Vec::new();
            txn!(self, {
                nonexist.clear();
                for (ino, s) in group {
                    let d = self
                        .exec(
                            &st.dirstat_add,
                            &[
                                Arg::I64(s.length),
                                Arg::I64(s.space),
                                Arg::I64(s.inodes),
                                Arg::I64(*ino as i64),
                            ],
                        )
                        .await?;
                    // go-sql-driver reports changed rows, and `x = x + 0` changes none;
                    // sqlx asks MySQL for found rows.
                    let rows = if st.dialect == Dialect::Mysql && s.is_zero() {
                        0
                    } else {
                        d.rows_affected
                    };
                    if rows == 0 {
                        nonexist.push(*ino);
                    }
                }
            })?;
            missing.extend(nonexist);
        }
        for ino in missing {
            match self.sync_dir_stat(ino).await {
                Ok(()) | Err(MetaError::NotFound) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// `doDeleteFileData`: frees the chunks of a deleted file, then its `delfile` row.
    async fn delete_file_data(&mut self, ino: Ino) -> Result<()> {
        let st = self.st.clone();
        let rows = simple!(self, {
            self.fetch(&st.chunk_indexes, &[Arg::I64(ino as i64)])
                .await?
        })?;
        for r in rows {
            let indx = r.int(0).map_err(|e| MetaError::Engine(e.msg))?;
            let slices = txn!(self, {
                let rows = self
                    .fetch(
                        &st.chunk_get_for_update,
                        &[Arg::I64(ino as i64), Arg::I32(indx as i32)],
                    )
                    .await?;
                match rows.first() {
                    None => Vec::new(),
                    Some(c) => {
                        let id = c.int(0)?;
                        let ss = Slice::decode_all(c.bytes(3)?).unwrap_or_default();
                        let mut deltas: BTreeMap<u64, i32> = BTreeMap::new();
                        for s in ss.iter().filter(|s| s.id > 0) {
                            *deltas.entry(s.id).or_default() -= 1;
                        }
                        let ids: Vec<(u64, i32)> = deltas.into_iter().collect();
                        for part in ids.chunks(st.txn_batch()) {
                            let mut args = Vec::with_capacity(part.len() * 3);
                            for (id, d) in part {
                                args.push(Arg::I64(*id as i64));
                                args.push(Arg::I32(*d));
                            }
                            for (id, _) in part {
                                args.push(Arg::I64(*id as i64));
                            }
                            self.exec(&st.chunkref_batch(part.len()), &args).await?;
                        }
                        let d = self
                            .exec(
                                &st.chunk_delete,
                                &[
                                    Arg::I64(ino as i64),
                                    Arg::I32(indx as i32),
                                    Arg::I64(id),
                                    Arg::I64(ino as i64),
                                ],
                            )
                            .await?;
                        if d.rows_affected == 0 {
                            let kind = if st.dialect == Dialect::Mysql {
                                ErrKind::Retry
                            } else {
                                ErrKind::Fatal
                            };
                            return Err(TxErr::Db(DbError {
                                kind,
                                duplicate: false,
                                msg: format!(
                                    "chunk {ino}:{indx} changed, try restarting transaction"
                                ),
                            }));
                        }
                        ss
                    }
                }
            })?;
            for s in slices.iter().filter(|s| s.id > 0) {
                let refs = simple!(self, {
                    let rows = self
                        .fetch(&st.chunkref_get, &[Arg::I64(s.id as i64)])
                        .await?;
                    match rows.first() {
                        Some(r) => Some(r.int(2)?),
                        None => None,
                    }
                })?;
                if matches!(refs, Some(r) if r <= 0) {
                    // deleteSlice: the objects (none: metabench writes no data), then
                    // doDeleteSlice
                    txn!(self, {
                        self.exec(&st.chunkref_delete, &[Arg::I64(s.id as i64)])
                            .await?;
                    })?;
                }
            }
        }
        txn!(self, {
            self.exec(&st.delfile_delete, &[Arg::I64(ino as i64)])
                .await?;
        })
    }
    /// `doGetParents`: the parents of a hard-linked file from its edges, with counts.
    async fn get_parents(&mut self, ino: Ino) -> Result<Vec<(Ino, i64)>> {
        let st = self.st.clone();
        let rows = simple!(self, {
            self.fetch(&st.edges_of_inode, &[Arg::I64(ino as i64)])
                .await?
        })?;
        let mut parents: BTreeMap<Ino, i64> = BTreeMap::new();
        for r in &rows {
            if let Ok(p) = r.int(1) {
                *parents.entry(p as Ino).or_default() += 1;
            }
        }
        Ok(parents.into_iter().collect())
    }

    /// `doFlushStats`: one transaction updating both counters.
    async fn flush_stats(&mut self) -> Result<()> {
        let (space, inodes) = self.base.pending_stats();
        if space == 0 && inodes == 0 {
            return Ok(());
        }
        let st = self.st.clone();
        txn!(self, {
            self.exec(&st.stats_inodes, &[Arg::I64(inodes)]).await?;
            self.exec(&st.stats_space, &[Arg::I64(space)]).await?;
        })?;
        self.base.stats_flushed(space, inodes);
        Ok(())
    }
}

/// `mergeAttr` for the fields [`SetAttr`] can change (Linux behaviour, no ACLs):
/// `None` when nothing changes.
fn merge_attr(
    ctx: &Ctx,
    cur: &Attr,
    set: &SetAttr,
) -> std::result::Result<Option<Attr>, MetaError> {
    let mut dirty = cur.clone();
    let mut want_mode = set.mode;
    let owner = set.uid.is_some() || set.gid.is_some();
    if owner {
        want_mode = want_mode.map(|m| m | (cur.mode & 0o6000));
    }
    let mut changed = false;
    if cur.mode & 0o6000 != 0 && owner {
        // clearSUGID
        if cur.typ != FileType::Directory {
            let keep = if ctx.uid != 0 || (cur.mode >> 3) & 1 != 0 {
                0o1777
            } else {
                0o3777
            };
            dirty.mode &= keep;
            want_mode = want_mode.map(|m| m & keep);
        }
        changed = true;
    }
    changed |= merge_owner_mode(ctx, cur, set, want_mode.map(|m| m & 0o7777), &mut dirty)?;
    for (want, which) in [(set.atime, 0), (set.mtime, 1)] {
        let Some(t) = want else { continue };
        let curt = if which == 0 { cur.atime } else { cur.mtime };
        if curt != t {
            if cur.uid == 0 && ctx.uid != 0 {
                return Err(MetaError::Perm);
            }
            if ctx.uid != cur.uid && access(ctx, cur, 0o2).is_err() {
                return Err(MetaError::Access);
            }
            if which == 0 {
                dirty.atime = t;
            } else {
                dirty.mtime = t;
            }
            changed = true;
        }
    }
    Ok(changed.then_some(dirty))
}

/// `incrCounter` on the background connection (inode prefetch): not counted.
async fn incr_counter_bg(
    c: &mut Conn,
    st: &Stmts,
    name: &str,
    batch: u64,
) -> std::result::Result<u64, DbError> {
    let mut attempt = 0;
    loop {
        let r: std::result::Result<u64, (DbError, bool)> = async {
            c.simple(st.begin).await.map_err(|e| (e, false))?;
            let rows = c
                .fetch(&st.counter_get_for_update, &[Arg::Str(name)])
                .await
                .map_err(|e| (e, false))?;
            let v = match rows.first() {
                Some(r) => r.int(1).map_err(|e| (e, false))?,
                None => 0,
            } + batch as i64;
            if rows.is_empty() {
                c.exec(&st.counter_insert, &[Arg::Str(name), Arg::I64(v)])
                    .await
                    .map_err(|e| (e, false))?;
            } else {
                c.exec(&st.counter_update, &[Arg::I64(v), Arg::Str(name)])
                    .await
                    .map_err(|e| (e, false))?;
            }
            c.simple(st.commit).await.map_err(|e| (e, true))?;
            Ok(v as u64)
        }
        .await;
        match r {
            Ok(v) => return Ok(v),
            Err((e, at_commit)) => {
                if e.kind == ErrKind::Broken {
                    return Err(e);
                }
                if !at_commit || st.dialect == Dialect::Sqlite {
                    let _ = c.simple(st.rollback).await;
                }
                if e.kind == ErrKind::Retry && attempt + 1 < MAX_TRIES {
                    tokio::time::sleep(backoff_square(attempt)).await;
                    attempt += 1;
                    continue;
                }
                return Err(e);
            }
        }
    }
}

#[async_trait]
impl Storage for SqlSession {
    fn state(&mut self) -> &mut ClientState {
        &mut self.base
    }

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
        let lock = self.sqlite_lock.clone();
        Box::pin(async move {
            let _g = match lock {
                Some(l) => Some(l.lock_owned().await),
                None => None,
            };
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

    async fn do_mknod(
        &mut self,
        ctx: &Ctx,
        parent: Ino,
        name: &[u8],
        typ: FileType,
        mode: u16,
        umask: u16,
        rdev: u32,
        target: &[u8],
    ) -> Result<(Ino, Made)> {
        let mut found = None;
        match self
            .mknod_txn(
                ctx, parent, name, typ, mode, umask, rdev, target, &mut found,
            )
            .await
        {
            Ok((ino, attr)) => Ok((ino, Made::New(attr))),
            Err(MetaError::Exists) => Ok(match found {
                Some((ino, attr)) => (ino, Made::Existing(ino, Some(attr))),
                None => (0, Made::Existing(0, None)),
            }),
            Err(e) => Err(e),
        }
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
}

#[async_trait]
impl Meta for SqlSession {
    async fn null_round_trip(&mut self) -> Result<&'static str> {
        self.stats.round_trips += 1;
        let r = match self.conn_or_reconnect().await {
            Ok(conn) => conn.simple_fetch("SELECT 1").await.map(drop),
            Err(e) => Err(e),
        };
        r.map(|()| "SELECT 1").map_err(|e| MetaError::Engine(e.msg))
    }
    async fn link(&mut self, ctx: &Ctx, ino: Ino, parent: Ino, name: &[u8]) -> Result<Attr> {
        self.do_link(ctx, ino, parent, name).await
    }

    async fn unlink(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<()> {
        self.do_unlink(ctx, parent, name).await
    }

    async fn rmdir(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<()> {
        self.do_rmdir(ctx, parent, name).await
    }

    async fn rename(
        &mut self,
        ctx: &Ctx,
        parent_src: Ino,
        name_src: &[u8],
        parent_dst: Ino,
        name_dst: &[u8],
        flags: u32,
    ) -> Result<(Ino, Attr)> {
        self.do_rename(ctx, parent_src, name_src, parent_dst, name_dst, flags)
            .await
    }

    async fn lookup(&mut self, _ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<(Ino, Attr)> {
        self.do_lookup(parent, name).await
    }

    async fn setattr(&mut self, ctx: &Ctx, ino: Ino, set: &SetAttr) -> Result<Attr> {
        self.do_setattr(ctx, ino, set).await
    }

    /// `baseMeta.Access`: root is allowed without any I/O, anyone else costs a getattr.
    async fn access(&mut self, ctx: &Ctx, ino: Ino, mask: u16) -> Result<()> {
        if ctx.uid == 0 {
            return Ok(());
        }
        let attr = self.getattr_inner(ino).await?;
        access(ctx, &attr, mask)
    }

    async fn readdir(&mut self, ctx: &Ctx, ino: Ino, plus: bool) -> Result<Vec<Entry>> {
        self.do_readdir(ctx, ino, plus).await
    }

    async fn setxattr(
        &mut self,
        ino: Ino,
        name: &[u8],
        value: &[u8],
        flags: XattrFlags,
    ) -> Result<()> {
        self.do_setxattr(ino, name, value, flags).await
    }

    async fn getxattr(&mut self, ino: Ino, name: &[u8]) -> Result<Vec<u8>> {
        let name = xattr_name(name)?;
        let st = self.st.clone();
        simple!(self, {
            let rows = self
                .fetch(&st.xattr_get, &[Arg::I64(ino as i64), Arg::Str(name)])
                .await?;
            match rows.first() {
                Some(r) => r.bytes(3)?.to_vec(),
                None => return Err(MetaError::NoAttr.into()),
            }
        })
    }

    async fn removexattr(&mut self, ino: Ino, name: &[u8]) -> Result<()> {
        let name = xattr_name(name)?;
        let st = self.st.clone();
        txn!(self, {
            let d = self
                .exec(&st.xattr_remove, &[Arg::I64(ino as i64), Arg::Str(name)])
                .await?;
            if d.rows_affected == 0 {
                return Err(MetaError::NoAttr.into());
            }
        })
    }

    async fn listxattr(&mut self, ino: Ino) -> Result<Vec<Vec<u8>>> {
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

    async fn write(&mut self, ino: Ino, indx: u32, slice: Slice, mtime: Timestamp) -> Result<()> {
        self.do_write(ino, indx, slice, mtime).await
    }

    async fn read(&mut self, ino: Ino, indx: u32) -> Result<Vec<Slice>> {
        self.do_read(ino, indx).await
    }

    fn stats(&self) -> SessionStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> Ctx {
        Ctx::root()
    }

    fn user(uid: u32, gid: u32) -> Ctx {
        Ctx {
            uid,
            gids: vec![gid],
            pid: 1,
        }
    }

    #[test]
    fn merge_attr_changes_only_what_differs() {
        let cur = Attr::new(FileType::File, 0o644, 0, 7, 7, 1);
        assert_eq!(
            merge_attr(&root(), &cur, &SetAttr::default()).unwrap(),
            None
        );
        let same = SetAttr {
            mode: Some(0o644),
            ..Default::default()
        };
        assert_eq!(merge_attr(&root(), &cur, &same).unwrap(), None);
        let flip = SetAttr {
            mode: Some(0o645),
            ..Default::default()
        };
        assert_eq!(
            merge_attr(&root(), &cur, &flip).unwrap().unwrap().mode,
            0o645
        );
        // only root may give a file away; others get EPERM
        let chown = SetAttr {
            uid: Some(9),
            ..Default::default()
        };
        assert!(matches!(
            merge_attr(&user(7, 7), &cur, &chown),
            Err(MetaError::Perm)
        ));
        assert_eq!(merge_attr(&root(), &cur, &chown).unwrap().unwrap().uid, 9);
        // chown clears setuid of a file
        let mut suid = cur.clone();
        suid.mode = 0o4755;
        let a = merge_attr(&root(), &suid, &chown).unwrap().unwrap();
        assert_eq!(a.mode, 0o755);
    }

    #[test]
    fn node_args_bind_int_columns_as_int4() {
        let a = Attr::new(FileType::Directory, 0o755, 0, 1, 2, 1);
        let args = node_args(&NodeRow::from_attr(5, &a));
        assert!(matches!(args[0], Arg::I64(5)));
        assert!(matches!(args[1], Arg::I32(2)));
        assert!(matches!(args[3], Arg::I32(0o755)));
        assert!(matches!(args[13], Arg::I64(4096)));
        assert!(matches!(args[15], Arg::I64(1)));
    }

    #[test]
    fn trash_names() {
        assert_eq!(trash_hour(0), "1970-01-01-00");
        assert_eq!(trash_hour(1_795_315_196), "2026-11-22-02");
        assert_eq!(trash_hour(951_827_696), "2000-02-29-12");
        assert_eq!(trash_entry(1, 2, b"f"), b"1-2-f");
        assert_eq!(trash_entry(1, 2, &[b'x'; 300]).len(), 255);
    }

    #[test]
    fn names() {
        assert!(xattr_name(b"user.k").is_ok());
        assert!(xattr_name(b"").is_err());
        assert!(xattr_name(&[0xff]).is_err());
    }
}
