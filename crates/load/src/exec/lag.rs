//! The scheduling-lag probe: how late a task gets to run on each client thread, the
//! self-check that tells a client-bound level from an engine-bound one.

use super::sched::{CpuTurns, SchedStat};
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

/// How often the lag probe looks at each client thread. Each look wakes the coordinator,
/// and where idle CPUs are slow to wake, frequent looks keep a CPU awake and make calls
/// faster than they are without the probe: so every 10 ms, not every millisecond, and
/// `ops` runs the probe beside its operations too, so that the two commands time their
/// calls amid the same wake-ups (measurements: docs/src/history.md, "The lag probe every
/// 10 ms, in `ops` too"). A lag shorter than the interval is still measured whole: the
/// interval is how often one is sampled, not its resolution.
pub const LAG_PROBE_INTERVAL: Duration = Duration::from_millis(10);

/// What the probe last read of a client thread.
#[derive(Default)]
pub(super) struct Look {
    /// Its turns on a CPU at the last reading.
    turns: Option<CpuTurns>,
    /// Whether, and since when, it has been found woken but not yet running.
    woken: Option<Woken>,
}

/// A parked client thread found ready to run but not running: since when, and how many
/// turns on a CPU it had then (`None` where the kernel keeps no such figure). While the
/// count stays the same, the thread has not run since: it is one wait.
#[derive(Clone, Copy)]
pub(super) struct Woken {
    since: Instant,
    turns: Option<u64>,
}

/// What the probe found a parked client thread doing.
pub(super) enum ParkedLook {
    /// It has run since the last reading (it is asleep now, or woken again): the mean
    /// wait for a CPU of its turns since that reading.
    Ran(u64),
    /// Woken (ready to run, flagged parked until it runs), and not on a CPU since it was
    /// first found so.
    WaitingForCpu,
}

impl Look {
    /// Takes a new reading, `turns`, and returns the mean wait for a CPU of the turns
    /// since the last one (0 without figures). A mark of the thread found woken is
    /// dropped: the turns read now cover that wait.
    pub(super) fn renew(&mut self, turns: Option<CpuTurns>) -> u64 {
        self.woken = None;
        match (std::mem::replace(&mut self.turns, turns), turns) {
            (Some(before), Some(now)) => now.mean_wait_since(before),
            _ => 0,
        }
    }

    /// Looks at a parked thread at `now`, given whether the kernel says it is ready to run
    /// and its turns on a CPU so far. One found waiting for a CPU keeps its last reading,
    /// so the wait is counted whole once it runs. One found ready to run again, but with
    /// more turns than when it was first found so, has run in between: that wait is over
    /// (its turns cover it) and this is another. Without that check a thread woken often
    /// (a reply every few µs) that the probe found ready at every look, because the probe
    /// itself held the thread's CPU (one core for the whole process: `taskset`, an MPI
    /// rank bound to a core), would read as one wait since the first look, and a level would
    /// be flagged client-bound for nothing (measurements: docs/src/history.md, "A wait ends
    /// when the thread has run").
    pub(super) fn parked(
        &mut self,
        now: Instant,
        runnable: Option<bool>,
        turns: Option<CpuTurns>,
    ) -> ParkedLook {
        if runnable != Some(true) {
            return ParkedLook::Ran(self.renew(turns));
        }
        let count = turns.map(|t| t.turns);
        let woken_now = Woken {
            since: now,
            turns: count,
        };
        match self.woken {
            Some(woken) if woken.turns == count => ParkedLook::WaitingForCpu,
            Some(_) => {
                let waited = self.renew(turns);
                self.woken = Some(woken_now);
                ParkedLook::Ran(waited)
            }
            None => {
                self.woken = Some(woken_now);
                ParkedLook::WaitingForCpu
            }
        }
    }

    /// How long the thread has been waiting for a CPU at `now`, if it still is: found
    /// woken, still ready to run and flagged parked, and not on a CPU since.
    pub(super) fn still_waiting(
        &self,
        now: Instant,
        parked: bool,
        runnable: Option<bool>,
        turns: Option<CpuTurns>,
    ) -> Option<Duration> {
        let woken = self.woken?;
        let same_wait = parked && runnable == Some(true) && woken.turns == turns.map(|t| t.turns);
        same_wait.then(|| now.saturating_duration_since(woken.since))
    }
}

