//! One database connection of any of the three dialects, with JuiceFS's wire behaviour:
//! MySQL prepares, executes and closes every parameterized statement (go-sql-driver
//! without `interpolateParams`: 2 round trips), PostgreSQL caches prepared statements
//! per connection (pgx), SQLite prepares every statement afresh (go-sqlite3). Statements
//! without parameters (BEGIN, COMMIT, DDL…) go through the simple query protocol.
//!
//! MySQL and PostgreSQL go through sqlx, whose connections are driven by the calling
//! task. SQLite is called in-process on the calling thread through rusqlite, as
//! go-sqlite3 calls it (sqlx would hand every statement to a worker thread).

use metabench_schema::sql::Dialect;
use rusqlite::types::ValueRef as SqliteValue;
use sqlx::mysql::MySqlConnection;
use sqlx::postgres::PgConnection;
use sqlx::{AssertSqlSafe, Column, Connection, Executor, Row as _, TypeInfo, ValueRef};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A statement text, rendered once per dialect and table prefix.
pub(crate) type Sql = Arc<str>;

/// A bound parameter.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg<'a> {
    /// A BIGINT value.
    I64(i64),
    /// An INT value (PostgreSQL gets an `int4` parameter, as pgx infers for INTEGER).
    I32(i32),
    /// A binary value (VARBINARY / BLOB / BYTEA).
    Bytes(&'a [u8]),
    /// A text value (VARCHAR / TEXT).
    Str(&'a str),
}

/// One column value of a result row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Val {
    Null,
    Int(i64),
    Bytes(Vec<u8>),
}

/// A result row, columns in `SELECT` order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row(pub Vec<Val>);

impl Row {
    /// An integer column (NULL is an error).
    pub fn int(&self, i: usize) -> Result<i64, DbError> {
        match self.0.get(i) {
            Some(Val::Int(v)) => Ok(*v),
            other => Err(DbError::decode(format!(
                "column {i}: expected an integer, got {other:?}"
            ))),
        }
    }

    /// A nullable integer column.
    pub fn opt_int(&self, i: usize) -> Result<Option<i64>, DbError> {
        match self.0.get(i) {
            Some(Val::Null) => Ok(None),
            _ => self.int(i).map(Some),
        }
    }

    /// A binary or text column (NULL reads as empty).
    pub fn bytes(&self, i: usize) -> Result<&[u8], DbError> {
        match self.0.get(i) {
            Some(Val::Bytes(b)) => Ok(b),
            Some(Val::Null) => Ok(&[]),
            other => Err(DbError::decode(format!(
                "column {i}: expected bytes, got {other:?}"
            ))),
        }
    }

    /// A text column, lossily decoded.
    pub fn text(&self, i: usize) -> Result<String, DbError> {
        self.bytes(i)
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }
}

/// How an error should be handled (`dbMeta.shouldRetry`, `isDuplicateEntryErr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrKind {
    /// Conflict, deadlock, lock timeout, busy database… JuiceFS runs the transaction again.
    Retry,
    /// The connection is gone; reconnect, then retry.
    Broken,
    /// Anything else: the operation fails.
    Fatal,
}

/// An error of the database, classified for the retry loop.
#[derive(Debug, Clone)]
pub(crate) struct DbError {
    /// What to do about it.
    pub kind: ErrKind,
    /// A unique-key violation (`isDuplicateEntryErr`).
    pub duplicate: bool,
    /// The server's message.
    pub msg: String,
}

impl DbError {
    pub fn decode(msg: String) -> Self {
        Self {
            kind: ErrKind::Fatal,
            duplicate: false,
            msg,
        }
    }

