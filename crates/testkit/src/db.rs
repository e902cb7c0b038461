//! Fresh, uniquely named databases on the shared test servers, dropped after the test.
//!
//! Everything here is synchronous (the `mysql`/`mariadb`, `psql` and `sqlite3` command-line
//! clients), so dropping a [`TestDb`] works inside or outside any async runtime.

use crate::redis::RedisServer;
use crate::util::{check, percent_decode, required_env, run, temp_dir, unique_name};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A metadata engine family that tests run against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// MariaDB / MySQL, on the server of `METABENCH_MYSQL_URL`.
    Mysql,
    /// PostgreSQL, on the server of `METABENCH_PG_URL`.
    Postgres,
    /// A temp SQLite file.
    Sqlite,
    /// A private [`RedisServer`] (database 1).
    Redis,
}

impl Kind {
    /// Every kind, in a fixed order.
    pub const ALL: [Kind; 4] = [Kind::Redis, Kind::Mysql, Kind::Postgres, Kind::Sqlite];

    /// The SQL kinds.
    pub const SQL: [Kind; 3] = [Kind::Mysql, Kind::Postgres, Kind::Sqlite];

    /// A short lower-case name (`"mysql"`, `"postgres"`, `"sqlite"`, `"redis"`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Mysql => "mysql",
            Kind::Postgres => "postgres",
            Kind::Sqlite => "sqlite",
            Kind::Redis => "redis",
        }
    }
}

/// Host, port and credentials of a shared SQL server, from its `METABENCH_*_URL`.
#[derive(Debug, Clone)]
struct Server {
    user: String,
    password: String,
    host: String,
    port: u16,
}

impl Server {
    /// `mysql://user:pass@(host:port)/`.
    fn mysql() -> Server {
        let url = required_env("METABENCH_MYSQL_URL");
        let rest = url
            .strip_prefix("mysql://")
            .unwrap_or_else(|| panic!("METABENCH_MYSQL_URL is not a mysql:// URL: {url}"));
        let open = rest.find("@(").expect("METABENCH_MYSQL_URL lacks '@('");
        let close = rest.find(')').expect("METABENCH_MYSQL_URL lacks ')'");
        let (user, password) = split_cred(&rest[..open]);
        let (host, port) = split_host_port(&rest[open + 2..close], 3306);
        Server {
            user,
            password,
            host,
            port,
        }
    }

    /// `postgres://user:pass@host:port/`.
    fn postgres() -> Server {
        let url = required_env("METABENCH_PG_URL");
        let rest = url
            .strip_prefix("postgres://")
            .or_else(|| url.strip_prefix("postgresql://"))
            .unwrap_or_else(|| panic!("METABENCH_PG_URL is not a postgres:// URL: {url}"));
        let authority = rest.split('/').next().unwrap_or_default();
        let at = authority.rfind('@').expect("METABENCH_PG_URL lacks a user");
        let (user, password) = split_cred(&authority[..at]);
        let (host, port) = split_host_port(&authority[at + 1..], 5432);
        Server {
            user,
            password,
            host,
            port,
        }
    }

    fn mysql_cmd(&self, db: Option<&str>) -> Command {
        let bin = which("mariadb").or_else(|| which("mysql")).expect(
            "neither `mariadb` nor `mysql` is on PATH: run scripts/test.sh, which installs them",
        );
        let mut c = Command::new(bin);
        c.arg("--no-defaults")
            .arg("--protocol=TCP")
            .arg(format!("--host={}", self.host))
            .arg(format!("--port={}", self.port))
            .arg(format!("--user={}", self.user))
            .args(["--batch", "--skip-column-names", "--connect-timeout=10"])
            .env("MYSQL_PWD", &self.password);
        if let Some(db) = db {
            c.arg(format!("--database={db}"));
        }
        c
    }

    fn psql_cmd(&self, db: &str) -> Command {
        let mut c = Command::new("psql");
        c.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(["-F", "\t"])
            .args(["-h", &self.host, "-p", &self.port.to_string()])
            .args(["-U", &self.user, "-d", db])
            .env("PGPASSWORD", &self.password)
            .env("PGCONNECT_TIMEOUT", "10")
            .env_remove("PGSERVICE")
            .env_remove("PGOPTIONS");
        c
    }

