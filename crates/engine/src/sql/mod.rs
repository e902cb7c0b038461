//! SQL engines (MySQL/MariaDB, PostgreSQL, SQLite) as `pkg/meta/sql.go` uses them.
//!
//! - `conn`: one connection of any dialect, with the drivers' wire behaviour
//!   (prepare/execute/close per MySQL statement, pgx's per-connection statement cache).
//! - `dialect`: every statement text, rendered per dialect and table prefix.
//! - `session`: [`SqlSession`], its storage steps and [`Meta`] operations,
//!   split by concern (transactions, rows, namespace, attributes, chunks, background).
//! - this module: [`SqlEngine`]: connecting from a meta URL, probe, format, destroy and
//!   the server facts.
//!
//! Each session is one JuiceFS client with its own connection. The engine keeps one more
//! connection (opened lazily) for probe / format / destroy / server info and for the
//! background inode prefetch of the sessions, which JuiceFS runs on another pooled
//! connection and which is therefore not counted in a session's round trips.

mod conn;
mod dialect;
mod session;
mod target;

pub use session::SqlSession;

use crate::base::{BaseMeta, SessionRegistry};
use crate::rules::format_dir_attr;
use crate::{
    Engine, EngineKind, Meta, MetaError, MetaUrl, Result, ServerInfo, SessionOptions, VolumeState,
};
use async_trait::async_trait;
use conn::{Arg, Conn, DbError};
use dialect::Stmts;
use metabench_schema::sql::{create_statements, table_names, table_prefix, Dialect, NodeRow};
use metabench_schema::{Format, Timestamp, ROOT_INODE, TRASH_INODE};
use std::sync::Arc;
use target::{How, Target};
use tokio::sync::Mutex;

/// Connects to the SQL engine a URL names and checks it answers.
pub async fn open(url: &MetaUrl) -> Result<Arc<dyn Engine>> {
    Ok(Arc::new(SqlEngine::open(url).await?))
}

/// Where metabench's SQL sessions knowingly differ from a JuiceFS client.
pub fn fidelity_notes() -> &'static [&'static str] {
    &[
        "TLS (sqlx with rustls): PostgreSQL's `sslmode=allow` never uses TLS (pgx tries it after \
         a plain refusal), an `sslrootcert` is trusted beside the system's roots (pgx: instead \
         of them), and libpq's PG* environment variables (PGSSLMODE, …) are not read; MySQL's \
         `tls=true` checks against the system's roots as go-sql-driver does.",
        "The statements are JuiceFS's, byte for byte, but metabench sends them without Go's \
         database/sql, xorm and (SQLite) cgo layers, which cost the Go client tens of µs per \
         statement: metabench's µs/op on SQL engines is below the Go client's, and the \
         difference is client CPU, not the engine.",
        "Sessions: under `gobench` none is registered (sid 0, `NewSession(false)`); under \
         `mount` each client registers one (its `session2` row, refreshed every 12 s by the \
         background work, removed at the end of the run), without the `syncTable` checks a new \
         session makes first. The heartbeat's other reads (the setting, two counters, quotas) \
         are not made. Unlinked files are never kept open (no `sustained` rows).",
        "Quotas are neither loaded nor enforced (the ancestor walk of the quota check is done, \
         as JuiceFS does with DirStats: a cold session reads uncached ancestors first). Capacity \
         and inode limits are not enforced.",
        "POSIX ACLs are not evaluated: access checks use the mode bits.",
        "Compaction is never started.",
        crate::meta::BACKGROUND_WORK_NOTE,
        "Background work sends the same statements; metabench deletes no objects.",
        "SQLite: before each measurement the WAL is checkpointed and truncated (untimed), so its \
         automatic checkpoints fall on the same calls in every run.",
        "With `client_cache`, read and readlink answer from the session's caches; without it every \
         call reaches the database.",
    ]
}

/// An SQL engine reached through a meta URL.
pub struct SqlEngine {
    url: MetaUrl,
    target: Arc<Target>,
    st: Arc<Stmts>,
    /// Probe/format/destroy/server info, and the sessions' inode prefetch.
    admin: Arc<Mutex<Option<Conn>>>,
    /// The sessions registered here and not closed.
    sessions: SessionRegistry,
}

