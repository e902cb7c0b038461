//! Where the virtual clients run: one current-thread tokio runtime per client thread
//! (thread-per-core, as latte runs its workers), clients spread over them round-robin.
//!
//! A client's session is opened on the thread that will drive it, so its sockets belong
//! to that thread's reactor: a reply wakes the thread that waits for it and the task runs
//! there, with no hand-off to another thread. `ops` and `sweep` both run their clients
//! here, so they time a call the same way ([`crate::timing`]).
//!
//! The coordinator (windows, CPU time, scheduling-lag probe) stays on the caller's
//! runtime, on other OS threads, so busy clients cannot starve the measurement of
//! themselves; see [`LagProbe`] (`lag`), which reads the kernel's scheduler statistics
//! (`sched`).

mod lag;
mod sched;
#[cfg(test)]
mod tests;

pub use lag::{LagProbe, LAG_PROBE_INTERVAL};

use crate::placement::{self, usable_cores, Placement};
use crate::timing::{self, clock_overhead};
use lag::{Look, ProbedThread};
use metabench_engine::in_process;
use sched::SchedStat;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

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
    placement: Option<Placement>,
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
                    timing::thread_parked(Instant::now());
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
                    if let Some(Err(e)) = cpu.map(placement::bind_this_thread) {
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
    pub fn placed(&mut self, placement: Placement) {
        self.placement = Some(placement);
    }

    /// Where the threads were placed beside a local engine's server ([`Exec::placed`]);
    /// `None` when no server runs on this machine.
    pub fn placement(&self) -> Option<&Placement> {
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
/// reverse order, so just after a client's own yield ([`pace`](timing::pace)) one turn holds only a
/// driver poll and reads as idle: about 1 µs every [`YIELD_EVERY`](timing::YIELD_EVERY) of a client whose
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