    /// Runs SQL through the `mysql` client; panics on failure.
    pub(crate) fn mysql_query(&self, db: Option<&str>, sql: &str) -> Vec<Vec<String>> {
        let out = run(self.mysql_cmd(db).arg("-e").arg(sql));
        let out = check(&format!("mysql -e {sql:?}"), out);
        rows(&out, true)
    }

    /// Runs one SQL statement through `psql`; panics on failure.
    fn psql_query(&self, db: &str, sql: &str) -> Vec<Vec<String>> {
        let out = run(self.psql_cmd(db).arg("-c").arg(sql));
        let out = check(&format!("psql -c {sql:?}"), out);
        rows(&out, false)
    }
}

/// The shared MySQL server as the `metabench` user (for the general-log helpers).
pub(crate) fn mysql_admin_query(sql: &str) -> Vec<Vec<String>> {
    Server::mysql().mysql_query(None, sql)
}

fn split_cred(s: &str) -> (String, String) {
    match s.split_once(':') {
        Some((u, p)) => (percent_decode(u), percent_decode(p)),
        None => (percent_decode(s), String::new()),
    }
}

fn split_host_port(s: &str, default: u16) -> (String, u16) {
    match s.rsplit_once(':') {
        Some((h, p)) => (
            h.trim_matches(['[', ']']).to_owned(),
            p.parse().unwrap_or(default),
        ),
        None => (s.to_owned(), default),
    }
}

fn which(bin: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(bin))
        .find(|p| p.is_file())
}

/// Splits tab-separated client output into rows; `mysql_escapes` undoes the `\n`, `\t`,
/// `\\` and `\0` escapes of `mysql --batch`.
fn rows(out: &Output, mysql_escapes: bool) -> Vec<Vec<String>> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            l.split('\t')
                .map(|f| {
                    if mysql_escapes {
                        unescape_mysql_batch(f)
                    } else {
                        f.to_owned()
                    }
                })
                .collect()
        })
        .collect()
}

pub(crate) fn unescape_mysql_batch(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('0') => out.push('\0'),
            Some('\\') => out.push('\\'),
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    out
}

enum Inner {
    Mysql(Server),
    Postgres(Server),
    Sqlite {
        _dir: tempfile::TempDir,
        path: PathBuf,
    },
    Redis(RedisServer),
}

/// An empty database made for one test; dropping it drops the database (or removes the
/// SQLite file, or stops the private Redis).
///
/// Declare it before whatever connects to it, so that those connections are closed
/// first (locals drop in reverse order). A connection still open at drop time is cut:
/// PostgreSQL uses `DROP DATABASE … WITH (FORCE)`, MySQL kills the database's sessions.
pub struct TestDb {
    kind: Kind,
    name: String,
    url: String,
    inner: Inner,
}

/// Creates an empty database for `kind` with a unique name (`mb_<pid>_<n>_<rand>`).
///
/// MySQL and PostgreSQL use the shared servers of `METABENCH_MYSQL_URL` and
/// `METABENCH_PG_URL` and panic when those are not set (run `scripts/test.sh`); SQLite is
/// a fresh temp file; Redis is a fresh private [`RedisServer`] (database 1).
pub fn fresh_database(kind: Kind) -> TestDb {
    let name = unique_name("mb");
    let (url, inner) = match kind {
        Kind::Mysql => {
            let s = Server::mysql();
            s.mysql_query(None, &format!("CREATE DATABASE `{name}`"));
            let url = format!(
                "mysql://{}:{}@({}:{})/{name}",
                s.user, s.password, s.host, s.port
            );
            (url, Inner::Mysql(s))
        }
        Kind::Postgres => {
            let s = Server::postgres();
            s.psql_query("postgres", &format!("CREATE DATABASE \"{name}\""));
            let url = format!(
                "postgres://{}:{}@{}:{}/{name}?sslmode=disable",
                s.user, s.password, s.host, s.port
            );
            (url, Inner::Postgres(s))
        }
        Kind::Sqlite => {
            let dir = temp_dir();
            let path = dir.path().join(format!("{name}.db"));
            let url = format!("sqlite3://{}", path.display());
            (url, Inner::Sqlite { _dir: dir, path })
        }
        Kind::Redis => {
            let server = RedisServer::start();
            (server.url(1), Inner::Redis(server))
        }
    };
    TestDb {
        kind,
        name,
        url,
        inner,
    }
}

