//! The results file: versioned JSON, written by every run and read by reports.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the results layout; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// The engine a run measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineInfo {
    /// Engine family (`redis`, `mysql`, `postgres`, `sqlite`).
    pub kind: String,
    /// The meta URL with its password redacted.
    pub url: String,
    /// Server software and version.
    pub version: String,
    /// Durability settings read from the server.
    pub durability: BTreeMap<String, String>,
    /// Whether the run used a volume metabench formatted (`false`: `--existing`).
    pub formatted_by_metabench: bool,
    /// Which JuiceFS client the numbers model.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub client_profile: String,
    /// The settings that client ran with (`profile`, `skip_dir_mtime`, `skip_dir_nlink`,
    /// `client_cache`, `background_work`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub client_settings: BTreeMap<String, String>,
    /// Where metabench's sessions knowingly differ from that client, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fidelity_notes: Vec<String>,
}

impl EngineInfo {
    /// The client's settings in one line (`skip-dir-mtime 100ms, …`), without the profile.
    pub fn client_settings_line(&self) -> String {
        let settings: Vec<String> = self
            .client_settings
            .iter()
            .filter(|(k, _)| k.as_str() != "profile")
            .map(|(k, v)| format!("{} {v}", k.replace('_', "-")))
            .collect();
        settings.join(", ")
    }

    /// The client profile's name (`gobench`, `mount`), also from files that recorded only
    /// its description; `None` when the file does not say.
    pub fn profile_name(&self) -> Option<&str> {
        match self.client_settings.get("profile") {
            Some(p) => Some(p.as_str()),
            None => self
                .client_profile
                .split(':')
                .next()
                .filter(|p| !p.is_empty()),
        }
    }

    /// Whether the client skipped parent updates by time (SkipDirMtime above 0), which
    /// makes round trips per call depend on timing.
    pub fn skips_dir_mtime(&self) -> bool {
        self.client_settings
            .get("skip_dir_mtime")
            .is_some_and(|v| !v.starts_with("0s"))
    }

    /// The durability settings as `name=value` pairs, space-separated.
    pub fn durability_line(&self) -> String {
        self.durability
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The client a run modelled, for tables: its profile and settings, or what files
    /// written before profiles existed say.
    pub fn client_summary(&self) -> String {
        match self.client_settings.get("profile") {
            Some(p) => format!("{p}: {}", self.client_settings_line()),
            None if self.client_profile.is_empty() => "not recorded".to_owned(),
            None => self.client_profile.clone(),
        }
    }

    /// The lines to print under a run's results: the client profile and the documented
    /// differences from it.
    pub fn fidelity_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.client_profile.is_empty() {
            lines.push(format!("client profile: {}", self.client_profile));
        }
        if !self.client_settings.is_empty() {
            lines.push(format!("client settings: {}", self.client_settings_line()));
        }
        if !self.fidelity_notes.is_empty() {
            lines.push("where metabench differs from that client:".to_owned());
            lines.extend(self.fidelity_notes.iter().map(|n| format!("  - {n}")));
        }
        lines
    }
}

/// The machine metabench ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostInfo {
    /// Host name.
    pub hostname: String,
    /// Logical CPUs.
    pub cores: usize,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// Operating system and kernel.
    pub os: String,
}

impl HostInfo {
    /// `hostname (N cores, M GiB, os)`.
    pub fn summary(&self) -> String {
        format!(
            "{} ({} cores, {:.1} GiB, {})",
            self.hostname,
            self.cores,
            self.memory_bytes as f64 / (1u64 << 30) as f64,
            self.os
        )
    }

    /// Reads the facts of this machine.
    pub fn detect() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or(0);
        let pretty = read("/etc/os-release")
            .lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|s| s.trim_matches('"').to_owned())
            .unwrap_or_else(|| std::env::consts::OS.to_owned());
        let kernel = read("/proc/sys/kernel/osrelease").trim().to_owned();
        Self {
            hostname: read("/proc/sys/kernel/hostname").trim().to_owned(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes,
            os: if kernel.is_empty() {
                pretty
            } else {
                format!("{pretty}, Linux {kernel}")
            },
        }
    }
}

/// What an `ops` run was asked to do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpsPlan {
    /// Operations, in run order.
    pub ops: Vec<String>,
    /// Timed calls per operation, when fixed.
    pub iterations: Option<u64>,
    /// Timed time per operation in seconds, when fixed.
    pub duration_s: Option<f64>,
    /// Whether the Go client's caches were reproduced (`--client-cache`).
    pub client_cache: bool,
    /// How long one call may take before it counts as a `timeout` error, seconds
    /// (`--op-timeout`; 0 in files written before it existed).
    #[serde(default)]
    pub op_timeout_s: f64,
}

/// The latency figures every output shows of a histogram of successful calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Calls recorded.
    pub count: u64,
    /// Mean, µs.
    pub mean_us: f64,
    /// Median, µs.
    pub p50_us: f64,
    /// 90th percentile, µs.
    pub p90_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// Slowest call, µs.
    pub max_us: f64,
    /// The histogram (HdrHistogram V2, base64); `None` when it is empty.
    pub histogram: Option<String>,
}