/// A client thread as the lag probe sees it.
pub(super) struct ProbedThread {
    pub(super) handle: Handle,
    pub(super) parked: Arc<AtomicBool>,
    pub(super) sched: Option<Arc<SchedStat>>,
    /// The time its in-process engine calls took, ns ([`Exec::engine_time`](super::Exec::engine_time)).
    pub(super) engine_calls: Arc<AtomicU64>,
    pub(super) look: Mutex<Look>,
}

impl ProbedThread {
    /// Its turns on a CPU so far, if the kernel keeps them.
    fn turns(&self) -> Option<CpuTurns> {
        self.sched.as_ref().and_then(|s| s.turns())
    }

    /// Whether the kernel says it is ready to run (or running), if it keeps that.
    fn runnable(&self) -> Option<bool> {
        self.sched.as_ref().and_then(|s| s.runnable())
    }

    /// Starts a new look at the thread ([`Look::renew`]).
    fn new_look(&self) -> u64 {
        let turns = self.turns();
        self.look.lock().expect("look").renew(turns)
    }

    /// Looks at a parked thread ([`Look::parked`]).
    fn look_parked(&self, now: Instant) -> ParkedLook {
        let (runnable, turns) = (self.runnable(), self.turns());
        self.look.lock().expect("look").parked(now, runnable, turns)
    }

    /// How long the thread has been found woken and waiting for a CPU, if it still is
    /// ([`Look::still_waiting`]).
    fn still_waiting_for_cpu(&self, now: Instant) -> Option<Duration> {
        let (runnable, turns) = (self.runnable(), self.turns());
        let parked = self.parked.load(Ordering::Acquire);
        self.look
            .lock()
            .expect("look")
            .still_waiting(now, parked, runnable, turns)
    }

    /// The time its in-process engine calls have taken so far, ns.
    fn engine_ns(&self) -> u64 {
        self.engine_calls.load(Ordering::Relaxed)
    }
}

/// Measures how late a task gets to run on each client thread. Every interval, from the
/// coordinator's runtime, it hands each thread a task stamped with the time it was
/// handed over, unless that thread's previous one has not run yet; the task records its
/// wait when it runs. A thread that never yields (clients whose calls never return
/// `Pending`) never runs its probe: its wait is recorded when the probe stops, corrected
/// for the intervals it blocked, so a starved thread shows as a long lag and is never
/// read as an idle one.
///
/// A thread that is parked (asleep, every task run) is not handed a task: a task would
/// only wake it, and a thread woken every interval keeps its CPU from going idle, which
/// changes what is measured where idle CPUs are slow to wake (measurements:
/// docs/src/history.md, "A parked thread's lag from the kernel"). Its lag comes from the
/// kernel instead. A thread woken by a reply still reads as parked until it runs; while
/// the kernel says it is ready to run and it has taken no turn on a CPU since it was
/// first found so, it is waiting for a CPU and nothing is recorded yet. Once it has run,
/// the probe records the mean wait for a CPU of its turns on one since the last look,
/// corrected for the intervals a wait spanned, as a probe's: the wait that delayed a
/// reply's call (behind an engine on the same cores, say) is its lag. A mean per turn, not
/// their sum, as a task's lag is one wait: a thread woken a hundred times in an interval,
/// 10 µs late each time, has a lag of 10 µs, not 1 ms. A thread still waiting when the
/// probe stops counts the wait so far. Where the kernel keeps no such figures, a parked
/// thread's lag is 0.
///
/// A probe's wait leaves out the time in-process engine calls (SQLite's statements) took
/// on its thread meanwhile ([`Exec::engine_time`](super::Exec::engine_time)): the thread was doing the engine's
/// work, as a network engine does on its own cores. What is left is metabench's: its
/// own code, and the thread's waits for a CPU. A call's time is added when it ends, so a
/// call that began before the probe was handed over is left out whole: that can only
/// make a lag shorter, by at most the part of one call that came before the hand-over.
pub struct LagProbe {
    lags: Arc<Mutex<Histogram<u64>>>,
    /// Per thread: when its outstanding probe was handed over (ns since `epoch`), 0 if none.
    outstanding: Arc<Vec<AtomicU64>>,
    /// Per thread: its in-process engine time (ns) when its outstanding probe was handed over.
    engine_at_send: Arc<Vec<AtomicU64>>,
    threads: Arc<Vec<ProbedThread>>,
    epoch: Instant,
    interval: Duration,
    ticker: JoinHandle<()>,
}

