//! Where the virtual clients run: one current-thread tokio runtime per client thread
//! (thread-per-core, as latte runs its workers), clients spread over them round-robin.
//!
//! A client's session is opened on the thread that will drive it, so its sockets belong
//! to that thread's reactor: a reply wakes the thread that waits for it and the task runs
//! there, with no hand-off to another thread. `ops` and `sweep` both run their clients
//! here, so they time a call the same way.
//!
//! [`timed_call`] is the one timing path: every runner times a call with it, and the floor
//! times its null round trips with the same clock reads and op timeout ([`OpTimeout::time`]).
//!
//! The coordinator (windows, CPU time, scheduling-lag probe) stays on the caller's
//! runtime, on other OS threads, so busy clients cannot starve the measurement of
//! themselves; see [`LagProbe`].

use crate::stats::BackgroundAcc;
use crate::target::{Session, Target};
use hdrhistogram::Histogram;
use metabench_engine::deadline::CallDeadlines;
use metabench_engine::in_process;
use metabench_engine::{MetaError, Result, SessionOptions, SessionStats};
use std::fs::File;
use std::future::Future;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Where metabench's timing of a call knowingly differs from JuiceFS's Go benchmark,
/// whatever the engine: printed and stored after the engine family's fidelity notes.
pub fn timing_note() -> String {
    let overhead = clock_overhead();
    format!(
        "Each call is timed alone, between two clock reads, as a sweep must time it for its \
         histograms; JuiceFS's Go benchmark times a loop of calls. What the timing adds to a \
         call's time is taken off every call: {} ns for a call that may reach the engine, \
         {} ns for one the client answers from its own memory (newchunk from the client's \
         id batch, read_1 and read_10 of a cached chunk, timed as plain function calls, as \
         Go's are), each the mean of {CALIBRATION_CALLS} timed calls that return at once (the \
         slowest 1 % left out). \
         Those calls take well under 1 µs (Go: about 0.02 µs for newchunk, 0.1 µs for a \
         cached read), about one tick of the clock (10 ns on some machines): a single \
         call's time is coarse there, and their mean per call is the figure to compare.",
        overhead.call.as_nanos(),
        overhead.in_client.as_nanos(),
    )
}

/// The cores this process may use (its CPU affinity; an MPI rank bound to one core has
/// one): at most one client thread per core runs at a time.
pub fn usable_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How often the lag probe looks at each client thread. Each look wakes the coordinator,
/// and on a VM whose idle vCPUs are slow to wake, a wake-up every millisecond kept a vCPU
/// awake often enough to make Redis calls in `sweep --conc 1` faster than the same calls
/// in `ops` when `ops` ran no probe (sweep / ops median 0.84–0.89 over 25 operations, 22–25
/// of them faster in `sweep`; every 10 ms: 0.98, 15 of 25, in the same minutes; on a VM
/// slower to wake, 0.93 and 21 of 25 at 10 ms). So `ops` runs the probe beside its
/// operations too, and the two commands time their calls amid the same wake-ups. A lag
/// shorter than the interval is still measured whole: the interval is how often one is
/// sampled, not its resolution.
pub const LAG_PROBE_INTERVAL: Duration = Duration::from_millis(10);

struct Worker {
    handle: Handle,
    /// The CPU the thread is bound to, if any ([`Exec::on_cpus`]).
    cpu: Option<usize>,
    /// Whether the thread is parked: asleep in its I/O driver with no task to run.
    parked: Arc<AtomicBool>,
    /// Its scheduler statistics, if the kernel keeps them.
    sched: Option<Arc<SchedStat>>,
    /// The time its in-process engine calls took (SQLite's statements), ns.
    engine_calls: Arc<AtomicU64>,
    /// When it started, and, if it busy-polls ([`Idle::BusyPoll`]), how long its polling
    /// task found nothing for a client to do, ns: the two give its busy time
    /// ([`Exec::busy_time`]).
    started: Instant,
    idle_polls: Option<Arc<AtomicU64>>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What a client thread does while all its clients wait for the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idle {
    /// Sleeps in the kernel until a reply or a timer wakes it, as any client does.
    Sleep,
    /// Polls its sockets without sleeping (`--busy-poll`), a whole core per thread: a
    /// reply then finds the thread running. Where an idle CPU is slow to wake (a VM that
    /// halts an idle vCPU: tens of µs on a loopback round trip), that wake-up is the
    /// client machine's cost, and polling keeps it out of every call's time.
    BusyPoll,
}

/// The client threads of a run.
pub struct Exec {
    workers: Vec<Worker>,
    idle: Idle,
    /// Where the threads were placed beside a local engine's server, if one runs here.
    placement: Option<crate::placement::Placement>,
}

impl Exec {
    /// Starts `threads` client threads (at least one), each with its own current-thread
    /// runtime (timers and I/O, nothing else), that do `idle` while their clients wait; the
    /// kernel places them.
    pub fn new(threads: usize, idle: Idle) -> std::io::Result<Self> {
        Self::on_cpus(threads, idle, &[])
    }