impl TestDb {
    /// The meta URL in JuiceFS syntax, password included:
    /// `mysql://metabench:PW@(127.0.0.1:13306)/mb_…`,
    /// `postgres://metabench:PW@127.0.0.1:15432/mb_…?sslmode=disable`,
    /// `sqlite3:///…/mb_….db`, `redis://:PW@127.0.0.1:PORT/1`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database name (for SQLite and Redis: the unique name this test got).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The engine family.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The private Redis server, for [`Kind::Redis`].
    pub fn redis(&self) -> Option<&RedisServer> {
        match &self.inner {
            Inner::Redis(r) => Some(r),
            _ => None,
        }
    }

    /// The database file, for [`Kind::Sqlite`] (it exists once something opened it).
    pub fn sqlite_path(&self) -> Option<&Path> {
        match &self.inner {
            Inner::Sqlite { path, .. } => Some(path),
            _ => None,
        }
    }

    /// Runs SQL in this database through the command-line client and returns the rows
    /// as text (tab-separated columns split; `NULL` as MySQL prints it, empty on
    /// PostgreSQL). PostgreSQL runs exactly one statement per call. Panics on failure
    /// and for [`Kind::Redis`] (use [`RedisServer::command`]).
    pub fn query(&self, sql: &str) -> Vec<Vec<String>> {
        match &self.inner {
            Inner::Mysql(s) => s.mysql_query(Some(&self.name), sql),
            Inner::Postgres(s) => s.psql_query(&self.name, sql),
            Inner::Sqlite { path, .. } => {
                let out = run(Command::new("sqlite3")
                    .args(["-batch", "-noheader", "-separator", "\t"])
                    .arg(path)
                    .arg(sql));
                rows(&check(&format!("sqlite3 {sql:?}"), out), false)
            }
            Inner::Redis(_) => panic!("TestDb::query is for SQL kinds; use redis().command()"),
        }
    }

    fn drop_database(&self) -> Result<(), String> {
        let result = match &self.inner {
            Inner::Mysql(s) => {
                // Sessions still in this database would make DROP wait for their locks.
                let ids = s
                    .mysql_cmd(None)
                    .arg("-e")
                    .arg(format!(
                        "SELECT id FROM information_schema.processlist \
                         WHERE db = '{}' AND id <> CONNECTION_ID()",
                        self.name
                    ))
                    .output();
                if let Ok(o) = ids {
                    for id in String::from_utf8_lossy(&o.stdout).split_whitespace() {
                        if id.bytes().all(|b| b.is_ascii_digit()) {
                            // Fails harmlessly when the session ended meanwhile.
                            let _ = s
                                .mysql_cmd(None)
                                .arg("-e")
                                .arg(format!("KILL CONNECTION {id}"))
                                .output();
                        }
                    }
                }
                s.mysql_cmd(None)
                    .arg("-e")
                    .arg(format!(
                        "SET SESSION lock_wait_timeout = 60; DROP DATABASE IF EXISTS `{}`",
                        self.name
                    ))
                    .output()
            }
            Inner::Postgres(s) => s
                .psql_cmd("postgres")
                .arg("-c")
                .arg(format!(
                    "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                    self.name
                ))
                .output(),
            Inner::Sqlite { .. } | Inner::Redis(_) => return Ok(()),
        };
        match result {
            Ok(o) if o.status.success() => Ok(()),
            Ok(o) => Err(String::from_utf8_lossy(&o.stderr).into_owned()),
            Err(e) => Err(e.to_string()),
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Err(e) = self.drop_database() {
            // Never panic in drop (a test that already panicked would abort).
            eprintln!(
                "metabench-testkit: could not drop {} database {}: {e}",
                self.kind.name(),
                self.name
            );
        }
    }
}

impl std::fmt::Debug for TestDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestDb")
            .field("kind", &self.kind)
            .field("name", &self.name)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_unescaping() {
        assert_eq!(unescape_mysql_batch(r"a\tb\nc\\d\0"), "a\tb\nc\\d\0");
        assert_eq!(unescape_mysql_batch(r"x\q"), r"x\q");
        assert_eq!(unescape_mysql_batch("x\\"), "x\\");
    }

    #[test]
    fn host_and_credentials() {
        assert_eq!(split_cred("u:p%40w"), ("u".to_owned(), "p@w".to_owned()));
        assert_eq!(
            split_host_port("127.0.0.1:13306", 1),
            ("127.0.0.1".into(), 13306)
        );
        assert_eq!(split_host_port("h", 5432), ("h".into(), 5432));
    }
}