impl Latency {
    /// Summarises `h`, whose values are nanoseconds (all zeros when it is empty).
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Self {
            count: h.len(),
            mean_us: h.mean() / 1000.0,
            p50_us: us(h.value_at_quantile(0.50)),
            p90_us: us(h.value_at_quantile(0.90)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
            histogram: Some(crate::histogram::encode(h)),
        }
    }
}

/// Figures of one operation (its nested records refuse unknown fields through
/// [`OpsResults::from_json`], as `deny_unknown_fields` cannot be used with `flatten`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpResult {
    /// Operation name as in JuiceFS's benchmark (`mkdir`, `readdir_1k`, …).
    pub op: String,
    /// Timed calls that succeeded, and their latency.
    #[serde(flatten)]
    pub latency: Latency,
    /// Round trips to the engine per timed call (Redis requests, SQL statements).
    pub round_trips_per_op: f64,
    /// Transaction retries after conflicts, in total.
    pub retries: u64,
    /// Failed calls by error kind.
    pub errors: BTreeMap<String, u64>,
    /// Why the operation did not run, if it did not.
    pub skipped: Option<String>,
    /// How metabench ran it where that differs from a plain call (caches, id batches).
    pub note: Option<String>,
}

impl OpResult {
    /// An operation that did not run, and why (`ENOTSUP`).
    pub fn skipped(op: &str, why: &str) -> Self {
        OpResult {
            op: op.into(),
            skipped: Some(why.into()),
            ..Default::default()
        }
    }
}

/// The results of `metabench ops`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpsResults {
    /// Kind `ops`, who wrote it, when, on what.
    #[serde(flatten)]
    pub header: RunHeader,
    /// The plan.
    pub plan: OpsPlan,
    /// The engine's null round trip through the same client path, before the run.
    #[serde(default)]
    pub floor: Option<Floor>,
    /// Per-operation figures, in run order.
    pub results: Vec<OpResult>,
    /// Whether the run was stopped early (Ctrl-C).
    pub interrupted: bool,
    /// Set when the engine failed mid-run: the operations before it are complete.
    #[serde(default)]
    pub failure: Option<Box<RunFailure>>,
}

impl OpsResults {
    /// An `ops` run of `results` whose header says only its kind (for reports built in code).
    pub fn of(results: Vec<OpResult>) -> Self {
        OpsResults {
            header: RunHeader {
                kind: "ops".into(),
                ..Default::default()
            },
            results,
            ..Default::default()
        }
    }

    /// Reads a results file, checking its kind and version.
    pub fn from_json(s: &str) -> Result<Self, String> {
        read_results(s, "ops")
    }

    /// The result of one operation.
    pub fn get(&self, op: &str) -> Option<&OpResult> {
        self.results.iter().find(|r| r.op == op)
    }
}

/// What every results file starts with, whatever its kind (`ops`, `sweep`, `parity`):
/// the layout version and kind, who wrote it and when, the engine and the machine. Its
/// fields sit at the top level of the JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunHeader {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `ops`, `sweep` or `parity`.
    pub kind: String,
    /// metabench version.
    pub metabench_version: String,
    /// Git commit metabench was built from, if known.
    pub git_commit: Option<String>,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// The engine measured.
    pub engine: EngineInfo,
    /// The machine.
    pub host: HostInfo,
}