    /// As [`Exec::new`], thread `i` bound to CPU `cpus[i % cpus.len()]` (none bound when
    /// `cpus` is empty): thread per core, kept off the CPUs a local engine's server is
    /// bound to ([`crate::placement`]).
    pub fn on_cpus(threads: usize, idle: Idle, cpus: &[usize]) -> std::io::Result<Self> {
        // Measured now, before any call is timed, rather than by the first one.
        clock_overhead();
        let mut workers = Vec::with_capacity(threads.max(1));
        for i in 0..threads.max(1) {
            let cpu = (!cpus.is_empty()).then(|| cpus[i % cpus.len()]);
            let parked = Arc::new(AtomicBool::new(false));
            let (on_park, on_unpark) = (parked.clone(), parked.clone());
            // I/O and timers only: the signal and process drivers would be polled at
            // every park, on every call, for nothing a client does.
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .enable_time()
                // A thread that parks has run every task it had: its clients start a
                // new stretch of calls before `pace` yields on their behalf.
                .on_thread_park(move || {
                    LAST_YIELD.with(|last| last.set(Some(Instant::now())));
                    on_park.store(true, Ordering::Release);
                })
                .on_thread_unpark(move || on_unpark.store(false, Ordering::Release))
                .build()?;
            let handle = runtime.handle().clone();
            let idle_polls = (idle == Idle::BusyPoll).then(|| Arc::new(AtomicU64::new(0)));
            if let Some(idle_polls) = &idle_polls {
                handle.spawn(poll_instead_of_sleeping(Some(idle_polls.clone())));
            }
            let (tx, rx) = oneshot::channel::<()>();
            let (opened_tx, opened_rx) = std::sync::mpsc::sync_channel(1);
            let engine_calls = Arc::new(AtomicU64::new(0));
            let meter = engine_calls.clone();
            let thread = std::thread::Builder::new()
                .name(format!("metabench-client-{i}"))
                .spawn(move || {
                    if let Some(Err(e)) = cpu.map(crate::placement::bind_this_thread) {
                        let _ = opened_tx.send(Err(e));
                        return;
                    }
                    in_process::meter_calls_on_this_thread(meter);
                    let _ = opened_tx.send(Ok(SchedStat::of_this_thread()));
                    // Spawned clients run while the thread blocks here.
                    let _ = runtime.block_on(rx);
                })?;
            let sched = match opened_rx.recv() {
                Ok(Ok(sched)) => sched.map(Arc::new),
                Ok(Err(e)) => {
                    let cpu = cpu.unwrap_or_default();
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!("cannot bind a client thread to CPU {cpu}: {e}"),
                    ));
                }
                Err(_) => None,
            };
            workers.push(Worker {
                handle,
                cpu,
                parked,
                sched,
                engine_calls,
                started: Instant::now(),
                idle_polls,
                shutdown: Some(tx),
                thread: Some(thread),
            });
        }
        Ok(Self {
            workers,
            idle,
            placement: None,
        })
    }

    /// Records where the threads were placed beside a local engine's server (the threads
    /// are bound by [`Exec::on_cpus`]; this says why).
    pub fn placed(&mut self, placement: crate::placement::Placement) {
        self.placement = Some(placement);
    }

    /// Where the threads were placed beside a local engine's server ([`Exec::placed`]);
    /// `None` when no server runs on this machine.
    pub fn placement(&self) -> Option<&crate::placement::Placement> {
        self.placement.as_ref()
    }

    /// Number of client threads.
    pub fn threads(&self) -> usize {
        self.workers.len()
    }

    /// The CPUs the client threads are bound to, in order, each once; empty when the
    /// kernel places them.
    pub fn cpus(&self) -> Vec<usize> {
        let cpus: std::collections::BTreeSet<usize> =
            self.workers.iter().filter_map(|w| w.cpu).collect();
        cpus.into_iter().collect()
    }

    /// What the client threads do while their clients wait.
    pub fn idle(&self) -> Idle {
        self.idle
    }

    /// How many client threads run any of `clients` clients (clients are spread
    /// round-robin, so they are the first ones); at least one.
    pub fn threads_running(&self, clients: usize) -> usize {
        clients.clamp(1, self.workers.len())
    }

    /// The cores the client threads that run any of `clients` clients can use: one per
    /// such thread, at most the cores this process may use; bound threads
    /// ([`Exec::on_cpus`]), at most the CPUs they are bound to, which several may share.
    pub fn cores_running(&self, clients: usize) -> usize {
        let running = &self.workers[..self.threads_running(clients)];
        let bound: std::collections::BTreeSet<usize> =
            running.iter().filter_map(|w| w.cpu).collect();
        if bound.is_empty() {
            running.len().min(usable_cores())
        } else {
            bound.len()
        }
    }

    /// The time the client threads that run any of `clients` clients
    /// ([`Exec::threads_running`]) have been busy with them so far, summed over those
    /// threads. Under [`Idle::BusyPoll`] it is what their CPU time no longer says: their
    /// time less the turns of their polling task that found nothing for a client to do
    /// (an I/O driver poll that woke no client task), so the driver's work on a reply
    /// counts as the client's. Under [`Idle::Sleep`] it is tokio's busy duration (time
    /// running tasks, not sleeping nor polling the driver). A thread without a client is
    /// left out: under [`Idle::BusyPoll`] it is busy polling alone.
    pub fn busy_time(&self, clients: usize) -> Duration {
        self.workers
            .iter()
            .take(self.threads_running(clients))
            .map(|w| match &w.idle_polls {
                Some(idle) => w
                    .started
                    .elapsed()
                    .saturating_sub(Duration::from_nanos(idle.load(Ordering::Relaxed))),
                None => w.handle.metrics().worker_total_busy_duration(0),
            })
            .sum()
    }

    /// The CPU time of the client threads that run none of `clients` clients (those past
    /// [`Exec::threads_running`]), summed: what the process's CPU has beside the clients'
    /// work on them. About nothing on a sleeping thread; a core's worth on one that busy-
    /// polls ([`Idle::BusyPoll`]) alone. 0 where the kernel keeps no scheduler statistics.
    pub fn cpu_time_without_clients(&self, clients: usize) -> Duration {
        self.workers
            .iter()
            .skip(self.threads_running(clients))
            .filter_map(|w| w.sched.as_ref()?.ran())
            .sum()
    }

    /// The time in-process engine calls (SQLite's statements) have taken on the client
    /// threads, summed over the threads: the engine's work, done on threads that are
    /// metabench's. 0 for an engine reached over the network, and for memkv, whose time
    /// is the client's ([`metabench_engine::in_process`]).
    pub fn engine_time(&self) -> Duration {
        Duration::from_nanos(
            self.workers
                .iter()
                .map(|w| w.engine_calls.load(Ordering::Relaxed))
                .sum(),
        )
    }

    /// The thread that runs client `index` (clients are spread round-robin).
    pub fn thread_of(&self, index: usize) -> usize {
        index % self.workers.len()
    }

    /// Runs `fut` on the thread of client `index`. On a thread that busy-polls, its polls
    /// are counted for the thread's polling task ([`poll_instead_of_sleeping`]).
    pub fn spawn<F>(&self, index: usize, fut: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let worker = &self.workers[self.thread_of(index)];
        if worker.idle_polls.is_none() {
            return worker.handle.spawn(fut);
        }
        // Boxed once per spawned client task, not per call.
        let mut fut = Box::pin(fut);
        worker.handle.spawn(std::future::poll_fn(move |cx| {
            CLIENT_POLLS.set(CLIENT_POLLS.get() + 1);
            fut.as_mut().poll(cx)
        }))
    }

    /// Starts a scheduling-lag probe, from the caller's runtime, of the client threads
    /// that run any of `clients` clients (threads without a client are not woken).
    pub fn lag_probe(&self, clients: usize) -> LagProbe {
        LagProbe::start(
            self.workers
                .iter()
                .take(self.threads_running(clients))
                .map(|w| ProbedThread {
                    handle: w.handle.clone(),
                    parked: w.parked.clone(),
                    sched: w.sched.clone(),
                    engine_calls: w.engine_calls.clone(),
                    look: Mutex::new(Look::default()),
                })
                .collect(),
            LAG_PROBE_INTERVAL,
        )
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        for w in &mut self.workers {
            if let Some(tx) = w.shutdown.take() {
                let _ = tx.send(());
            }
        }
        for w in &mut self.workers {
            if let Some(t) = w.thread.take() {
                let _ = t.join();
            }
        }
    }
}

