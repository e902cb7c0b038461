//! The closed-loop sweep: at each concurrency level, N virtual clients — each its own
//! engine session, as N JuiceFS clients — repeat the workload's operations against their
//! own working set; a warm-up is discarded, then a timed window is measured.

use crate::catalog::{Op, OpState};
use crate::exec::{reopen, timed_call, ClientBackground, Exec};
use crate::ops::StopFlag;
use crate::stats::{histogram, us, BackgroundAcc, OpAcc, Recorder, WireAcc};
use crate::team::{agree, from_leader, gather_all, share_clients, Team, TeamError};
use crate::workload::{Phase, Workload};
use hdrhistogram::Histogram;
use metabench_engine::namespace::remove_tree;
use metabench_engine::{
    Ctx, Engine, Meta, MetaError, Result, SessionOptions, SessionStats, Telemetry,
};
use metabench_report::analysis::{plateaued, Point};
use metabench_report::Latency;
use metabench_report::{
    ClientCheck, EngineCheck, IntervalSample, Level, LevelOp, RankLevel, RunFailure, ServiceTime,
};
use metabench_schema::Ino;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{watch, Barrier};

/// Throughput growth below which a level counts as no growth (`--until-plateau`).
pub const PLATEAU_GROWTH: f64 = 0.05;
/// Levels without growth after which `--until-plateau` stops.
pub const PLATEAU_LEVELS: usize = 2;
/// CPU share of all cores above which the generator is flagged as the bottleneck.
pub const CLIENT_CPU_LIMIT: f64 = 0.90;
/// Scheduling lag p99 above which the generator is flagged as the bottleneck.
pub const CLIENT_LAG_LIMIT: Duration = Duration::from_millis(2);
/// Consecutive failures after which a client gives up for the rest of a window.
const MAX_CONSECUTIVE_ERRORS: u32 = 1000;
/// How long reading the engine's telemetry may take (a frozen engine must not hold a
/// window's bookkeeping).
const TELEMETRY_TIMEOUT: Duration = Duration::from_secs(2);
/// Length of one interval sample.
const INTERVAL: Duration = Duration::from_secs(1);

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

#[derive(Clone, Copy)]
struct Window {
    /// When the clients were let go (warm-up starts): an open loop's schedule starts here.
    released: Instant,
    measure_from: Instant,
    end: Instant,
}

impl Window {
    /// The per-second sample a call that finished at `end` belongs to; a call that
    /// straddled the window's end counts in its last second.
    fn interval_of(&self, end: Instant) -> usize {
        let last = (self.end - self.measure_from)
            .as_nanos()
            .div_ceil(INTERVAL.as_nanos())
            .max(1)
            - 1;
        ((end.saturating_duration_since(self.measure_from).as_nanos() / INTERVAL.as_nanos())
            .min(last)) as usize
    }
}

/// CPU time this process has used (user + system).
pub fn process_cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

struct ClientJob {
    index: usize,
    phase: Phase,
    dir: Ino,
    own_dir: Option<Vec<u8>>,
    tag: String,
    /// Where a fresh session comes from when a call leaves this one unusable.
    engine: Arc<dyn Engine>,
    session: SessionOptions,
    op_timeout: Duration,
    /// Whether background work runs between the calls (on a client's first worker).
    background: bool,
    /// Whether this worker shares its client with others: a broken session is replaced
    /// by a fresh connection of the same client, not by a new client.
    shares_client: bool,
    /// Open loop only: this client's share of the schedule.
    arrivals: Option<ClientArrivals>,
}

/// One client's share of an open loop's schedule: `rate / clients` calls per second,
/// staggered so the pool's arrivals interleave.
#[derive(Clone, Copy)]
struct ClientArrivals {
    mean_gap: Duration,
    offset: Duration,
    kind: Arrivals,
}

impl ClientArrivals {
    fn new(rate: u32, clients: usize, index: usize, kind: Arrivals) -> Self {
        let mean_gap = Duration::from_secs_f64(clients as f64 / rate as f64);
        let offset = match kind {
            Arrivals::Constant => mean_gap.mul_f64(index as f64 / clients as f64),
            Arrivals::Poisson => Duration::ZERO,
        };
        let mut me = Self {
            mean_gap,
            offset,
            kind,
        };
        if kind == Arrivals::Poisson {
            me.offset = me.next_gap();
        }
        me
    }

    fn next_gap(&self) -> Duration {
        match self.kind {
            Arrivals::Constant => self.mean_gap,
            // Inverse transform of an exponential; 1 - U lies in (0, 1].
            Arrivals::Poisson => self.mean_gap.mul_f64(-(1.0 - rand::random::<f64>()).ln()),
        }
    }
}

/// Why a client stopped before its window's end: the step (an operation's name, `setup`
/// or `cleanup`) and the engine's error.
struct ClientFailure {
    step: String,
    error: MetaError,
}

impl ClientFailure {
    fn new(step: impl Into<String>, error: MetaError) -> Self {
        Self {
            step: step.into(),
            error,
        }
    }
}

async fn run_client(
    mut meta: Box<dyn Meta>,
    job: ClientJob,
    barrier: Arc<Barrier>,
    mut start: watch::Receiver<Option<Window>>,
    recorder: Arc<Recorder>,
    live: Arc<Live>,
    stop: StopFlag,
) -> (Box<dyn Meta>, std::result::Result<(), ClientFailure>) {
    let outcome = client_body(
        &mut meta, &job, &barrier, &mut start, &recorder, &live, &stop,
    )
    .await;
    (meta, outcome)
}