    /// Classifies an sqlx error (MySQL, PostgreSQL) as JuiceFS's `shouldRetry` does for
    /// `dialect`; SQLite's errors come from rusqlite ([`DbError::from_sqlite`]).
    pub fn classify(dialect: Dialect, e: sqlx::Error) -> Self {
        let broken = matches!(
            e,
            sqlx::Error::Io(_)
                | sqlx::Error::Protocol(_)
                | sqlx::Error::WorkerCrashed
                | sqlx::Error::PoolClosed
                | sqlx::Error::PoolTimedOut
        );
        let mut duplicate = false;
        let mut number = None;
        if let sqlx::Error::Database(db) = &e {
            let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
            match dialect {
                Dialect::Mysql => {
                    if let Some(my) = db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
                        number = Some(my.number());
                        duplicate = my.number() == 1062;
                    }
                }
                Dialect::Postgres => duplicate = code == "23505",
                Dialect::Sqlite => {}
            }
        }
        let msg = e.to_string();
        let m = msg.to_lowercase();
        let retry = m.contains("too many connections")
            || m.contains("too many clients")
            || match dialect {
                Dialect::Sqlite => false,
                Dialect::Mysql => {
                    m.contains("try restarting transaction")
                        || m.contains("try again later")
                        || m.contains("duplicate entry")
                        || number == Some(1020)
                        || number == Some(1062)
                        || m.contains("serialize access")
                }
                Dialect::Postgres => {
                    m.contains("current transaction is aborted")
                        || m.contains("deadlock detected")
                        || m.contains("duplicate key value")
                        || m.contains("serialize access")
                        || duplicate
                }
            };
        let kind = if broken {
            ErrKind::Broken
        } else if retry {
            ErrKind::Retry
        } else {
            ErrKind::Fatal
        };
        Self {
            kind,
            duplicate,
            msg,
        }
    }
}

impl DbError {
    /// Classifies a SQLite error as JuiceFS's `shouldRetry` does for SQLite: busy or
    /// locked is retried, a constraint violation is a duplicate entry.
    pub fn from_sqlite(e: rusqlite::Error) -> Self {
        let (kind, duplicate) = match &e {
            rusqlite::Error::SqliteFailure(f, _) => match f.code {
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked => {
                    (ErrKind::Retry, false)
                }
                rusqlite::ErrorCode::ConstraintViolation => (ErrKind::Fatal, true),
                _ => (ErrKind::Fatal, false),
            },
            _ => (ErrKind::Fatal, false),
        };
        let msg = match &e {
            rusqlite::Error::SqliteFailure(f, Some(m)) => {
                format!("(code: {}) {m}", f.extended_code)
            }
            other => other.to_string(),
        };
        Self {
            kind,
            duplicate,
            msg,
        }
    }
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.msg)
    }
}

/// Result of a statement that returns no rows.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Done {
    pub rows_affected: u64,
}

/// One connection.
pub(crate) enum Conn {
    Mysql(MySqlConnection),
    Postgres(PgConnection),
    /// In a mutex only so that the session is `Sync`: every call goes through
    /// `&mut self` and reaches the connection with `get_mut`, without locking.
    Sqlite(Box<std::sync::Mutex<rusqlite::Connection>>),
}

macro_rules! bind_all {
    ($q:expr, $args:expr) => {{
        let mut q = $q;
        for a in $args {
            q = match *a {
                Arg::I64(v) => q.bind(v),
                Arg::I32(v) => q.bind(v),
                Arg::Bytes(b) => q.bind(b),
                Arg::Str(s) => q.bind(s),
            };
        }
        q
    }};
}

impl Conn {
    /// Wraps an open SQLite connection.
    pub fn sqlite(c: rusqlite::Connection) -> Self {
        Conn::Sqlite(Box::new(std::sync::Mutex::new(c)))
    }

    /// The connection's dialect.
    pub fn dialect(&self) -> Dialect {
        match self {
            Conn::Mysql(_) => Dialect::Mysql,
            Conn::Postgres(_) => Dialect::Postgres,
            Conn::Sqlite(_) => Dialect::Sqlite,
        }
    }

    fn err(&self, e: sqlx::Error) -> DbError {
        DbError::classify(self.dialect(), e)
    }