impl RunHeader {
    /// The header of a `kind` run of this metabench (built from `git_commit`) that
    /// started at `started_at`, on `engine` and this machine.
    pub fn new(
        kind: &str,
        started_at: String,
        engine: EngineInfo,
        git_commit: Option<String>,
    ) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            kind: kind.to_owned(),
            metabench_version: env!("CARGO_PKG_VERSION").to_owned(),
            git_commit,
            started_at,
            engine,
            host: HostInfo::detect(),
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The kind a results file says it holds (`ops`, `sweep`, `parity`), read before
/// anything else.
pub fn kind_of(s: &str) -> Result<Option<String>, String> {
    #[derive(Deserialize)]
    struct Kind {
        kind: Option<String>,
    }
    serde_json::from_str::<Kind>(s)
        .map(|k| k.kind)
        .map_err(|e| format!("not a metabench results file: {e}"))
}

/// Reads a results file of `kind` and layout [`SCHEMA_VERSION`] ([`read_results_of`]).
fn read_results<T: Serialize + serde::de::DeserializeOwned>(
    s: &str,
    kind: &str,
) -> Result<T, String> {
    read_results_of(s, kind, 1..=SCHEMA_VERSION)
}

/// Reads a results file of `kind` whose layout version is in `versions`: the kind and
/// the version are checked before anything else, and a field this metabench does not
/// know, at any depth, is refused.
pub fn read_results_of<T: Serialize + serde::de::DeserializeOwned>(
    s: &str,
    kind: &str,
    versions: std::ops::RangeInclusive<u32>,
) -> Result<T, String> {
    let top: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(s).map_err(|e| format!("not a metabench results file: {e}"))?;
    let found = top.get("kind").and_then(|k| k.as_str()).unwrap_or("");
    if found != kind {
        let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        return Err(format!(
            "results file holds a '{found}' run, not {article} '{kind}' run"
        ));
    }
    let version = top.get("schema_version").and_then(|v| v.as_u64());
    let (oldest, newest) = (u64::from(*versions.start()), u64::from(*versions.end()));
    if let Some(v) = version.filter(|&v| v > newest) {
        return Err(format!(
            "results schema version {v} is newer than this metabench understands ({newest})"
        ));
    }
    if let Some(v) = version.filter(|&v| v < oldest) {
        return Err(format!(
            "results schema version {v} is older than this metabench reads ({oldest}); run it again"
        ));
    }
    let parsed: T =
        serde_json::from_str(s).map_err(|e| format!("not a metabench results file: {e}"))?;
    let known = serde_json::to_value(&parsed).map_err(|e| e.to_string())?;
    if let Some(extra) = first_unknown(&serde_json::Value::Object(top), &known) {
        return Err(format!(
            "not a metabench results file: unknown field `{extra}`"
        ));
    }
    Ok(parsed)
}

/// Whether a JSON value carries nothing: null, `""`, `[]` or `{}`.
fn is_empty(v: &serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// The first field of `input` that `known` lacks, as a path (`levels[0].ops[1].surprise`):
/// `known` is the same record as this metabench writes it back, so a field it does not
/// write is one it does not know. An empty field is no field (see [`is_empty`]).
fn first_unknown(input: &serde_json::Value, known: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match (input, known) {
        (Value::Object(input), Value::Object(known)) => {
            input.iter().find_map(|(key, v)| match known.get(key) {
                // A field written empty, or null, may be one this metabench leaves out
                // when empty (`skip_serializing_if`).
                None if is_empty(v) => None,
                None => Some(key.clone()),
                Some(k) => first_unknown(v, k).map(|p| {
                    if p.starts_with('[') {
                        format!("{key}{p}")
                    } else {
                        format!("{key}.{p}")
                    }
                }),
            })
        }
        (Value::Array(input), Value::Array(known)) => input
            .iter()
            .zip(known)
            .enumerate()
            .find_map(|(i, (v, k))| first_unknown(v, k).map(|p| format!("[{i}].{p}"))),
        _ => None,
    }
}

/// What a sweep was asked to do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepPlan {
    /// The `--conc` spec as given.
    pub conc: String,
    /// Levels in run order.
    pub levels: Vec<u32>,
    /// Workload name.
    pub workload: String,
    /// Phases: each a name and its operations with weights.
    pub phases: Vec<(String, Vec<(String, u32)>)>,
    /// Discarded warm-up per level and phase, seconds.
    pub warmup_s: f64,
    /// Timed window per level and phase, seconds.
    pub duration_s: f64,
    /// Whether all clients worked in one shared directory.
    pub shared_dir: bool,
    /// Workers per JuiceFS client (`--threads-per-client`): a level's `clients` are its
    /// workers, grouped into clients of this many (1 in files written before it existed).
    #[serde(default = "one_worker")]
    pub threads_per_client: u32,
    /// The `--p99-limit`, µs.
    pub p99_limit_us: Option<f64>,
    /// Whether the sweep stops at a plateau.
    pub until_plateau: bool,
    /// Whether sessions reproduced the Go client's caches.
    pub client_cache: bool,
    /// How long one call may take before it counts as a `timeout` error, seconds
    /// (`--op-timeout`; 0 in files written before it existed).
    #[serde(default)]
    pub op_timeout_s: f64,
    /// An open loop's `--rate` spec (levels are offered rates, `clients` the pool).
    #[serde(default)]
    pub rate: Option<String>,
    /// An open loop's arrival schedule: `constant` or `poisson`.
    #[serde(default)]
    pub arrivals: Option<String>,
}

/// One worker per client: what a plan without `threads_per_client` ran.
fn one_worker() -> u32 {
    1
}

/// Service time in an open loop: from each call's actual start (latency runs from its
/// intended start).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceTime {
    /// Mean, µs.
    pub mean_us: f64,
    /// Median, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// Slowest, µs.
    pub max_us: f64,
    /// The histogram (HdrHistogram V2, base64).
    pub histogram: String,
}

/// Figures of one second of a timed window, for significance tests between runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntervalSample {
    /// Calls completed in that second.
    pub count: u64,
    /// Calls that failed in that second (by when they ended): when an engine stalled or
    /// failed over, and for how long.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub errors: u64,
    /// Mean latency, µs.
    pub mean_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// Open loop only: the 99th percentile of service time in that second, µs (the
    /// fields above run from the intended start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_p99_us: Option<f64>,
}