impl SqlEngine {
    /// Parses what the URL names and, for MySQL and PostgreSQL, connects once to check
    /// that the server answers and the credentials work. For SQLite nothing is opened
    /// or created (format creates the file).
    pub async fn open(url: &MetaUrl) -> Result<Self> {
        let target = Target::new(url)?;
        let prefix = table_prefix(url.param("table_prefix"));
        let mut st = Stmts::new(target.dialect(), &prefix);
        if target.dialect() == Dialect::Mysql {
            st.table_schema = url.database().to_owned();
        }
        let admin = match target.how {
            How::Sqlite(ref p) => {
                if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                    if !dir.is_dir() {
                        return Err(target
                            .connect_error(format!("directory {} does not exist", dir.display())));
                    }
                }
                None
            }
            _ => Some(target.connect().await?),
        };
        Ok(Self {
            url: url.clone(),
            target: Arc::new(target),
            st: Arc::new(st),
            sessions: SessionRegistry::default(),
            admin: Arc::new(Mutex::new(admin)),
        })
    }

    /// The table prefix in use (`jfs_` or `jfs_<x>_`).
    pub fn table_prefix(&self) -> &str {
        &self.st.prefix
    }

    /// The SQL dialect.
    pub fn dialect(&self) -> Dialect {
        self.st.dialect
    }

    /// Opens a session with its concrete type (tests use [`SqlSession::connection_id`]).
    pub async fn sql_session(&self, opts: &SessionOptions) -> Result<SqlSession> {
        let mut s = SqlSession::open(
            self.target.clone(),
            self.st.clone(),
            self.admin.clone(),
            opts.clone(),
            None,
        )
        .await?;
        if opts.register {
            s.register(&self.sessions).await?;
        }
        Ok(s)
    }

    /// The names of the tables in the database (or schema), sorted; SQLite's internal
    /// tables left out.
    async fn list_tables(conn: &mut Conn) -> std::result::Result<Vec<String>, DbError> {
        let sql = match conn.dialect() {
            Dialect::Mysql => {
                "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"
            }
            Dialect::Postgres => {
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            }
            Dialect::Sqlite => {
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
            }
        };
        let mut names = conn
            .simple_fetch(sql)
            .await?
            .iter()
            .map(|r| r.text(0))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        names.sort();
        Ok(names)
    }

    async fn probe_on(&self, conn: &mut Conn) -> Result<VolumeState> {
        let tables = Self::list_tables(conn).await.map_err(engine_err)?;
        if tables.is_empty() {
            return Ok(VolumeState::Empty);
        }
        let setting = format!("{}setting", self.st.prefix);
        if tables.contains(&setting) {
            let rows = conn
                .fetch(&self.st.setting_get, &[Arg::Str("format")])
                .await
                .map_err(engine_err)?;
            if let Some(row) = rows.first() {
                if let Ok(f) = Format::from_json(row.bytes(1).map_err(engine_err)?) {
                    return Ok(VolumeState::Volume(Box::new(f)));
                }
            }
        }
        let shown: Vec<&str> = tables.iter().take(8).map(String::as_str).collect();
        Ok(VolumeState::Foreign(format!(
            "database holds {} tables that are not a JuiceFS volume{}: {}{}",
            tables.len(),
            if self.st.prefix == "jfs_" {
                String::new()
            } else {
                format!(" with table prefix {}", self.st.prefix)
            },
            shown.join(", "),
            if tables.len() > shown.len() {
                ", …"
            } else {
                ""
            }
        )))
    }

    /// A session that could not open because the server holds all the connections it
    /// takes (PostgreSQL's `sorry, too many clients already` or `remaining connection
    /// slots are reserved`, MySQL's `Too many connections`) is said in one line naming
    /// `max_connections`, as read now; any other error is left as it is.
    async fn at_connection_limit(&self, e: MetaError) -> MetaError {
        let text = e.to_string();
        let full = [
            "too many clients",
            "Too many connections",
            "connection slots are reserved",
        ];
        if !full.iter().any(|f| text.contains(f)) {
            return e;
        }
        let engine = if self.st.dialect == Dialect::Postgres {
            "postgres"
        } else {
            "mysql"
        };
        match self.connection_limit().await {
            Ok(Some(l)) => MetaError::Engine(format!(
                "{engine} refused a connection: its max_connections ({}) is reached, {} in use{}; raise it ({}) or run fewer clients",
                l.limit,
                l.in_use,
                if l.reserved > 0 { format!(", {} reserved for superusers", l.reserved) } else { String::new() },
                l.raise.replace("{n}", "N"),
            )),
            _ => MetaError::Engine(format!(
                "{engine} refused a connection: its max_connections is reached; raise it or run fewer clients"
            )),
        }
    }

    /// The admin connection, opened first if needed (for SQLite only when the file
    /// exists, unless `create`).
    async fn admin_conn(&self, create: bool) -> Result<tokio::sync::MutexGuard<'_, Option<Conn>>> {
        let mut guard = self.admin.lock().await;
        if guard.is_none() {
            *guard = Some(self.target.connect_with(create).await?);
        }
        Ok(guard)
    }
}

