//! What a sweep is asked to do, and what it gives back: its configuration, its limits and
//! thresholds, live figures for a progress display, and a level's window.

use crate::target::{Session, Target};
use crate::workload::Workload;
use hdrhistogram::Histogram;
use metabench_engine::SessionOptions;
use metabench_report::{Level, RunFailure};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Throughput growth below which a level counts as no growth (`--until-plateau`).
pub const PLATEAU_GROWTH: f64 = 0.05;
/// Levels without growth after which `--until-plateau` stops.
pub const PLATEAU_LEVELS: usize = 2;
/// CPU share of the cores its clients' threads can use above which the generator is
/// flagged as the bottleneck.
pub const CLIENT_CPU_LIMIT: f64 = 0.90;
/// Scheduling lag p99 above which the generator is flagged as the bottleneck.
pub const CLIENT_LAG_LIMIT: Duration = Duration::from_millis(2);
/// Consecutive failures after which a client gives up for the rest of a window.
pub(super) const MAX_CONSECUTIVE_ERRORS: u32 = 1000;
/// How long reading the engine's telemetry may take (a frozen engine must not hold a
/// window's bookkeeping).
pub(super) const TELEMETRY_TIMEOUT: Duration = Duration::from_secs(2);
/// How many clients of one process run their untimed setup or clean-up at once. Every
/// client makes and removes its own directory in the level's, so at 1,000 clients and
/// more, all of them at once would be a storm of transactions on one parent: on clients
/// that share a few threads, each transaction waits long for its thread between `WATCH`
/// and `EXEC`, conflicts with most of the others and gives up after 50 tries, a cost
/// that is metabench's own, not the engine's. Bounded, the steps run in turn (session
/// opening is bounded alike, 64 at a time).
pub(super) const UNTIMED_AT_ONCE: usize = 16;
/// Length of one interval sample.
pub(super) const INTERVAL: Duration = Duration::from_secs(1);

/// A directory handle of target `T`'s sessions.
pub(super) type DirOf<T> = <<T as Target>::Session as Session>::Dir;

/// In an open loop, the share of the offered rate a level must achieve to go on.
pub const ACHIEVED_SHARE: f64 = 0.95;
/// In an open loop, the share of the window the client pool may be busy before the pool
/// (not the engine) is what limits the level.
pub const POOL_BUSY_LIMIT: f64 = 0.90;

/// How an open loop spaces its arrivals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrivals {
    /// Evenly, as wrk2 and pgbench `-R` without jitter do.
    Constant,
    /// Exponential gaps (a Poisson process), as independent users arrive.
    Poisson,
}

impl Arrivals {
    /// The name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Self::Constant => "constant",
            Self::Poisson => "poisson",
        }
    }
}

impl std::str::FromStr for Arrivals {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "constant" => Ok(Self::Constant),
            "poisson" => Ok(Self::Poisson),
            _ => Err(format!(
                "'{s}' is not an arrival schedule; use constant or poisson"
            )),
        }
    }
}

/// An open loop: calls arrive on a schedule at an offered rate whatever the engine does,
/// and latency runs from each call's intended start (no coordinated omission).
#[derive(Debug, Clone)]
pub struct OpenLoop {
    /// Offered rates, calls per second over all clients, ascending: one level each.
    pub rates: Vec<u32>,
    /// How arrivals are spaced.
    pub arrivals: Arrivals,
    /// Stop after the first level whose p99 (from the intended start) exceeds this.
    pub p99_limit: Option<Duration>,
}

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    /// Concurrency levels, ascending; in an open loop, one: the fixed client pool.
    pub levels: Vec<u32>,
    /// Set for an open loop (rate levels) instead of a closed one (concurrency levels).
    pub open_loop: Option<OpenLoop>,
    /// What each client repeats.
    pub workload: Workload,
    /// Discarded warm-up per level and phase.
    pub warmup: Duration,
    /// Timed window per level and phase.
    pub duration: Duration,
    /// All clients in one directory instead of one each.
    pub shared_dir: bool,
    /// Stop when throughput stops growing.
    pub until_plateau: bool,
    /// Session behaviour (client caches, SkipDirMtime, SkipDirNlink).
    pub session: SessionOptions,
    /// Whether each client runs its background work between its calls while the
    /// windows run (the mount profile), timed apart; otherwise it runs after them.
    pub background_in_window: bool,
    /// How long one call may take: a call without an answer by then counts as a
    /// `timeout` error and its client continues on a fresh session.
    pub op_timeout: Duration,
    /// Workers per JuiceFS client (`--threads-per-client`): a level's workers are grouped
    /// in this order into clients of this many, each group sharing one client (its state,
    /// registered session and transaction locks) with a connection per worker. The
    /// client's first worker runs its background work. 1: every worker is a client.
    pub threads_per_client: u32,
    /// The volume's tree the read operations draw their targets from (`--tree`); `None`:
    /// they read what each client made.
    pub tree: Option<Arc<crate::population::Population>>,
    /// Whether the engine's own counters are read at each window's start and end (the
    /// engine check and the breakdown's engine part); `--no-engine-counters` leaves them.
    pub engine_counters: bool,
}

/// `--op-timeout`'s default: JuiceFS's own Redis read timeout, long enough that only a
/// stalled engine reaches it.
pub const DEFAULT_OP_TIMEOUT: Duration = Duration::from_secs(30);

/// Live figures for a progress display, updated by the running clients.
#[derive(Debug, Default)]
pub struct Live {
    /// Clients of the current level.
    pub clients: AtomicU32,
    /// Calls completed in the current timed window.
    pub completed: AtomicU64,
    /// Index of the current phase in the workload.
    pub phase: AtomicU32,
    /// Whether the current window is being measured (false during setup and warm-up).
    pub measuring: std::sync::atomic::AtomicBool,
}

/// The per-second histograms of one level, by operation, for HDR interval logs.
pub type IntervalHistograms = BTreeMap<String, Vec<Histogram<u64>>>;

/// What a sweep produced.
#[derive(Debug, Default)]
pub struct SweepOutcome {
    /// Completed levels.
    pub levels: Vec<Level>,
    /// Why it stopped before the last level, if it did.
    pub stopped_early: Option<String>,
    /// The engine's null round trip on the first client's session, before the first level.
    pub floor: Option<metabench_report::Floor>,
    /// Set when the engine failed mid-sweep: `levels` ends with the partial level.
    pub failure: Option<RunFailure>,
    /// Set when this rank gave up on the others (one stopped answering after a stop):
    /// the rank should end the job once it has written and cleaned up.
    pub team_lost: bool,
}

/// A level's window: when the clients were let go, when its measurement starts and ends.
#[derive(Clone, Copy)]
pub(super) struct Window {
    /// When the clients were let go (warm-up starts): an open loop's schedule starts here.
    pub(super) released: Instant,
    /// When the timed window starts (the warm-up ends).
    pub(super) measure_from: Instant,
    /// When the timed window ends.
    pub(super) end: Instant,
}

impl Window {
    /// The per-second sample a call that finished at `end` belongs to; a call that
    /// straddled the window's end counts in its last second.
    pub(super) fn interval_of(&self, end: Instant) -> usize {
        // In u64 nanoseconds (a window is far shorter than 584 years): u128 division is a
        // library call, and this runs for every call recorded.
        let nanos = |d: Duration| d.as_nanos() as u64;
        let step = nanos(INTERVAL);
        let last = nanos(self.end - self.measure_from).div_ceil(step).max(1) - 1;
        (nanos(end.saturating_duration_since(self.measure_from)) / step).min(last) as usize
    }
}