async fn client_body(
    meta: &mut Box<dyn Meta>,
    job: &ClientJob,
    barrier: &Barrier,
    start: &mut watch::Receiver<Option<Window>>,
    recorder: &Recorder,
    live: &Live,
    stop: &StopFlag,
) -> std::result::Result<(), ClientFailure> {
    let ctx = Ctx::root();
    // Untimed setup: the client's directory and each operation's working set.
    let setup = async {
        let dir = match &job.own_dir {
            Some(name) => meta.mkdir(&ctx, job.dir, name, 0o755, 0).await?.0,
            None => job.dir,
        };
        let mut states = Vec::new();
        for &(op, _) in &job.phase.ops {
            let tag = if job.phase.ops.len() > 1 {
                format!("{}{}-", job.tag, op.name())
            } else {
                job.tag.clone()
            };
            states.push(OpState::setup(op, meta.as_mut(), dir, &tag).await?);
        }
        meta.flush().await?;
        Ok::<_, MetaError>(states)
    }
    .await;
    barrier.wait().await;
    let mut states = setup.map_err(|e| ClientFailure::new("setup", e))?;
    let window = match start.wait_for(|w| w.is_some()).await {
        Ok(w) => w.expect("checked by wait_for"),
        Err(_) => return Ok(()),
    };
    let total_weight: u32 = job.phase.ops.iter().map(|(_, w)| w).sum();
    let mut consecutive_errors = 0;
    let mut background = job
        .background
        .then(|| ClientBackground::starting(window.released));
    let mut next_arrival = job.arrivals.map(|a| window.released + a.offset);
    // Open loop: when this client's previous call would have been answered had every
    // call started on time or as soon as the one before it was answered.
    let mut ideal_free: Option<Instant> = None;
    loop {
        if stop.is_stopped() || Instant::now() >= window.end {
            break;
        }
        // Open loop: the call's intended start. A client that is behind issues at once,
        // and its latency still runs from the intended start.
        let intended = match (&mut next_arrival, &job.arrivals) {
            (Some(at), Some(a)) => {
                let this = *at;
                *at += a.next_gap();
                if this >= window.end {
                    break;
                }
                Some(this)
            }
            _ => None,
        };
        let k = if states.len() == 1 {
            0
        } else {
            let mut pick = rand::random_range(0..total_weight);
            let mut k = 0;
            for (i, (_, w)) in job.phase.ops.iter().enumerate() {
                if pick < *w {
                    k = i;
                    break;
                }
                pick -= w;
            }
            k
        };
        let op = job.phase.ops[k].0;
        let (outcome, t0, t1, cost) =
            match timed_call(&mut states[k], meta.as_mut(), job.op_timeout, intended).await {
                Ok(t) => (t.outcome, t.start, t.end, t.cost),
                Err(e) => {
                    let now = Instant::now();
                    (Err(e), now, now, SessionStats::default())
                }
            };
        // Which window a call belongs to: by its start, or in an open loop by its
        // intended start.
        let from = intended.unwrap_or(t0);
        // Open loop: the call's latency from its intended start is its service time plus
        // how long it would have queued behind this client's earlier calls, replayed
        // with their measured service times. So the engine's slowness (a stall, a long
        // call) delays the calls behind it, while the client's own timer (tokio wakes up
        // to a millisecond late) and its untimed preparation are not charged to it.
        let queued = intended.map(|at| {
            let start = ideal_free.map_or(at, |free| free.max(at));
            ideal_free = Some(start + (t1 - t0));
            start - at
        });
        if from >= window.end {
            // Prepared past the window's end: not a call of this window.
            break;
        }
        if from >= window.measure_from {
            // Started in the window: recorded whenever it finished, so a stall that
            // outlasts the window is never dropped.
            let interval = window.interval_of(t1);
            recorder.with(job.index, op, |acc| {
                acc.calls += 1;
                acc.round_trips += cost.round_trips;
                acc.retries += cost.retries;
                acc.busy += t1 - t0;
                acc.last_end = acc.last_end.max(Some(t1));
                if t1 > window.end {
                    acc.in_flight_at_end += 1;
                }
                match &outcome {
                    Ok(()) => acc.record(
                        (t1 - t0) + queued.unwrap_or_default(),
                        queued.map(|_| t1 - t0),
                        interval,
                    ),
                    Err(e) => acc.record_failure(e.kind(), t1 - t0, interval),
                }
            });
        }
        match outcome {
            Ok(()) => {
                consecutive_errors = 0;
                if from >= window.measure_from {
                    live.completed.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(e) => {
                if e.breaks_session() {
                    // A timeout left a request half-way, or the connection failed:
                    // continue on a fresh session.
                    replace_session(meta, job, &window, op.name(), &e).await?;
                }
                consecutive_errors += 1;
                if consecutive_errors >= MAX_CONSECUTIVE_ERRORS {
                    break;
                }
            }
        }
        // A mounted client's background work, between calls, timed apart from them.
        let Some(pass) = (match &mut background {
            Some(b) => b.run_due(meta.as_mut(), job.op_timeout).await,
            None => None,
        }) else {
            continue;
        };
        if pass.start >= window.measure_from && pass.start < window.end {
            recorder.background(job.index, pass.cost);
        }
        if let Err(e) = pass.outcome {
            tracing::warn!("client {}: background work failed: {e}", job.index);
            if e.breaks_session() {
                replace_session(meta, job, &window, "background", &e).await?;
                if let Some(b) = &mut background {
                    b.session_replaced();
                }
            }
        }
    }
    // Untimed: what background work is left, then the client's own directory (after a
    // stop, the run's namespace goes whole, sooner).
    let cleanup = async {
        meta.flush().await?;
        if let Some(name) = &job.own_dir {
            remove_tree(meta.as_mut(), job.dir, name).await?;
        }
        Ok::<_, MetaError>(())
    };
    unless_stopped(cleanup, stop)
        .await
        .unwrap_or(Ok(()))
        .map_err(|e| ClientFailure::new("cleanup", e))
}

/// Runs untimed bookkeeping (a cleanup) unless a stop comes first: after a stop, the
/// run's namespace goes whole, sooner, and `mpirun` gives its ranks one second.
async fn unless_stopped<T>(
    work: impl std::future::Future<Output = T>,
    stop: &StopFlag,
) -> Option<T> {
    let stopped = async {
        while !stop.is_stopped() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let done = tokio::select! {
        biased;
        () = stopped => None,
        done = work => Some(done),
    };
    // A stop also ends the sessions' work half-way: what failed then is no failure.
    done.filter(|_| !stop.is_stopped())
}

/// Replaces a client's session after `step` failed with `e` and left it unusable. An
/// engine that gives no fresh session until one op timeout after the window's end has
/// failed.
async fn replace_session(
    meta: &mut Box<dyn Meta>,
    job: &ClientJob,
    window: &Window,
    step: &str,
    e: &MetaError,
) -> std::result::Result<(), ClientFailure> {
    let give_up_at = window.end + job.op_timeout;
    let keep = job.shares_client.then(|| meta.client());
    reopen(
        meta,
        &*job.engine,
        &job.session,
        keep.as_ref(),
        job.op_timeout,
        give_up_at,
    )
    .await
    .map_err(|reopening| {
        ClientFailure::new(
            step,
            MetaError::Engine(format!(
                "{e}; no fresh session until {:?} after the window: {reopening}",
                job.op_timeout
            )),
        )
    })
}

/// Where session `index` runs ([`Exec::spawn`]'s index): with one worker per client,
/// client `index`'s thread; with several, each client's workers go round the threads
/// starting one further than the client before, so the clients' first workers (which
/// run the background work) do not all land on one thread.
fn thread_slot(index: usize, per_client: usize) -> usize {
    let per_client = per_client.max(1);
    index / per_client + index % per_client
}

/// Opens sessions until there are `n`, each on the client thread that will drive it.
/// Session `i` is a worker of client `i / per_client`: the client's first worker opens
/// it, and the others join it ([`Engine::worker`]) once that one is open.
async fn grow_sessions(
    exec: &Exec,
    engine: &Arc<dyn Engine>,
    opts: &SessionOptions,
    per_client: usize,
    sessions: &mut Vec<Box<dyn Meta>>,
    n: usize,
) -> Result<()> {
    let per_client = per_client.max(1);
    while sessions.len() < n {
        let batch = (n - sessions.len()).min(64);
        let first = sessions.len();
        let mut opened: BTreeMap<usize, Box<dyn Meta>> = BTreeMap::new();
        for opening_clients in [true, false] {
            let opening: Vec<_> = (first..first + batch)
                .filter(|i| (i % per_client == 0) == opening_clients)
                .map(|index| {
                    let engine = engine.clone();
                    let opts = opts.clone();
                    let lead = index - index % per_client;
                    let client = (!opening_clients).then(|| match opened.get(&lead) {
                        Some(m) => m.client(),
                        None => sessions[lead].client(),
                    });
                    let task = exec.spawn(thread_slot(index, per_client), async move {
                        match client {
                            None => engine.session(&opts).await,
                            Some(c) => engine.worker(&opts, &c).await,
                        }
                    });
                    (index, task)
                })
                .collect();
            let mut failed = None;
            for (index, task) in opening {
                match task.await {
                    Ok(Ok(meta)) if failed.is_none() => {
                        opened.insert(index, meta);
                    }
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => {
                        failed.get_or_insert(e);
                    }
                    Err(e) => {
                        failed
                            .get_or_insert(MetaError::Engine(format!("session task failed: {e}")));
                    }
                }
            }
            if let Some(e) = failed {
                return Err(e);
            }
        }
        // In client order, so session i stays on client i's thread.
        sessions.extend(opened.into_values());
    }
    Ok(())
}

fn level_op(op: Op, phase: &str, acc: &OpAcc, window: Duration) -> LevelOp {
    let mut r = LevelOp {
        op: op.name().to_owned(),
        phase: phase.to_owned(),
        errors: acc.errors.clone(),
        retries: acc.retries,
        ..Default::default()
    };
    if acc.calls > 0 {
        r.round_trips_per_op = acc.round_trips as f64 / acc.calls as f64;
    }
    r.in_flight_at_end = acc.in_flight_at_end;
    r.failed_max_us = us(acc.failed_max.as_nanos() as u64);
    r.window_s = window.as_secs_f64();
    if let Some(h) = &acc.hist {
        r.latency = Latency::of(h);
        r.ops_per_s = r.latency.count as f64 / window.as_secs_f64();
    }
    r.service = acc.service.as_ref().map(|h| {
        let s = Latency::of(h);
        ServiceTime {
            mean_us: s.mean_us,
            p50_us: s.p50_us,
            p99_us: s.p99_us,
            max_us: s.max_us,
            histogram: s.histogram.unwrap_or_default(),
        }
    });
    let seconds = acc.intervals.len().max(acc.error_intervals.len());
    let empty = histogram();
    r.intervals = (0..seconds)
        .map(|i| (i, acc.intervals.get(i).unwrap_or(&empty)))
        .map(|(i, h)| IntervalSample {
            count: h.len(),
            errors: acc.error_intervals.get(i).copied().unwrap_or(0),
            mean_us: if h.is_empty() { 0.0 } else { h.mean() / 1000.0 },
            p99_us: us(h.value_at_quantile(0.99)),
            service_p99_us: acc
                .service_intervals
                .get(i)
                .map(|s| us(s.value_at_quantile(0.99))),
        })
        .collect();
    r
}

/// Whether the engine still answers the first client's session (its null round trip,
/// within `timeout`), on that client's thread. Tells a connection limit (a finding) from
/// a failed engine when more sessions cannot be opened.
async fn engine_answers(exec: &Exec, sessions: &mut Vec<Box<dyn Meta>>, timeout: Duration) -> bool {
    if sessions.is_empty() {
        return false;
    }
    let mut meta = sessions.remove(0);
    let asked = exec
        .spawn(0, async move {
            let answered = tokio::time::timeout(timeout, meta.null_round_trip()).await;
            (meta, matches!(answered, Ok(Ok(_))))
        })
        .await;
    match asked {
        Ok((meta, answered)) => {
            sessions.insert(0, meta);
            answered
        }
        Err(_) => false,
    }
}

/// Why an open loop stops after `level`: the engine no longer keeps up with the offered
/// rate, or its p99 (from the intended start) passed the limit.
fn open_loop_stop(level: &Level, p99_limit: Option<Duration>) -> Option<String> {
    let (offered, achieved) = (level.offered_ops_per_s?, level.achieved_ops_per_s?);
    if achieved < ACHIEVED_SHARE * offered {
        return Some(format!(
            "achieved {achieved:.0} of {offered:.0} offered calls/s (below {:.0}%)",
            ACHIEVED_SHARE * 100.0
        ));
    }
    let limit = p99_limit?;
    let worst = level
        .ops
        .iter()
        .map(|o| o.latency.p99_us)
        .fold(0.0, f64::max);
    (worst > limit.as_secs_f64() * 1e6).then(|| {
        format!(
            "p99 {:.0} µs from the intended start passed --p99-limit {limit:?} at {offered:.0} calls/s",
            worst
        )
    })
}

/// The engine's telemetry now, within [`TELEMETRY_TIMEOUT`]; the reason on failure.
async fn read_telemetry(engine: &dyn Engine) -> std::result::Result<Telemetry, String> {
    match tokio::time::timeout(TELEMETRY_TIMEOUT, engine.telemetry()).await {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(e)) => Err(format!("its counters could not be read: {e}")),
        Err(_) => Err(format!(
            "its counters could not be read: no answer within {TELEMETRY_TIMEOUT:?}"
        )),
    }
}

/// The generator's self-check of one level from what the coordinator measured.
fn client_check(
    cpu: Duration,
    measured: Duration,
    cores: usize,
    lag: &Histogram<u64>,
    calls: u64,
) -> ClientCheck {
    let cpu_utilisation = cpu.as_secs_f64() / (measured.as_secs_f64() * cores as f64).max(1e-9);
    let lag_p99 = Duration::from_nanos(lag.value_at_quantile(0.99));
    let reason = if cpu_utilisation >= CLIENT_CPU_LIMIT {
        Some(format!(
            "metabench used {:.0}% of all cores (an embedded engine such as SQLite counts here too)",
            cpu_utilisation * 100.0
        ))
    } else if lag_p99 > CLIENT_LAG_LIMIT {
        Some(format!(
            "scheduling lag p99 {:.1} ms: tasks wait for a core (an in-process engine such as SQLite runs on the client threads and counts here too)",
            lag_p99.as_secs_f64() * 1000.0
        ))
    } else {
        None
    };
    ClientCheck {
        cpu_s: cpu.as_secs_f64(),
        cpu_us_per_op: if calls > 0 {
            cpu.as_secs_f64() * 1e6 / calls as f64
        } else {
            0.0
        },
        cpu_utilisation,
        lag_p99_us: us(lag.value_at_quantile(0.99)),
        lag_max_us: us(lag.max()),
        client_bound: reason.is_some(),
        reason,
    }
}

/// What a rank says once it has opened (or failed to open) its sessions for a level.
#[derive(Serialize, Deserialize)]
struct SessionsOpened {
    stopped: bool,
    /// Why its sessions could not all be opened, and whether the engine still answers.
    failed: Option<(String, bool)>,
}

/// Rank 0's word on how a level starts.
#[derive(Serialize, Deserialize)]
enum LevelStart {
    Go,
    Stop,
    /// The engine's connection limit: a finding, the sweep ends with what it measured.
    Limited(String),
    /// The engine failed while sessions were opened.
    Failed(String),
}

/// What a rank says once its level directory for a phase is made.
#[derive(Serialize, Deserialize)]
struct DirReady {
    stopped: bool,
    failure: Option<RunFailure>,
    /// `--shared-dir`: the one directory every rank's clients work in (made by rank 0).
    shared_dir: Option<Ino>,
}

/// Rank 0's word before a phase's clients start, or before its window opens.
#[derive(Serialize, Deserialize)]
struct PhaseGo {
    go: bool,
    failure: Option<RunFailure>,
    shared_dir: Option<Ino>,
}

/// One rank's phase, as it sends it to rank 0 to be merged.
#[derive(Serialize, Deserialize)]
struct PhaseReport {
    host: String,
    clients: u32,
    /// The cores this rank may use, and the cores its host has.
    cores: usize,
    host_cores: usize,
    ops: Vec<(String, WireAcc)>,
    background: BackgroundAcc,
    cpu: Duration,
    lag: String,
    failure: Option<RunFailure>,
    stopped: bool,
}

/// Rank 0's word after a phase: the failure that ends the sweep, or a stop.
#[derive(Serialize, Deserialize)]
struct PhaseEnd {
    failure: Option<RunFailure>,
    stop: bool,
}

/// What rank 0 keeps of one rank over a level's phases.
struct RankPart {
    host: String,
    clients: u32,
    cores: usize,
    host_cores: usize,
    cpu: Duration,
    lag: Histogram<u64>,
    calls: u64,
    ops: Vec<LevelOp>,
}

impl RankPart {
    /// An empty part for the rank that sent `report`, its first of the level.
    fn new(report: &PhaseReport) -> Self {
        Self {
            host: report.host.clone(),
            clients: report.clients,
            cores: report.cores,
            host_cores: report.host_cores,
            cpu: Duration::ZERO,
            lag: histogram(),
            calls: 0,
            ops: Vec::new(),
        }
    }
}

/// The cores online on this host, whatever this process may use.
fn online_cores() -> usize {
    // SAFETY: sysconf reads a system constant.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

/// Ranks on one host share its cores: each may have stayed under the client-bound limit
/// while together they used the host's cores up. Says so of the first host where they
/// did. A host's capacity is the cores its ranks may use, at most the cores it has.
fn crowded_host(parts: &[RankPart], measured: Duration) -> Option<String> {
    /// The ranks with clients on one host, their CPU and their cores.
    #[derive(Default)]
    struct Host {
        ranks: Vec<usize>,
        cpu: Duration,
        usable_cores: usize,
        online_cores: usize,
    }
    let mut hosts: BTreeMap<&str, Host> = BTreeMap::new();
    for (rank, part) in parts.iter().enumerate().filter(|(_, p)| p.clients > 0) {
        let host = hosts.entry(part.host.as_str()).or_default();
        host.ranks.push(rank);
        host.cpu += part.cpu;
        host.usable_cores += part.cores;
        host.online_cores = host.online_cores.max(part.host_cores);
    }
    hosts
        .into_iter()
        .filter(|(_, h)| h.ranks.len() > 1)
        .find_map(|(host, Host { ranks, cpu, usable_cores, online_cores })| {
            let capacity = usable_cores.min(online_cores).max(1);
            let used = cpu.as_secs_f64() / (measured.as_secs_f64() * capacity as f64).max(1e-9);
            (used >= CLIENT_CPU_LIMIT).then(|| {
                let ranks: Vec<String> = ranks.iter().map(ToString::to_string).collect();
                format!(
                    "ranks {} on {host} together used {:.0}% of its {capacity} cores: run fewer ranks per host, or more hosts",
                    ranks.join(", "),
                    used * 100.0
                )
            })
        })
}

/// The level's self-check from its ranks' (which made `calls` calls in all): its own
/// when it ran alone; else the CPU and calls summed, the worst utilisation and lag, and
/// client-bound when any rank was.
fn level_client_check(ranks: &[RankLevel], calls: u64) -> ClientCheck {
    if let [only] = ranks {
        return only.client.clone();
    }
    let cpu_s: f64 = ranks.iter().map(|r| r.client.cpu_s).sum();
    let calls = calls as f64;
    let worst = |f: fn(&ClientCheck) -> f64| ranks.iter().map(|r| f(&r.client)).fold(0.0, f64::max);
    let bound = ranks.iter().find(|r| r.client.client_bound);
    ClientCheck {
        cpu_s,
        cpu_us_per_op: if calls > 0.0 {
            cpu_s * 1e6 / calls
        } else {
            0.0
        },
        cpu_utilisation: worst(|c| c.cpu_utilisation),
        lag_p99_us: worst(|c| c.lag_p99_us),
        lag_max_us: worst(|c| c.lag_max_us),
        client_bound: bound.is_some(),
        reason: bound.map(|r| {
            format!(
                "rank {} on {}: {}",
                r.rank,
                r.host,
                r.client.reason.as_deref().unwrap_or("client-bound")
            )
        }),
    }
}

/// Measures the floor on client 0's thread and session (the first of `sessions`), once.
async fn measure_floor_on(
    exec: &Exec,
    sessions: &mut Vec<Box<dyn Meta>>,
    outcome: &mut SweepOutcome,
) -> Result<()> {
    if outcome.floor.is_some() {
        return Ok(());
    }
    let mut meta = sessions.remove(0);
    let measured = exec
        .spawn(0, async move {
            let floor = crate::floor::measure_floor(meta.as_mut()).await;
            (meta, floor)
        })
        .await
        .map_err(|e| MetaError::Engine(format!("client task failed: {e}")))?;
    sessions.insert(0, measured.0);
    outcome.floor = measured.1?;
    Ok(())
}

/// Sleeps until `end`, or until `stop` is set.
async fn wait_until(end: Instant, stop: &StopFlag) {
    while !stop.is_stopped() {
        let now = Instant::now();
        if now >= end {
            return;
        }
        tokio::time::sleep((end - now).min(Duration::from_millis(20))).await;
    }
}

/// Runs the sweep below directory `base` (the run's namespace), its clients on `exec`'s
/// threads. `on_level` hears each finished level with its per-second histograms. When
/// `stop` is set, the window in progress ends at once, its level is dropped and the
/// completed levels are returned; the level's directories are left to the namespace.
///
/// Run by every rank of `team`: each level's clients are spread over the ranks, which
/// start each window together. Rank 0 merges the ranks' histograms exactly, decides
/// when the sweep ends, and alone returns levels (the other ranks return none). A rank
/// that stops answering ends the sweep with the levels merged so far.
///
/// A failed engine is a result, not an error: the sweep ends with the levels measured so
/// far, the partial level last, and [`SweepOutcome::failure`] naming the level, phase and
/// operation. `Err` is left for failures before the first level.
#[allow(clippy::too_many_arguments)]
pub async fn run_sweep(
    exec: &Exec,
    engine: Arc<dyn Engine>,
    base: Ino,
    config: &SweepConfig,
    stop: &StopFlag,
    live: Arc<Live>,
    team: &dyn Team,
    mut on_level: impl FnMut(&Level, &IntervalHistograms),
) -> Result<SweepOutcome> {
    let mut outcome = SweepOutcome::default();
    match sweep_levels(
        exec,
        engine,
        base,
        config,
        stop,
        live,
        team,
        &mut outcome,
        &mut on_level,
    )
    .await
    {
        Ok(()) => Ok(outcome),
        Err(Ended::Engine(e)) => Err(e),
        Err(Ended::Team(e)) => {
            outcome.stopped_early = Some(format!("the MPI job stopped: {e}"));
            outcome.team_lost = true;
            Ok(outcome)
        }
    }
}

/// Why the sweep's levels ended before their plan.
enum Ended {
    /// The engine failed before the first level.
    Engine(MetaError),
    /// A rank stopped answering.
    Team(TeamError),
}

impl From<TeamError> for Ended {
    fn from(e: TeamError) -> Self {
        Self::Team(e)
    }
}

/// The levels of [`run_sweep`], adding each to `outcome`; `Err` when a rank stopped
/// answering, or (rank 0) when the engine failed before the first level.
#[allow(clippy::too_many_arguments)]
async fn sweep_levels(
    exec: &Exec,
    engine: Arc<dyn Engine>,
    base: Ino,
    config: &SweepConfig,
    stop: &StopFlag,
    live: Arc<Live>,
    team: &dyn Team,
    outcome: &mut SweepOutcome,
    on_level: &mut impl FnMut(&Level, &IntervalHistograms),
) -> std::result::Result<(), Ended> {
    let mut sessions: Vec<Box<dyn Meta>> = Vec::new();
    let mut totals: Vec<Point> = Vec::new();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (rank, ranks) = (team.rank(), team.size());
    let leader = rank == 0;
    let failure_at = |clients: u32, phase: &str, step: &str, e: &dyn std::fmt::Display| {
        RunFailure::at(engine.kind().name(), clients, phase, step, &e.to_string())
    };
    // A closed loop's levels are its concurrencies; an open loop's, its offered rates
    // with the one client pool.
    let steps: Vec<(u32, Option<u32>)> = match &config.open_loop {
        None => config.levels.iter().map(|&c| (c, None)).collect(),
        Some(open) => {
            let pool = config.levels.first().copied().unwrap_or(1);
            open.rates.iter().map(|&r| (pool, Some(r))).collect()
        }
    };
    let arrivals = config.open_loop.as_ref().map(|o| o.arrivals);
    for (level_index, (clients, rate)) in steps.into_iter().enumerate() {
        // This rank's share of the level: `n` clients, the first numbered `first`.
        let (n, first) = share_clients(clients, config.threads_per_client, rank, ranks);
        let n = n as usize;
        let opened = if stop.is_stopped() {
            Ok(())
        } else {
            let per_client = config.threads_per_client as usize;
            grow_sessions(exec, &engine, &config.session, per_client, &mut sessions, n).await
        };
        let mut own_error = None;
        let mut failed = match opened {
            Ok(()) => None,
            Err(e) => {
                let answers = engine_answers(exec, &mut sessions, config.op_timeout).await;
                let said = (e.to_string(), answers);
                own_error = Some(e);
                Some(said)
            }
        };
        if leader && failed.is_none() && !stop.is_stopped() && outcome.levels.is_empty() {
            // The floor, before the first level, on client 0's thread and session, as
            // its calls will be timed. A failure is the level's, decided for all ranks.
            if let Err(e) = measure_floor_on(exec, &mut sessions, outcome).await {
                failed = Some((format!("measuring the floor: {e}"), false));
                own_error = Some(e);
            }
        }
        let said = SessionsOpened {
            stopped: stop.is_stopped(),
            failed,
        };
        let start = agree(team, &said, stop, |all| {
            if all.iter().any(|s| s.stopped) {
                return LevelStart::Stop;
            }
            match all.into_iter().find_map(|s| s.failed) {
                None => LevelStart::Go,
                Some((e, true)) => {
                    LevelStart::Limited(format!("could not open {clients} sessions: {e}"))
                }
                Some((e, false)) => LevelStart::Failed(e),
            }
        })
        .await?;
        match start {
            LevelStart::Go => {}
            LevelStart::Stop => break,
            LevelStart::Limited(why) => {
                outcome.stopped_early = Some(why);
                break;
            }
            LevelStart::Failed(e) => {
                // Before the first level (which only rank 0 keeps), every rank fails alike.
                if level_index == 0 {
                    return Err(Ended::Engine(own_error.unwrap_or(MetaError::Engine(e))));
                }
                if leader {
                    outcome.failure = Some(failure_at(clients, "", "opening sessions", &e));
                }
                break;
            }
        }
        live.clients.store(clients, Ordering::Relaxed);
        let mut level = Level {
            clients,
            offered_ops_per_s: rate.map(f64::from),
            ..Default::default()
        };
        let (mut achieved, mut pool_busy) = (f64::INFINITY, 0.0f64);
        let (mut telemetry, mut telemetry_error) = (Telemetry::default(), None);
        let mut raw_intervals = IntervalHistograms::new();
        let mut measured = Duration::ZERO;
        let mut parts: Vec<RankPart> = Vec::new();
        let mut failure = None;
        let mut stopped = false;
        for (phase_index, phase) in config.workload.phases.iter().enumerate() {
            live.phase.store(phase_index as u32, Ordering::Relaxed);
            live.measuring.store(false, Ordering::Relaxed);
            live.completed.store(0, Ordering::Relaxed);
            let ctx = Ctx::root();
            let mut level_dir_name = match rate {
                Some(rate) => format!("c{clients}-r{rate}-{}", phase.name),
                None => format!("c{clients}-{}", phase.name),
            };
            // Each rank works in a directory of its own, unless all clients share one.
            if ranks > 1 && !config.shared_dir {
                level_dir_name += &format!("-rank{rank}");
            }
            let level_dir_name = level_dir_name.into_bytes();
            let makes_dir = if config.shared_dir { leader } else { n > 0 };
            let mut ready = DirReady {
                stopped: stop.is_stopped(),
                failure: None,
                shared_dir: None,
            };
            let mut own_dir = None;
            if makes_dir && !ready.stopped {
                match sessions[0]
                    .mkdir(&ctx, base, &level_dir_name, 0o755, 0)
                    .await
                {
                    Ok((dir, _)) => {
                        own_dir = Some(dir);
                        ready.shared_dir = own_dir.filter(|_| config.shared_dir);
                    }
                    Err(e) => ready.failure = Some(failure_at(clients, &phase.name, "setup", &e)),
                }
            }
            let go = agree(team, &ready, stop, |all| PhaseGo {
                go: all.iter().all(|r| !r.stopped && r.failure.is_none()),
                shared_dir: all[0].shared_dir,
                failure: all.into_iter().find_map(|r| r.failure),
            })
            .await?;
            if !go.go {
                // What was made is in the namespace, removed with it.
                failure = go.failure;
                stopped = failure.is_none();
                break;
            }
            let level_dir = go.shared_dir.or(own_dir).unwrap_or(base);
            let barrier = Arc::new(Barrier::new(n + 1));
            let (start_tx, start_rx) = watch::channel(None);
            let recorder = Arc::new(Recorder::new((cores * 2).max(2)));
            let mut tasks = Vec::with_capacity(n);
            for (index, meta) in sessions.drain(..n).enumerate() {
                // Names and the open loop's schedule follow the client's level-wide number.
                let global = first as usize + index;
                let job = ClientJob {
                    index,
                    phase: phase.clone(),
                    dir: level_dir,
                    own_dir: (!config.shared_dir).then(|| format!("c{global}").into_bytes()),
                    tag: if config.shared_dir {
                        format!("c{global}-")
                    } else {
                        String::new()
                    },
                    engine: engine.clone(),
                    session: config.session.clone(),
                    op_timeout: config.op_timeout,
                    background: config.background_in_window
                        && index % config.threads_per_client.max(1) as usize == 0,
                    shares_client: config.threads_per_client > 1,
                    arrivals: rate.zip(arrivals).map(|(rate, kind)| {
                        ClientArrivals::new(rate, clients as usize, global, kind)
                    }),
                };
                tasks.push(exec.spawn(
                    thread_slot(index, config.threads_per_client as usize),
                    run_client(
                        meta,
                        job,
                        barrier.clone(),
                        start_rx.clone(),
                        recorder.clone(),
                        live.clone(),
                        stop.clone(),
                    ),
                ));
            }
            barrier.wait().await;
            let settled = if leader {
                engine
                    .settle()
                    .await
                    .err()
                    .map(|e| failure_at(clients, &phase.name, "setup", &e))
            } else {
                None
            };
            let ready = DirReady {
                stopped: stop.is_stopped(),
                failure: settled,
                shared_dir: None,
            };
            let release = agree(team, &ready, stop, |all| PhaseGo {
                go: all.iter().all(|r| !r.stopped && r.failure.is_none()),
                shared_dir: None,
                failure: all.into_iter().find_map(|r| r.failure),
            });
            let release = match release.await {
                Ok(r) => r,
                Err(e) => {
                    drop(start_tx);
                    return Err(e.into());
                }
            };
            if !release.go {
                // No window: the clients return at once with their sessions.
                drop(start_tx);
                for t in tasks {
                    if let Ok((meta, _)) = t.await {
                        sessions.push(meta);
                    }
                }
                failure = release.failure;
                stopped = failure.is_none();
                break;
            }
            let now = Instant::now();
            let window = Window {
                released: now,
                measure_from: now + config.warmup,
                end: now + config.warmup + config.duration,
            };
            let _ = start_tx.send(Some(window));
            // The window is owned by this task, on the coordinator's runtime: the clients
            // run on other threads and cannot keep it from reading CPU time and lag.
            wait_until(window.measure_from, stop).await;
            live.measuring.store(true, Ordering::Relaxed);
            let cpu_start = process_cpu_time();
            let probe = exec.lag_probe(n.max(1));
            let engine_start = if leader {
                Some(read_telemetry(engine.as_ref()).await)
            } else {
                None
            };
            wait_until(window.end, stop).await;
            let cpu = process_cpu_time().saturating_sub(cpu_start);
            let lag = probe.finish();
            if let Some(engine_start) = engine_start {
                match (engine_start, read_telemetry(engine.as_ref()).await) {
                    (Ok(start), Ok(end)) => telemetry.add(&end.since(&start)),
                    (Err(e), _) | (_, Err(e)) => {
                        telemetry_error.get_or_insert(e);
                    }
                }
            }
            live.measuring.store(false, Ordering::Relaxed);
            measured += config.duration;
            // Clients finish their calls in flight (each bounded by the op timeout).
            let mut first_failure = None;
            let mut returned = Vec::with_capacity(n);
            for t in tasks {
                // A client task that failed lost its session; the level fails on every
                // rank alike, through the reports.
                match t.await {
                    Ok((meta, result)) => {
                        returned.push(meta);
                        if let Err(f) = result {
                            first_failure.get_or_insert(f);
                        }
                    }
                    Err(e) => {
                        first_failure.get_or_insert(ClientFailure::new(
                            "client task",
                            MetaError::Engine(format!("client task failed: {e}")),
                        ));
                    }
                }
            }
            returned.append(&mut sessions);
            sessions = returned;
            if first_failure.is_none() && own_dir.is_some() && !config.shared_dir {
                let removed = remove_tree(sessions[0].as_mut(), base, &level_dir_name);
                if let Some(Err(e)) = unless_stopped(removed, stop).await {
                    first_failure = Some(ClientFailure::new("cleanup", e));
                }
            }
            let recorder =
                Arc::try_unwrap(recorder).unwrap_or_else(|_| unreachable!("clients finished"));
            let (merged, background) = recorder.merged();
            let report = PhaseReport {
                host: team.host().to_owned(),
                clients: n as u32,
                cores,
                host_cores: online_cores(),
                ops: merged
                    .iter()
                    .map(|(op, acc)| (op.name().to_owned(), acc.to_wire(window.measure_from)))
                    .collect(),
                background,
                cpu,
                lag: metabench_report::histogram::encode(&lag),
                failure: first_failure.map(|f| failure_at(clients, &phase.name, &f.step, &f.error)),
                stopped: stop.is_stopped(),
            };
            drop(merged);
            let reports = gather_all(team, &report, stop).await?;
            let mut end = PhaseEnd {
                failure: None,
                stop: false,
            };
            if let Some(reports) = reports {
                end.stop = reports.iter().any(|r| r.stopped);
                end.failure = reports.iter().find_map(|r| r.failure.clone());
                if end.failure.is_none() && config.shared_dir {
                    // Every rank's clients are done with the shared directory.
                    if let Err(e) = remove_tree(sessions[0].as_mut(), base, &level_dir_name).await {
                        end.failure = Some(failure_at(clients, &phase.name, "cleanup", &e));
                    }
                }
                let merged = if end.stop && end.failure.is_none() {
                    None
                } else {
                    match merge_reports(reports, &window, &mut parts, &phase.name) {
                        Ok(merged) => Some(merged),
                        Err(e) => {
                            // Told to every rank, like an engine failure.
                            end.failure.get_or_insert_with(|| {
                                failure_at(clients, &phase.name, "merging the ranks' results", &e)
                            });
                            None
                        }
                    }
                };
                if let Some(merged) = merged {
                    let real_window = merged.real_window;
                    let phase_calls: u64 = merged.ops.values().map(|acc| acc.calls).sum();
                    achieved = achieved.min(phase_calls as f64 / real_window.as_secs_f64());
                    // The clients' background work keeps them busy too.
                    let busy: Duration = merged.ops.values().map(|acc| acc.busy).sum::<Duration>()
                        + merged.background.busy;
                    pool_busy = pool_busy
                        .max(busy.as_secs_f64() / (config.duration.as_secs_f64() * clients as f64));
                    if config.background_in_window {
                        let b = level.background.get_or_insert_with(Default::default);
                        b.runs += merged.background.runs;
                        b.round_trips += merged.background.round_trips;
                        b.retries += merged.background.retries;
                        b.busy_s += merged.background.busy.as_secs_f64();
                        b.errors += merged.background.errors;
                        b.window_s += real_window.as_secs_f64();
                    }
                    for (op, acc) in merged.ops {
                        level.ops.push(level_op(op, &phase.name, &acc, real_window));
                        raw_intervals.insert(op.name().to_owned(), acc.intervals);
                    }
                }
            }
            let end = from_leader(team, leader.then_some(&end), stop).await?;
            if let Some(f) = end.failure {
                failure = Some(f);
                break;
            }
            if end.stop {
                stopped = true;
                break;
            }
        }
        if failure.is_none() && stopped {
            break;
        }
        let mut go_on = false;
        if leader {
            let calls: u64 = parts.iter().map(|p| p.calls).sum();
            let crowded = crowded_host(&parts, measured);
            level.ranks = parts
                .into_iter()
                .enumerate()
                .map(|(r, part)| RankLevel {
                    rank: r as u32,
                    client: client_check(part.cpu, measured, part.cores, &part.lag, part.calls),
                    host: part.host,
                    clients: part.clients,
                    ops: part.ops,
                })
                .collect();
            level.client = level_client_check(&level.ranks, calls);
            if let (false, Some(reason)) = (level.client.client_bound, crowded) {
                level.client.client_bound = true;
                level.client.reason = Some(reason);
            }
            if ranks == 1 {
                // A run of one process: its level says it all.
                level.ranks.clear();
            }
            go_on = finish_level(
                &mut level,
                LevelFigures {
                    rate,
                    achieved,
                    pool_busy,
                    telemetry,
                    telemetry_error,
                    measured,
                },
                engine.as_ref(),
                config,
                failure,
                &raw_intervals,
                &mut totals,
                outcome,
                on_level,
            );
        }
        if !from_leader(team, leader.then_some(&go_on), stop).await? {
            break;
        }
    }
    Ok(())
}

/// What rank 0 made of one phase's reports: the accumulators merged over every rank.
struct MergedPhase {
    ops: BTreeMap<Op, OpAcc>,
    background: BackgroundAcc,
    /// The measured window, stretched to the end of the last call in flight at its end
    /// on any rank: those calls were counted, so is the time they took.
    real_window: Duration,
}

/// Merges the ranks' phase reports (exactly: histograms are added), keeping each rank's
/// own figures and self-check inputs in `parts`. Each rank's figures are over the same
/// window as the level's, so that the ranks' ops/s add up to the level's.
fn merge_reports(
    reports: Vec<PhaseReport>,
    window: &Window,
    parts: &mut Vec<RankPart>,
    phase: &str,
) -> std::result::Result<MergedPhase, String> {
    let mut decoded = Vec::with_capacity(reports.len());
    for (r, mut report) in reports.into_iter().enumerate() {
        let mut ops = Vec::with_capacity(report.ops.len());
        for (name, wire) in std::mem::take(&mut report.ops) {
            let op: Op = name
                .parse()
                .map_err(|e| format!("rank {r} sent an unknown operation: {e}"))?;
            ops.push((op, OpAcc::from_wire(wire, window.measure_from)?));
        }
        let lag = metabench_report::histogram::decode(&report.lag)?;
        decoded.push((report, ops, lag));
    }
    let real_end = decoded
        .iter()
        .flat_map(|(_, ops, _)| ops.iter().filter_map(|(_, acc)| acc.last_end))
        .fold(window.end, Instant::max);
    let mut merged = MergedPhase {
        ops: BTreeMap::new(),
        background: BackgroundAcc::default(),
        real_window: real_end - window.measure_from,
    };
    for (r, (report, ops, lag)) in decoded.into_iter().enumerate() {
        if parts.len() <= r {
            parts.push(RankPart::new(&report));
        }
        let part = &mut parts[r];
        part.cpu += report.cpu;
        part.lag.add(lag).expect("auto-resizing histograms merge");
        merged.background.merge(report.background);
        for (op, acc) in ops {
            part.calls += acc.hist.as_ref().map_or(0, |h| h.len());
            part.calls += acc.errors.values().sum::<u64>();
            part.ops.push(level_op(op, phase, &acc, merged.real_window));
            merged.ops.entry(op).or_default().merge(acc);
        }
    }
    Ok(merged)
}

/// A level's figures that rank 0 gathered over its phases.
struct LevelFigures {
    rate: Option<u32>,
    achieved: f64,
    pool_busy: f64,
    telemetry: Telemetry,
    telemetry_error: Option<String>,
    measured: Duration,
}

/// Rank 0 completes a level (engine check, open-loop figures), hands it to `on_level`
/// and keeps it; says whether the sweep goes on to the next level.
#[allow(clippy::too_many_arguments)]
fn finish_level(
    level: &mut Level,
    figures: LevelFigures,
    engine: &dyn Engine,
    config: &SweepConfig,
    failure: Option<RunFailure>,
    raw_intervals: &IntervalHistograms,
    totals: &mut Vec<Point>,
    outcome: &mut SweepOutcome,
    on_level: &mut impl FnMut(&Level, &IntervalHistograms),
) -> bool {
    let clients = level.clients;
    let LevelFigures {
        rate,
        achieved,
        pool_busy,
        telemetry,
        telemetry_error,
        measured,
    } = figures;
    if !telemetry.is_empty() || telemetry_error.is_some() {
        let reason = engine.engine_bound(&telemetry, measured, clients);
        level.engine = Some(EngineCheck {
            counters: telemetry.counters,
            gauges: telemetry.gauges,
            engine_bound: reason.is_some(),
            reason,
            error: telemetry_error,
        });
    }
    if rate.is_some() && achieved.is_finite() {
        level.achieved_ops_per_s = Some(achieved);
        level.pool_busy = Some(pool_busy);
        let offered = f64::from(rate.unwrap_or_default());
        let reason = if pool_busy >= POOL_BUSY_LIMIT {
            Some(format!(
                "the pool of {clients} clients was busy {:.0}% of the window: too few clients for this rate (raise --conc)",
                pool_busy * 100.0
            ))
        } else if achieved < ACHIEVED_SHARE * offered {
            Some(format!(
                "metabench fell behind its schedule ({achieved:.0} of {offered:.0} calls/s) with its pool only {:.0}% busy: the generator, not the engine, set the pace",
                pool_busy * 100.0
            ))
        } else {
            None
        };
        if let (false, Some(reason)) = (level.client.client_bound, reason) {
            level.client.client_bound = true;
            level.client.reason = Some(reason);
        }
    }
    level.disruptions = level.find_disruptions();
    let level = std::mem::take(level);
    if let Some(failure) = failure {
        let mut level = level;
        level.partial = true;
        on_level(&level, raw_intervals);
        outcome.levels.push(level);
        outcome.failure = Some(failure);
        return false;
    }
    on_level(&level, raw_intervals);
    totals.push(Point {
        clients,
        ops_per_s: level.ops.iter().map(|o| o.ops_per_s).sum(),
        p99_us: 0.0,
    });
    let open_loop_end = config
        .open_loop
        .as_ref()
        .and_then(|open| open_loop_stop(&level, open.p99_limit));
    outcome.levels.push(level);
    if let Some(why) = open_loop_end {
        if rate
            != config
                .open_loop
                .as_ref()
                .and_then(|o| o.rates.last().copied())
        {
            outcome.stopped_early = Some(why);
        }
        return false;
    }
    if config.until_plateau && plateaued(totals, PLATEAU_GROWTH, PLATEAU_LEVELS) {
        if clients != *config.levels.last().expect("non-empty") {
            outcome.stopped_early = Some(format!(
                "throughput grew less than {:.0}% over {PLATEAU_LEVELS} levels (--until-plateau)",
                PLATEAU_GROWTH * 100.0
            ));
        }
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_clients_workers_go_round_the_threads() {
        // One worker per client: session i on slot i.
        assert!((0..8).all(|i| thread_slot(i, 1) == i));
        // Clients of 4 on 2 threads: the first workers of clients 0 and 1 land on
        // threads 0 and 1, and each client's workers alternate.
        let thread = |i| thread_slot(i, 4) % 2;
        assert_eq!(
            (0..8).map(thread).collect::<Vec<_>>(),
            [0, 1, 0, 1, 1, 0, 1, 0]
        );
    }

    fn part(host: &str, cores: usize, host_cores: usize, cpu_s: f64) -> RankPart {
        RankPart {
            host: host.to_owned(),
            clients: 1,
            cores,
            host_cores,
            cpu: Duration::from_secs_f64(cpu_s),
            lag: histogram(),
            calls: 0,
            ops: Vec::new(),
        }
    }

    #[test]
    fn ranks_sharing_a_host_share_its_cores() {
        let second = Duration::from_secs(1);
        // Four unbound ranks on a 2-core host, each at half a core: each alone used 25%
        // of the cores it sees, together all of them.
        let unbound: Vec<_> = (0..4).map(|_| part("a", 2, 2, 0.5)).collect();
        let why = crowded_host(&unbound, second).expect("the host is full");
        assert!(
            why.starts_with("ranks 0, 1, 2, 3 on a together used 100% of its 2 cores"),
            "{why}"
        );
        // Two ranks bound to one core each on a 4-core host: their two cores are full.
        let bound = [part("b", 1, 4, 0.95), part("b", 1, 4, 0.95)];
        assert!(crowded_host(&bound, second).is_some());
        // The same use spread over two hosts, or under the limit, is not.
        let spread = [part("a", 2, 2, 0.9), part("b", 2, 2, 0.9)];
        assert_eq!(crowded_host(&spread, second), None);
        let light: Vec<_> = (0..4).map(|_| part("a", 2, 2, 0.4)).collect();
        assert_eq!(crowded_host(&light, second), None);
    }
}