/// After an engine error the admin connection may be unusable (e.g. an aborted
/// transaction): forget it, the next use reconnects.
fn admin_done<T>(guard: &mut Option<Conn>, r: Result<T>) -> Result<T> {
    if let Err(MetaError::Engine(_)) = &r {
        *guard = None;
    }
    r
}

/// The counters `dbMeta.doInit` inserts, in its order, with their first values.
const INIT_COUNTERS: [(&str, i64); 6] = [
    ("nextInode", 2),
    ("nextChunk", 1),
    ("nextSession", 0),
    ("usedSpace", 0),
    ("totalInodes", 0),
    ("nextCleanupSlices", 0),
];

fn engine_err(e: DbError) -> MetaError {
    MetaError::Engine(e.msg)
}

/// The settings a MySQL or MariaDB run records ([`ServerInfo::settings`]): durability
/// (`innodb_flush_log_at_trx_commit`, `sync_binlog`), the InnoDB buffer pool's size in
/// bytes, `max_connections`, `performance_schema` (whether the server times its
/// statements, the breakdown's engine part) and `general_log` (logging every statement
/// costs the server time that no counter shows).
const MYSQL_SETTINGS: &[&str] = &[
    "general_log",
    "innodb_flush_log_at_trx_commit",
    "sync_binlog",
    "innodb_buffer_pool_size",
    "max_connections",
    "performance_schema",
];

/// The settings a PostgreSQL run records ([`ServerInfo::settings`]): durability (`fsync`,
/// `synchronous_commit`, as this database's sessions see it), `shared_buffers`,
/// `max_connections`, `shared_preload_libraries` (pg_stat_statements there counts and
/// times the statements of the breakdown's engine part), and the statement logging, `log_statement`
/// and `log_min_duration_statement` (logging every statement costs the server time that
/// no counter shows).
const POSTGRES_SETTINGS: &[&str] = &[
    "fsync",
    "log_min_duration_statement",
    "log_statement",
    "synchronous_commit",
    "shared_buffers",
    "max_connections",
    "shared_preload_libraries",
];

