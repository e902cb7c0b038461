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

pub use session::SqlSession;

use crate::base::{BaseMeta, SessionRegistry};
use crate::rules::format_dir_attr;
use crate::url::Address;
use crate::{
    Engine, EngineKind, Meta, MetaError, MetaUrl, Result, Scheme, ServerInfo, SessionOptions,
    VolumeState,
};
use async_trait::async_trait;
use conn::{Arg, Conn, DbError};
use dialect::Stmts;
use metabench_schema::sql::{create_statements, table_names, table_prefix, Dialect, NodeRow};
use metabench_schema::{Format, Timestamp, ROOT_INODE, TRASH_INODE};
use sqlx::mysql::{MySqlConnectOptions, MySqlSslMode};
use sqlx::postgres::{PgConnectOptions, PgSslMode};
use sqlx::ConnectOptions;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

/// How long connecting may take before it is reported as a timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Connects to the SQL engine a URL names and checks it answers.
pub async fn open(url: &MetaUrl) -> Result<Arc<dyn Engine>> {
    Ok(Arc::new(SqlEngine::open(url).await?))
}

/// go-sql-driver's `tls` option as JuiceFS passes it: `false` (the default) plain TCP,
/// `true` TLS checked against the system's roots and the host name, `skip-verify` TLS
/// with no check, `preferred` TLS when the server offers it, unchecked. Any other value
/// names a TLS configuration registered in Go code, and JuiceFS registers none.
fn mysql_tls(tls: Option<&str>) -> Result<MySqlSslMode> {
    Ok(match tls {
        None | Some("false" | "False" | "FALSE" | "0") => MySqlSslMode::Disabled,
        Some("true" | "True" | "TRUE" | "1") => MySqlSslMode::VerifyIdentity,
        Some(v) if v.eq_ignore_ascii_case("skip-verify") => MySqlSslMode::Required,
        Some(v) if v.eq_ignore_ascii_case("preferred") => MySqlSslMode::Preferred,
        Some(other) => {
            return Err(MetaError::BadUrl(format!(
                "tls={other}: MySQL takes tls=true, skip-verify, preferred or false (other \
                 names are TLS configurations registered in Go code; JuiceFS registers none)"
            )))
        }
    })
}

/// pgx's reading of `sslmode` (`pgconn.ParseConfig`): `prefer` when absent; `require`
/// with an `sslrootcert` checks the chain as `verify-ca` does; `sslrootcert=system` means
/// `verify-full`. A Unix socket never speaks TLS (pgx ignores the mode there).
fn pg_ssl_mode(url: &MetaUrl) -> Result<PgSslMode> {
    if matches!(url.address(), Address::Unix(_)) {
        return Ok(PgSslMode::Disable);
    }
    let root = url.param("sslrootcert");
    Ok(match url.param("sslmode") {
        _ if root == Some("system") => PgSslMode::VerifyFull,
        Some("disable") => PgSslMode::Disable,
        Some("allow") => PgSslMode::Allow,
        None | Some("prefer") => PgSslMode::Prefer,
        Some("require") if root.is_some() => PgSslMode::VerifyCa,
        Some("require") => PgSslMode::Require,
        Some("verify-ca") => PgSslMode::VerifyCa,
        Some("verify-full") => PgSslMode::VerifyFull,
        Some(other) => {
            return Err(MetaError::BadUrl(format!(
                "unknown sslmode '{other}' (disable, allow, prefer, require, verify-ca or \
                 verify-full)"
            )))
        }
    })
}

/// `file`, when it exists; else a one-line error naming the URL's `option`.
fn existing<'a>(option: &str, file: &'a str) -> Result<&'a str> {
    if std::path::Path::new(file).is_file() {
        Ok(file)
    } else {
        Err(MetaError::BadUrl(format!("{option}: no file {file}")))
    }
}

/// Where and how to connect, derived from the meta URL.
pub(crate) struct Target {
    url: MetaUrl,
    how: How,
}

enum How {
    Mysql(Box<MySqlConnectOptions>),
    Postgres(Box<PgConnectOptions>),
    Sqlite(PathBuf),
}

