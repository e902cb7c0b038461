//! The client threads, the lag probe and the scheduler statistics, tested on real threads.

use super::lag::{Look, ParkedLook, ProbedThread};
use super::sched::{CpuTurns, SchedStat};
use super::*;
use crate::timing::YIELD_EVERY;
use hdrhistogram::Histogram;
use std::fs::File;

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
