//! What an engine says about itself: its own counters and gauges (Redis `INFO`,
//! PostgreSQL `pg_stat_database`, MySQL/MariaDB `SHOW GLOBAL STATUS`, etcd `/metrics`),
//! read at a window's start and end, and the judgment of whether a window's deltas show
//! the engine as the bottleneck.

use crate::EngineKind;
use std::collections::BTreeMap;
use std::time::Duration;

/// An engine's counters (monotonic: a window keeps their difference) and gauges (a
/// window keeps the value at its end) at one moment, by the engine's own names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Telemetry {
    /// Monotonic counters, e.g. `used_cpu_user`, `Innodb_row_lock_time`.
    pub counters: BTreeMap<String, f64>,
    /// Gauges, e.g. `connected_clients`, `Threads_running`.
    pub gauges: BTreeMap<String, f64>,
}

impl Telemetry {
    /// The change from `before` to `self`: counters as differences (those present in
    /// both; a per-command breakdown such as `calls.get` only where it moved), gauges as
    /// `self`'s.
    pub fn since(&self, before: &Telemetry) -> Telemetry {
        Telemetry {
            counters: self
                .counters
                .iter()
                .filter_map(|(k, v)| before.counters.get(k).map(|b| (k.clone(), v - b)))
                .filter(|(k, d)| *d != 0.0 || !k.contains('.'))
                .collect(),
            gauges: self.gauges.clone(),
        }
    }

    /// Adds another window's deltas: counters summed (a change marker such as
    /// `backend_set` stays 0 only while both are), gauges at their highest.
    pub fn add(&mut self, other: &Telemetry) {
        for (k, v) in &other.counters {
            let sum = self.counters.entry(k.clone()).or_default();
            match CHANGE_MARKERS.contains(&k.as_str()) {
                true => *sum = sum.abs() + v.abs(),
                false => *sum += v,
            }
        }
        for (k, v) in &other.gauges {
            let g = self.gauges.entry(k.clone()).or_insert(*v);
            *g = g.max(*v);
        }
    }

    /// Whether nothing was read.
    pub fn is_empty(&self) -> bool {
        self.counters.is_empty() && self.gauges.is_empty()
    }

    fn counter(&self, name: &str) -> f64 {
        self.counters.get(name).copied().unwrap_or(0.0)
    }
}

/// Share of one core above which Redis (one thread runs every command) is the bottleneck.
pub const REDIS_CPU_LIMIT: f64 = 0.90;
/// Share of the window above which lock waits (summed over all waiters) or WAL fsyncs
/// mark the engine as the bottleneck.
pub const WAIT_SHARE_LIMIT: f64 = 0.50;

/// Why a window's telemetry deltas (over `window`, with `clients` clients) show the
/// engine as the bottleneck, if they do: Redis's CPU near one core, rising lock waits or
/// deadlocks on SQL, SQLite's busy-handler sleeps, etcd's WAL fsyncs filling the window.
pub fn engine_bound(
    kind: EngineKind,
    delta: &Telemetry,
    window: Duration,
    clients: u32,
) -> Option<String> {
    let secs = window.as_secs_f64().max(1e-9);
    match kind {
        EngineKind::Redis => {
            let cpu = (delta.counter("used_cpu_user") + delta.counter("used_cpu_sys")) / secs;
            (cpu >= REDIS_CPU_LIMIT).then(|| {
                format!(
                    "Redis used {:.0}% of a core (one thread runs every command)",
                    cpu * 100.0
                )
            })
        }
        EngineKind::Mysql => {
            let waited = delta.counter("Innodb_row_lock_time") / 1000.0;
            deadlocks_or(delta.counter("Innodb_deadlocks"), || {
                filled(waited, secs).then(|| {
                    format!(
                        "transactions waited {waited:.2} s on row locks in a {secs:.1} s window ({:.0} waits)",
                        delta.counter("Innodb_row_lock_waits")
                    )
                })
            })
        }
        EngineKind::Postgres => {
            let waiting = delta.gauges.get("lock_waiters").copied().unwrap_or(0.0);
            deadlocks_or(delta.counter("deadlocks"), || {
                (waiting >= (clients as f64 / 2.0).max(2.0)).then(|| {
                    format!("{waiting:.0} of {clients} sessions were waiting on a lock at the window's end")
                })
            })
        }
        EngineKind::Sqlite => {
            let waited = delta.counter("busy_wait_s");
            filled(waited, secs).then(|| {
                format!(
                    "statements waited {waited:.2} s on SQLite's database lock in a {secs:.1} s window ({:.0} busy-handler sleeps)",
                    delta.counter("busy_waits")
                )
            })
        }
        EngineKind::Etcd => {
            let fsync = delta.counter("etcd_disk_wal_fsync_duration_seconds_sum");
            filled(fsync, secs).then(|| {
                format!(
                    "etcd spent {:.0}% of the window in WAL fsyncs ({:.0} fsyncs)",
                    fsync / secs * 100.0,
                    delta.counter("etcd_disk_wal_fsync_duration_seconds_count")
                )
            })
        }
        _ => None,
    }
}