/// Figures of one operation at one level (unknown fields are refused by
/// [`SweepResults::from_json`], as for [`OpResult`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelOp {
    /// Operation name.
    pub op: String,
    /// Phase the operation ran in.
    pub phase: String,
    /// Calls started in the timed window that succeeded (each counted when it finished,
    /// after the window's end too), and their latency.
    #[serde(flatten)]
    pub latency: Latency,
    /// Throughput: the calls counted over the real window ([`LevelOp::window_s`]).
    pub ops_per_s: f64,
    /// Round trips per call.
    pub round_trips_per_op: f64,
    /// Transaction retries after conflicts.
    pub retries: u64,
    /// Failed calls by error kind.
    pub errors: BTreeMap<String, u64>,
    /// Per-second samples of the window.
    pub intervals: Vec<IntervalSample>,
    /// Calls started in the window that were still in flight at its end: they are
    /// counted when they finish (bounded by the op timeout), so a stall is never dropped.
    #[serde(default)]
    pub in_flight_at_end: u64,
    /// The slowest failed call, µs: a `timeout` error's elapsed time, for one.
    #[serde(default)]
    pub failed_max_us: f64,
    /// The real window, seconds: from its start to its end or to the last in-flight
    /// call's answer, whichever is later (0 in files written before it existed).
    #[serde(default)]
    pub window_s: f64,
    /// Open loop only: service time, from each call's actual start. The latency fields
    /// above run from the intended start.
    #[serde(default)]
    pub service: Option<ServiceTime>,
}

/// The engine's null round trip (the floor under every operation), measured through the
/// same client path as the operations before the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Floor {
    /// What was sent: `PING`, `SELECT 1`, `get of an absent key`.
    pub request: String,
    /// Round trips measured.
    pub count: u64,
    /// Mean, µs.
    pub mean_us: f64,
    /// Median, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
}

/// The load generator's own state during a level: is the client the bottleneck?
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientCheck {
    /// CPU seconds metabench's process used in the timed windows.
    pub cpu_s: f64,
    /// Client CPU per completed call in the windows, µs (`cpu_s` / calls).
    #[serde(default)]
    pub cpu_us_per_op: f64,
    /// CPU used as a share of all cores over the windows (1.0 = every core busy).
    pub cpu_utilisation: f64,
    /// 99th percentile of the scheduling lag (how late a ready task starts), µs.
    pub lag_p99_us: f64,
    /// Largest scheduling lag, µs.
    pub lag_max_us: f64,
    /// Whether the generator, not the engine, limited this level.
    pub client_bound: bool,
    /// Why it was flagged.
    pub reason: Option<String>,
}

/// One concurrency level.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Level {
    /// Concurrent clients.
    pub clients: u32,
    /// Per-operation figures.
    pub ops: Vec<LevelOp>,
    /// The generator self-check.
    pub client: ClientCheck,
    /// The engine failed during this level: its figures cover only what was measured
    /// until then (see [`SweepResults::failure`]).
    #[serde(default)]
    pub partial: bool,
    /// What the engine said about itself during the level's windows (none for engines
    /// without counters: SQLite, memkv, TiKV).
    #[serde(default)]
    pub engine: Option<EngineCheck>,
    /// Open loop only: the offered rate, calls per second over all clients.
    #[serde(default)]
    pub offered_ops_per_s: Option<f64>,
    /// Open loop only: the rate achieved, calls started per second of the real window
    /// (the lowest of the level's phases).
    #[serde(default)]
    pub achieved_ops_per_s: Option<f64>,
    /// Open loop only: the share of the window the client pool was busy with calls and
    /// background work (the busiest phase); near 1, the pool is too small for the rate.
    #[serde(default)]
    pub pool_busy: Option<f64>,
    /// The clients' background work inside the windows, when the client profile runs it
    /// there (`mount`); none when it runs after them (`gobench`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<BackgroundWork>,
    /// Under MPI: each rank's part of the level (its clients, its self-check, and its own
    /// per-operation figures, whose histograms add up to the level's). Empty for a run
    /// of one process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<RankLevel>,
    /// When calls failed or none completed, and for how long ([`Level::find_disruptions`]
    /// at the level's end): a failover, a node restart or a stall, as a record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disruptions: Vec<Disruption>,
}

/// A run of seconds of one operation's window in which its calls failed or no call of its
/// phase completed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Disruption {
    /// The operation.
    pub op: String,
    /// Its phase.
    pub phase: String,
    /// The first second of the run (1-based, of the operation's window).
    pub from_s: usize,
    /// The last second of the run.
    pub to_s: usize,
    /// Calls that failed in those seconds.
    pub failed_calls: u64,
    /// Calls that completed in those seconds.
    pub completed_calls: u64,
    /// The highest per-second p99 in those seconds, µs (0 when none completed).
    pub max_p99_us: f64,
}

