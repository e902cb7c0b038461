//! Transaction plumbing of an SQL session: `dbMeta.txn`, `roTxn` and `simpleTxn`, the
//! statements every operation shares, and the uncounted counter transaction of the
//! background inode prefetch.

use super::rows::*;
use super::sql_session::SqlSession;
use super::tx_err::TxErr;
use crate::base::{TxGuard, TxLock};
use crate::retry::{backoff_square, MAX_TRIES};
use crate::rules::check_parent_to_remove;
use crate::sql::conn::{Arg, Conn, DbError, Done, ErrKind, Row, Sql};
use crate::sql::dialect::Stmts;
use crate::{Ctx, MetaError};
use metabench_schema::sql::{Dialect, NodeRow};
use metabench_schema::{align4k, Attr, Ino};

/// What a transaction of `dialect` locks (`dbMeta.txn`): on SQLite inode 1, whatever the
/// call site names; elsewhere the call site's inodes.
pub(super) fn tx_lock_of(dialect: Dialect, inodes: &[Ino]) -> TxLock<'_> {
    if dialect == Dialect::Sqlite {
        TxLock::Inodes(&[metabench_schema::ROOT_INODE])
    } else {
        TxLock::Inodes(inodes)
    }
}

/// The retry loop of [`txn!`], [`ro_txn!`] and [`simple!`]: awaits `$attempt` (an
/// `async` block giving `Result<_, TxErr>`) until it succeeds, or until `$retryable` (of
/// the failed attempt's error `$e`) says no or the tries run out (`wait_to_retry`).
macro_rules! retry {
    ($s:ident, $attempt:expr, |$e:ident| $retryable:expr) => {{
        let mut attempt: u32 = 0;
        // When the attempt in progress started: an attempt retried is retry waste.
        let mut tried = ::std::time::Instant::now();
        loop {
            let (sent, engine) = ($s.stats.round_trips, $s.stats.engine_ns);
            let res: ::std::result::Result<_, $crate::sql::session::tx_err::TxErr> = $attempt.await;
            match res {
                Ok(v) => break Ok(v),
                Err($e) => {
                    let retry = $retryable;
                    if !$s.wait_to_retry(retry, &mut attempt).await {
                        break Err($crate::sql::session::tx_err::final_error($e, retry));
                    }
                    $s.stats.retry_waste_ns += $crate::retry::wasted_since(&mut tried);
                    $s.stats.retried_round_trips += $s.stats.round_trips - sent;
                    $s.stats.retried_engine_ns += $s.stats.engine_ns - engine;
                }
            }
        }
    }};
}

/// The attempts of [`txn!`] and [`ro_txn!`]: `$begin` (the session's method sending
/// `BEGIN`, or a read-only transaction's statements), the body, then `$end` (`COMMIT`,
/// or `ROLLBACK`); a failed attempt is ended by `SqlSession::abort`, which says whether
/// it is retried.
macro_rules! attempts {
    ($s:ident, $begin:ident, $body:block, $end:expr) => {
        $crate::sql::session::txn::retry!(
            $s,
            async {
                $s.$begin()
                    .await
                    .map_err($crate::sql::session::tx_err::TxErr::Db)?;
                #[allow(clippy::redundant_closure_call)]
                let v = $body;
                $end;
                Ok(v)
            },
            |e| $s.abort(&e).await
        )
    };
}

/// A write transaction (`dbMeta.txn`), holding the client's transaction locks of the
/// inodes its `pkg/meta/sql.go` call site names (`[ino, …]`, none when left out; inode 1
/// for every transaction on SQLite). The body is a block evaluated inside the
/// transaction; `?` in it aborts the attempt.
macro_rules! txn {
    ($s:ident, $body:block) => {
        txn!($s, [], $body)
    };
    ($s:ident, [$($ino:expr),*], $body:block) => {{
        let _guard = $s.write_guard(&[$($ino),*]).await;
        $crate::sql::session::txn::attempts!(
            $s,
            begin,
            $body,
            $s.commit()
                .await
                .map_err($crate::sql::session::tx_err::TxErr::Commit)?
        )
    }};
}

/// A read-only transaction (`dbMeta.roTxn`): always rolled back.
macro_rules! ro_txn {
    ($s:ident, $body:block) => {
        $crate::sql::session::txn::attempts!($s, begin_ro, $body, {
            let _ = $s.rollback().await;
        })
    };
}

/// Autocommit reads (`dbMeta.simpleTxn`), retried on retryable errors.
macro_rules! simple {
    ($s:ident, $body:block) => {
        $crate::sql::session::txn::retry!($s, async { Ok($body) }, |e| e.retryable_outside_txn())
    };
}

