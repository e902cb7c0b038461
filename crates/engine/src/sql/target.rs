//! Where and how an SQL engine is reached, derived from its meta URL as JuiceFS's drivers
//! read it (go-sql-driver for MySQL, pgx for PostgreSQL, go-sqlite3 for SQLite): the
//! connect options, TLS, and opening one connection of the engine's dialect.

use super::conn::{self, Conn, DbError};
use crate::url::{Address, MetaUrl, Scheme};
use crate::{MetaError, Result};
use metabench_schema::sql::Dialect;
use sqlx::mysql::{MySqlConnectOptions, MySqlSslMode};
use sqlx::postgres::{PgConnectOptions, PgSslMode};
use sqlx::ConnectOptions;
use std::path::PathBuf;
use std::time::Duration;

/// How long connecting may take before it is reported as a timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

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
    /// The meta URL.
    pub(crate) url: MetaUrl,
    /// How to connect.
    pub(crate) how: How,
}

/// The driver and its options, or SQLite's file.
pub(crate) enum How {
    Mysql(Box<MySqlConnectOptions>),
    Postgres(Box<PgConnectOptions>),
    Sqlite(PathBuf),
}

impl Target {
    pub(crate) fn new(url: &MetaUrl) -> Result<Self> {
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

    pub(crate) fn dialect(&self) -> Dialect {
        match self.how {
            How::Mysql(_) => Dialect::Mysql,
            How::Postgres(_) => Dialect::Postgres,
            How::Sqlite(_) => Dialect::Sqlite,
        }
    }

    pub(crate) fn connect_error(&self, why: String) -> MetaError {
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
    pub(crate) fn nodelay(&self) {
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
    pub(crate) async fn connect_sqlite_readonly(&self, path: &PathBuf) -> Result<Conn> {
        Ok(Conn::sqlite(self.open_sqlite(path, false, true)?))
    }

    /// Opens a SQLite file in-process, configured as JuiceFS's connections are: the
    /// `_journal=WAL` and `_timeout=5000` (see `conn::SQLITE_BUSY_TIMEOUT`) that
    /// `pkg/meta/sql.go` (`newSQLMeta`) adds, and go-sqlite3's own default
    /// `synchronous = NORMAL` (its `SQLiteDriver.Open`), so a commit costs what it costs
    /// JuiceFS. Read-only connections change no setting.
    pub(crate) fn open_sqlite(
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
    pub(crate) fn map_connect(&self, e: sqlx::Error) -> MetaError {
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