/// One MPI rank's part of a level.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankLevel {
    /// The rank.
    pub rank: u32,
    /// The host it ran on.
    pub host: String,
    /// How many of the level's clients it ran.
    pub clients: u32,
    /// Its self-check: its process's CPU and scheduling lag (a level is client-bound
    /// when any rank is).
    pub client: ClientCheck,
    /// Its own figures per operation and phase, as the level's are computed.
    pub ops: Vec<LevelOp>,
}

/// How a sweep ran under MPI (`mpirun -np N metabench sweep …`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MpiRun {
    /// How many ranks ran clients.
    pub ranks: u32,
    /// Each rank's host, by rank.
    pub hosts: Vec<String>,
    /// The spread of the ranks' wall clocks read right after a barrier, ms: an upper
    /// bound of the clock skew between hosts (plus the barrier's own exit jitter).
    pub clock_skew_ms: f64,
    /// Each rank's peak resident memory, bytes, by rank.
    pub peak_rss_bytes: Vec<Option<u64>>,
}

/// The background work of a level's clients inside its windows: dir-stat and counter
/// flushes every second, and freeing deleted files' data right after the calls that
/// deleted them. Timed apart from the calls, whose latency does not include it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackgroundWork {
    /// Passes that started in the windows (flushes and frees).
    pub runs: u64,
    /// Round trips they sent.
    pub round_trips: u64,
    /// Transaction retries among them.
    pub retries: u64,
    /// Client time they took, seconds, summed over clients.
    pub busy_s: f64,
    /// Passes that failed.
    pub errors: u64,
    /// The windows they ran in, seconds, summed over phases (per-second figures divide
    /// by this).
    pub window_s: f64,
}

impl BackgroundWork {
    /// The cells tables show of it: passes, round trips per second, client ms, failed.
    pub fn cells(&self) -> [String; 4] {
        [
            self.runs.to_string(),
            format!("{:.0}", self.round_trips_per_s()),
            format!("{:.1}", self.busy_s * 1000.0),
            self.errors.to_string(),
        ]
    }

    /// Round trips per second of window.
    pub fn round_trips_per_s(&self) -> f64 {
        if self.window_s > 0.0 {
            self.round_trips as f64 / self.window_s
        } else {
            0.0
        }
    }
}

/// The engine's own telemetry over a level's windows, and whether it was the bottleneck.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineCheck {
    /// Counter deltas over the level's windows, by the engine's own names (Redis `INFO`,
    /// `pg_stat_database`, `SHOW GLOBAL STATUS`, etcd `/metrics`).
    pub counters: BTreeMap<String, f64>,
    /// Gauges at the windows' ends (the highest across phases).
    pub gauges: BTreeMap<String, f64>,
    /// Whether the engine, by its own counters, limited this level.
    pub engine_bound: bool,
    /// Why it was flagged.
    pub reason: Option<String>,
    /// Why the telemetry could not be read (in full), if it could not.
    pub error: Option<String>,
}

/// Why a run ended because its engine failed: where, and what was left behind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunFailure {
    /// The engine kind, e.g. `redis`.
    pub engine: String,
    /// Clients of the level that failed.
    pub clients: u32,
    /// The phase that was running.
    pub phase: String,
    /// The operation (or `setup` / `cleanup` step) that failed.
    pub op: String,
    /// The engine's error, one line, no password.
    pub error: String,
    /// What could not be removed afterwards and how to remove it, if anything.
    pub left_behind: Option<String>,
}

impl RunFailure {
    /// The failure of `engine` at the level of `clients` clients, in `phase`, during
    /// `op` (an operation or a `setup` / `cleanup` step), with `error` on one line.
    pub fn at(
        engine: &str,
        clients: u32,
        phase: &str,
        op: &str,
        error: &impl std::fmt::Display,
    ) -> Self {
        Self {
            engine: engine.to_owned(),
            clients,
            phase: phase.to_owned(),
            op: op.to_owned(),
            error: error
                .to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            left_behind: None,
        }
    }

    /// One line naming the engine, level, phase and operation.
    pub fn line(&self) -> String {
        let phase = if self.phase == self.op {
            String::new()
        } else {
            format!(", phase {}", self.phase)
        };
        format!(
            "the {} engine failed at the {}-client level{phase}, during {}: {}",
            self.engine, self.clients, self.op, self.error
        )
    }
}

/// The results of `metabench sweep`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SweepResults {
    /// Kind `sweep`, who wrote it, when, on what.
    #[serde(flatten)]
    pub header: RunHeader,
    /// The plan.
    pub plan: SweepPlan,
    /// The engine's null round trip through the same client path, before the run.
    #[serde(default)]
    pub floor: Option<Floor>,
    /// Levels in run order.
    pub levels: Vec<Level>,
    /// Saturation analysis per operation.
    pub saturation: BTreeMap<String, crate::analysis::Saturation>,
    /// Why the sweep stopped before its last level, if it did.
    pub stopped_early: Option<String>,
    /// Peak resident memory of metabench during the run, bytes (Linux `VmHWM`).
    pub peak_rss_bytes: Option<u64>,
    /// Whether the run was stopped by Ctrl-C.
    pub interrupted: bool,
    /// Set when the engine failed mid-run: the levels before it are complete, the last
    /// one is partial.
    #[serde(default)]
    pub failure: Option<Box<RunFailure>>,
    /// Set when the sweep ran as the ranks of an MPI job: its ranks and hosts (each
    /// level's `ranks` holds their parts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpi: Option<Box<MpiRun>>,
}