impl LagProbe {
    pub(super) fn start(threads: Vec<ProbedThread>, interval: Duration) -> Self {
        let lags = Arc::new(Mutex::new(
            Histogram::new(3).expect("3 significant digits is valid"),
        ));
        let outstanding: Arc<Vec<AtomicU64>> =
            Arc::new(threads.iter().map(|_| AtomicU64::new(0)).collect());
        let engine_at_send: Arc<Vec<AtomicU64>> =
            Arc::new(threads.iter().map(|_| AtomicU64::new(0)).collect());
        for thread in &threads {
            thread.new_look();
        }
        let threads = Arc::new(threads);
        let epoch = Instant::now();
        let ticker = {
            let (lags, outstanding) = (lags.clone(), outstanding.clone());
            let (threads, engine_at_send) = (threads.clone(), engine_at_send.clone());
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(interval);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
                loop {
                    tick.tick().await;
                    for (i, thread) in threads.iter().enumerate() {
                        if thread.parked.load(Ordering::Acquire)
                            && outstanding[i].load(Ordering::Acquire) == 0
                        {
                            // A wait that spanned looks is counted once per interval
                            // it took, as a probe kept waiting is.
                            if let ParkedLook::Ran(waited) = thread.look_parked(Instant::now()) {
                                let mut h = lags.lock().expect("lag histogram");
                                let _ = h.record_correct(waited, interval.as_nanos() as u64);
                            }
                            continue;
                        }
                        // The probe task measures this interval's lag; the turns move on.
                        thread.new_look();
                        let engine_then = thread.engine_ns();
                        engine_at_send[i].store(engine_then, Ordering::Relaxed);
                        let sent = epoch.elapsed().as_nanos().max(1) as u64;
                        if outstanding[i]
                            .compare_exchange(0, sent, Ordering::AcqRel, Ordering::Acquire)
                            .is_err()
                        {
                            continue;
                        }
                        let (lags, outstanding) = (lags.clone(), outstanding.clone());
                        let engine_calls = thread.engine_calls.clone();
                        thread.handle.spawn(async move {
                            let now = epoch.elapsed().as_nanos() as u64;
                            if outstanding[i]
                                .compare_exchange(sent, 0, Ordering::AcqRel, Ordering::Acquire)
                                .is_ok()
                            {
                                let engine = engine_calls
                                    .load(Ordering::Relaxed)
                                    .saturating_sub(engine_then);
                                let mut h = lags.lock().expect("lag histogram");
                                let waited = now.saturating_sub(sent).saturating_sub(engine);
                                let _ = h.record_correct(waited, interval.as_nanos() as u64);
                            }
                        });
                    }
                }
            })
        };
        Self {
            lags,
            outstanding,
            engine_at_send,
            threads,
            epoch,
            interval,
            ticker,
        }
    }

    /// Stops the probe and returns the lags it saw, including the waits of probes that
    /// had not run yet (each counted once per interval it was kept waiting, less the
    /// in-process engine's time meanwhile) and, for a parked thread, its mean wait for a
    /// CPU since the last look, or how long it has been found woken and still waiting
    /// for one. A thread that is running, with no probe outstanding, had its lag
    /// measured by the probe that last ran on it.
    pub fn finish(self) -> Histogram<u64> {
        self.ticker.abort();
        let now = self.epoch.elapsed().as_nanos() as u64;
        let interval = self.interval.as_nanos() as u64;
        let mut h = self.lags.lock().expect("lag histogram").clone();
        for (i, thread) in self.threads.iter().enumerate() {
            let sent = self.outstanding[i].swap(0, Ordering::AcqRel);
            if sent != 0 {
                let engine = thread
                    .engine_ns()
                    .saturating_sub(self.engine_at_send[i].load(Ordering::Relaxed));
                let waited = now.saturating_sub(sent).saturating_sub(engine);
                let _ = h.record_correct(waited, interval);
            } else if let Some(waiting) = thread.still_waiting_for_cpu(Instant::now()) {
                let _ = h.record_correct(waiting.as_nanos() as u64, interval);
            } else if !thread.parked.load(Ordering::Acquire) {
                continue;
            } else if let ParkedLook::Ran(waited) = thread.look_parked(Instant::now()) {
                if waited > 0 {
                    let _ = h.record_correct(waited, interval);
                }
            }
        }
        h
    }
}