impl Target {
    fn new(url: &MetaUrl) -> Result<Self> {
        let how = match url.scheme() {
            Scheme::Mysql => {
                let tls = mysql_tls(url.param("tls"))?;
                let mut o = MySqlConnectOptions::new()
                    .username(url.user())
                    .database(url.database())
                    // go-sql-driver sends nothing at connect but its DSN parameters.
                    .pipes_as_concat(false)
                    .no_engine_substitution(false)
                    .timezone(None)
                    .set_names(false)
                    .charset("utf8mb4")
                    .ssl_mode(tls);
                if let Some(pw) = url.password() {
                    o = o.password(pw);
                }
                o = match url.address() {
                    Address::Tcp { host, port } => o.host(host).port(*port),
                    Address::Unix(path) => o.socket(path),
                    Address::File(_) => return Err(MetaError::BadUrl("MySQL needs a host".into())),
                };
                How::Mysql(Box::new(o))
            }
            Scheme::Postgres => {
                let mut o = PgConnectOptions::new()
                    .username(url.user())
                    .database(url.database())
                    .ssl_mode(pg_ssl_mode(url)?);
                // libpq's file options, as pgx reads them; a file that is not there is one
                // line now rather than a handshake failure later. `sslrootcert=system` is
                // the system's roots (pgx: with verify-full).
                match url.param("sslrootcert") {
                    None | Some("system") => {}
                    Some(file) => o = o.ssl_root_cert(existing("sslrootcert", file)?),
                }
                match (url.param("sslcert"), url.param("sslkey")) {
                    (Some(cert), Some(key)) => {
                        o = o
                            .ssl_client_cert(existing("sslcert", cert)?)
                            .ssl_client_key(existing("sslkey", key)?)
                    }
                    (None, None) => {}
                    _ => return Err(MetaError::BadUrl("sslcert and sslkey go together".into())),
                }
                if let Some(pw) = url.password() {
                    o = o.password(pw);
                }
                o = match url.address() {
                    Address::Tcp { host, port } => o.host(host).port(*port),
                    // The socket file is `.s.PGSQL.<port>` in that directory, as libpq names it.
                    Address::Unix(dir) => {
                        let port = match url.param("port") {
                            None => 5432,
                            Some(p) => p.parse().map_err(|_| {
                                MetaError::BadUrl(format!("bad PostgreSQL port '{p}'"))
                            })?,
                        };
                        o.socket(dir).port(port)
                    }
                    Address::File(_) => {
                        return Err(MetaError::BadUrl("PostgreSQL needs a host".into()))
                    }
                };
                How::Postgres(Box::new(o))
            }
            Scheme::Sqlite => match url.address() {
                Address::File(p) => How::Sqlite(PathBuf::from(p)),
                _ => return Err(MetaError::BadUrl("SQLite needs a file path".into())),
            },
            _ => {
                return Err(MetaError::BadUrl("not an SQL URL".into()));
            }
        };
        Ok(Self {
            url: url.clone(),
            how,
        })
    }

    fn dialect(&self) -> Dialect {
        match self.how {
            How::Mysql(_) => Dialect::Mysql,
            How::Postgres(_) => Dialect::Postgres,
            How::Sqlite(_) => Dialect::Sqlite,
        }
    }

    fn connect_error(&self, why: String) -> MetaError {
        MetaError::Connect {
            url: self.url.redacted(),
            reason: why,
        }
    }

    /// Opens a connection configured as JuiceFS configures its connections: MySQL
    /// transaction isolation REPEATABLE READ, PostgreSQL defaults, SQLite WAL journal
    /// and a 5 s busy timeout. SQLite files are created only when `create` is set.
    pub(crate) async fn connect_with(&self, create: bool) -> Result<Conn> {
        let fut = async {
            match &self.how {
                How::Mysql(o) => {
                    let c = o.connect().await.map_err(|e| self.map_connect(e))?;
                    self.nodelay();
                    let mut c = Conn::Mysql(c);
                    // createMySQLEngine: transaction_isolation, falling back to tx_isolation
                    // on servers that do not know it (MariaDB before 11.1, MySQL 5.x).
                    if let Err(e) = c
                        .simple("SET transaction_isolation = 'repeatable-read'")
                        .await
                    {
                        if !e.msg.to_lowercase().contains("unknown system variable") {
                            return Err(self.connect_error(short(&e.msg)));
                        }
                        c.simple("SET tx_isolation = 'repeatable-read'")
                            .await
                            .map_err(|e| self.connect_error(short(&e.msg)))?;
                    }
                    Ok(c)
                }
                How::Postgres(o) => {
                    let c = o.connect().await.map_err(|e| self.map_connect(e))?;
                    self.nodelay();
                    Ok(Conn::Postgres(c))
                }
                How::Sqlite(path) => {
                    if !create && !path.exists() {
                        return Err(self.connect_error(format!(
                            "database file {} does not exist",
                            path.display()
                        )));
                    }
                    let c = self.open_sqlite(path, create, false)?;
                    Ok(Conn::sqlite(c))
                }
            }
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, fut).await {
            Ok(r) => r,
            Err(_) => Err(self.connect_error("connection timed out".into())),
        }
    }

    /// Turns Nagle's algorithm off on the connections to the server, as Go does for every
    /// TCP connection. sqlx 0.9.0 leaves it on (sqlx issue 4335); MySQL's COM_STMT_CLOSE,
    /// which gets no answer, then holds the next statement back until the server's
    /// delayed ACK (40 ms on Linux) — a stall the Go client never has.
    fn nodelay(&self) {
        if let Address::Tcp { port, .. } = self.url.address() {
            set_nodelay_to_port(*port);
        }
    }