/// Peak resident memory of this process so far (Linux `VmHWM`), in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

/// Runs of seconds (1-based, inclusive) of a window where `hit` holds.
fn spans(samples: &[IntervalSample], hit: impl Fn(&IntervalSample) -> bool) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (i, _) in samples.iter().enumerate().filter(|(_, s)| hit(s)) {
        match out.last_mut() {
            Some((_, end)) if *end == i => *end = i + 1,
            _ => out.push((i + 1, i + 1)),
        }
    }
    out
}

impl LevelOp {
    /// The seconds of the window (1-based, as runs of `(first, last)`) in which calls
    /// failed.
    pub fn failing_seconds(&self) -> Vec<(usize, usize)> {
        spans(&self.intervals, |s| s.errors > 0)
    }
}

impl Level {
    /// The seconds of the window (1-based runs) in which no call of any operation
    /// completed, after the first second in which one did: a stall or a failover.
    pub fn silent_seconds(&self) -> Vec<(usize, usize)> {
        silent_seconds_of(&self.ops.iter().collect::<Vec<_>>())
    }

    /// Each run of seconds of an operation's window in which its calls failed or no call
    /// of its phase completed, with what happened in it: when a failover or a stall came
    /// and how long calls failed.
    pub fn find_disruptions(&self) -> Vec<Disruption> {
        let mut out = Vec::new();
        for op in &self.ops {
            let phase: Vec<&LevelOp> = self.ops.iter().filter(|o| o.phase == op.phase).collect();
            let mut silent = vec![false; op.intervals.len()];
            for (a, b) in silent_seconds_of(&phase) {
                for s in silent.iter_mut().take(b).skip(a - 1) {
                    *s = true;
                }
            }
            // Calls still in flight at the window's end after the phase's last completion:
            // a stall that lasted to the end.
            if op.in_flight_at_end > 0 {
                let completed = phase_completions(&phase);
                if let Some(last) = completed.iter().rposition(|&n| n > 0) {
                    for s in silent.iter_mut().skip(last + 1) {
                        *s = true;
                    }
                }
            }
            let hit: Vec<IntervalSample> = op
                .intervals
                .iter()
                .zip(&silent)
                .map(|(s, quiet)| IntervalSample {
                    errors: u64::from(s.errors > 0 || *quiet),
                    ..Default::default()
                })
                .collect();
            for (from_s, to_s) in spans(&hit, |s| s.errors > 0) {
                let seconds = &op.intervals[from_s - 1..to_s];
                out.push(Disruption {
                    op: op.op.clone(),
                    phase: op.phase.clone(),
                    from_s,
                    to_s,
                    failed_calls: seconds.iter().map(|s| s.errors).sum(),
                    completed_calls: seconds.iter().map(|s| s.count).sum(),
                    max_p99_us: seconds.iter().map(|s| s.p99_us).fold(0.0, f64::max),
                });
            }
        }
        out
    }
}

/// The calls of `ops` (one window's operations) completed in each second.
fn phase_completions(ops: &[&LevelOp]) -> Vec<u64> {
    let seconds = ops.iter().map(|o| o.intervals.len()).max().unwrap_or(0);
    (0..seconds)
        .map(|i| {
            ops.iter()
                .filter_map(|o| o.intervals.get(i))
                .map(|s| s.count)
                .sum()
        })
        .collect()
}

/// The seconds (1-based runs) in which none of `ops` (one window's operations) completed
/// a call, after the first second in which one did.
fn silent_seconds_of(ops: &[&LevelOp]) -> Vec<(usize, usize)> {
    let completed: Vec<IntervalSample> = phase_completions(ops)
        .into_iter()
        .map(|count| IntervalSample {
            count,
            ..Default::default()
        })
        .collect();
    let first = completed.iter().position(|s| s.count > 0);
    let last = completed.iter().rposition(|s| s.count > 0);
    match (first, last) {
        (Some(a), Some(b)) => spans(&completed[..=b], |s| s.count == 0)
            .into_iter()
            .filter(|(start, _)| *start > a + 1)
            .collect(),
        _ => Vec::new(),
    }
}

impl SweepResults {
    /// Reads a results file, checking its kind and version.
    pub fn from_json(s: &str) -> Result<Self, String> {
        read_results(s, "sweep")
    }