    /// Runs a parameterized statement that returns no rows.
    pub async fn exec(&mut self, sql: &Sql, args: &[Arg<'_>]) -> Result<Done, DbError> {
        let r = match self {
            Conn::Mysql(c) => bind_all!(sqlx::query(AssertSqlSafe(sql.clone())), args)
                .persistent(false)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected()),
            Conn::Postgres(c) => bind_all!(sqlx::query(AssertSqlSafe(sql.clone())), args)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected()),
            Conn::Sqlite(c) => {
                return sqlite_call(c, |c| sqlite_exec(c, sql, args))
                    .await
                    .map(|n| Done {
                        rows_affected: n as u64,
                    })
            }
        };
        r.map(|rows_affected| Done { rows_affected })
            .map_err(|e| self.err(e))
    }

    /// Runs a parameterized query and returns all its rows.
    pub async fn fetch(&mut self, sql: &Sql, args: &[Arg<'_>]) -> Result<Vec<Row>, DbError> {
        let r = match self {
            Conn::Mysql(c) => bind_all!(sqlx::query(AssertSqlSafe(sql.clone())), args)
                .persistent(false)
                .fetch_all(&mut *c)
                .await
                .and_then(|rows| rows.iter().map(mysql_row).collect()),
            Conn::Postgres(c) => bind_all!(sqlx::query(AssertSqlSafe(sql.clone())), args)
                .fetch_all(&mut *c)
                .await
                .and_then(|rows| rows.iter().map(pg_row).collect()),
            Conn::Sqlite(c) => return sqlite_call(c, |c| sqlite_fetch(c, sql, args)).await,
        };
        r.map_err(|e| self.err(e))
    }

    /// Runs a statement without parameters through the simple query protocol (MySQL
    /// `COM_QUERY`, PostgreSQL `Query`): BEGIN, COMMIT, ROLLBACK, DDL, session settings.
    pub async fn simple(&mut self, sql: &str) -> Result<(), DbError> {
        let s = || AssertSqlSafe(sql.to_owned());
        let r = match self {
            Conn::Mysql(c) => c.execute(s()).await.map(|_| ()),
            Conn::Postgres(c) => c.execute(s()).await.map(|_| ()),
            Conn::Sqlite(c) => return sqlite_call(c, |c| c.execute_batch(sql)).await,
        };
        r.map_err(|e| self.err(e))
    }

    /// A query without parameters through the simple query protocol, with its rows.
    pub async fn simple_fetch(&mut self, sql: &str) -> Result<Vec<Row>, DbError> {
        let s = || AssertSqlSafe(sql.to_owned());
        let r = match self {
            Conn::Mysql(c) => c
                .fetch_all(s())
                .await
                .and_then(|rows| rows.iter().map(mysql_row).collect()),
            Conn::Postgres(c) => c
                .fetch_all(s())
                .await
                .and_then(|rows| rows.iter().map(pg_row).collect()),
            Conn::Sqlite(c) => return sqlite_call(c, |c| sqlite_fetch(c, sql, &[])).await,
        };
        r.map_err(|e| self.err(e))
    }

    /// Closes the connection politely.
    pub async fn close(self) {
        let _ = match self {
            Conn::Mysql(c) => c.close().await,
            Conn::Postgres(c) => c.close().await,
            Conn::Sqlite(c) => {
                let c = c
                    .into_inner()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                let _ = c.close();
                Ok(())
            }
        };
    }
}

/// A fetched row as [`Row`]: NULL columns as [`Val::Null`], the others as `value` makes
/// them from the column's index and its type's name.
fn to_row<R: sqlx::Row>(
    r: &R,
    value: impl Fn(&R, usize, &str) -> Result<Val, sqlx::Error>,
) -> Result<Row, sqlx::Error>
where
    usize: sqlx::ColumnIndex<R>,
{
    let mut out = Vec::with_capacity(r.columns().len());
    for (i, c) in r.columns().iter().enumerate() {
        out.push(if r.try_get_raw(i)?.is_null() {
            Val::Null
        } else {
            value(r, i, c.type_info().name())?
        });
    }
    Ok(Row(out))
}