    /// A session connection (never creates a SQLite file).
    pub(crate) async fn connect(&self) -> Result<Conn> {
        self.connect_with(false).await
    }

    /// A read-only SQLite connection that neither creates the file nor changes its
    /// journal mode (for probe).
    async fn connect_sqlite_readonly(&self, path: &PathBuf) -> Result<Conn> {
        Ok(Conn::sqlite(self.open_sqlite(path, false, true)?))
    }

    /// Opens a SQLite file in-process, configured as JuiceFS's connections are: the
    /// `_journal=WAL` and `_timeout=5000` (see `conn::SQLITE_BUSY_TIMEOUT`) that
    /// `pkg/meta/sql.go` (`newSQLMeta`) adds, and go-sqlite3's own default
    /// `synchronous = NORMAL` (its `SQLiteDriver.Open`), so a commit costs what it costs
    /// JuiceFS. Read-only connections change no setting.
    fn open_sqlite(
        &self,
        path: &PathBuf,
        create: bool,
        read_only: bool,
    ) -> Result<rusqlite::Connection> {
        use rusqlite::OpenFlags;
        let mut flags = OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
        flags |= if read_only {
            OpenFlags::SQLITE_OPEN_READ_ONLY
        } else if create {
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
        } else {
            OpenFlags::SQLITE_OPEN_READ_WRITE
        };
        let fail = |e: rusqlite::Error| self.connect_error(short(&DbError::from_sqlite(e).msg));
        let c = rusqlite::Connection::open_with_flags(path, flags).map_err(fail)?;
        c.busy_timeout(conn::SQLITE_BUSY_TIMEOUT).map_err(fail)?;
        if !read_only {
            c.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
                .map_err(fail)?;
            c.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = OFF;")
                .map_err(fail)?;
        }
        // From here on no busy handler inside SQLite: a statement that finds the database
        // locked returns at once and `conn::sqlite_call` waits for the lock on the
        // runtime, with the busy handler's sleeps and JuiceFS's 5 s timeout.
        c.busy_timeout(Duration::ZERO).map_err(fail)?;
        Ok(c)
    }

    /// A short, password-free, one-line reason for a failed connection.
    fn map_connect(&self, e: sqlx::Error) -> MetaError {
        let user = self.url.user();
        let db = self.url.database();
        let reason = match &e {
            sqlx::Error::Io(io) => match io.kind() {
                std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
                std::io::ErrorKind::TimedOut => "connection timed out".to_owned(),
                std::io::ErrorKind::NotFound => "no such socket or file".to_owned(),
                std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
                _ => {
                    let m = io.to_string();
                    if m.contains("lookup address") || m.contains("Name or service") {
                        match self.url.address() {
                            Address::Tcp { host, .. } => format!("cannot resolve host '{host}'"),
                            _ => short(&m),
                        }
                    } else {
                        short(&m)
                    }
                }
            },
            sqlx::Error::Database(d) => {
                let code = d.code().map(|c| c.into_owned()).unwrap_or_default();
                let number = d
                    .try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
                    .map(|m| m.number());
                match (self.dialect(), number, code.as_str()) {
                    // Without TLS, a user the server admits over TLS only is refused
                    // as a wrong password would be.
                    (Dialect::Mysql, Some(1045), _)
                        if matches!(
                            mysql_tls(self.url.param("tls")),
                            Ok(MySqlSslMode::Disabled)
                        ) =>
                    {
                        format!(
                            "access denied for user '{user}' (wrong password, or a user \
                             that must come over TLS: add tls=true or skip-verify?)"
                        )
                    }
                    (Dialect::Mysql, Some(1045), _) | (Dialect::Postgres, _, "28P01") => {
                        format!("access denied for user '{user}' (wrong password?)")
                    }
                    (Dialect::Mysql, Some(1044), _) => {
                        format!("access denied for user '{user}' to database '{db}'")
                    }
                    (Dialect::Postgres, _, "28000") => {
                        format!("access denied for user '{user}'")
                    }
                    (Dialect::Mysql, Some(1049), _) | (Dialect::Postgres, _, "3D000") => {
                        format!("database '{db}' does not exist")
                    }
                    _ => short(d.message()),
                }
            }
            other => short(&other.to_string()),
        };
        self.connect_error(reason)
    }
}