    /// The operations measured, in first-seen order.
    pub fn op_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for l in &self.levels {
            for o in &l.ops {
                if !names.contains(&o.op) {
                    names.push(o.op.clone());
                }
            }
        }
        names
    }

    /// (clients, ops/s, p99) of one operation across levels.
    pub fn curve(&self, op: &str) -> Vec<crate::analysis::Point> {
        self.levels
            .iter()
            .filter_map(|l| {
                l.ops
                    .iter()
                    .find(|o| o.op == op)
                    .map(|o| crate::analysis::Point {
                        clients: l.clients,
                        ops_per_s: o.ops_per_s,
                        p99_us: o.latency.p99_us,
                    })
            })
            .collect()
    }

    /// Whether this was an open loop (levels are offered rates on one client pool).
    pub fn is_open_loop(&self) -> bool {
        self.plan.rate.is_some()
    }

    /// Recomputes the saturation analysis from the levels (closed loops only: an open
    /// loop's levels share one client count, and its limit is the highest rate achieved).
    pub fn analyse(&mut self) {
        if self.is_open_loop() {
            self.saturation.clear();
            return;
        }
        let limit = self.plan.p99_limit_us;
        self.saturation = self
            .op_names()
            .into_iter()
            .map(|op| {
                let s = crate::analysis::saturation(&self.curve(&op), limit);
                (op, s)
            })
            .collect();
    }
}

/// Either kind of results file.
#[derive(Debug, Clone, PartialEq)]
pub enum AnyResults {
    /// `metabench ops`.
    Ops(OpsResults),
    /// `metabench sweep`.
    Sweep(SweepResults),
}

impl AnyResults {
    /// Reads a results file of either kind.
    pub fn from_json(s: &str) -> Result<Self, String> {
        match kind_of(s)?.as_deref() {
            Some("ops") => OpsResults::from_json(s).map(AnyResults::Ops),
            Some("sweep") => SweepResults::from_json(s).map(AnyResults::Sweep),
            Some(other) => Err(format!(
                "results file holds a '{other}' run; expected 'ops' or 'sweep'"
            )),
            None => Err("not a metabench results file: no 'kind'".into()),
        }
    }