/// Whether `waited` seconds (summed over all waiters) fill [`WAIT_SHARE_LIMIT`] of a
/// `secs`-second window.
fn filled(waited: f64, secs: f64) -> bool {
    waited / secs >= WAIT_SHARE_LIMIT
}

/// A SQL engine's deadlocks in the window, if any; else what `waits` finds.
fn deadlocks_or(deadlocks: f64, waits: impl FnOnce() -> Option<String>) -> Option<String> {
    if deadlocks > 0.0 {
        Some(format!("{deadlocks:.0} deadlocks in the window"))
    } else {
        waits()
    }
}

/// The engine part of a call's time, from the engine's own accounting, or why it is
/// unknown.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineTime {
    /// µs per call, and where it comes from (its granularity said).
    Known(f64, String),
    /// Why it is unknown ("engine time unknown: …").
    Unknown(String),
}

/// The engine's own time per call of an operation that sent `commands_per_call` (Redis:
/// top-level commands per call, by `INFO` name) or whose in-process engine calls took
/// `in_process_us` per call (SQLite), from the telemetry deltas `delta` of the window
/// the operation ran in (its phase's).
///
/// Redis: each command's mean time over the window (`usec.<cmd>` / `calls.<cmd>` of
/// `INFO commandstats`, which counts Redis's execution of the command, not its socket
/// work), times how many the operation sent per call: per phase, not per call. A
/// `MULTI … EXEC` counts as its `exec`, whose time covers the commands queued in it.
///
/// PostgreSQL on this host: its backends' CPU over the window per statement
/// `pg_stat_statements` counted, where the window's backends stayed the same
/// ([`processes_cpu`]); else, and on MariaDB/MySQL, the statements' own time
/// (`pg_stat_statements`, `performance_schema`'s statement events of the connections in
/// the database, over the same connections at both edges): the mean statement time over
/// the window in this database × the statements (round trips) per call: per phase. etcd,
/// started
/// with `--metrics=extensive`: the mean gRPC handling time over the window × the
/// requests per call: per phase.
pub fn engine_time(
    kind: EngineKind,
    delta: &Telemetry,
    commands_per_call: &BTreeMap<String, f64>,
    in_process_us: Option<f64>,
    round_trips_per_call: f64,
) -> EngineTime {
    let unknown = |why: &str| EngineTime::Unknown(format!("engine time unknown: {why}"));
    match kind {
        EngineKind::Sqlite => match in_process_us {
            Some(us) => EngineTime::Known(
                us,
                "SQLite, called in-process: its statements timed per call".into(),
            ),
            None => unknown("no SQLite statement was timed"),
        },
        EngineKind::Redis => {
            if delta.counters.is_empty() {
                return unknown("Redis's INFO was not read");
            }
            if commands_per_call.is_empty() {
                return unknown("no Redis command was counted");
            }
            let mut us = 0.0;
            for (name, n) in commands_per_call {
                // INFO commandstats names commands in lower case (`cmdstat_ping`).
                let name = name.to_ascii_lowercase();
                let (Some(calls), Some(usec)) = (
                    delta.counters.get(&format!("calls.{name}")),
                    delta.counters.get(&format!("usec.{name}")),
                ) else {
                    return unknown(&format!("INFO commandstats has no figures for `{name}`"));
                };
                if *calls <= 0.0 {
                    return unknown(&format!("INFO commandstats counted no `{name}`"));
                }
                us += n * usec / calls;
            }
            EngineTime::Known(
                us,
                "Redis INFO commandstats: each command's mean time over the phase × the commands sent per call (per phase)".into(),
            )
        }
        EngineKind::Postgres if backends_timed(delta) => {
            let us = delta.counter("backend_cpu_us") / delta.counter("statement_calls");
            EngineTime::Known(
                us * round_trips_per_call,
                "PostgreSQL backends' CPU (/proc/<pid>/schedstat, the server on this host) per statement over the phase × statements per call (per phase): a statement's parse, bind, run and commit, not its waits".into(),
            )
        }
        // MySQL keeps its statement figures by connection, and one that closed within the
        // window took its whole history with it: over another set of connections
        // (`backend_set`) the sums are no reading.
        EngineKind::Mysql if delta.counter("backend_set") != 0.0 => unknown(
            "a connection to the volume's database opened or closed within the phase, and performance_schema keeps its figures by connection",
        ),
        EngineKind::Postgres | EngineKind::Mysql | EngineKind::Etcd => {
            let (calls, total, missing, source) = match kind {
                EngineKind::Postgres => (
                    "statement_calls",
                    "statement_us",
                    "PostgreSQL has no pg_stat_statements (shared_preload_libraries and CREATE EXTENSION pg_stat_statements)",
                    "PostgreSQL pg_stat_statements: the mean statement time over the phase × statements per call (per phase)",
                ),
                EngineKind::Mysql => (
                    "statement_calls",
                    "statement_us",
                    "performance_schema is off (performance_schema=ON in the server's configuration)",
                    "performance_schema: the mean statement time (its prepare and close included) of the connections in this database over the phase × statements per call (per phase)",
                ),
                _ => (
                    "grpc_server_handled",
                    "grpc_server_handling_us",
                    "etcd keeps no per-request time without --metrics=extensive (grpc_server_handling_seconds)",
                    "etcd grpc_server_handling_seconds: the mean request handling time over the phase × requests per call (per phase)",
                ),
            };
            match (delta.counters.get(calls), delta.counters.get(total)) {
                // a sum that fell (pg_stat_statements evicted or reset entries, or a
                // reading without the connections' mark) is no reading either
                (Some(n), Some(us)) if *n > 0.0 && *us >= 0.0 => {
                    EngineTime::Known(us / n * round_trips_per_call, source.into())
                }
                _ => unknown(missing),
            }
        }
        _ => unknown("this engine keeps no per-command time"),
    }
}