/// Sets TCP_NODELAY on every TCP socket of this process connected to `port` (sqlx does
/// not expose its sockets). Setting it on a socket that already has it, or on another
/// client's socket to the same port, is harmless.
#[cfg(target_os = "linux")]
fn set_nodelay_to_port(port: u16) {
    use std::os::fd::{FromRawFd, IntoRawFd, RawFd};
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    for entry in dir.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<RawFd>().ok())
        else {
            continue;
        };
        let is_socket = std::fs::read_link(entry.path())
            .map(|t| t.to_string_lossy().starts_with("socket:"))
            .unwrap_or(false);
        if !is_socket {
            continue;
        }
        // SAFETY: the descriptor is borrowed for two socket calls and handed back with
        // `into_raw_fd`, so it is never closed here.
        let s = unsafe { std::net::TcpStream::from_raw_fd(fd) };
        if s.peer_addr().map(|a| a.port() == port).unwrap_or(false) {
            let _ = s.set_nodelay(true);
        }
        let _ = s.into_raw_fd();
    }
}

#[cfg(not(target_os = "linux"))]
fn set_nodelay_to_port(_port: u16) {}

/// First line of a message, without anything that looks like a URL with credentials.
fn short(msg: &str) -> String {
    let line = msg.lines().next().unwrap_or_default().trim();
    if line.contains('@') && line.contains("://") {
        "connection failed".into()
    } else {
        line.to_owned()
    }
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
        Ok(Box::new(self.sql_session(opts).await?))
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
        .await?;
        Ok(Box::new(s))
    }

    fn sessions(&self) -> &SessionRegistry {
        &self.sessions
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
        let number = |v: Option<&conn::Val>| -> Option<f64> {
            match v? {
                conn::Val::Int(i) => Some(*i as f64),
                conn::Val::Bytes(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
                conn::Val::Null => None,
            }
        };
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
                info.durability.insert("journal_mode".into(), "wal".into());
                info.durability
                    .insert("synchronous".into(), "NORMAL".into());
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
                        for v in ["innodb_flush_log_at_trx_commit", "sync_binlog"] {
                            let val = first_value(c, &format!("SELECT @@{v}")).await?;
                            info.durability.insert(v.into(), val);
                        }
                    }
                    Dialect::Postgres => {
                        info.version = first_value(c, "SELECT VERSION()").await?;
                        for v in ["fsync", "synchronous_commit"] {
                            let val = first_value(c, &format!("SHOW {v}")).await?;
                            info.durability.insert(v.into(), val);
                        }
                    }
                    Dialect::Sqlite => {
                        let version = first_value(c, "SELECT sqlite_version()").await?;
                        info.version = format!("sqlite {version}");
                        let jm = first_value(c, "PRAGMA journal_mode").await?;
                        info.durability.insert("journal_mode".into(), jm);
                        let sync = first_value(c, "PRAGMA synchronous").await?;
                        let sync = match sync.as_str() {
                            "0" => "OFF".to_owned(),
                            "1" => "NORMAL".to_owned(),
                            "2" => "FULL".to_owned(),
                            "3" => "EXTRA".to_owned(),
                            o => o.to_owned(),
                        };
                        info.durability.insert("synchronous".into(), sync);
                    }
                }
                Ok(info)
            }
        }
        .await;
        admin_done(&mut g, r)
    }
}

#[cfg(test)]
mod tls_tests {
    use super::*;

    fn mode(url: &str) -> Result<PgSslMode> {
        pg_ssl_mode(&MetaUrl::parse_with_env(url, |_| None).unwrap())
    }

    #[test]
    fn sslmode_as_pgx_reads_it() {
        let pg = "postgres://u@127.0.0.1:5432/db";
        assert!(matches!(mode(pg), Ok(PgSslMode::Prefer)));
        assert!(matches!(
            mode(&format!("{pg}?sslmode=require")),
            Ok(PgSslMode::Require)
        ));
        assert!(matches!(
            mode(&format!("{pg}?sslmode=require&sslrootcert=/ca.pem")),
            Ok(PgSslMode::VerifyCa)
        ));
        assert!(matches!(
            mode(&format!("{pg}?sslrootcert=system")),
            Ok(PgSslMode::VerifyFull)
        ));
        assert!(matches!(
            mode("postgres://u@/db?host=/run/postgresql&sslmode=verify-full"),
            Ok(PgSslMode::Disable)
        ));
        assert!(mode(&format!("{pg}?sslmode=required")).is_err());
    }

    #[test]
    fn mysql_tls_as_go_sql_driver_reads_it() {
        assert!(matches!(mysql_tls(None), Ok(MySqlSslMode::Disabled)));
        assert!(matches!(
            mysql_tls(Some("true")),
            Ok(MySqlSslMode::VerifyIdentity)
        ));
        assert!(matches!(
            mysql_tls(Some("SKIP-VERIFY")),
            Ok(MySqlSslMode::Required)
        ));
        assert!(matches!(
            mysql_tls(Some("preferred")),
            Ok(MySqlSslMode::Preferred)
        ));
        assert!(mysql_tls(Some("custom")).is_err());
    }
}
