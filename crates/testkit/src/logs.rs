//! Server-side statement logs, to count the statements an operation sends.
//!
//! PostgreSQL runs with `log_statement=all` and `log_line_prefix='%d|%p|'`, writing to
//! `METABENCH_PG_LOG`; every statement is one entry tagged with its database and backend
//! pid. MariaDB's general log is switched on as a table on demand
//! ([`mysql_general_log_enable`]) and read per connection id ([`mysql_general_log`]).

use crate::db::mysql_admin_query;
use crate::util::required_env;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

/// One statement PostgreSQL logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgLogEntry {
    /// The database (`%d`).
    pub database: String,
    /// The backend process id (`%p`): `SELECT pg_backend_pid()` on the connection.
    pub pid: u32,
    /// `None` for a simple-protocol query (`statement: …`); the prepared statement's name
    /// for an extended-protocol execution (`execute sqlx_s_1: …`, `execute <unnamed>: …`).
    pub prepared: Option<String>,
    /// The SQL text, multi-line statements joined with `\n`.
    pub text: String,
}

/// Where PostgreSQL logs (`METABENCH_PG_LOG`); panics when unset.
pub fn pg_log_path() -> PathBuf {
    PathBuf::from(required_env("METABENCH_PG_LOG"))
}

/// The current end of the PostgreSQL log, to read only what follows with
/// [`pg_statements_since`] / [`pg_log_entries_since`].
pub fn pg_log_position() -> u64 {
    std::fs::metadata(pg_log_path())
        .map(|m| m.len())
        .unwrap_or_else(|e| panic!("cannot stat METABENCH_PG_LOG: {e}"))
}

/// Every statement logged so far.
pub fn pg_log_entries() -> Vec<PgLogEntry> {
    pg_log_entries_since(0)
}

/// The statements logged after `position` (from [`pg_log_position`]).
pub fn pg_log_entries_since(position: u64) -> Vec<PgLogEntry> {
    let path = pg_log_path();
    let mut f = std::fs::File::open(&path)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    f.seek(SeekFrom::Start(position))
        .expect("cannot seek in the PostgreSQL log");
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)
        .expect("cannot read the PostgreSQL log");
    // Only whole lines: a message being written right now is left for the next read.
    if let Some(end) = buf.iter().rposition(|&b| b == b'\n') {
        buf.truncate(end + 1);
    } else {
        buf.clear();
    }
    parse_pg_log(&String::from_utf8_lossy(&buf))
}

/// The SQL texts logged for `database` (and, when given, backend `pid`), in order.
pub fn pg_statements(database: &str, pid: Option<u32>) -> Vec<String> {
    pg_statements_since(0, database, pid)
}

/// As [`pg_statements`], counting only what was logged after `position`.
pub fn pg_statements_since(position: u64, database: &str, pid: Option<u32>) -> Vec<String> {
    pg_log_entries_since(position)
        .into_iter()
        .filter(|e| e.database == database && pid.is_none_or(|p| p == e.pid))
        .map(|e| e.text)
        .collect()
}

/// A prefixed line: `db|pid|SEVERITY:  message`.
fn prefixed(line: &str) -> Option<(&str, u32, &str)> {
    let (db, rest) = line.split_once('|')?;
    let (pid, rest) = rest.split_once('|')?;
    let pid = pid.parse().ok()?;
    let (sev, _) = rest.split_once(":  ")?;
    sev.bytes()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        .then_some((db, pid, rest))
}

fn parse_pg_log(text: &str) -> Vec<PgLogEntry> {
    let mut out: Vec<PgLogEntry> = Vec::new();
    // Whether continuation lines belong to the last entry pushed.
    let mut continuing = false;
    for line in text.lines() {
        match prefixed(line) {
            Some((db, pid, msg)) => {
                continuing = false;
                let entry = if let Some(sql) = msg.strip_prefix("LOG:  statement: ") {
                    Some((None, sql))
                } else if let Some(rest) = msg.strip_prefix("LOG:  execute ") {
                    rest.split_once(": ")
                        .map(|(name, sql)| (Some(name.to_owned()), sql))
                } else {
                    None
                };
                if let Some((prepared, sql)) = entry {
                    out.push(PgLogEntry {
                        database: db.to_owned(),
                        pid,
                        prepared,
                        text: sql.to_owned(),
                    });
                    continuing = true;
                }
            }
            None if continuing => {
                let last = out.last_mut().expect("continuing implies an entry");
                last.text.push('\n');
                last.text.push_str(line);
            }
            None => {}
        }
    }
    out
}

/// Switches MariaDB's general log on, into the `mysql.general_log` table
/// (`SET GLOBAL log_output='TABLE'; SET GLOBAL general_log=1`), on the server of
/// `METABENCH_MYSQL_URL`. Idempotent; it stays on until the server stops.
pub fn mysql_general_log_enable() {
    mysql_admin_query("SET GLOBAL log_output = 'TABLE'; SET GLOBAL general_log = 1");
}

/// What MariaDB's general log holds for connection `thread_id` (`SELECT CONNECTION_ID()`
/// on that connection), in order, as `(command_type, argument)`: e.g.
/// `("Query", "BEGIN")`, `("Prepare", "SELECT …")`, `("Execute", "SELECT … 42")`,
/// `("Connect", …)`, `("Quit", "")`. Call [`mysql_general_log_enable`] before the
/// connection does what is to be counted.
pub fn mysql_general_log(thread_id: u64) -> Vec<(String, String)> {
    mysql_admin_query(&format!(
        "SELECT command_type, argument FROM mysql.general_log WHERE thread_id = {thread_id}"
    ))
    .into_iter()
    .map(|mut r| {
        let arg = if r.len() > 1 {
            r.remove(1)
        } else {
            String::new()
        };
        let cmd = r.into_iter().next().unwrap_or_default();
        (cmd, arg)
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_statements_executes_and_continuations() {
        let log = "\
|100|LOG:  database system is ready to accept connections
db1|201|LOG:  statement: BEGIN
db1|201|LOG:  execute sqlx_s_1: SELECT *
FROM t
\tWHERE x = $1
db1|201|DETAIL:  parameters: $1 = '5'
db2|202|LOG:  execute <unnamed>: SELECT 1
db1|201|ERROR:  relation \"nope\" does not exist at character 15
db1|201|STATEMENT:  SELECT * FROM nope
db1|203|LOG:  statement: COMMIT
";
        let e = parse_pg_log(log);
        assert_eq!(e.len(), 4);
        assert_eq!(e[0].text, "BEGIN");
        assert_eq!(e[0].prepared, None);
        assert_eq!(e[1].prepared.as_deref(), Some("sqlx_s_1"));
        assert_eq!(e[1].text, "SELECT *\nFROM t\n\tWHERE x = $1");
        assert_eq!(e[2].database, "db2");
        assert_eq!(e[2].prepared.as_deref(), Some("<unnamed>"));
        assert_eq!((e[3].pid, e[3].text.as_str()), (203, "COMMIT"));
    }
}