fn mysql_row(r: &sqlx::mysql::MySqlRow) -> Result<Row, sqlx::Error> {
    to_row(r, |r, i, ty| {
        let ty = ty.to_ascii_uppercase();
        Ok(if ty.contains("INT") && ty.contains("UNSIGNED") {
            Val::Int(r.try_get::<u64, _>(i)? as i64)
        } else if ty.contains("INT") {
            Val::Int(r.try_get::<i64, _>(i)?)
        } else {
            Val::Bytes(r.try_get_unchecked::<Vec<u8>, _>(i)?)
        })
    })
}

fn pg_row(r: &sqlx::postgres::PgRow) -> Result<Row, sqlx::Error> {
    to_row(r, |r, i, ty| {
        Ok(match ty {
            "INT2" => Val::Int(r.try_get::<i16, _>(i)? as i64),
            "INT4" => Val::Int(r.try_get::<i32, _>(i)? as i64),
            "INT8" => Val::Int(r.try_get::<i64, _>(i)?),
            "BYTEA" => Val::Bytes(r.try_get::<Vec<u8>, _>(i)?),
            _ => Val::Bytes(r.try_get_unchecked::<String, _>(i)?.into_bytes()),
        })
    })
}

/// The sleeps of SQLite's default busy handler (`sqliteDefaultBusyCallback`), ms; the
/// last one repeats.
const SQLITE_BUSY_DELAYS_MS: [u64; 12] = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];
/// How long a statement waits for a lock: go-sqlite3's `_busy_timeout`, which JuiceFS
/// sets to 5000 ms (`_timeout=5000` in `pkg/meta/sql.go`, `newSQLMeta`).
pub(crate) const SQLITE_BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// This process's waits on an SQLite database's lock, as the busy handler makes them, over
/// every connection: how many sleeps, and their time (ns). SQLite keeps no such counter,
/// and it runs in this process: these are its telemetry ([`sqlite_lock_waits`]).
static SQLITE_BUSY_SLEEPS: AtomicU64 = AtomicU64::new(0);
static SQLITE_BUSY_NS: AtomicU64 = AtomicU64::new(0);

/// How often this process's SQLite statements have slept on a database lock, and for how
/// long in all, summed over the statements that slept.
pub(crate) fn sqlite_lock_waits() -> (u64, std::time::Duration) {
    (
        SQLITE_BUSY_SLEEPS.load(Ordering::Relaxed),
        std::time::Duration::from_nanos(SQLITE_BUSY_NS.load(Ordering::Relaxed)),
    )
}

/// Runs one SQLite statement on the calling thread. While another connection holds the
/// lock it waits as SQLite's busy handler would (the same sleeps, up to
/// [`SQLITE_BUSY_TIMEOUT`]), but asleep on the runtime instead of blocking the thread:
/// a JuiceFS client blocked on the lock stalls only itself, never the other clients
/// that share its thread here.
async fn sqlite_call<T>(
    c: &mut std::sync::Mutex<rusqlite::Connection>,
    statement: impl Fn(&rusqlite::Connection) -> rusqlite::Result<T>,
) -> Result<T, DbError> {
    let mut waited = std::time::Duration::ZERO;
    let mut attempt = 0;
    loop {
        // Its time is the engine's, on the client thread that runs it.
        match crate::in_process::metered(|| statement(sqlite(c))) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.extended_code == rusqlite::ffi::SQLITE_BUSY
                    && waited < SQLITE_BUSY_TIMEOUT =>
            {
                let delay = SQLITE_BUSY_DELAYS_MS[attempt.min(SQLITE_BUSY_DELAYS_MS.len() - 1)];
                let delay =
                    std::time::Duration::from_millis(delay).min(SQLITE_BUSY_TIMEOUT - waited);
                let asleep = std::time::Instant::now();
                tokio::time::sleep(delay).await;
                SQLITE_BUSY_SLEEPS.fetch_add(1, Ordering::Relaxed);
                SQLITE_BUSY_NS.fetch_add(asleep.elapsed().as_nanos() as u64, Ordering::Relaxed);
                waited += delay;
                attempt += 1;
            }
            r => return r.map_err(DbError::from_sqlite),
        }
    }
}

