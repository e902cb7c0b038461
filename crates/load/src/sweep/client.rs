//! A sweep's clients: each repeats its phase's operations on its own session, times
//! every call through [`timed_call`], and records it in its level's window.

use super::config::{Arrivals, DirOf, Live, Window, MAX_CONSECUTIVE_ERRORS};
use crate::client::{reopen, within, ClientBackground};
use crate::exec::Exec;
use crate::stats::Recorder;
use crate::stop::StopFlag;
use crate::target::{Session, Target};
use crate::timing::{timed_call, OpTimeout, Timed};
use crate::workload::Phase;
use metabench_engine::{MetaError, Result, SessionOptions, SessionStats};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{watch, Barrier, Semaphore};

/// What one client (one worker) of a level does: its phase, where it works, and how it
/// recovers a session a call left unusable.
pub(super) struct ClientJob<T: Target + ?Sized> {
    pub(super) index: usize,
    pub(super) phase: Phase,
    pub(super) dir: DirOf<T>,
    pub(super) own_dir: Option<String>,
    pub(super) tag: String,
    /// Where a fresh session comes from when a call leaves this one unusable.
    pub(super) engine: Arc<T>,
    pub(super) session: SessionOptions,
    pub(super) op_timeout: Duration,
    /// Whether background work runs between the calls (on a client's first worker).
    pub(super) background: bool,
    /// Whether this worker shares its client with others: a broken session is replaced
    /// by a fresh connection of the same client, not by a new client.
    pub(super) shares_client: bool,
    /// Open loop only: this client's share of the schedule.
    pub(super) arrivals: Option<ClientArrivals>,
    /// Permits for the untimed setup and clean-up, shared by the level's clients
    /// ([`super::config::UNTIMED_AT_ONCE`] at once).
    pub(super) untimed: Arc<Semaphore>,
    /// The volume's tree the reads draw their targets from (`--tree`), if any.
    pub(super) tree: Option<Arc<crate::population::Population>>,
    /// This client's seed for its draws (distinct per level, phase and client).
    pub(super) seed: u64,
}

/// One client's share of an open loop's schedule: `rate / clients` calls per second,
/// staggered so the pool's arrivals interleave.
#[derive(Clone, Copy)]
pub(super) struct ClientArrivals {
    pub(super) mean_gap: Duration,
    pub(super) offset: Duration,
    pub(super) kind: Arrivals,
}