/// A column value read as a number (an integer, or a number in text); none for NULL.
fn number(v: Option<&conn::Val>) -> Option<f64> {
    match v? {
        conn::Val::Int(i) => Some(*i as f64),
        conn::Val::Bytes(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
        conn::Val::Null => None,
    }
}

/// One setting's value by `sql`, or `unknown (<why>)` when the server would not say
/// (a role without the privilege, a setting this server does not have).
async fn setting(c: &mut Conn, sql: &str) -> String {
    match first_value(c, sql).await {
        Ok(v) if !v.is_empty() => v,
        Ok(_) => "unknown (the server answered nothing)".to_owned(),
        Err(e) => {
            let why = e.to_string();
            format!(
                "unknown ({})",
                why.split_whitespace().collect::<Vec<_>>().join(" ")
            )
        }
    }
}

/// What a server setting query (`SELECT VERSION()`, `SHOW fsync`, `PRAGMA …`) answers:
/// the first column of its first row as text (an integer printed), empty for no row.
async fn first_value(c: &mut Conn, sql: &str) -> Result<String> {
    let rows = c.simple_fetch(sql).await.map_err(engine_err)?;
    match rows.first() {
        Some(r) => match r.0.first() {
            Some(conn::Val::Int(i)) => Ok(i.to_string()),
            _ => r.text(0).map_err(engine_err),
        },
        None => Ok(String::new()),
    }
}

#[async_trait]
impl Engine for SqlEngine {
    fn kind(&self) -> EngineKind {
        match self.st.dialect {
            Dialect::Mysql => EngineKind::Mysql,
            Dialect::Postgres => EngineKind::Postgres,
            Dialect::Sqlite => EngineKind::Sqlite,
        }
    }

    fn url(&self) -> &MetaUrl {
        &self.url
    }

    async fn probe(&self) -> Result<VolumeState> {
        if let How::Sqlite(path) = &self.target.how {
            // Nothing there, or an empty file: nothing to look at, and nothing created.
            match std::fs::metadata(path) {
                Err(_) => return Ok(VolumeState::Empty),
                Ok(m) if m.len() == 0 => return Ok(VolumeState::Empty),
                Ok(m) if !m.is_file() => {
                    return Ok(VolumeState::Foreign(format!(
                        "{} is not a file",
                        path.display()
                    )))
                }
                Ok(_) => {}
            }
            let mut c = self.target.connect_sqlite_readonly(path).await?;
            let r = match self.probe_on(&mut c).await {
                Err(MetaError::Engine(m)) if m.contains("not a database") => Ok(
                    VolumeState::Foreign(format!("{} is not an SQLite database", path.display())),
                ),
                r => r,
            };
            c.close().await;
            return r;
        }
        let mut g = self.admin_conn(false).await?;
        let r = self.probe_on(g.as_mut().expect("connected")).await;
        admin_done(&mut g, r)
    }

    async fn format(&self, format: &Format) -> Result<()> {
        match self.probe().await? {
            VolumeState::Empty => {}
            VolumeState::Volume(v) => {
                return Err(MetaError::Engine(format!(
                    "refusing to format: the database already holds the JuiceFS volume '{}'",
                    v.name
                )))
            }
            VolumeState::Foreign(why) => {
                return Err(MetaError::Engine(format!("refusing to format: {why}")))
            }
        }
        let json = format.to_json();
        let trash = format.trash_days > 0;
        let st = self.st.clone();
        let mut g = self.admin_conn(true).await?;
        let c = g.as_mut().expect("connected");
        let r: Result<_> = {
            async {
                for ddl in create_statements(st.dialect, &st.prefix) {
                    c.simple(&ddl).await.map_err(engine_err)?;
                }
                let now = Timestamp::now();
                let r: std::result::Result<(), DbError> = async {
                    c.simple(st.begin).await?;
                    if trash {
                        let found = c
                            .fetch(&st.node_get_for_update, &[Arg::I64(TRASH_INODE as i64)])
                            .await?;
                        if found.is_empty() {
                            let row =
                                NodeRow::from_attr(TRASH_INODE, &format_dir_attr(TRASH_INODE, now));
                            c.exec(&st.node_insert, &session::node_args(&row)).await?;
                        }
                    }
                    c.exec(&st.setting_insert, &[Arg::Str("format"), Arg::Str(&json)])
                        .await?;
                    let row = NodeRow::from_attr(ROOT_INODE, &format_dir_attr(ROOT_INODE, now));
                    c.exec(&st.node_insert, &session::node_args(&row)).await?;
                    let counters: Vec<Arg<'_>> = INIT_COUNTERS
                        .iter()
                        .flat_map(|&(name, value)| [Arg::Str(name), Arg::I64(value)])
                        .collect();
                    c.exec(&st.counters_init, &counters).await?;
                    c.simple(st.commit).await
                }
                .await;
                if let Err(e) = r {
                    let _ = c.simple(st.rollback).await;
                    return Err(engine_err(e));
                }
                Ok(())
            }
        }
        .await;
        admin_done(&mut g, r)
    }

    async fn destroy(&self, uuid: &str) -> Result<()> {
        crate::meta::check_destroy(self, uuid).await?;
        let st = self.st.clone();
        let mut g = self.admin_conn(false).await?;
        let c = g.as_mut().expect("connected");
        let r: Result<_> = {
            async {
                for t in table_names(&st.prefix) {
                    c.simple(&format!("DROP TABLE IF EXISTS {}", st.dialect.quote(&t)))
                        .await
                        .map_err(engine_err)?;
                }
                Ok(())
            }
        }
        .await;
        admin_done(&mut g, r)
    }

    async fn session(&self, opts: &SessionOptions) -> Result<Box<dyn Meta>> {
        match self.sql_session(opts).await {
            Ok(s) => Ok(Box::new(s)),
            Err(e) => Err(self.at_connection_limit(e).await),
        }
    }

    /// PostgreSQL: `max_connections`, the slots reserved for superusers (when this role is
    /// not one) and the backends open now; MySQL and MariaDB: `max_connections` and
    /// `Threads_connected`. None for SQLite, or when the server would not say.
    async fn connection_limit(&self) -> Result<Option<crate::ConnectionLimit>> {
        if self.st.dialect == Dialect::Sqlite {
            return Ok(None);
        }
        let mut g = self.admin_conn(false).await?;
        let c = g.as_mut().expect("connected");
        let number = |v: Result<String>| v.ok().and_then(|v| v.trim().parse::<u64>().ok());
        let r: Result<_> = async {
            Ok(match c.dialect() {
                Dialect::Postgres => {
                    let Some(limit) = number(first_value(c, "SHOW max_connections").await) else {
                        return Ok(None);
                    };
                    let superuser = first_value(c, "SELECT rolsuper::text FROM pg_roles WHERE rolname = current_user")
                        .await
                        .is_ok_and(|v| v == "true");
                    let mut reserved = 0;
                    if !superuser {
                        reserved += number(first_value(c, "SHOW superuser_reserved_connections").await)
                            .unwrap_or(0);
                        // PostgreSQL 16's slots for pg_use_reserved_connections.
                        reserved += number(first_value(c, "SHOW reserved_connections").await)
                            .unwrap_or(0);
                    }
                    let in_use = number(
                        first_value(
                            c,
                            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'",
                        )
                        .await,
                    )
                    .unwrap_or(0);
                    Some(crate::ConnectionLimit {
                        engine: "postgres",
                        setting: "max_connections",
                        limit,
                        reserved,
                        in_use,
                        raise: "max_connections = {n} in postgresql.conf, then a restart",
                    })
                }
                Dialect::Mysql => {
                    let Some(limit) = number(first_value(c, "SELECT @@max_connections").await) else {
                        return Ok(None);
                    };
                    // MariaDB keeps the status in information_schema, MySQL 8 in
                    // performance_schema.
                    let mut in_use = number(
                        first_value(
                            c,
                            "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'THREADS_CONNECTED'",
                        )
                        .await,
                    );
                    if in_use.is_none() {
                        in_use = number(
                            first_value(
                                c,
                                "SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Threads_connected'",
                            )
                            .await,
                        );
                    }
                    let in_use = in_use.unwrap_or(0);
                    Some(crate::ConnectionLimit {
                        engine: "mysql",
                        setting: "max_connections",
                        limit,
                        reserved: 0,
                        in_use,
                        raise: "SET GLOBAL max_connections = {n}",
                    })
                }
                Dialect::Sqlite => None,
            })
        }
        .await;
        admin_done(&mut g, r)
    }

    async fn bulk_loader(&self) -> Result<Box<dyn crate::fill::BulkLoad>> {
        let s = self.sql_session(&SessionOptions::default()).await?;
        Ok(Box::new(session::SqlBulk { s }))
    }

    async fn worker(
        &self,
        opts: &SessionOptions,
        client: &crate::ClientState,
    ) -> Result<Box<dyn Meta>> {
        let s = SqlSession::open(
            self.target.clone(),
            self.st.clone(),
            self.admin.clone(),
            opts.clone(),
            Some(client),
        )
        .await;
        let s = match s {
            Ok(s) => s,
            Err(e) => return Err(self.at_connection_limit(e).await),
        };
        Ok(Box::new(s))
    }

    fn sessions(&self) -> &SessionRegistry {
        &self.sessions
    }

    async fn footprint(&self) -> std::result::Result<crate::Footprint, String> {
        if let How::Sqlite(path) = &self.target.how {
            // The database file and its write-ahead log, once the log is checkpointed as far
            // as readers allow (a log the last writes left long would count them twice).
            self.settle().await.map_err(|e| e.to_string())?;
            let mut wal = path.clone().into_os_string();
            wal.push("-wal");
            let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
            return Ok(crate::Footprint {
                bytes: size(path) + size(std::path::Path::new(&wal)),
                rss_bytes: None,
                what: "the SQLite file and its WAL".into(),
            });
        }
        // The volume's own tables by name: a prefix pattern would also take another
        // volume's (`jfs_` matches `jfs_x_…`). Table names are metabench's own, no quotes.
        let names = table_names(&self.st.prefix);
        let list = names
            .iter()
            .map(|n| format!("'{n}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let spaces = names
            .iter()
            .map(|n| format!("CONCAT(DATABASE(), '/{n}')"))
            .collect::<Vec<_>>()
            .join(", ");
        // PostgreSQL: the tables with their indexes and TOAST. MariaDB and MySQL: the
        // tables' files on disk (file-per-table tablespaces, as InnoDB sizes them), else
        // InnoDB's own estimate of data and index length, which lags until the tables'
        // statistics are recalculated.
        let tries: &[(String, &str)] = match self.st.dialect {
            Dialect::Postgres => &[(
                format!(
                    "SELECT SUM(pg_total_relation_size(c.oid))::int8 FROM pg_class c \
                     JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' \
                     AND n.nspname = current_schema() AND c.relname IN ({list})"
                ),
                "PostgreSQL pg_total_relation_size of the volume's tables (indexes and TOAST included)",
            )],
            _ => &[
                (
                    format!(
                        "SELECT CAST(SUM(FILE_SIZE) AS SIGNED) FROM information_schema.INNODB_SYS_TABLESPACES \
                         WHERE NAME IN ({spaces})"
                    ),
                    "MariaDB InnoDB tablespace files of the volume's tables (their size on disk)",
                ),
                (
                    format!(
                        "SELECT CAST(SUM(FILE_SIZE) AS SIGNED) FROM information_schema.INNODB_TABLESPACES \
                         WHERE NAME IN ({spaces})"
                    ),
                    "MySQL InnoDB tablespace files of the volume's tables (their size on disk)",
                ),
                (
                    format!(
                        "SELECT CAST(SUM(data_length + index_length) AS SIGNED) \
                         FROM information_schema.tables WHERE table_schema = DATABASE() \
                         AND table_name IN ({list})"
                    ),
                    "MariaDB/MySQL data and index length of the volume's tables (InnoDB's estimate, refreshed with its statistics)",
                ),
            ],
        };
        let mut g = self.admin_conn(false).await.map_err(|e| e.to_string())?;
        let c = g.as_mut().expect("connected");
        // A tablespace view this server lacks, or one that lists none of the tables (a
        // shared tablespace), leaves the next way; no table at all, no figure (the SUM of
        // no rows is NULL).
        let mut found = Ok(None);
        for (sql, what) in tries {
            found = match c.simple_fetch(sql).await {
                Ok(rows) => Ok(rows
                    .first()
                    .and_then(|r| number(r.0.first()))
                    .map(|bytes| (bytes, *what))),
                Err(e) => Err(engine_err(e)),
            };
            if matches!(found, Ok(Some(_))) {
                break;
            }
        }
        match admin_done(&mut g, found) {
            Ok(Some((bytes, what))) => Ok(crate::Footprint {
                bytes: bytes as u64,
                rss_bytes: None,
                what: what.into(),
            }),
            Ok(None) => Err("the server lists none of the volume's tables".into()),
            Err(e) => Err(e.to_string()),
        }
    }

    async fn settle(&self) -> Result<()> {
        let How::Sqlite(path) = &self.target.how else {
            return Ok(());
        };
        if !path.exists() {
            return Ok(());
        }
        let mut g = self.admin_conn(false).await?;
        let c = g.as_mut().expect("connected");
        // Returns (busy, log pages, checkpointed pages); a busy WAL (a reader between
        // calls) is checkpointed as far as it can be, which is all a settle can ask.
        let r = c
            .simple_fetch("PRAGMA wal_checkpoint(TRUNCATE)")
            .await
            .map(drop)
            .map_err(engine_err);
        admin_done(&mut g, r)
    }

    async fn telemetry(&self) -> Result<crate::Telemetry> {
        use crate::telemetry::{MYSQL_COUNTERS, MYSQL_GAUGES, POSTGRES_COUNTERS};
        if let How::Sqlite(_) = &self.target.how {
            // In process: the busy handler's sleeps on the database lock, counted here.
            let (sleeps, asleep) = conn::sqlite_lock_waits();
            let mut t = crate::Telemetry::default();
            t.counters.insert("busy_waits".into(), sleeps as f64);
            t.counters
                .insert("busy_wait_s".into(), asleep.as_secs_f64());
            return Ok(t);
        }
        let mut g = self.admin_conn(false).await?;
        let c = g.as_mut().expect("connected");
        let r: Result<crate::Telemetry> = async {
            let mut t = crate::Telemetry::default();
            match c.dialect() {
                Dialect::Mysql => {
                    let names = MYSQL_COUNTERS
                        .iter()
                        .chain(MYSQL_GAUGES)
                        .map(|n| format!("'{n}'"))
                        .collect::<Vec<_>>()
                        .join(",");
                    let rows = c
                        .simple_fetch(&format!(
                            "SHOW GLOBAL STATUS WHERE Variable_name IN ({names})"
                        ))
                        .await
                        .map_err(engine_err)?;
                    for row in rows {
                        let (Ok(name), Some(v)) = (row.text(0), number(row.0.get(1))) else {
                            continue;
                        };
                        if MYSQL_GAUGES.contains(&name.as_str()) {
                            t.gauges.insert(name, v);
                        } else {
                            t.counters.insert(name, v);
                        }
                    }
                    // The statements' own time, when performance_schema is on: that of
                    // the connections now in this database (this one left out), by event
                    // (SUM_TIMER_WAIT in picoseconds). A parameterized statement is three
                    // events (prepare, execute, close), whose times are its own but which
                    // count as one statement; the statement digests would miss them all.
                    let on = c.simple_fetch("SELECT @@performance_schema").await;
                    if on.is_ok_and(|r| r.first().and_then(|r| number(r.0.first())) == Some(1.0)) {
                        let rows = c
                            .simple_fetch(
                                "SELECT SUM(IF(s.EVENT_NAME IN ('statement/com/Prepare', \
                                 'statement/com/Close stmt'), 0, s.COUNT_STAR)), \
                                 SUM(s.SUM_TIMER_WAIT) / 1000000 \
                                 FROM performance_schema.events_statements_summary_by_thread_by_event_name s \
                                 JOIN performance_schema.threads t ON t.THREAD_ID = s.THREAD_ID \
                                 WHERE t.PROCESSLIST_DB = DATABASE() \
                                 AND t.PROCESSLIST_ID <> CONNECTION_ID() AND s.COUNT_STAR > 0",
                            )
                            .await;
                        if let Ok(Some(row)) = rows.as_ref().map(|r| r.first()) {
                            statement_time(&mut t, number(row.0.first()), number(row.0.get(1)));
                        }
                        // Which connections those are (a thread id is never reused while
                        // the server runs): a window over another set has no reading.
                        let threads = c
                            .simple_fetch(
                                "SELECT THREAD_ID FROM performance_schema.threads \
                                 WHERE PROCESSLIST_DB = DATABASE() AND PROCESSLIST_ID <> CONNECTION_ID()",
                            )
                            .await;
                        if let Ok(rows) = threads {
                            let ids: Vec<u64> = rows
                                .iter()
                                .filter_map(|r| number(r.0.first()))
                                .map(|id| id as u64)
                                .collect();
                            t.counters
                                .insert("backend_set".into(), crate::telemetry::set_mark(ids));
                        }
                    }
                }
                Dialect::Postgres => {
                    let rows = c
                        .simple_fetch(&format!(
                            "SELECT {} FROM pg_stat_database WHERE datname = current_database()",
                            POSTGRES_COUNTERS.join(", ")
                        ))
                        .await
                        .map_err(engine_err)?;
                    if let Some(row) = rows.first() {
                        for (i, name) in POSTGRES_COUNTERS.iter().enumerate() {
                            if let Some(v) = number(row.0.get(i)) {
                                t.counters.insert((*name).to_owned(), v);
                            }
                        }
                    }
                    let rows = c
                        .simple_fetch("SELECT count(*) FROM pg_locks WHERE NOT granted")
                        .await
                        .map_err(engine_err)?;
                    if let Some(v) = rows.first().and_then(|r| number(r.0.first())) {
                        t.gauges.insert("lock_waiters".to_owned(), v);
                    }
                    // The statements' own time, when pg_stat_statements is loaded (an
                    // error here, from a server without it, leaves it unknown), this
                    // reading's own statements left out.
                    let present = c
                        .simple_fetch(
                            "SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'",
                        )
                        .await
                        .is_ok_and(|r| r.first().and_then(|r| number(r.0.first())) == Some(1.0));
                    let rows = if !present {
                        Ok(Vec::new())
                    } else {
                        c.simple_fetch(
                            "SELECT sum(calls)::float8, sum(total_exec_time)::float8 * 1000 \
                             FROM pg_stat_statements WHERE dbid = \
                             (SELECT oid FROM pg_database WHERE datname = current_database()) \
                             AND query NOT LIKE '%pg_stat%' AND query NOT LIKE '%pg_locks%' \
                             AND query NOT LIKE '%pg_extension%'",
                        )
                        .await
                    };
                    if let Ok(Some(row)) = rows.as_ref().map(|r| r.first()) {
                        statement_time(&mut t, number(row.0.first()), number(row.0.get(1)));
                    }
                    // The CPU of the backends of this database's connections (this one
                    // left out), where the server runs on this host: what a statement
                    // costs the server from its Bind to its commit, of which
                    // pg_stat_statements times only the executor's run.
                    if self.target.url.server_on_this_host() {
                        let rows = c
                            .simple_fetch(
                                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() \
                                 AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
                            )
                            .await;
                        let pids: Option<Vec<u32>> = rows.ok().map(|rows| {
                            rows.iter()
                                .filter_map(|r| number(r.0.first()))
                                .map(|p| p as u32)
                                .collect()
                        });
                        let cpu = pids.and_then(|p| crate::telemetry::processes_cpu(&p, "postgres"));
                        if let Some((us, set)) = cpu {
                            t.counters.insert("backend_cpu_us".into(), us);
                            t.counters.insert("backend_set".into(), set);
                        }
                        // PostgreSQL 14 and later: sessions begun in this database, so
                        // that one that came and went between two readings shows
                        let sessions = c
                            .simple_fetch(
                                "SELECT sessions FROM pg_stat_database WHERE datname = current_database()",
                            )
                            .await;
                        if let Some(v) = sessions
                            .ok()
                            .and_then(|r| r.first().and_then(|r| number(r.0.first())))
                        {
                            t.counters.insert("sessions".into(), v);
                        }
                    }
                }
                Dialect::Sqlite => {}
            }
            Ok(t)
        }
        .await;
        admin_done(&mut g, r)
    }

    fn fidelity_notes(&self) -> &'static [&'static str] {
        fidelity_notes()
    }

    async fn server_info(&self) -> Result<ServerInfo> {
        if let How::Sqlite(path) = &self.target.how {
            if !path.exists() {
                // Do not create the file: ask an in-memory database, and report the
                // settings metabench's connections use.
                let mut info = ServerInfo {
                    version: format!("sqlite {}", rusqlite::version()),
                    ..Default::default()
                };
                info.settings.insert("journal_mode".into(), "wal".into());
                info.settings.insert("synchronous".into(), "NORMAL".into());
                return Ok(info);
            }
        }
        let mut g = self.admin_conn(false).await?;
        let c = g.as_mut().expect("connected");
        let r: Result<_> = {
            async {
                let mut info = ServerInfo::default();
                match c.dialect() {
                    Dialect::Mysql => {
                        let version = first_value(c, "SELECT VERSION()").await?;
                        info.version = format!("mysql {version}");
                        for v in MYSQL_SETTINGS {
                            let val = setting(c, &format!("SELECT @@{v}")).await;
                            info.settings.insert((*v).into(), val);
                        }
                    }
                    Dialect::Postgres => {
                        info.version = first_value(c, "SELECT VERSION()").await?;
                        for v in POSTGRES_SETTINGS {
                            let val = setting(c, &format!("SHOW {v}")).await;
                            info.settings.insert((*v).into(), val);
                        }
                    }
                    Dialect::Sqlite => {
                        let version = first_value(c, "SELECT sqlite_version()").await?;
                        info.version = format!("sqlite {version}");
                        let jm = first_value(c, "PRAGMA journal_mode").await?;
                        info.settings.insert("journal_mode".into(), jm);
                        let sync = first_value(c, "PRAGMA synchronous").await?;
                        let sync = match sync.as_str() {
                            "0" => "OFF".to_owned(),
                            "1" => "NORMAL".to_owned(),
                            "2" => "FULL".to_owned(),
                            "3" => "EXTRA".to_owned(),
                            o => o.to_owned(),
                        };
                        info.settings.insert("synchronous".into(), sync);
                    }
                }
                Ok(info)
            }
        }
        .await;
        admin_done(&mut g, r)
    }
}

/// Keeps a statement-statistics reading (calls, µs) as the counters `statement_calls` and
/// `statement_us` ([`crate::telemetry::engine_time`] reads them).
fn statement_time(t: &mut crate::Telemetry, calls: Option<f64>, us: Option<f64>) {
    if let (Some(calls), Some(us)) = (calls, us) {
        t.counters.insert("statement_calls".into(), calls);
        t.counters.insert("statement_us".into(), us);
    }
}
