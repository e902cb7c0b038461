//! The results of a sweep: its plan, each level with its operations, self-checks and
//! disruptions, and what ended it.

use super::header::RunHeader;
use super::latency::Latency;
use super::read::read_results;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    /// Whether the engine's own counters were left unread (`--no-engine-counters`): no
    /// engine check, the breakdown's engine part unknown.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub engine_counters_off: bool,
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

fn is_zero(n: &u64) -> bool {
    *n == 0
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
    /// Where the mean latency went: client, lock wait, wire, engine, client wait, retry
    /// waste and unexplained (none in files written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<super::Breakdown>,
    /// `listdir`: the entries a call listed (`.` and `..` counted), on average over the
    /// directories drawn so far; times `ops_per_s`, the entries listed per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries_per_call: Option<f64>,
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
    /// Median of the same round trip with the client thread polling instead of sleeping
    /// while it waits, µs; measured when the client threads sleep (not under
    /// `--busy-poll`). What `p50_us` has above it is the client CPU's wake-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polling_p50_us: Option<f64>,
    /// The client thread's own CPU per null round trip, µs (the breakdown counts it in
    /// the client part, not the wire); none where the kernel does not say, and in files
    /// written before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu_us: Option<f64>,
    /// The engine's own time per null round trip, µs, from its counters read around the
    /// floor (Redis's `PING` in `INFO commandstats`, PostgreSQL's `SELECT 1` by its
    /// backend's CPU or in `pg_stat_statements`, etcd's request handling): the breakdown leaves it out of the
    /// wire part, as it does the client's CPU. None where the engine keeps no such time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_us: Option<f64>,
}

impl Floor {
    /// The wire's share of one round trip, µs (the breakdown's wire part per round trip):
    /// the floor's mean less the client's own CPU for it (the client part) and the
    /// engine's own time on the null request (the engine part), each where known.
    pub fn wire_per_round_trip_us(&self) -> f64 {
        self.mean_us - self.client_cpu_us.unwrap_or(0.0) - self.engine_us.unwrap_or(0.0)
    }
}

/// The load generator's own state during a level: is the client the bottleneck?
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientCheck {
    /// CPU seconds metabench's process used in the timed windows, less that of client
    /// threads that ran none of the level's clients (one that busy-polls alone burns a
    /// core that is not the clients' cost).
    pub cpu_s: f64,
    /// Client CPU per completed call in the windows, µs (`cpu_s` / calls).
    #[serde(default)]
    pub cpu_us_per_op: f64,
    /// CPU used as a share of the cores the clients can use (one per client thread that
    /// runs any of them, at most the cores), over the windows (1.0 = every such core
    /// busy).
    pub cpu_utilisation: f64,
    /// Share of the same cores that an in-process engine's calls (SQLite's statements)
    /// took on the client threads, by their wall time, a wait on the disk included: the
    /// engine's work, counted in `cpu_s` and `cpu_utilisation` but left out of the
    /// client-bound check and of the scheduling lag. 0 for an engine reached over the
    /// network, and for memkv, whose time is the client's.
    #[serde(default)]
    pub engine_utilisation: f64,
    /// 99th percentile of the scheduling lag (how late a ready task, or a client thread
    /// woken by a reply, gets to run), µs.
    pub lag_p99_us: f64,
    /// Largest scheduling lag, µs.
    pub lag_max_us: f64,
    /// Mean scheduling lag, µs (0 in files written before it existed).
    #[serde(default)]
    pub lag_mean_us: f64,
    /// The share of the host's CPU time that its hypervisor gave to other guests during
    /// the windows (the `steal` column of `/proc/stat`, over all the host's CPUs; with
    /// several ranks, the most any rank's host lost). Stolen time delays every thread
    /// on the host, the clients and a local engine alike. None where the kernel keeps
    /// no such count, and in results from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_steal: Option<f64>,
    /// Whether the generator, not the engine, limited this level.
    pub client_bound: bool,
    /// Why it was flagged.
    pub reason: Option<String>,
}

impl ClientCheck {
    /// The steal share ([`ClientCheck::host_steal`]) from which a result says so: below
    /// it, a tick or two of a window.
    pub const STEAL_NOTICE: f64 = 0.05;

    /// The host's steal share when it reached [`ClientCheck::STEAL_NOTICE`].
    pub fn notable_steal(&self) -> Option<f64> {
        self.host_steal.filter(|s| *s >= Self::STEAL_NOTICE)
    }
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
    /// without counters: memkv, TiKV; SQLite's are counted by metabench).
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

/// The background work of a level's clients inside its windows: a registered session's
/// heartbeat every 12 s (the `mount` profile: `doRefreshSession`, its load on the engine
/// growing with the clients), dir-stat and counter flushes every second, and freeing
/// deleted files' data right after the calls that deleted them. Timed apart from the
/// calls, whose latency does not include it.
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
    /// Heartbeats of the clients' registered sessions sent in the passes (each client
    /// sends one every 12 s ± 10 %, so a window shorter than that may hold none).
    #[serde(default)]
    pub heartbeats: u64,
}

impl BackgroundWork {
    /// The headers of the columns [`BackgroundWork::cells`] fills.
    pub const COLUMNS: [&'static str; 5] = [
        "passes",
        "heartbeats",
        "round trips/s",
        "client ms",
        "failed",
    ];

    /// The cells tables show of it ([`BackgroundWork::COLUMNS`]): passes, heartbeats,
    /// round trips per second, client ms, failed.
    pub fn cells(&self) -> [String; 5] {
        [
            self.runs.to_string(),
            self.heartbeats.to_string(),
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
    /// `pg_stat_database`, `SHOW GLOBAL STATUS`, etcd `/metrics`). An in-process engine
    /// (SQLite) keeps none: its one figure is `in_process_call_share`, the share of the
    /// client threads' cores its calls took (`ClientCheck::engine_utilisation`).
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

    /// The complete level of a closed loop with the client count nearest `clients` (by
    /// ratio; the lower one on a tie), if any.
    pub fn level_near(&self, clients: u32) -> Option<&Level> {
        if self.is_open_loop() {
            return None;
        }
        let distance = |l: &&Level| {
            (f64::from(l.clients.max(1)) / f64::from(clients.max(1)))
                .ln()
                .abs()
        };
        self.levels
            .iter()
            .filter(|l| !l.partial && !l.ops.is_empty())
            .min_by(|a, b| {
                distance(a)
                    .total_cmp(&distance(b))
                    .then(a.clients.cmp(&b.clients))
            })
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
}