/// Counters that mark a change rather than count one: 0 over a window when what they
/// identify stayed the same. [`Telemetry::add`] keeps them 0 only while every window's was.
/// `backend_set`: the server workers of the volume's connections ([`set_mark`]).
const CHANGE_MARKERS: &[&str] = &["backend_set"];

/// Whether a PostgreSQL window's deltas time its backends: [`processes_cpu`] read at both
/// edges over the same backends (`backend_set`), no session started in between (`sessions`
/// of `pg_stat_database`, PostgreSQL 14 and later: one that came and went would have run
/// statements whose CPU no edge saw), CPU spent, and statements counted
/// (`pg_stat_statements`).
fn backends_timed(delta: &Telemetry) -> bool {
    delta.counter("backend_cpu_us") > 0.0
        && delta.counters.get("backend_set") == Some(&0.0)
        && delta.counter("sessions") == 0.0
        && delta.counter("statement_calls") > 0.0
}

/// What the single-threaded processes `pids` of this host (a PostgreSQL backend is one)
/// have run: their CPU time in µs (the first field of `/proc/<pid>/schedstat`, that of the
/// process's main thread, nanoseconds on a CPU), and a mark of which processes they are
/// (a hash of each one's id and start time, below 2^48 so that an `f64` holds it
/// exactly): two readings over the same processes have the same mark, one whose process
/// exited and another took its id has not. `None` unless every one is a process here
/// named `comm` (a server in a container or on another host has ids that mean nothing
/// here).
pub(crate) fn processes_cpu(pids: &[u32], comm: &str) -> Option<(f64, f64)> {
    let mut ns = 0u64;
    let mut started: Vec<(u32, u64)> = Vec::with_capacity(pids.len());
    for &pid in pids {
        let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        if name.trim_end() != comm {
            return None;
        }
        let sched = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?;
        let [ran_ns, ..] = crate::procfs::schedstat_fields(&sched)?;
        ns += ran_ns;
        let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
        let start = crate::procfs::stat_after_name(&stat)?
            .nth(19)?
            .parse::<u64>()
            .ok()?;
        started.push((pid, start));
    }
    Some((ns as f64 / 1000.0, set_mark(started)))
}