/// The connection behind [`Conn::Sqlite`], reached without locking.
fn sqlite(c: &mut std::sync::Mutex<rusqlite::Connection>) -> &mut rusqlite::Connection {
    c.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Prepares `sql` afresh (as go-sqlite3 does for every statement), binds `args` in order.
fn sqlite_prepare<'c>(
    c: &'c rusqlite::Connection,
    sql: &str,
    args: &[Arg<'_>],
) -> rusqlite::Result<rusqlite::Statement<'c>> {
    let mut st = c.prepare(sql)?;
    for (i, a) in args.iter().enumerate() {
        match *a {
            Arg::I64(v) => st.raw_bind_parameter(i + 1, v)?,
            Arg::I32(v) => st.raw_bind_parameter(i + 1, v)?,
            Arg::Bytes(b) => st.raw_bind_parameter(i + 1, b)?,
            Arg::Str(t) => st.raw_bind_parameter(i + 1, t)?,
        }
    }
    Ok(st)
}

fn sqlite_exec(c: &rusqlite::Connection, sql: &str, args: &[Arg<'_>]) -> rusqlite::Result<usize> {
    sqlite_prepare(c, sql, args)?.raw_execute()
}

fn sqlite_fetch(
    c: &rusqlite::Connection,
    sql: &str,
    args: &[Arg<'_>],
) -> rusqlite::Result<Vec<Row>> {
    let mut st = sqlite_prepare(c, sql, args)?;
    let n = st.column_count();
    let mut rows = st.raw_query();
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let mut vals = Vec::with_capacity(n);
        for i in 0..n {
            // The runtime type of the value: `slices || ?` turns a BLOB into TEXT with
            // the same bytes, so anything not an integer is read as bytes.
            vals.push(match r.get_ref(i)? {
                SqliteValue::Null => Val::Null,
                SqliteValue::Integer(v) => Val::Int(v),
                SqliteValue::Text(b) | SqliteValue::Blob(b) => Val::Bytes(b.to_vec()),
                SqliteValue::Real(_) => {
                    return Err(rusqlite::Error::InvalidColumnType(
                        i,
                        "a REAL in JuiceFS's schema".into(),
                        rusqlite::types::Type::Real,
                    ))
                }
            });
        }
        out.push(Row(vals));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(flavor = "current_thread")]
    async fn a_statement_kept_off_sqlites_lock_sleeps_and_its_sleeps_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock.db");
        let holder = rusqlite::Connection::open(&path).unwrap();
        holder
            .execute_batch(
                "PRAGMA journal_mode = WAL; CREATE TABLE t (x); \
                 BEGIN IMMEDIATE; INSERT INTO t VALUES (1);",
            )
            .unwrap();
        // No busy timeout of SQLite's own: it answers SQLITE_BUSY at once, as ours do.
        let waiter = rusqlite::Connection::open(&path).unwrap();
        waiter.busy_timeout(Duration::ZERO).unwrap();
        let mut waiter = std::sync::Mutex::new(waiter);
        let (sleeps, asleep) = sqlite_lock_waits();
        // The holder commits 50 ms from now, on another thread.
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            holder.execute_batch("COMMIT").unwrap();
        });
        let inserted =
            sqlite_call(&mut waiter, |c| c.execute("INSERT INTO t VALUES (2)", [])).await;
        release.join().unwrap();
        assert_eq!(inserted.expect("the insert once the lock was free"), 1);
        let (sleeps_now, asleep_now) = sqlite_lock_waits();
        // At least the busy handler's first sleeps (1, 2, 5, 10, 15 ms: 33 ms) went by.
        assert!(sleeps_now - sleeps >= 4, "{} sleeps", sleeps_now - sleeps);
        assert!(
            asleep_now - asleep >= Duration::from_millis(30),
            "{:?} asleep",
            asleep_now - asleep
        );
    }
}