impl ClientArrivals {
    pub(super) fn new(rate: u32, clients: usize, index: usize, kind: Arrivals) -> Self {
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
pub(super) struct ClientFailure {
    pub(super) step: String,
    pub(super) error: MetaError,
}

impl ClientFailure {
    pub(super) fn new(step: impl Into<String>, error: MetaError) -> Self {
        Self {
            step: step.into(),
            error,
        }
    }
}

pub(super) async fn run_client<T: Target + ?Sized>(
    mut meta: T::Session,
    job: ClientJob<T>,
    barrier: Arc<Barrier>,
    mut start: watch::Receiver<Option<Window>>,
    recorder: Arc<Recorder>,
    live: Arc<Live>,
    stop: StopFlag,
) -> (T::Session, std::result::Result<(), ClientFailure>) {
    let outcome = client_body(
        &mut meta, &job, &barrier, &mut start, &recorder, &live, &stop,
    )
    .await;
    (meta, outcome)
}

pub(super) async fn client_body<T: Target + ?Sized>(
    meta: &mut T::Session,
    job: &ClientJob<T>,
    barrier: &Barrier,
    start: &mut watch::Receiver<Option<Window>>,
    recorder: &Recorder,
    live: &Live,
    stop: &StopFlag,
) -> std::result::Result<(), ClientFailure> {
    // Untimed setup: the client's directory and each operation's working set.
    let setup = async {
        let _turn = job.untimed.acquire().await.ok();
        let dir = match &job.own_dir {
            Some(name) => meta.mkdir(&job.dir, name).await?,
            None => job.dir.clone(),
        };
        let mut states = Vec::new();
        for &(op, _) in &job.phase.ops {
            let tag = if job.phase.ops.len() > 1 {
                format!("{}{}-", job.tag, op.name())
            } else {
                job.tag.clone()
            };
            let mut state = meta.setup(op, &dir, &tag).await?;
            if let Some(tree) = &job.tree {
                let seed = job.seed ^ ((states.len() as u64) << 48);
                meta.draw_from(&mut state, tree, seed)?;
            }
            states.push(state);
        }
        within(job.op_timeout, meta.flush()).await?;
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
    let mut op_timeout = OpTimeout::new(job.op_timeout);
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
        let (outcome, t0, t1, elapsed, cost, ready_wait, prepared) =
            match timed_call(&mut states[k], meta, &mut op_timeout, intended).await {
                Ok(Timed {
                    call,
                    cost,
                    ready_wait,
                    prepared,
                }) => {
                    let elapsed = call.elapsed();
                    (
                        call.outcome,
                        call.start,
                        call.end,
                        elapsed,
                        cost,
                        ready_wait,
                        prepared,
                    )
                }
                Err(e) => {
                    let now = Instant::now();
                    let none = SessionStats::default();
                    let zero = Duration::ZERO;
                    (Err(e), now, now, zero, none, zero, zero)
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
            ideal_free = Some(start + elapsed);
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
                // The client's occupancy: its clock reads keep it busy too.
                acc.busy += t1 - t0;
                acc.last_end = acc.last_end.max(Some(t1));
                if t1 > window.end {
                    acc.in_flight_at_end += 1;
                }
                match &outcome {
                    Ok(()) => {
                        acc.parts.add_call(&cost, ready_wait, prepared);
                        acc.record(
                            elapsed + queued.unwrap_or_default(),
                            queued.map(|_| elapsed),
                            interval,
                        )
                    }
                    Err(e) => acc.record_failure(e.kind(), elapsed, interval),
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
            Some(b) => b.run_due(meta, job.op_timeout).await,
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
        let _turn = job.untimed.acquire().await.ok();
        within(job.op_timeout, meta.flush()).await?;
        if let Some(name) = &job.own_dir {
            meta.remove_tree(&job.dir, name).await?;
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
pub(super) async fn unless_stopped<T>(
    work: impl std::future::Future<Output = T>,
    stop: &StopFlag,
) -> Option<T> {
    // Woken by the stop, not polling it: thousands of clients wait here in turn.
    let done = tokio::select! {
        biased;
        () = stop.stopped() => None,
        done = work => Some(done),
    };
    // A stop also ends the sessions' work half-way: what failed then is no failure.
    done.filter(|_| !stop.is_stopped())
}

/// Replaces a client's session after `step` failed with `e` and left it unusable. An
/// engine that gives no fresh session until one op timeout after the window's end has
/// failed.
pub(super) async fn replace_session<T: Target + ?Sized>(
    meta: &mut T::Session,
    job: &ClientJob<T>,
    window: &Window,
    step: &str,
    e: &MetaError,
) -> std::result::Result<(), ClientFailure> {
    let give_up_at = window.end + job.op_timeout;
    let keep = job.shares_client.then(|| T::client_of(meta));
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
pub(super) fn thread_slot(index: usize, per_client: usize) -> usize {
    let per_client = per_client.max(1);
    index / per_client + index % per_client
}

/// Opens sessions until there are `n`, each on the client thread that will drive it.
/// Session `i` is a worker of client `i / per_client`: the client's first worker opens
/// it, and the others join it ([`Target::worker`]) once that one is open.
pub(super) async fn grow_sessions<T: Target + ?Sized>(
    exec: &Exec,
    engine: &Arc<T>,
    opts: &SessionOptions,
    per_client: usize,
    sessions: &mut Vec<T::Session>,
    n: usize,
) -> Result<()> {
    let per_client = per_client.max(1);
    while sessions.len() < n {
        let batch = (n - sessions.len()).min(64);
        let first = sessions.len();
        let mut opened: BTreeMap<usize, T::Session> = BTreeMap::new();
        for opening_clients in [true, false] {
            let opening: Vec<_> = (first..first + batch)
                .filter(|i| (i % per_client == 0) == opening_clients)
                .map(|index| {
                    let engine = engine.clone();
                    let opts = opts.clone();
                    let lead = index - index % per_client;
                    let client = (!opening_clients).then(|| match opened.get(&lead) {
                        Some(m) => T::client_of(m),
                        None => T::client_of(&sessions[lead]),
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

/// Whether the engine still answers the first client's session (its null round trip,
/// within `timeout`), on that client's thread. Tells a connection limit (a finding) from
/// a failed engine when more sessions cannot be opened.
pub(super) async fn engine_answers<S: Session + 'static>(
    exec: &Exec,
    sessions: &mut Vec<S>,
    timeout: Duration,
) -> bool {
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
}