/// A mark of a set of server workers (PostgreSQL backends by id and start time, MySQL
/// connections' thread ids), for a [`CHANGE_MARKERS`] counter: the same for the same set
/// in any order, another for another (a hash, below 2^48 so that an `f64` holds it
/// exactly).
pub(crate) fn set_mark<T: std::hash::Hash + Ord>(mut workers: Vec<T>) -> f64 {
    use std::hash::{Hash, Hasher};
    workers.sort_unstable();
    let mut h = std::hash::DefaultHasher::new();
    workers.hash(&mut h);
    (h.finish() >> 16) as f64
}

/// Redis `INFO all`: CPU, commands, AOF fsyncs and each command's calls and time
/// (`cmdstat_get` → `calls.get`, `usec.get`) as counters; clients and memory as gauges.
pub fn from_redis_info(info: &str) -> Telemetry {
    const COUNTERS: &[&str] = &[
        "used_cpu_sys",
        "used_cpu_user",
        "total_commands_processed",
        "total_connections_received",
        "aof_delayed_fsync",
        "rejected_connections",
    ];
    const GAUGES: &[&str] = &[
        "connected_clients",
        "blocked_clients",
        "used_memory",
        "aof_pending_bio_fsync",
        "instantaneous_ops_per_sec",
    ];
    let mut t = Telemetry::default();
    for line in info.lines() {
        let Some((name, value)) = line.trim().split_once(':') else {
            continue;
        };
        if let Some(cmd) = name.strip_prefix("cmdstat_") {
            for field in value.split(',') {
                if let Some((k @ ("calls" | "usec" | "failed_calls"), v)) = field.split_once('=') {
                    if let Ok(v) = v.parse::<f64>() {
                        t.counters.insert(format!("{k}.{cmd}"), v);
                    }
                }
            }
        } else if let Ok(v) = value.parse::<f64>() {
            if COUNTERS.contains(&name) {
                t.counters.insert(name.to_owned(), v);
            } else if GAUGES.contains(&name) {
                t.gauges.insert(name.to_owned(), v);
            }
        }
    }
    t
}

/// The `SHOW GLOBAL STATUS` variables kept for MySQL and MariaDB: counters first.
pub const MYSQL_COUNTERS: &[&str] = &[
    "Com_commit",
    "Com_rollback",
    "Handler_commit",
    "Handler_rollback",
    "Innodb_row_lock_waits",
    "Innodb_row_lock_time",
    "Innodb_deadlocks",
    "Innodb_data_fsyncs",
    "Innodb_os_log_fsyncs",
    "Questions",
];

/// The `SHOW GLOBAL STATUS` gauges kept for MySQL and MariaDB.
pub const MYSQL_GAUGES: &[&str] = &[
    "Threads_running",
    "Threads_connected",
    "Innodb_row_lock_current_waits",
];

/// The `pg_stat_database` columns kept for PostgreSQL (all counters).
pub const POSTGRES_COUNTERS: &[&str] = &[
    "xact_commit",
    "xact_rollback",
    "deadlocks",
    "conflicts",
    "blks_read",
    "blks_hit",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
];