thread_local! {
    /// Polls of the client tasks spawned on this thread so far ([`Exec::spawn`]): the
    /// polling task tells by it a turn that woke a client from one that found nothing.
    static CLIENT_POLLS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A client thread's task under [`Idle::BusyPoll`]: it only yields, for as long as the
/// thread runs. A task that yields is run again only after the thread's I/O driver has
/// been polled, and a thread with a task to run polls it without waiting (`epoll_wait`
/// with a zero timeout): the thread never parks, and a reply is read as soon as it is
/// polled. Client tasks ready to run take their turns as before. Each turn in which no
/// client task was polled is added to `idle` (ns), if given: the time the thread had
/// nothing to do ([`Exec::busy_time`]). The scheduler wakes tasks that yielded in the
/// reverse order, so just after a client's own yield ([`pace`]) one turn holds only a
/// driver poll and reads as idle: about 1 µs every [`YIELD_EVERY`] of a client whose
/// calls never wait, and every other turn of one that did nothing but yield. A task that
/// a client spawns itself is not counted either: the turn of the inode prefetch's one
/// round trip per 1024 inodes reads as idle. Under [`Idle::Sleep`] the floor runs it for
/// its second median, then aborts it ([`crate::floor::measure_floor`]).
pub(crate) async fn poll_instead_of_sleeping(idle: Option<Arc<AtomicU64>>) {
    let Some(idle) = idle else {
        loop {
            tokio::task::yield_now().await;
        }
    };
    loop {
        let (polls, from) = (CLIENT_POLLS.get(), Instant::now());
        tokio::task::yield_now().await;
        if CLIENT_POLLS.get() == polls {
            idle.fetch_add(from.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
    }
}

/// One thread's scheduler statistics and state, as the kernel keeps them
/// (`/proc/thread-self/schedstat` and `stat`), readable from any thread.
struct SchedStat {
    schedstat: File,
    stat: File,
}

impl SchedStat {
    /// The calling thread's, or `None` where the kernel keeps none (not Linux, or a
    /// kernel built without scheduler statistics).
    fn of_this_thread() -> Option<Self> {
        let sched = Self {
            schedstat: File::open("/proc/thread-self/schedstat").ok()?,
            stat: File::open("/proc/thread-self/stat").ok()?,
        };
        sched.turns()?;
        sched.runnable()?;
        Some(sched)
    }

    /// The three fields of `schedstat`: time on a CPU and time waiting for one (ns), and
    /// turns on a CPU, so far.
    fn fields(&self) -> Option<[u64; 3]> {
        let mut buf = [0u8; 128];
        let n = self.schedstat.read_at(&mut buf, 0).ok()?;
        let mut fields = std::str::from_utf8(&buf[..n])
            .ok()?
            .split_ascii_whitespace()
            .map(str::parse);
        let mut next = || fields.next()?.ok();
        Some([next()?, next()?, next()?])
    }

    /// The thread's turns on a CPU so far (the second and third fields of `schedstat`).
    fn turns(&self) -> Option<CpuTurns> {
        let [_, waited_ns, turns] = self.fields()?;
        Some(CpuTurns { waited_ns, turns })
    }

    /// The thread's time on a CPU so far (the first field of `schedstat`).
    fn ran(&self) -> Option<Duration> {
        let [ran_ns, ..] = self.fields()?;
        Some(Duration::from_nanos(ran_ns))
    }

    /// Whether the thread is running or ready to (state `R` in `stat`, the field after
    /// the parenthesised name), rather than asleep.
    fn runnable(&self) -> Option<bool> {
        let mut buf = [0u8; 512];
        let n = self.stat.read_at(&mut buf, 0).ok()?;
        let after_name = buf[..n].iter().rposition(|&b| b == b')')?;
        let state = buf[after_name + 1..n]
            .iter()
            .find(|b| !b.is_ascii_whitespace())?;
        Some(*state == b'R')
    }
}

/// How often a thread has got a CPU, and how long it waited for one (ready to run, not
/// running) before those turns, in all. Both grow when the thread gets a CPU.
#[derive(Debug, Clone, Copy)]
struct CpuTurns {
    waited_ns: u64,
    turns: u64,
}

impl CpuTurns {
    /// The mean wait for a CPU of the turns taken since `before` (0 if none were).
    fn mean_wait_since(self, before: CpuTurns) -> u64 {
        match self.turns.saturating_sub(before.turns) {
            0 => 0,
            turns => self.waited_ns.saturating_sub(before.waited_ns) / turns,
        }
    }
}

/// What the probe last read of a client thread.
#[derive(Default)]
struct Look {
    /// Its turns on a CPU at the last reading.
    turns: Option<CpuTurns>,
    /// Whether, and since when, it has been found woken but not yet running.
    woken: Option<Woken>,
}

/// A parked client thread found ready to run but not running: since when, and how many
/// turns on a CPU it had then (`None` where the kernel keeps no such figure). While the
/// count stays the same, the thread has not run since: it is one wait.
#[derive(Clone, Copy)]
struct Woken {
    since: Instant,
    turns: Option<u64>,
}

/// What the probe found a parked client thread doing.
enum ParkedLook {
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
    fn renew(&mut self, turns: Option<CpuTurns>) -> u64 {
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
    /// rank bound to a core), read as one wait since the first look: 7.5–107 ms of lag at
    /// one client of a loopback Redis, a level flagged client-bound for nothing.
    fn parked(
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
    fn still_waiting(
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
struct ProbedThread {
    handle: Handle,
    parked: Arc<AtomicBool>,
    sched: Option<Arc<SchedStat>>,
    /// The time its in-process engine calls took, ns ([`Exec::engine_time`]).
    engine_calls: Arc<AtomicU64>,
    look: Mutex<Look>,
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
/// changes what is measured: on a 2-vCPU VM whose idle vCPUs are slow to wake, a 1 ms
/// probe made one Redis client's getattr about 20 % faster in `sweep` than in `ops`,
/// which then ran no probe. Its lag comes from the kernel instead. A thread woken by a reply
/// still reads as parked until it runs; while the kernel says it is ready to run and it
/// has taken no turn on a CPU since it was first found so, it is waiting for a CPU and
/// nothing is recorded yet. Once it has run, the probe records the
/// mean wait for a CPU of its turns on one since the last look, corrected for the
/// intervals a wait spanned, as a probe's: the wait that delayed a reply's call (behind
/// an engine on the same cores, say) is its lag. A mean per turn, not their sum, as a
/// task's lag is one wait: a thread woken a hundred times in an interval, 10 µs late each
/// time, has a lag of 10 µs, not 1 ms. A thread still waiting when the probe stops
/// counts the wait so far. Where the kernel keeps no such figures, a parked thread's lag
/// is 0.
///
/// A probe's wait leaves out the time in-process engine calls (SQLite's statements) took
/// on its thread meanwhile ([`Exec::engine_time`]): the thread was doing the engine's
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
    fn start(threads: Vec<ProbedThread>, interval: Duration) -> Self {
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

/// One timed call, as every runner times it (`ops`, `sweep`, at any level).
pub(crate) struct Timed {
    /// What the call returned, when it was issued and when its answer was back.
    pub call: Clocked<()>,
    /// What the call sent (round trips, retries).
    pub cost: SessionStats,
}

/// How long a client thread runs calls without going back to its scheduler at most
/// (between calls): clients whose calls never wait (SQLite in-process, memkv) would
/// otherwise hold the thread from the other clients and the lag probe.
const YIELD_EVERY: Duration = Duration::from_micros(200);

thread_local! {
    /// When the clients of this thread last yielded to its scheduler on purpose, or the
    /// thread last parked.
    static LAST_YIELD: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// Yields to the thread's other tasks when it has not done so for [`YIELD_EVERY`], nor
/// parked (then every task had its turn). Clients whose calls wait on the engine park
/// their thread between replies and never yield here; those whose calls never wait
/// (SQLite in-process, memkv) yield every [`YIELD_EVERY`]. `now` is the end of the
/// client's last call when it has one: no clock read of its own between two calls.
async fn pace(now: Option<Instant>) {
    let now = now.unwrap_or_else(Instant::now);
    let due = LAST_YIELD.with(|last| match last.get() {
        Some(t) if now - t < YIELD_EVERY => false,
        _ => {
            last.set(Some(now));
            true
        }
    });
    if due {
        tokio::task::yield_now().await;
    }
}

/// A client's op timeout: each call is bounded by `start + limit`, with one runtime timer
/// for all of the client's calls ([`CallDeadlines`]), made by the first call that waits
/// and re-armed only when it fires. A timer per call would be registered with the
/// thread's time driver on every call that waits and removed when it ends (each
/// registration also wakes the thread's own driver: a write to its eventfd and one more
/// `epoll_wait`): client CPU on every call, which `redis-benchmark` does not spend.
pub(crate) struct OpTimeout {
    limit: Duration,
    /// The client's timer; it belongs to the thread's time driver that first armed it.
    deadlines: CallDeadlines,
    /// When the last call timed here ended.
    last_end: Option<Instant>,
}

impl OpTimeout {
    /// A timeout of `limit` per call.
    pub(crate) fn new(limit: Duration) -> Self {
        Self {
            limit,
            deadlines: CallDeadlines::new(),
            last_end: None,
        }
    }

    /// Times `call` alone, between two clock reads, bounded by the limit: what it
    /// returned (or [`MetaError::Timeout`]), when it started and when it ended. Every
    /// timed call that may wait goes through [`OpTimeout::bound`]: the operations'
    /// ([`timed_call`]) and the floor's, here. The floor's calls lose the call path's
    /// timing part, which holds a declined answer from memory (a ns or two) they skip.
    pub(crate) async fn time<T>(&mut self, call: impl Future<Output = Result<T>>) -> Clocked<T> {
        let start = Instant::now();
        // The deadline from the start already read: no clock read of the timeout's own
        // inside the timed region, and no timer registered.
        let outcome = self.bound(start, call).await;
        self.ended(start, outcome, TimedPath::Call)
    }

    /// Ends a call timed from `start` that returned `outcome` by `path`: the clock read
    /// that closes its span.
    fn ended<T>(&mut self, start: Instant, outcome: Result<T>, path: TimedPath) -> Clocked<T> {
        let end = Instant::now();
        self.last_end = Some(end);
        Clocked {
            outcome,
            start,
            end,
            path,
        }
    }

    /// Runs `call`, which started at `start`, until it ends or `start + limit` passes. A
    /// call that ends on its first poll (a cache hit, an in-process engine) never touches
    /// the timer.
    async fn bound<T>(
        &mut self,
        start: Instant,
        call: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        // The first poll here, not in a future of `CallDeadlines`: a call that returns at
        // once then costs the timing path nothing more (its calibration included).
        let mut call = std::pin::pin!(call);
        let first = std::future::poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await;
        if let Poll::Ready(outcome) = first {
            return outcome;
        }
        let deadline = tokio::time::Instant::from_std(start) + self.limit;
        let limit = self.limit;
        self.deadlines
            .wait(deadline, call)
            .await
            .unwrap_or(Err(MetaError::Timeout(limit)))
    }

    /// When the last call timed here ended (none yet: `None`).
    pub(crate) fn last_end(&self) -> Option<Instant> {
        self.last_end
    }
}

/// How a timed call was made, which sets what the timing itself added to its span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimedPath {
    /// A future, polled until it ends or times out ([`OpTimeout::bound`]).
    Call,
    /// A plain function call answered from the client's own memory
    /// ([`Session::answer_in_client`]).
    InClient,
}

/// A timed call ([`timed_call`], [`OpTimeout::time`]).
pub(crate) struct Clocked<T> {
    /// What the call returned, or [`MetaError::Timeout`].
    pub outcome: Result<T>,
    /// The clock read just before the call.
    pub start: Instant,
    /// The clock read just after it.
    pub end: Instant,
    /// How it was made.
    pub path: TimedPath,
}

impl<T> Clocked<T> {
    /// The call's time: from `start` to `end`, less the timing's own part on the call's
    /// path ([`clock_overhead`]). Windows and occupancy use `start` and `end` themselves.
    pub(crate) fn elapsed(&self) -> Duration {
        (self.end - self.start).saturating_sub(clock_overhead().of(self.path))
    }
}

/// How many calls that return at once [`clock_overhead`] times, per path.
const CALIBRATION_CALLS: usize = 10_000;

/// What timing a call adds to its time, per [`TimedPath`].
#[derive(Clone, Copy, Debug)]
pub struct ClockOverhead {
    /// A call that may reach the engine: the two clock reads, the client's answer from
    /// memory declined, and the polls of the call's future.
    pub call: Duration,
    /// A call the client answers from its own memory: the two clock reads alone.
    pub in_client: Duration,
}

impl ClockOverhead {
    /// The part taken off a call made by `path`.
    pub(crate) fn of(&self, path: TimedPath) -> Duration {
        match path {
            TimedPath::Call => self.call,
            TimedPath::InClient => self.in_client,
        }
    }
}

/// What timing a call adds to its time: the part of the two clock reads, and of the
/// timing path's own steps, that falls between them (30 to 50 ns on this project's KVM
/// guest, more than JuiceFS's Go client spends on a whole `NewSlice`). Measured once per
/// process, when the client threads start ([`Exec::new`]), for each path of
/// [`timed_call`] with the timing's own functions, on [`CALIBRATION_CALLS`] calls that do
/// nothing and return at once; their mean ([`mean_span`]) is taken off every call's
/// latency, so that metabench's own timing is not charged to the engine (criterion's
/// regression leaves a harness's fixed cost out of its estimate likewise; hyperfine takes
/// off the shell's start-up).
pub fn clock_overhead() -> ClockOverhead {
    static OVERHEAD: std::sync::OnceLock<ClockOverhead> = std::sync::OnceLock::new();
    *OVERHEAD.get_or_init(|| {
        // A call that returns at once never reaches the timer: no runtime is needed.
        let mut timing = OpTimeout::new(Duration::from_secs(1));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let call = mean_span(|| {
            // One future, as `timed_call` is: the answer from memory declined, then the
            // call's future, bounded.
            let timed = std::pin::pin!(async {
                let start = Instant::now();
                if std::hint::black_box(false) {
                    timing.ended(start, Ok(()), TimedPath::InClient)
                } else {
                    let call = std::pin::pin!(std::future::ready(Ok::<(), MetaError>(())));
                    let outcome = timing.bound(start, std::hint::black_box(call)).await;
                    timing.ended(start, outcome, TimedPath::Call)
                }
            });
            match timed.poll(&mut cx) {
                Poll::Ready(clocked) => clocked,
                Poll::Pending => unreachable!("a call that returns at once is timed at once"),
            }
        });
        let in_client = mean_span(|| {
            let start = Instant::now();
            assert!(
                std::hint::black_box(true),
                "the calibration's answer is given"
            );
            timing.ended(start, Ok(()), TimedPath::InClient)
        });
        ClockOverhead { call, in_client }
    })
}

/// The mean span of [`CALIBRATION_CALLS`] calls timed by `timed`, the slowest 1 % left
/// out (a call an interrupt or a preemption fell into), to the nearest nanosecond.
///
/// A mean, not a median: the clock reads whole ticks (10 ns apart on the project's AMD
/// EPYC KVM guest, where back-to-back reads give 20 ns twice in three and 30 ns once), so
/// a median is always one of the ticks and can move a whole tick from one process to the
/// next. That tick is as long as a whole `NewSlice`: newchunk then came out at 1 ns or at
/// 11 ns per call from two runs a minute apart. A span falls on either side of a tick
/// boundary in proportion to where it truly ends, so the mean of many spans is not
/// quantized, and taking it off keeps the mean of the calls' times unbiased.
fn mean_span(mut timed: impl FnMut() -> Clocked<()>) -> Duration {
    let mut spans: Vec<u128> = (0..CALIBRATION_CALLS)
        .map(|_| {
            let clocked = timed();
            (clocked.end - clocked.start).as_nanos()
        })
        .collect();
    spans.sort_unstable();
    let kept = &spans[..spans.len() - spans.len() / 100];
    let total: u128 = kept.iter().sum();
    let count = kept.len() as u128;
    Duration::from_nanos(u64::try_from((total + count / 2) / count).unwrap_or(u64::MAX))
}

/// The one timing path: lets the thread's other tasks run when due ([`pace`]), prepares
/// the call untimed, waits for `not_before` if given (an open loop's intended start),
/// then times the call alone, bounded by `timeout`: a call that has no answer by then
/// ends as [`MetaError::Timeout`] with its elapsed time, and the session must be replaced
/// ([`reopen`]). Fails only when the untimed preparation does.
pub(crate) async fn timed_call<S: Session>(
    work: &mut S::Work,
    session: &mut S,
    timeout: &mut OpTimeout,
    not_before: Option<Instant>,
) -> Result<Timed> {
    pace(timeout.last_end()).await;
    session.prepare(work).await?;
    if let Some(at) = not_before.filter(|at| *at > Instant::now()) {
        tokio::time::sleep_until(at.into()).await;
    }
    let before = session.stats();
    let start = Instant::now();
    // A call the client answers from memory is a plain function call, as Go's `NewSlice`
    // from its batch and `Read` of a cached chunk are: no future, no poll.
    let clocked = if session.answer_in_client(work) {
        timeout.ended(start, Ok(()), TimedPath::InClient)
    } else {
        // Pinned where it is made: the call's future is large (it holds every operation's
        // state) and handing it on by value would copy it on every call.
        let call = std::pin::pin!(session.call(work));
        let outcome = timeout.bound(start, call).await;
        timeout.ended(start, outcome, TimedPath::Call)
    };
    Ok(Timed {
        call: clocked,
        cost: session.stats().since(&before),
    })
}

/// How often a mounted client flushes its dir stats and counters (`DirStatFlushPeriod`
/// and `flushStats`' period, both 1 s in `pkg/meta/base.go`).
pub const BACKGROUND_FLUSH_EVERY: Duration = Duration::from_secs(1);

/// A mounted client's background work, run between one client's calls when its profile
/// runs it in the window: a flush of dir stats and counters every
/// [`BACKGROUND_FLUSH_EVERY`], and between flushes the data of files the last call
/// deleted, at once (JuiceFS starts `tryDeleteFileData` right after the commit); after a
/// failed free, at the next flush.
pub(crate) struct ClientBackground {
    next_flush: Instant,
    /// After a failed free, the queued files wait for the next flush rather than being
    /// tried again after every call.
    frees_held: bool,
}

/// One pass of background work: when it started, what it cost, how it ended.
pub(crate) struct BackgroundPass {
    pub start: Instant,
    pub cost: BackgroundAcc,
    pub outcome: Result<()>,
}

impl ClientBackground {
    /// Background work whose first flush is due one period after `from`.
    pub(crate) fn starting(from: Instant) -> Self {
        Self {
            next_flush: from + BACKGROUND_FLUSH_EVERY,
            frees_held: false,
        }
    }

    /// The session was replaced: its successor's frees are not held back.
    pub(crate) fn session_replaced(&mut self) {
        self.frees_held = false;
    }

    /// Runs what is due now, if anything, bounded by `op_timeout` as a call is.
    pub(crate) async fn run_due<S: Session>(
        &mut self,
        meta: &mut S,
        op_timeout: Duration,
    ) -> Option<BackgroundPass> {
        let start = Instant::now();
        let flush = start >= self.next_flush;
        if !flush && (self.frees_held || meta.deleted_pending() == 0) {
            return None;
        }
        if flush {
            self.next_flush = start + BACKGROUND_FLUSH_EVERY;
        }
        let before = meta.stats();
        let work = async {
            if flush {
                meta.flush().await
            } else {
                meta.free_deleted().await
            }
        };
        let outcome = within(op_timeout, work).await;
        let cost = meta.stats().since(&before);
        self.frees_held = outcome.is_err() && meta.deleted_pending() > 0;
        Some(BackgroundPass {
            start,
            cost: BackgroundAcc {
                runs: 1,
                round_trips: cost.round_trips,
                retries: cost.retries,
                busy: start.elapsed(),
                errors: u64::from(outcome.is_err()),
            },
            outcome,
        })
    }
}

/// Runs an untimed step of one or a few calls (a flush of what a client holds, the
/// engine settling before a window), bounded by `limit` as a timed call is: an engine
/// that stops answering there ends the step with [`MetaError::Timeout`] rather than
/// holding the run.
pub(crate) async fn within<T>(limit: Duration, step: impl Future<Output = Result<T>>) -> Result<T> {
    match tokio::time::timeout(limit, step).await {
        Ok(outcome) => outcome,
        Err(_) => Err(MetaError::Timeout(limit)),
    }
}

/// Pause between two attempts to open a fresh session while the engine does not answer.
const REOPEN_PAUSE: Duration = Duration::from_millis(100);

/// Replaces a client's session after a call left it unusable (a timeout half-way through
/// a request, a dropped connection): opens a fresh one on this thread, each attempt
/// bounded by `op_timeout`, until one opens or `give_up_at` passes (then the last
/// reason). The fresh one is a new client, or, given the worker's `client`, a fresh
/// connection of that client (as JuiceFS's pool replaces a broken connection). The old
/// session is dropped (its connection closed) once the fresh one is open; a client that
/// could not reopen keeps it, and stops.
pub(crate) async fn reopen<T: Target + ?Sized>(
    meta: &mut T::Session,
    engine: &T,
    opts: &SessionOptions,
    client: Option<&T::Client>,
    op_timeout: Duration,
    give_up_at: Instant,
) -> Result<()> {
    loop {
        let open = async {
            match client {
                Some(c) => engine.worker(opts, c).await,
                None => engine.session(opts).await,
            }
        };
        let error = match tokio::time::timeout(op_timeout, open).await {
            Ok(Ok(fresh)) => {
                *meta = fresh;
                return Ok(());
            }
            Ok(Err(e)) => e,
            Err(_) => MetaError::Timeout(op_timeout),
        };
        if Instant::now() + REOPEN_PAUSE >= give_up_at {
            return Err(error);
        }
        tokio::time::sleep(REOPEN_PAUSE).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clock's own part is measured (clock reads cost time: never 0 on a real clock)
    /// and taken off a call's span, whatever the call, down to zero and no further.
    #[tokio::test(flavor = "current_thread")]
    async fn the_clock_reads_part_is_taken_off_every_span() {
        let overheads = clock_overhead();
        for overhead in [overheads.call, overheads.in_client] {
            assert!(overhead > Duration::ZERO && overhead < Duration::from_micros(50));
        }
        let overhead = overheads.call;
        let mut timeout = OpTimeout::new(Duration::from_secs(1));
        let slow = timeout
            .time(async {
                tokio::time::sleep(Duration::from_millis(2)).await;
                Ok(())
            })
            .await;
        assert_eq!(slow.elapsed(), slow.end - slow.start - overhead);
        assert!(slow.elapsed() >= Duration::from_millis(2) - overhead);
        for _ in 0..1000 {
            let at_once = timeout.time(async { Ok(()) }).await;
            assert_eq!(
                at_once.elapsed(),
                (at_once.end - at_once.start).saturating_sub(overhead)
            );
        }
    }

    /// A session whose calls its client answers from memory while `in_memory` lasts,
    /// and makes as futures after that.
    struct AnsweredFromMemory {
        in_memory: u32,
        futures: u32,
    }

    impl Session for AnsweredFromMemory {
        type Dir = u64;
        type Work = ();

        async fn mkdir(&mut self, _: &u64, _: &str) -> Result<u64> {
            Ok(0)
        }

        async fn remove_tree(&mut self, _: &u64, _: &str) -> Result<()> {
            Ok(())
        }

        async fn setup(&mut self, _: crate::catalog::Op, _: &u64, _: &str) -> Result<()> {
            Ok(())
        }

        async fn prepare(&mut self, _: &mut ()) -> Result<()> {
            Ok(())
        }

        fn answer_in_client(&mut self, _: &mut ()) -> bool {
            let Some(left) = self.in_memory.checked_sub(1) else {
                return false;
            };
            self.in_memory = left;
            true
        }

        fn call<'a>(&'a mut self, _: &'a mut ()) -> impl Future<Output = Result<()>> + Send + 'a {
            self.futures += 1;
            std::future::ready(Ok(()))
        }

        fn stats(&self) -> SessionStats {
            SessionStats::default()
        }

        async fn flush(&mut self) -> Result<()> {
            Ok(())
        }

        async fn null_round_trip(&mut self) -> Result<&'static str> {
            Ok("nothing")
        }

        fn deleted_pending(&mut self) -> usize {
            0
        }

        async fn free_deleted(&mut self) -> Result<()> {
            Ok(())
        }
    }

    /// The one timing path times a call the client answers from memory as a plain
    /// function call, with no future made, and takes that path's own part off its span;
    /// a call the client cannot answer is made as a future and loses the future path's.
    #[tokio::test(flavor = "current_thread")]
    async fn calls_answered_from_memory_are_timed_without_a_future() {
        let mut session = AnsweredFromMemory {
            in_memory: 2,
            futures: 0,
        };
        let mut timeout = OpTimeout::new(Duration::from_secs(1));
        let mut paths = Vec::new();
        for _ in 0..3 {
            let timed = timed_call(&mut (), &mut session, &mut timeout, None)
                .await
                .unwrap();
            let call = timed.call;
            assert!(call.outcome.is_ok());
            assert_eq!(
                call.elapsed(),
                (call.end - call.start).saturating_sub(clock_overhead().of(call.path))
            );
            paths.push(call.path);
        }
        assert_eq!(
            paths,
            [TimedPath::InClient, TimedPath::InClient, TimedPath::Call]
        );
        assert_eq!(session.futures, 1, "only the call not answered from memory");
    }

    /// One timer serves every call of a client: armed once and re-armed when it fires
    /// early, it bounds each call from its own start, fires for a call that never ends,
    /// and is armed again for the calls after that.
    #[tokio::test(flavor = "current_thread")]
    async fn one_op_timeout_bounds_every_call_from_its_own_start() {
        let limit = Duration::from_millis(100);
        let mut timeout = OpTimeout::new(limit);
        // Calls that end at once, many in a row.
        for _ in 0..1000 {
            assert!(timeout
                .bound(Instant::now(), async { Ok(()) })
                .await
                .is_ok());
        }
        // Calls of 60 ms each: well past the first call's deadline in all, each within
        // its own limit.
        for _ in 0..4 {
            let slow = tokio::time::sleep(Duration::from_millis(60));
            let ended = timeout
                .bound(Instant::now(), async {
                    slow.await;
                    Ok(())
                })
                .await;
            assert!(ended.is_ok(), "{ended:?}");
        }
        // A call that never ends: a timeout, at the limit.
        let start = Instant::now();
        let ended = timeout
            .bound(start, std::future::pending::<Result<()>>())
            .await;
        assert!(
            matches!(ended, Err(MetaError::Timeout(l)) if l == limit),
            "{ended:?}"
        );
        assert!(start.elapsed() >= limit, "{:?}", start.elapsed());
        // And the next call is bounded again.
        assert!(timeout
            .bound(Instant::now(), async { Ok(()) })
            .await
            .is_ok());
        let start = Instant::now();
        let ended = timeout
            .bound(start, std::future::pending::<Result<()>>())
            .await;
        assert!(matches!(ended, Err(MetaError::Timeout(_))), "{ended:?}");
        assert!(start.elapsed() >= limit, "{:?}", start.elapsed());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_thread_that_never_yields_shows_as_lag() {
        let _alone = SCHEDULING.lock().await;
        // Hold the only client thread for 50 ms without ever yielding.
        let (lags, _) = lags_of_a_lone_client(async {
            let until = Instant::now() + Duration::from_millis(50);
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        })
        .await;
        assert!(
            lags.max() >= Duration::from_millis(30).as_nanos() as u64,
            "max lag {} ns",
            lags.max()
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn an_in_process_engines_calls_are_not_the_clients_lag() {
        let _alone = SCHEDULING.lock().await;
        // Five 30 ms calls of an in-process engine hold the only client thread, one
        // after the other, as SQLite's statements hold theirs; the client yields between
        // them. Without leaving the engine's time out, the probe would wait ~30 ms.
        let (lags, engine) = lags_of_a_lone_client(async {
            for _ in 0..5 {
                in_process::metered(|| std::thread::sleep(Duration::from_millis(30)));
                tokio::task::yield_now().await;
            }
        })
        .await;
        assert!(engine >= Duration::from_millis(150), "{engine:?}");
        assert!(!lags.is_empty(), "no lag recorded");
        assert!(
            lags.max() < Duration::from_millis(10).as_nanos() as u64,
            "max lag {} ns: the engine's calls were counted",
            lags.max()
        );
    }

    #[tokio::test]
    async fn client_threads_bound_to_a_cpu_run_there_alone() {
        let ours = crate::placement::this_thread_cpus();
        let cpu = *ours.last().expect("this thread may run somewhere");
        let exec = Exec::on_cpus(2, Idle::Sleep, &[cpu]).unwrap();
        assert_eq!(exec.threads(), 2);
        assert_eq!(exec.cpus(), [cpu]);
        for client in 0..2 {
            let allowed = exec
                .spawn(client, async { crate::placement::this_thread_cpus() })
                .await
                .unwrap();
            assert_eq!(allowed, [cpu], "client {client}'s thread");
        }
        let placed_by_the_kernel = Exec::new(1, Idle::Sleep).unwrap();
        assert!(placed_by_the_kernel.cpus().is_empty());
        let allowed = placed_by_the_kernel
            .spawn(0, async { crate::placement::this_thread_cpus() })
            .await
            .unwrap();
        assert_eq!(allowed, ours);
        // A CPU this process may not use is refused, with the CPU named.
        // The self-check's cores: those the threads running the clients can use.
        assert_eq!(exec.cores_running(2), 1, "two threads on one CPU");
        assert_eq!(
            placed_by_the_kernel.cores_running(8),
            1,
            "one thread, one core"
        );
        let two = Exec::new(2, Idle::Sleep).unwrap();
        assert_eq!(two.cores_running(1), 1);
        assert_eq!(two.cores_running(2), 2.min(ours.len()));
        let refused = Exec::on_cpus(1, Idle::Sleep, &[libc::CPU_SETSIZE as usize - 1]);
        let error = refused.err().expect("no such CPU").to_string();
        assert!(error.contains("CPU 1023"), "{error}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_parked_thread_is_not_woken_by_the_probe() {
        let _alone = SCHEDULING.lock().await;
        let exec = Exec::new(1, Idle::Sleep).unwrap();
        // Its only client waits on a timer: the thread parks until the timer fires.
        let client = exec.spawn(0, tokio::time::sleep(Duration::from_millis(500)));
        let parked = exec.workers[0].parked.clone();
        let since = Instant::now();
        while !parked.load(Ordering::Acquire) {
            assert!(
                since.elapsed() < Duration::from_secs(5),
                "the thread never parked"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // Parked is set just before the thread goes to sleep: let it get there.
        tokio::time::sleep(Duration::from_millis(10)).await;
        let probe = exec.lag_probe(1);
        tokio::time::sleep(LAG_PROBE_INTERVAL * 8).await;
        let lags = probe.finish();
        assert!(
            parked.load(Ordering::Acquire),
            "the thread woke during the probe"
        );
        client.await.unwrap();
        // Every tick found it asleep and recorded no wait (it never ran, so it never waited
        // for a CPU either); a task handed to it would have waited for the thread to wake
        // (µs at least).
        assert!(lags.len() >= 5, "{} probes", lags.len());
        assert_eq!(lags.max(), 0, "a probe woke the parked thread");
    }

    /// Runs `client` alone on one client thread under a lag probe, until it ends and 5 ms
    /// more: the lags the probe saw, and the thread's in-process engine time.
    async fn lags_of_a_lone_client(
        client: impl Future<Output = ()> + Send + 'static,
    ) -> (Histogram<u64>, Duration) {
        let exec = Exec::new(1, Idle::Sleep).unwrap();
        let probe = exec.lag_probe(1);
        exec.spawn(0, client).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        (probe.finish(), exec.engine_time())
    }

    /// Held by the tests that measure how their threads are scheduled, so that none of
    /// them runs beside another's CPU hogs or timing.
    static SCHEDULING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    fn pin_and_nice(cpu: usize, nice: libc::c_int) {
        crate::placement::bind_this_thread(cpu).expect("pinned");
        // SAFETY: setpriority only reads what we pass; `0` is the calling thread.
        let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS as _, 0, nice) };
        assert_eq!(rc, 0, "niceness {nice}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_woken_thread_that_waits_for_a_cpu_shows_as_lag() {
        let _alone = SCHEDULING.lock().await;
        let exec = Exec::new(1, Idle::Sleep).unwrap();
        let sched = exec.workers[0]
            .sched
            .clone()
            .expect("the kernel keeps each thread's scheduler statistics");
        let turns = move || sched.turns().expect("readable");
        let cpu = crate::placement::this_thread_cpus()[0];
        // A thread that never sleeps holds that CPU ...
        let stop = Arc::new(AtomicBool::new(false));
        let (pinned, hog_pinned) = std::sync::mpsc::sync_channel(1);
        let hog = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                pin_and_nice(cpu, 0);
                pinned.send(()).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        hog_pinned.recv().unwrap();
        // ... and the client thread shares it at the lowest priority. Its client sleeps
        // 1 ms at a time: each timer wakes the thread, which then waits behind the hog
        // for its turn. It is parked at nearly every look of the probe, woken or not.
        // Each wake also works 50 µs, so that the thread uses up its small share of the
        // CPU: a wake that does next to nothing (an optimised build) keeps credit with the
        // kernel's scheduler, and waited 28 and 71 µs a turn in 2 runs of 10.
        exec.spawn(0, async move { pin_and_nice(cpu, 19) })
            .await
            .unwrap();
        let before = turns();
        let probe = exec.lag_probe(1);
        exec.spawn(0, async {
            for _ in 0..100 {
                tokio::time::sleep(Duration::from_millis(1)).await;
                let until = Instant::now() + Duration::from_micros(50);
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
            }
        })
        .await
        .unwrap();
        let lags = probe.finish();
        let per_turn = turns().mean_wait_since(before);
        stop.store(true, Ordering::Relaxed);
        hog.join().unwrap();
        assert!(
            per_turn >= 200_000,
            "the client thread waited only {per_turn} ns a turn for the CPU"
        );
        // Most looks find it parked, and what they record is its wait for a CPU: their
        // mean is about its wait per turn (when a parked thread counted 0, a few %).
        let mean = lags.mean();
        assert!(
            lags.len() >= 10 && mean >= per_turn as f64 / 2.0,
            "lag mean {mean:.0} ns over {} looks, against {per_turn} ns waited a turn",
            lags.len()
        );
    }

    /// Scheduler figures read from files the test writes, as the kernel's would read: a
    /// thread ready to run (state `R`) that has had `turns` turns on a CPU, and takes no
    /// more while the files last.
    fn ready_thread_without_turns(turns: u64) -> (SchedStat, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: String| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            File::open(path).unwrap()
        };
        let sched = SchedStat {
            schedstat: write("schedstat", format!("5000000 1000 {turns}\n")),
            stat: write(
                "stat",
                "4242 (metabench-clien) R 1 4242 4242 0\n".to_owned(),
            ),
        };
        (sched, dir)
    }

    /// A thread flagged parked that the kernel says is ready to run was woken (by a
    /// reply, say) and waits for a CPU. Still waiting when the probe stops, that wait is
    /// its lag: it has taken no turn that could report it. Its figures stand still: ready
    /// to run, and no turn taken over the 40 ms.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_thread_still_waiting_for_a_cpu_when_the_probe_stops_shows_its_wait() {
        let (sched, _files) = ready_thread_without_turns(10);
        assert_eq!(sched.runnable(), Some(true));
        let thread = ProbedThread {
            handle: tokio::runtime::Handle::current(),
            parked: Arc::new(AtomicBool::new(true)),
            sched: Some(Arc::new(sched)),
            engine_calls: Arc::new(AtomicU64::new(0)),
            look: Mutex::new(Look::default()),
        };
        let probe = LagProbe::start(vec![thread], Duration::from_millis(1));
        tokio::time::sleep(Duration::from_millis(40)).await;
        let lags = probe.finish();
        // Found woken at the first look, about 40 ms before the end: one wait that long,
        // and the intervals it spanned.
        assert!(
            lags.max() >= 30_000_000,
            "lag max {} ns over {} records",
            lags.max(),
            lags.len()
        );
        assert!(lags.len() >= 20, "{} records", lags.len());
    }

    /// A thread woken thousands of times a second is often found ready to run, above all
    /// when the probe holds its CPU (the whole process on one core). Found so again with
    /// more turns taken, it has run in between: two waits, not one since the first look.
    /// Read as one, a Redis client pinned with the probe to one core showed 7.5–107 ms of
    /// lag at one client while it made 20,000 calls a second.
    #[test]
    fn a_thread_found_ready_again_after_running_is_not_one_long_wait() {
        let at = |waited_ns, turns| Some(CpuTurns { waited_ns, turns });
        let ms = Duration::from_millis;
        let t0 = Instant::now();
        let mut look = Look::default();
        assert_eq!(look.renew(at(1_000, 10)), 0);
        // Found ready at t0, with the turns of the last reading: a wait begins.
        let first = look.parked(t0, Some(true), at(1_000, 10));
        assert!(matches!(first, ParkedLook::WaitingForCpu));
        // 10 ms on, no turn taken: the same wait, 10 ms long so far.
        let same = look.parked(t0 + ms(10), Some(true), at(1_000, 10));
        assert!(matches!(same, ParkedLook::WaitingForCpu));
        let so_far = look.still_waiting(t0 + ms(10), true, Some(true), at(1_000, 10));
        assert_eq!(so_far, Some(ms(10)));
        // 10 ms further, ready again after 200 turns, each 20 µs late: that wait ended
        // when the thread ran, and its lag is the turns' mean wait, not 20 ms.
        match look.parked(t0 + ms(20), Some(true), at(1_000 + 200 * 20_000, 210)) {
            ParkedLook::Ran(waited) => assert_eq!(waited, 20_000),
            ParkedLook::WaitingForCpu => panic!("a thread that ran read as still waiting"),
        }
        // The wait it is in now began at this look, not at the first.
        let now_waiting = look.still_waiting(t0 + ms(21), true, Some(true), at(4_001_000, 210));
        assert_eq!(now_waiting, Some(ms(1)));
        // One more turn taken, or flagged unparked: no longer that wait.
        assert_eq!(
            look.still_waiting(t0 + ms(22), true, Some(true), at(4_001_000, 211)),
            None
        );
        assert_eq!(
            look.still_waiting(t0 + ms(22), false, Some(true), at(4_001_000, 210)),
            None
        );
        // Found asleep: the mean wait of the turns since the last reading (one of 3 µs),
        // and the mark is gone.
        match look.parked(t0 + ms(30), Some(false), at(4_004_000, 211)) {
            ParkedLook::Ran(waited) => assert_eq!(waited, 3_000),
            ParkedLook::WaitingForCpu => panic!("a sleeping thread read as waiting"),
        }
        assert_eq!(
            look.still_waiting(t0 + ms(31), true, Some(true), at(4_004_000, 211)),
            None
        );
    }

    #[test]
    fn a_threads_lag_from_the_kernel_is_its_mean_wait_per_turn() {
        let before = CpuTurns {
            waited_ns: 5_000,
            turns: 7,
        };
        // A hundred wake-ups, each 10 µs late: a lag of 10 µs, not their 1 ms sum.
        let many_short = CpuTurns {
            waited_ns: 5_000 + 100 * 10_000,
            turns: 7 + 100,
        };
        assert_eq!(many_short.mean_wait_since(before), 10_000);
        // One turn, 3 ms late.
        let one_long = CpuTurns {
            waited_ns: 5_000 + 3_000_000,
            turns: 8,
        };
        assert_eq!(one_long.mean_wait_since(before), 3_000_000);
        // No turn taken: nothing waited.
        assert_eq!(before.mean_wait_since(before), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn clients_run_on_their_own_threads() {
        let exec = Exec::new(2, Idle::Sleep).unwrap();
        let names: Vec<String> = futures_join(&exec).await;
        assert_eq!(
            names,
            [
                "metabench-client-0",
                "metabench-client-1",
                "metabench-client-0"
            ]
        );
    }

    /// CPU time of the calling thread.
    fn thread_cpu_time() -> Duration {
        // SAFETY: clock_gettime only writes into the struct we pass.
        let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0, "the thread's CPU clock reads");
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    /// The CPU time a client thread spends while its only client waits 100 ms for a timer.
    async fn cpu_while_waiting(idle: Idle) -> Duration {
        let exec = Exec::new(1, idle).unwrap();
        assert_eq!(exec.idle(), idle);
        exec.spawn(0, async {
            let before = thread_cpu_time();
            tokio::time::sleep(Duration::from_millis(100)).await;
            thread_cpu_time() - before
        })
        .await
        .unwrap()
    }

    /// The CPU, over 100 ms, of the second of two client threads, which runs no client.
    async fn cpu_of_a_thread_without_clients(idle: Idle) -> Duration {
        let exec = Exec::new(2, idle).unwrap();
        assert_eq!(exec.threads_running(1), 1);
        assert_eq!(exec.threads_running(5), 2);
        let before = exec.cpu_time_without_clients(1);
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Both threads run clients: none is left out.
        assert_eq!(exec.cpu_time_without_clients(2), Duration::ZERO);
        exec.cpu_time_without_clients(1) - before
    }

    /// A busy-polling thread never sleeps, whether its clients wait or it has none (and
    /// then its CPU is measured apart, [`Exec::cpu_time_without_clients`]); a sleeping
    /// one uses next to nothing either way.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_busy_polling_thread_never_sleeps_with_or_without_clients() {
        let _alone = SCHEDULING.lock().await;
        let measured = [
            (
                "its clients waiting",
                cpu_while_waiting(Idle::Sleep).await,
                cpu_while_waiting(Idle::BusyPoll).await,
            ),
            (
                "no client",
                cpu_of_a_thread_without_clients(Idle::Sleep).await,
                cpu_of_a_thread_without_clients(Idle::BusyPoll).await,
            ),
        ];
        for (thread, sleeping, polling) in measured {
            assert!(
                sleeping < Duration::from_millis(20),
                "{thread}: {sleeping:?}"
            );
            assert!(
                polling >= Duration::from_millis(50),
                "{thread}: {polling:?}"
            );
        }
    }

    /// A busy-polling thread's busy time over a client's 100 ms: the client's, not the
    /// polling's. A client that waits on a timer leaves its thread nearly idle, though the
    /// thread polls all along; one whose calls never wait (it works, yielding every
    /// [`YIELD_EVERY`] as such clients do in [`pace`]) keeps it busy the whole time.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_polling_threads_busy_time_is_its_clients_work_not_its_polls() {
        let _alone = SCHEDULING.lock().await;
        let busy_over_100ms = |never_waits: bool| async move {
            let exec = Exec::new(1, Idle::BusyPoll).unwrap();
            let before = exec.busy_time(1);
            exec.spawn(0, async move {
                let end = Instant::now() + Duration::from_millis(100);
                if never_waits {
                    while Instant::now() < end {
                        let turn = Instant::now() + YIELD_EVERY;
                        while Instant::now() < turn {
                            std::hint::spin_loop();
                        }
                        tokio::task::yield_now().await;
                    }
                } else {
                    tokio::time::sleep_until(end.into()).await;
                }
            })
            .await
            .unwrap();
            exec.busy_time(1) - before
        };
        let waiting = busy_over_100ms(false).await;
        let never_waiting = busy_over_100ms(true).await;
        assert!(waiting < Duration::from_millis(15), "{waiting:?}");
        assert!(
            never_waiting >= Duration::from_millis(90),
            "{never_waiting:?}"
        );
    }

    async fn futures_join(exec: &Exec) -> Vec<String> {
        let mut out = Vec::new();
        for i in 0..3 {
            let name = exec
                .spawn(i, async {
                    std::thread::current().name().unwrap_or_default().to_owned()
                })
                .await
                .unwrap();
            out.push(name);
        }
        out
    }
}