pub(super) use {attempts, retry, ro_txn, simple, txn};

impl SqlSession {
    /// The server's id of this session's connection: `CONNECTION_ID()` on MySQL (the
    /// general log's thread id), `pg_backend_pid()` on PostgreSQL, 0 on SQLite. Not
    /// counted in [`crate::SessionStats`].
    pub async fn connection_id(&mut self) -> crate::Result<u64> {
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

    /// After a failed attempt that may be retried (`retry`): counts the retry, sleeps the
    /// backoff of `attempt` and returns true, unless the attempts are used up (false).
    pub(super) async fn wait_to_retry(&mut self, retry: bool, attempt: &mut u32) -> bool {
        if !retry || *attempt + 1 >= MAX_TRIES {
            return false;
        }
        self.stats.retries += 1;
        tokio::time::sleep(backoff_square(*attempt)).await;
        *attempt += 1;
        true
    }

    pub(super) async fn conn_or_reconnect(&mut self) -> std::result::Result<&mut Conn, DbError> {
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

    pub(super) fn note(&mut self, e: &DbError) {
        if e.kind == ErrKind::Broken {
            self.conn = None;
        }
    }

    /// Counts a statement's round trip and, on SQLite, takes its start
    /// ([`Self::round_trip_ended`]).
    fn round_trip_starts(&mut self) -> Option<std::time::Instant> {
        self.stats.round_trips += 1;
        self.sqlite_start()
    }

    /// Counts a parameterized statement's round trip (and on MySQL its prepare, an
    /// exchange of its own) and, on SQLite, takes its start.
    fn prepared_round_trip_starts(&mut self) -> Option<std::time::Instant> {
        self.stats.round_trips += 1;
        if self.st.dialect == Dialect::Mysql {
            self.stats.prepare_round_trips += 1;
        }
        self.sqlite_start()
    }

    /// The start of a statement on SQLite, whose time is the engine's.
    fn sqlite_start(&self) -> Option<std::time::Instant> {
        let sqlite = self.st.dialect == Dialect::Sqlite;
        sqlite.then(std::time::Instant::now)
    }

    /// A statement's end. SQLite, called in-process: its time from `start` (taken only on
    /// SQLite) is the engine's, its busy-handler sleeps on the database lock included.
    /// A failure is noted ([`Self::note`]).
    fn round_trip_ended<T>(
        &mut self,
        start: Option<std::time::Instant>,
        r: &std::result::Result<T, DbError>,
    ) {
        if let Some(start) = start {
            self.stats.engine_ns += start.elapsed().as_nanos() as u64;
        }
        if let Err(e) = r {
            self.note(e);
        }
    }

    pub(super) async fn exec(
        &mut self,
        sql: &Sql,
        args: &[Arg<'_>],
    ) -> std::result::Result<Done, DbError> {
        let start = self.prepared_round_trip_starts();
        let r = self.conn_or_reconnect().await?.exec(sql, args).await;
        self.round_trip_ended(start, &r);
        r
    }

    pub(super) async fn fetch(
        &mut self,
        sql: &Sql,
        args: &[Arg<'_>],
    ) -> std::result::Result<Vec<Row>, DbError> {
        let start = self.prepared_round_trip_starts();
        let r = self.conn_or_reconnect().await?.fetch(sql, args).await;
        self.round_trip_ended(start, &r);
        r
    }

    pub(super) async fn simple_stmt(&mut self, sql: &str) -> std::result::Result<(), DbError> {
        let start = self.round_trip_starts();
        let r = self.conn_or_reconnect().await?.simple(sql).await;
        self.round_trip_ended(start, &r);
        r
    }

    pub(super) async fn begin(&mut self) -> std::result::Result<(), DbError> {
        let s = self.st.begin;
        self.simple_stmt(s).await
    }

    pub(super) async fn begin_ro(&mut self) -> std::result::Result<(), DbError> {
        for s in self.st.begin_ro {
            self.simple_stmt(s).await?;
        }
        Ok(())
    }

    pub(super) async fn commit(&mut self) -> std::result::Result<(), DbError> {
        let s = self.st.commit;
        self.simple_stmt(s).await
    }

    pub(super) async fn rollback(&mut self) -> std::result::Result<(), DbError> {
        if self.conn.is_none() {
            return Ok(());
        }
        let s = self.st.rollback;
        self.simple_stmt(s).await
    }

    /// Ends a failed attempt as database/sql and xorm do (ROLLBACK after a failed
    /// statement or an errno; nothing after a failed COMMIT except on SQLite, whose
    /// driver rolls back) and says whether JuiceFS would retry.
    pub(super) async fn abort(&mut self, e: &TxErr) -> bool {
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

    /// `txBatchLock` of `dbMeta.txn`: the client's locks of `inodes`, or of inode 1 on
    /// SQLite, where JuiceFS lets one transaction of a client write at a time.
    pub(super) async fn write_guard(&self, inodes: &[Ino]) -> TxGuard {
        self.base.tx_lock(tx_lock_of(self.st.dialect, inodes)).await
    }

    pub(super) async fn get_node(
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

    /// The rows `sql` selects for inode `ino` (its one argument), read outside a
    /// transaction (`simpleTxn`, retried as it retries).
    pub(super) async fn rows_of_inode(&mut self, sql: &Sql, ino: Ino) -> crate::Result<Vec<Row>> {
        simple!(self, { self.fetch(sql, &[Arg::I64(ino as i64)]).await? })
    }

    pub(super) async fn get_edge(
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

    /// The first reads of `doUnlink` and `doRmdir`: the parent's row and attribute
    /// (checked as a directory an entry may leave) and the entry.
    pub(super) async fn parent_and_entry(
        &mut self,
        ctx: &Ctx,
        parent: Ino,
        name: &[u8],
    ) -> std::result::Result<(NodeRow, Attr, EdgeRow), TxErr> {
        let pn = self
            .get_node(parent, false)
            .await?
            .ok_or(MetaError::NotFound)?;
        let pattr = pn.to_attr()?;
        check_parent_to_remove(ctx, &pattr)?;
        let e = self
            .get_edge(parent, name)
            .await?
            .ok_or(MetaError::NotFound)?;
        Ok((pn, pattr, e))
    }

    pub(super) async fn insert_edge(
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

    pub(super) async fn delete_edge(
        &mut self,
        parent: Ino,
        e: &EdgeRow,
    ) -> std::result::Result<u64, DbError> {
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

    /// Writes a node's link count, parent and ctime (`node_update_link`).
    pub(super) async fn update_link(&mut self, n: &NodeRow) -> std::result::Result<(), DbError> {
        let st = self.st.clone();
        let args = [
            Arg::I64(n.ctime),
            Arg::I32(n.ctimensec as i32),
            Arg::I32(n.nlink as i32),
            Arg::I64(n.parent.unwrap_or(0)),
            Arg::I64(n.inode),
        ];
        self.exec(&st.node_update_link, &args).await.map(drop)
    }

    /// Writes a node's ctime and its new parent (`node_update_ctime_parent`).
    pub(super) async fn update_ctime_parent(
        &mut self,
        n: &NodeRow,
        parent: i64,
    ) -> std::result::Result<(), DbError> {
        let st = self.st.clone();
        let args = [
            Arg::I64(n.ctime),
            Arg::I32(n.ctimensec as i32),
            Arg::I64(parent),
            Arg::I64(n.inode),
        ];
        self.exec(&st.node_update_ctime_parent, &args)
            .await
            .map(drop)
    }

    /// Deletes the last link's node as `doUnlink` and `doRename` do: a file's data goes to
    /// the delete queue (session 0: deleted at once), a symlink's target and the node's
    /// xattrs go with it. Returns the space freed (negative).
    pub(super) async fn delete_node(
        &mut self,
        ino: i64,
        typ: i64,
        length: i64,
    ) -> std::result::Result<i64, DbError> {
        let st = self.st.clone();
        let space = if typ == TYPE_FILE {
            let args = [Arg::I64(ino), Arg::I64(length), Arg::I64(unix_now())];
            self.exec(&st.delfile_insert, &args).await?;
            -align4k(length as u64)
        } else {
            if typ == TYPE_SYMLINK {
                self.exec(&st.symlink_delete, &[Arg::I64(ino)]).await?;
            }
            -align4k(0)
        };
        self.exec(&st.node_delete, &[Arg::I64(ino)]).await?;
        self.exec(&st.xattr_delete_all, &[Arg::I64(ino)]).await?;
        Ok(space)
    }

    /// A parent-directory update; matching no row is a conflict (EBUSY, retried) on
    /// MySQL and ENOENT elsewhere.
    pub(super) async fn update_parent(
        &mut self,
        sql: &Sql,
        pn: &NodeRow,
    ) -> std::result::Result<(), TxErr> {
        let d = self.exec(sql, &parent_args(pn)).await?;
        if d.rows_affected == 0 {
            return Err(if self.st.dialect == Dialect::Mysql {
                TxErr::Busy
            } else {
                TxErr::Meta(MetaError::NotFound)
            });
        }
        Ok(())
    }
}

/// `incrCounter` on the background connection (inode prefetch): not counted.
pub(super) async fn incr_counter_bg(
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
