//! The results file: versioned JSON, written by every run and read by reports.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod sweep;

pub use sweep::{
    peak_rss_bytes, BackgroundWork, ClientCheck, Disruption, EngineCheck, Floor, IntervalSample,
    Level, LevelOp, MpiRun, RankLevel, RunFailure, ServiceTime, SweepPlan, SweepResults,
};

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

/// CPUs as the kernel lists them (`0-3,6`), in the order given.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &cpu in cpus {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == cpu => *end = cpu,
            _ => runs.push((cpu, cpu)),
        }
    }
    let run = |&(first, last): &(usize, usize)| {
        if first == last {
            first.to_string()
        } else {
            format!("{first}-{last}")
        }
    };
    runs.iter().map(run).collect::<Vec<_>>().join(",")
}

/// The machine metabench ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostInfo {
    /// Host name.
    pub hostname: String,
    /// Logical CPUs.
    pub cores: usize,
    /// The threads metabench ran its clients on (`--client-threads`); 0 in results from
    /// before it was recorded, and where no client thread ran.
    #[serde(default)]
    pub client_threads: usize,
    /// Whether the client threads polled instead of sleeping while their clients waited
    /// (`--busy-poll`); false in results from before it was recorded.
    #[serde(default)]
    pub busy_poll: bool,
    /// The CPUs the client threads were bound to, in order; empty where the kernel placed
    /// them (and in results from before it was recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_cpus: Vec<usize>,
    /// The CPUs a server of the engine on this machine was bound to, when it was found;
    /// empty otherwise (a remote or in-process engine, a server not found).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engine_cpus: Vec<usize>,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// Operating system and kernel.
    pub os: String,
}

impl HostInfo {
    /// `hostname (N cores, T client threads[ on CPU L][ (the engine's server on CPU L)][,
    /// busy-polling], M GiB, os)`.
    pub fn summary(&self) -> String {
        let mut threads = match self.client_threads {
            0 => String::new(),
            1 => ", 1 client thread".to_owned(),
            n => format!(", {n} client threads"),
        };
        if !self.client_cpus.is_empty() {
            threads.push_str(&format!(" on CPU {}", cpu_list(&self.client_cpus)));
        }
        if !self.engine_cpus.is_empty() {
            threads.push_str(&format!(
                " (the engine's server on CPU {})",
                cpu_list(&self.engine_cpus)
            ));
        }
        if self.busy_poll {
            threads.push_str(", busy-polling");
        }
        format!(
            "{} ({} cores{threads}, {:.1} GiB, {})",
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
            client_threads: 0,
            busy_poll: false,
            client_cpus: Vec::new(),
            engine_cpus: Vec::new(),
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
    /// Untimed calls' time before each operation's timed ones, seconds (`--warmup`; 0
    /// when only the one untimed call was made, and in files written before it existed).
    #[serde(default)]
    pub warmup_s: f64,
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

/// How late the client thread of an `ops` run got to run while its operations did,
/// probed from another thread as a sweep probes its client threads in a window (a
/// stamped task every 10 ms, the kernel's wait figures for a thread found asleep). The
/// probe runs in both commands so that the two time their calls amid the same wake-ups:
/// run in `sweep` alone, it made one Redis client's round trips 5 to 7 % faster there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientLag {
    /// Lags recorded (a wait longer than the probe's interval counts once per interval
    /// it took, as in a sweep's windows).
    pub samples: u64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// Largest, µs.
    pub max_us: f64,
    /// Set when the p99 passed the limit at which a sweep level is flagged client-bound:
    /// the client thread, not the engine, held some calls up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
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
    /// The client thread's scheduling lag while the operations ran. None in results from
    /// before it was probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_lag: Option<ClientLag>,
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
    fn a_host_says_where_its_client_threads_ran_beside_the_engines_server() {
        let mut host = HostInfo {
            hostname: "vm".into(),
            cores: 4,
            client_threads: 3,
            memory_bytes: 1 << 30,
            os: "Linux".into(),
            ..Default::default()
        };
        assert_eq!(
            host.summary(),
            "vm (4 cores, 3 client threads, 1.0 GiB, Linux)"
        );
        // Placed by the kernel: nothing is written, and files from before read back.
        let json = serde_json::to_value(&host).unwrap();
        assert!(json.get("client_cpus").is_none() && json.get("engine_cpus").is_none());
        host.client_cpus = vec![1, 2, 3];
        host.engine_cpus = vec![0];
        assert_eq!(
            host.summary(),
            "vm (4 cores, 3 client threads on CPU 1-3 (the engine's server on CPU 0), 1.0 GiB, \
             Linux)"
        );
        let back: HostInfo = serde_json::from_value(serde_json::to_value(&host).unwrap()).unwrap();
        assert_eq!(back, host);
        assert_eq!(cpu_list(&[0, 2, 3, 4, 7]), "0,2-4,7");
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
    fn an_ops_runs_client_lag_reads_back_and_results_from_before_it_still_read() {
        let before = ops_json();
        assert!(before.get("client_lag").is_none(), "{before}");
        assert_eq!(
            OpsResults::from_json(&before.to_string())
                .unwrap()
                .client_lag,
            None
        );
        let mut run = OpsResults::from_json(&before.to_string()).unwrap();
        run.client_lag = Some(ClientLag {
            samples: 300,
            p99_us: 2500.0,
            max_us: 4100.0,
            reason: Some("scheduling lag p99 2.5 ms".into()),
        });
        let text = serde_json::to_string(&run).unwrap();
        assert_eq!(OpsResults::from_json(&text).unwrap(), run);
        let mut stranger = serde_json::to_value(&run).unwrap();
        stranger["client_lag"]["p50_us"] = 1.into();
        assert!(OpsResults::from_json(&stranger.to_string())
            .unwrap_err()
            .contains("unknown field `p50_us`"));
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