    /// `ops` or `sweep`.
    pub fn kind(&self) -> &'static str {
        match self {
            AnyResults::Ops(_) => "ops",
            AnyResults::Sweep(_) => "sweep",
        }
    }

    /// Who wrote the file, when, on which engine and machine.
    pub fn header(&self) -> &RunHeader {
        match self {
            AnyResults::Ops(r) => &r.header,
            AnyResults::Sweep(r) => &r.header,
        }
    }

    /// The engine measured.
    pub fn engine(&self) -> &EngineInfo {
        &self.header().engine
    }

    /// The machine.
    pub fn host(&self) -> &HostInfo {
        &self.header().host
    }

    /// Start time, metabench version and commit.
    pub fn provenance(&self) -> (&str, &str, Option<&str>) {
        let h = self.header();
        (&h.started_at, &h.metabench_version, h.git_commit.as_deref())
    }

    /// The engine's null round trip measured before the run, if it was.
    pub fn floor(&self) -> Option<&Floor> {
        match self {
            AnyResults::Ops(r) => r.floor.as_ref(),
            AnyResults::Sweep(r) => r.floor.as_ref(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_with_failures_and_without_completions_are_found() {
        let sample = |count, errors| IntervalSample {
            count,
            errors,
            ..Default::default()
        };
        let op = |op: &str, intervals| LevelOp {
            op: op.into(),
            intervals,
            ..Default::default()
        };
        // Ramp-up silence (second 1) is not a gap; seconds 4–5 are, and 3–4 failed.
        let create = op(
            "create",
            vec![
                sample(0, 0),
                sample(10, 0),
                sample(4, 2),
                sample(0, 1),
                sample(0, 0),
                sample(9, 0),
                sample(8, 3),
            ],
        );
        assert_eq!(create.failing_seconds(), [(3, 4), (7, 7)]);
        // A rare operation's empty seconds are no gap while another one completes then.
        let rename = op(
            "rename",
            vec![
                sample(0, 0),
                sample(1, 0),
                sample(0, 0),
                sample(0, 0),
                sample(0, 0),
                sample(0, 0),
                sample(1, 0),
            ],
        );
        let level = Level {
            ops: vec![create, rename],
            ..Default::default()
        };
        assert_eq!(level.silent_seconds(), [(4, 5)]);
        assert!(Level::default().silent_seconds().is_empty());
        // The record: create's failing and silent seconds 3–5 are one run, 7 another;
        // rename's run is the phase's silence alone.
        let found = level.find_disruptions();
        let runs: Vec<(&str, usize, usize, u64, u64)> = found
            .iter()
            .map(|d| {
                (
                    d.op.as_str(),
                    d.from_s,
                    d.to_s,
                    d.failed_calls,
                    d.completed_calls,
                )
            })
            .collect();
        assert_eq!(
            runs,
            [
                ("create", 3, 5, 3, 4),
                ("create", 7, 7, 3, 8),
                ("rename", 4, 5, 0, 0)
            ]
        );
        assert_eq!(found[1].max_p99_us, 0.0);
        // The highest p99 of the run's seconds; a stall to the window's end, with calls in
        // flight then, is a run too.
        let mut stalled = level.clone();
        stalled.ops[0].intervals[2].p99_us = 900.0;
        stalled.ops[0].intervals[4].p99_us = 1500.0;
        stalled.ops.truncate(1);
        stalled.ops[0]
            .intervals
            .extend([sample(0, 0), sample(0, 0)]);
        assert_eq!(stalled.find_disruptions().len(), 2);
        stalled.ops[0].in_flight_at_end = 2;
        let runs: Vec<(usize, usize, f64)> = stalled
            .find_disruptions()
            .iter()
            .map(|d| (d.from_s, d.to_s, d.max_p99_us))
            .collect();
        assert_eq!(runs, [(3, 5, 1500.0), (7, 9, 0.0)]);
        // Another phase's silence is not this one's.
        let mut other = level.clone();
        other.ops[1].phase = "later".into();
        other.ops[1].intervals = vec![sample(1, 0); 7];
        let runs: Vec<(usize, usize)> = other
            .find_disruptions()
            .iter()
            .map(|d| (d.from_s, d.to_s))
            .collect();
        assert_eq!(runs, [(3, 5), (7, 7)]);
    }

    fn ops_json() -> serde_json::Value {
        let run = OpsResults {
            header: RunHeader::new(
                "ops",
                "2026-11-24T00:00:00Z".into(),
                EngineInfo::default(),
                None,
            ),
            ..Default::default()
        };
        serde_json::to_value(&run).unwrap()
    }

    #[test]
    fn the_header_sits_at_the_top_level_and_reads_back() {
        let v = ops_json();
        assert_eq!(
            (&v["kind"], &v["schema_version"]),
            (&"ops".into(), &SCHEMA_VERSION.into())
        );
        assert!(v["host"]["cores"].as_u64().unwrap() >= 1);
        let back = OpsResults::from_json(&v.to_string()).unwrap();
        assert_eq!(back.header.started_at, "2026-11-24T00:00:00Z");
        assert_eq!(AnyResults::from_json(&v.to_string()).unwrap().kind(), "ops");
    }

    #[test]
    fn one_check_refuses_another_kind_a_newer_layout_and_unknown_fields() {
        let v = ops_json();
        let e = SweepResults::from_json(&v.to_string()).unwrap_err();
        assert_eq!(e, "results file holds a 'ops' run, not a 'sweep' run");
        let mut newer = v.clone();
        newer["schema_version"] = (SCHEMA_VERSION + 1).into();
        assert!(OpsResults::from_json(&newer.to_string())
            .unwrap_err()
            .contains("newer than this metabench understands"));
        let mut extra = v.clone();
        extra["surprise"] = 1.into();
        assert_eq!(
            OpsResults::from_json(&extra.to_string()).unwrap_err(),
            "not a metabench results file: unknown field `surprise`"
        );
        // Fields left out when empty may be written empty, by hand or by older files.
        let mut empty = v.clone();
        empty["engine"]["client_profile"] = "".into();
        empty["engine"]["fidelity_notes"] = serde_json::json!([]);
        OpsResults::from_json(&empty.to_string()).unwrap();
        let mut nested = v.clone();
        nested["host"]["surprise"] = 1.into();
        assert!(OpsResults::from_json(&nested.to_string())
            .unwrap_err()
            .contains("unknown field `surprise`"));
        // A record whose latency fields are flattened in refuses a stranger too, at any
        // depth, and a sweep's levels do.
        let mut op = v;
        let mkdir = OpResult {
            op: "mkdir".into(),
            latency: Latency {
                count: 3,
                p99_us: 9.0,
                ..Default::default()
            },
            ..Default::default()
        };
        op["results"] = serde_json::json!([mkdir]);
        assert_eq!(
            (&op["results"][0]["count"], &op["results"][0]["p99_us"]),
            (&3.into(), &9.0.into())
        );
        let back = OpsResults::from_json(&op.to_string()).unwrap();
        assert_eq!(
            (
                back.results[0].latency.count,
                back.results[0].latency.p99_us
            ),
            (3, 9.0)
        );
        op["results"][0]["p98_us"] = 1.into();
        assert_eq!(
            OpsResults::from_json(&op.to_string()).unwrap_err(),
            "not a metabench results file: unknown field `results[0].p98_us`"
        );
        let mut sweep = serde_json::to_value(SweepResults {
            header: RunHeader::new("sweep", String::new(), EngineInfo::default(), None),
            levels: vec![Level {
                ops: vec![LevelOp::default()],
                ..Default::default()
            }],
            ..Default::default()
        })
        .unwrap();
        SweepResults::from_json(&sweep.to_string()).unwrap();
        sweep["levels"][0]["ops"][0]["mean"] = 1.into();
        assert_eq!(
            SweepResults::from_json(&sweep.to_string()).unwrap_err(),
            "not a metabench results file: unknown field `levels[0].ops[0].mean`"
        );
    }
}