/// The etcd metrics kept from `/metrics` (Prometheus text): counters and summaries'
/// sums and counts; `etcd_server_proposals_pending` is a gauge.
pub fn from_prometheus(text: &str) -> Telemetry {
    const COUNTERS: &[&str] = &[
        "etcd_disk_wal_fsync_duration_seconds_sum",
        "etcd_disk_wal_fsync_duration_seconds_count",
        "etcd_disk_backend_commit_duration_seconds_sum",
        "etcd_disk_backend_commit_duration_seconds_count",
        "etcd_server_proposals_committed_total",
        "etcd_server_proposals_applied_total",
        "etcd_server_proposals_failed_total",
        "etcd_mvcc_txn_total",
        "process_cpu_seconds_total",
    ];
    const GAUGES: &[&str] = &[
        "etcd_server_proposals_pending",
        "etcd_mvcc_db_total_size_in_use_in_bytes",
    ];
    let mut t = Telemetry::default();
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        let mut parts = line.split_whitespace();
        let (Some(name), Some(value)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Ok(v) = value.parse::<f64>() else {
            continue;
        };
        // `--metrics=extensive`: the gRPC handling histogram, summed over its methods.
        if let Some((series, _)) = name.split_once('{') {
            let kept = match series {
                "grpc_server_handling_seconds_sum" => Some(("grpc_server_handling_us", v * 1e6)),
                "grpc_server_handling_seconds_count" => Some(("grpc_server_handled", v)),
                _ => None,
            };
            if let Some((key, v)) = kept {
                *t.counters.entry(key.to_owned()).or_default() += v;
            }
            // Other labelled series (e.g. per gRPC method) are not kept.
            continue;
        }
        if COUNTERS.contains(&name) {
            t.counters.insert(name.to_owned(), v);
        } else if GAUGES.contains(&name) {
            t.gauges.insert(name.to_owned(), v);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each source's text parses to exactly the counters and gauges listed: Redis keeps
    /// its per-command calls, time and failures but not `usec_per_call`; Prometheus text
    /// keeps no labelled series (no histogram buckets).
    #[test]
    fn redis_info_and_prometheus_text_keep_the_listed_series() {
        type Series = &'static [(&'static str, f64)];
        type Parse = fn(&str) -> Telemetry;
        let cases: [(Parse, &str, Series, Series); 2] = [
            (
                from_redis_info,
                "# CPU\r\nused_cpu_sys:1.50\r\nused_cpu_user:2.25\r\nconnected_clients:7\r\n# Commandstats\r\ncmdstat_get:calls=10,usec=50,usec_per_call=5.00,rejected_calls=0,failed_calls=1\r\n",
                &[
                    ("used_cpu_sys", 1.5),
                    ("used_cpu_user", 2.25),
                    ("calls.get", 10.0),
                    ("usec.get", 50.0),
                    ("failed_calls.get", 1.0),
                ],
                &[("connected_clients", 7.0)],
            ),
            (
                from_prometheus,
                "# HELP x\netcd_disk_wal_fsync_duration_seconds_sum 1.5\netcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.001\"} 3\netcd_server_proposals_pending 2\n",
                &[("etcd_disk_wal_fsync_duration_seconds_sum", 1.5)],
                &[("etcd_server_proposals_pending", 2.0)],
            ),
        ];
        let map = |series: Series| -> BTreeMap<String, f64> {
            series.iter().map(|&(k, v)| (k.to_owned(), v)).collect()
        };
        for (parse, text, counters, gauges) in cases {
            let t = parse(text);
            assert_eq!(t.counters, map(counters), "{text}");
            assert_eq!(t.gauges, map(gauges), "{text}");
            let d = t.since(&Telemetry::default());
            assert!(d.counters.is_empty(), "a counter needs both ends");
        }
    }

    #[test]
    fn deltas_and_the_redis_cpu_judgment() {
        let at = |cpu: f64| Telemetry {
            counters: [("used_cpu_user".to_owned(), cpu)].into(),
            gauges: [("connected_clients".to_owned(), cpu)].into(),
        };
        let d = at(3.0).since(&at(1.0));
        assert_eq!(d.counters["used_cpu_user"], 2.0);
        assert_eq!(d.gauges["connected_clients"], 3.0);
        let window = Duration::from_secs(2);
        assert!(engine_bound(EngineKind::Redis, &d, window, 8).is_some());
        let idle = at(1.5).since(&at(1.0));
        assert!(engine_bound(EngineKind::Redis, &idle, window, 8).is_none());
    }

    #[test]
    fn sql_judgments() {
        let mut d = Telemetry::default();
        d.counters.insert("Innodb_row_lock_time".into(), 1500.0);
        assert!(engine_bound(EngineKind::Mysql, &d, Duration::from_secs(2), 8).is_some());
        d.counters.insert("Innodb_row_lock_time".into(), 100.0);
        assert!(engine_bound(EngineKind::Mysql, &d, Duration::from_secs(2), 8).is_none());
        let mut p = Telemetry::default();
        p.gauges.insert("lock_waiters".into(), 6.0);
        assert!(engine_bound(EngineKind::Postgres, &p, Duration::from_secs(2), 8).is_some());
        p.gauges.insert("lock_waiters".into(), 1.0);
        assert!(engine_bound(EngineKind::Postgres, &p, Duration::from_secs(2), 8).is_none());
        let mut s = Telemetry::default();
        s.counters.insert("busy_wait_s".into(), 1.2);
        s.counters.insert("busy_waits".into(), 40.0);
        let why = engine_bound(EngineKind::Sqlite, &s, Duration::from_secs(2), 8).unwrap();
        assert!(
            why.contains("waited 1.20 s on SQLite's database lock"),
            "{why}"
        );
        s.counters.insert("busy_wait_s".into(), 0.2);
        assert!(engine_bound(EngineKind::Sqlite, &s, Duration::from_secs(2), 8).is_none());
    }

    /// A busy process's CPU is read from its schedstat, and only under its own name.
    #[test]
    fn processes_cpu_reads_schedstat_under_the_processes_name() {
        // a shell's busy loop is one thread: /proc/<pid>/schedstat is that thread's, as a
        // PostgreSQL backend's is
        let mut busy = busy_shell();
        let pid = busy.id();
        let (before, sum) = read_once_named(pid);
        assert!(sum < (1u64 << 48) as f64);
        std::thread::sleep(Duration::from_millis(100));
        let (after, _) = processes_cpu(&[pid], "sh").unwrap();
        let wrong_name = processes_cpu(&[pid], "postgres");
        busy.kill().unwrap();
        busy.wait().unwrap();
        assert!(after > before, "{before} → {after} µs");
        assert_eq!(wrong_name, None);
        assert_eq!(processes_cpu(&[], "sh").map(|(cpu, _)| cpu), Some(0.0));
        // gone: no reading
        assert_eq!(processes_cpu(&[pid], "sh"), None);
        // the mark names the processes: the same ones, the same mark; another, another
        let mut other = busy_shell();
        let o = other.id();
        let once = read_once_named(o).1;
        let again = processes_cpu(&[o], "sh").map(|(_, mark)| mark);
        other.kill().unwrap();
        other.wait().unwrap();
        assert_eq!(Some(once), again);
        assert_ne!(once, sum);
    }

    /// A shell in a busy loop: one thread, named `sh`.
    fn busy_shell() -> std::process::Child {
        std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap()
    }

    /// [`processes_cpu`] of `pid` once it is named `sh` (a child is named as its parent
    /// until it runs the shell), within 5 s.
    fn read_once_named(pid: u32) -> (f64, f64) {
        let start = std::time::Instant::now();
        loop {
            if let Some(r) = processes_cpu(&[pid], "sh") {
                return r;
            }
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "{pid} not named sh"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The engine part: Redis from each command's mean time over the window × the commands
    /// sent per call; unknown, and why, when a figure is missing; PostgreSQL and etcd from
    /// their statement or request time when it was read, else unknown.
    #[test]
    fn engine_time_from_the_engines_own_accounting() {
        let info = "cmdstat_get:calls=100,usec=200,usec_per_call=2.00\r\ncmdstat_exec:calls=10,usec=500,usec_per_call=50.00\r\n";
        let zero = from_redis_info("cmdstat_get:calls=0,usec=0\r\ncmdstat_exec:calls=0,usec=0\r\n");
        let delta = from_redis_info(info).since(&zero);
        let per_call: BTreeMap<String, f64> = [("get".into(), 2.0), ("exec".into(), 1.0)].into();
        match engine_time(EngineKind::Redis, &delta, &per_call, None, 3.0) {
            EngineTime::Known(us, source) => {
                assert!((us - (2.0 * 2.0 + 50.0)).abs() < 1e-9, "{us}");
                assert!(source.contains("per phase"), "{source}");
            }
            other => panic!("{other:?}"),
        }
        // A command named as it is sent (the floor's `PING`) is found in INFO's lower case.
        let upper: BTreeMap<String, f64> = [("GET".into(), 2.0), ("EXEC".into(), 1.0)].into();
        assert!(matches!(
            engine_time(EngineKind::Redis, &delta, &upper, None, 3.0),
            EngineTime::Known(us, _) if (us - 54.0).abs() < 1e-9
        ));
        let hset: BTreeMap<String, f64> = [("hset".into(), 1.0)].into();
        assert!(matches!(
            engine_time(EngineKind::Redis, &delta, &hset, None, 1.0),
            EngineTime::Unknown(why) if why.contains("`hset`")
        ));
        assert!(matches!(
            engine_time(EngineKind::Postgres, &Telemetry::default(), &BTreeMap::new(), None, 4.0),
            EngineTime::Unknown(why) if why.starts_with("engine time unknown: PostgreSQL has no pg_stat_statements")
        ));
        let mut pg = Telemetry::default();
        pg.counters.insert("statement_calls".into(), 40.0);
        pg.counters.insert("statement_us".into(), 400.0);
        assert_eq!(
            engine_time(EngineKind::Postgres, &pg, &BTreeMap::new(), None, 4.0),
            EngineTime::Known(40.0, "PostgreSQL pg_stat_statements: the mean statement time over the phase × statements per call (per phase)".into())
        );
        // The backends' CPU, where it was read over the same backends, is the engine part.
        let mut cpu = pg.clone();
        cpu.counters.insert("backend_cpu_us".into(), 600.0);
        cpu.counters.insert("backend_set".into(), 0.0);
        cpu.counters.insert("sessions".into(), 0.0);
        assert!(matches!(
            engine_time(EngineKind::Postgres, &cpu, &BTreeMap::new(), None, 4.0),
            EngineTime::Known(us, source) if us == 60.0 && source.contains("schedstat")
        ));
        // Over another set of backends, after a session that may have come and gone, or
        // with no CPU seen, it is not: the statement time is.
        for (counter, value) in [
            ("backend_set", 4242.0),
            ("sessions", 1.0),
            ("backend_cpu_us", 0.0),
        ] {
            let mut changed = cpu.clone();
            changed.counters.insert(counter.into(), value);
            assert!(
                matches!(
                    engine_time(EngineKind::Postgres, &changed, &BTreeMap::new(), None, 4.0),
                    EngineTime::Known(us, ref source) if us == 40.0 && source.contains("pg_stat_statements")
                ),
                "{counter}"
            );
        }
        // Windows added up: the mark stays 0 only while every window's was.
        let mut level = cpu.clone();
        level.add(&cpu);
        assert_eq!(level.counters["backend_set"], 0.0);
        let mut moved = cpu.clone();
        moved.counters.insert("backend_set".into(), -7.0);
        level.add(&moved);
        level.add(&cpu);
        assert_eq!(level.counters["backend_set"], 7.0);
        // MySQL: the mean statement time over the same connections; over another set (a
        // connection replaced within the window), or where a sum fell, no reading.
        let mut mysql = pg.clone();
        mysql.counters.insert("backend_set".into(), 0.0);
        assert!(matches!(
            engine_time(EngineKind::Mysql, &mysql, &BTreeMap::new(), None, 4.0),
            EngineTime::Known(us, ref source) if us == 40.0 && source.contains("performance_schema")
        ));
        for (counter, value) in [("backend_set", 4242.0), ("statement_us", -5.0)] {
            let mut changed = mysql.clone();
            changed.counters.insert(counter.into(), value);
            assert!(
                matches!(
                    engine_time(EngineKind::Mysql, &changed, &BTreeMap::new(), None, 4.0),
                    EngineTime::Unknown(_)
                ),
                "{counter}"
            );
        }
        // The mark of a set is the same in any order, another for another set.
        assert_eq!(set_mark(vec![3u64, 1, 2]), set_mark(vec![1u64, 2, 3]));
        assert_ne!(set_mark(vec![1u64, 2, 3]), set_mark(vec![1u64, 2, 4]));
        assert!(set_mark(vec![u64::MAX]) < 2f64.powi(48));
        assert!(matches!(
            engine_time(EngineKind::Sqlite, &Telemetry::default(), &BTreeMap::new(), Some(7.0), 4.0),
            EngineTime::Known(us, _) if us == 7.0
        ));
        let etcd = from_prometheus("grpc_server_handling_seconds_sum{grpc_method=\"Range\"} 0.5\ngrpc_server_handling_seconds_count{grpc_method=\"Range\"} 1000\ngrpc_server_handling_seconds_sum{grpc_method=\"Txn\"} 1.5\ngrpc_server_handling_seconds_count{grpc_method=\"Txn\"} 1000\n");
        let d = etcd.since(&Telemetry {
            counters: [
                ("grpc_server_handling_us".into(), 0.0),
                ("grpc_server_handled".into(), 0.0),
            ]
            .into(),
            ..Default::default()
        });
        assert!(matches!(
            engine_time(EngineKind::Etcd, &d, &BTreeMap::new(), None, 2.0),
            EngineTime::Known(us, _) if (us - 2000.0).abs() < 1e-6
        ));
    }
}
