//! How a call is timed: the one timing path every runner uses ([`timed_call`]), the op
//! timeout that bounds each call ([`OpTimeout`]), and the clock's own part taken off every
//! call's span ([`clock_overhead`]), so that metabench's timing is not charged to the
//! engine. The floor times its null round trips with the same clock reads and timeout
//! ([`OpTimeout::time`]).

use crate::ready_wait::ReadyWait;
use crate::target::Session;
use metabench_engine::deadline::CallDeadlines;
use metabench_engine::{MetaError, Result, SessionStats};
use std::future::Future;
use std::task::Poll;
use std::time::{Duration, Instant};

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

/// One timed call, as every runner times it (`ops`, `sweep`, at any level).
pub(crate) struct Timed {
    /// What the call returned, when it was issued and when its answer was back.
    pub call: Clocked<()>,
    /// What the call sent (round trips, retries).
    pub cost: SessionStats,
    /// How long the call, once woken, waited for its client thread ([`ReadyWait`]).
    pub ready_wait: Duration,
    /// How long its untimed preparation took ([`Session::prepare`]: an unlink's file made,
    /// a target drawn): the client's CPU in it is not the call's.
    pub prepared: Duration,
}

/// How long a client thread runs calls without going back to its scheduler at most
/// (between calls): clients whose calls never wait (SQLite in-process, memkv) would
/// otherwise hold the thread from the other clients and the lag probe.
pub(crate) const YIELD_EVERY: Duration = Duration::from_micros(200);

thread_local! {
    /// When the clients of this thread last yielded to its scheduler on purpose, or the
    /// thread last parked.
    static LAST_YIELD: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// The calling client thread parks at `now`: it has run every task it had, so its
/// clients start a new stretch of calls before [`pace`] yields on their behalf.
pub(crate) fn thread_parked(now: Instant) {
    LAST_YIELD.with(|last| last.set(Some(now)));
}

/// Yields to the thread's other tasks when it has not done so for [`YIELD_EVERY`], nor
/// parked (then every task had its turn). Clients whose calls wait on the engine park
/// their thread between replies and never yield here; those whose calls never wait
/// (SQLite in-process, memkv) yield every [`YIELD_EVERY`]. `now` is the end of the
/// client's last call when it has one: no clock read of its own between two calls.
pub(crate) async fn pace(now: Option<Instant>) {
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
    /// The client's wake-up clock: how long its calls waited for the thread.
    ready: ReadyWait,
}

impl OpTimeout {
    /// A timeout of `limit` per call.
    pub(crate) fn new(limit: Duration) -> Self {
        Self {
            limit,
            deadlines: CallDeadlines::new(),
            last_end: None,
            ready: ReadyWait::new(),
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
/// timing path's own steps, that falls between them, which can be more than JuiceFS's Go
/// client spends on a whole `NewSlice` (measurements: docs/src/history.md, "The clock's
/// own cost taken off"). Measured once per process, when the client threads start
/// ([`Exec::new`](crate::exec::Exec::new)), for each path of [`timed_call`] with the
/// timing's own functions, on [`CALIBRATION_CALLS`] calls that do
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
                    // Polled with the wake-up clock, as `timed_call` polls a call.
                    let ready = timing.ready.clone();
                    let call = ready.around(std::hint::black_box(call));
                    let outcome = timing.bound(start, call).await;
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
/// A mean, not a median: the clock reads whole ticks, so a median is always one of the
/// ticks and can move a whole tick from one process to the next, and a tick can be as
/// long as a whole `NewSlice` (measurements: docs/src/history.md, "A mean of the clock's
/// spans, not a median"). A span falls on either side of a tick boundary in proportion
/// to where it truly ends, so the mean of many spans is not quantized, and taking it off
/// keeps the mean of the calls' times unbiased.
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
/// ([`reopen`](crate::client::reopen)). Fails only when the untimed preparation does.
pub(crate) async fn timed_call<S: Session>(
    work: &mut S::Work,
    session: &mut S,
    timeout: &mut OpTimeout,
    not_before: Option<Instant>,
) -> Result<Timed> {
    pace(timeout.last_end()).await;
    let preparing = Instant::now();
    session.prepare(work).await?;
    let mut prepared = None;
    if let Some(at) = not_before.filter(|at| *at > Instant::now()) {
        prepared = Some(preparing.elapsed());
        tokio::time::sleep_until(at.into()).await;
    }
    let before = session.stats();
    let start = Instant::now();
    let prepared = prepared.unwrap_or(start - preparing);
    // A call the client answers from memory is a plain function call, as Go's `NewSlice`
    // from its batch and `Read` of a cached chunk are: no future, no poll.
    let clocked = if session.answer_in_client(work) {
        timeout.ended(start, Ok(()), TimedPath::InClient)
    } else {
        // Pinned where it is made: the call's future is large (it holds every operation's
        // state) and handing it on by value would copy it on every call.
        let call = std::pin::pin!(session.call(work));
        // Polled with the client's wake-up clock: how long it waited, once woken, for
        // the thread (two clock reads per wake-up).
        let ready = timeout.ready.clone();
        let outcome = timeout.bound(start, ready.around(call)).await;
        timeout.ended(start, outcome, TimedPath::Call)
    };
    Ok(Timed {
        call: clocked,
        cost: session.stats().since(&before),
        ready_wait: timeout.ready.take(),
        prepared,
    })
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
}
