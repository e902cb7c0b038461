//! The floor: the engine's null round trip, measured on a client's own session through
//! the same path as the timed operations (its thread, its timing, its op timeout), so a
//! reader sees how much of each operation's cost is transport and the engine's request
//! loop.

use crate::exec::Idle;
use crate::stats::histogram;
use crate::target::Session;
use crate::timing::OpTimeout;
use hdrhistogram::Histogram;
use metabench_engine::{Meta, MetaError, Result};
use metabench_report::Floor;
use metabench_report::Latency;
use std::future::Future;
use std::time::{Duration, Instant};

/// Null round trips measured at most.
pub const FLOOR_CALLS: u64 = 2000;
/// Time spent measuring at most.
pub const FLOOR_BUDGET: Duration = Duration::from_millis(300);

/// A session's null round trip, as the floor calls it (a seam for tests).
trait NullRoundTrip {
    /// [`Meta::null_round_trip`].
    fn null_round_trip(&mut self) -> impl Future<Output = Result<&'static str>>;
}

impl NullRoundTrip for dyn Meta + '_ {
    fn null_round_trip(&mut self) -> impl Future<Output = Result<&'static str>> {
        Meta::null_round_trip(self)
    }
}

/// Any target's session: its [`Session::null_round_trip`].
struct OfSession<'a, S>(&'a mut S);

impl<S: Session> NullRoundTrip for OfSession<'_, S> {
    fn null_round_trip(&mut self) -> impl Future<Output = Result<&'static str>> {
        Session::null_round_trip(self.0)
    }
}

/// Measures the engine's null round trip on `meta` ([`Meta::null_round_trip`]): up to
/// [`FLOOR_CALLS`] calls or [`FLOOR_BUDGET`], whichever ends first, after a few untimed
/// ones. Each call is timed as an operation's call is and bounded by `op_timeout`: an
/// engine that stops answering fails the floor with [`MetaError::Timeout`] rather than
/// holding the run. When the client threads sleep (`idle`), the median is measured again
/// with this thread polling instead ([`Floor::polling_p50_us`]), for half as many calls.
/// `None` when the session has no null round trip. Runs on a client thread.
pub async fn measure_floor(
    meta: &mut dyn Meta,
    op_timeout: Duration,
    idle: Idle,
) -> Result<Option<Floor>> {
    floor_of(meta, op_timeout, idle).await
}

/// [`measure_floor`] on any target's session ([`Session::null_round_trip`]).
pub async fn measure_session_floor<S: Session>(
    session: &mut S,
    op_timeout: Duration,
    idle: Idle,
) -> Result<Option<Floor>> {
    floor_of(&mut OfSession(session), op_timeout, idle).await
}

async fn floor_of<S: NullRoundTrip + ?Sized>(
    session: &mut S,
    op_timeout: Duration,
    idle: Idle,
) -> Result<Option<Floor>> {
    let mut timeout = OpTimeout::new(op_timeout);
    let request = match timeout.time(session.null_round_trip()).await.outcome {
        Ok(r) => r,
        Err(MetaError::NotSupported) => return Ok(None),
        Err(e) => return Err(e),
    };
    for _ in 0..10 {
        timeout.time(session.null_round_trip()).await.outcome?;
    }
    // The client's own CPU for each null round trip (this thread's: the floor runs on a
    // current-thread runtime), which the breakdown leaves out of the wire part because it
    // counts it in the client part.
    let cpu_start = thread_cpu_time();
    let s = Latency::of(&null_round_trips(session, &mut timeout, FLOOR_CALLS, FLOOR_BUDGET).await?);
    let client_cpu_us = thread_cpu_time()
        .zip(cpu_start)
        .filter(|_| s.count > 0)
        .map(|(end, start)| end.saturating_sub(start).as_secs_f64() * 1e6 / s.count as f64);
    let polling_p50_us = match idle {
        Idle::BusyPoll => None,
        Idle::Sleep => {
            // A sibling task that only yields keeps this thread from parking, as under
            // `--busy-poll`, until it is aborted.
            let poller = tokio::spawn(crate::exec::poll_instead_of_sleeping(None));
            let polled =
                null_round_trips(session, &mut timeout, FLOOR_CALLS / 2, FLOOR_BUDGET / 2).await;
            poller.abort();
            Some(Latency::of(&polled?).p50_us)
        }
    };
    Ok(Some(Floor {
        request: request.to_owned(),
        count: s.count,
        mean_us: s.mean_us,
        p50_us: s.p50_us,
        p99_us: s.p99_us,
        polling_p50_us,
        client_cpu_us,
        // The engine's own time on it is read around the floor by the sweep, which holds
        // the engine's administration connection.
        engine_us: None,
    }))
}

/// The calling thread's CPU time, if the kernel says.
fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// Up to `calls` timed null round trips within `budget`.
async fn null_round_trips<S: NullRoundTrip + ?Sized>(
    session: &mut S,
    timeout: &mut OpTimeout,
    calls: u64,
    budget: Duration,
) -> Result<Histogram<u64>> {
    let mut hist = histogram();
    let until = Instant::now() + budget;
    while hist.len() < calls && Instant::now() < until {
        let clocked = timeout.time(session.null_round_trip()).await;
        let elapsed = clocked.elapsed();
        clocked.outcome?;
        let _ = hist.record(elapsed.as_nanos() as u64);
    }
    Ok(hist)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine that answers `answers` null round trips, then none.
    struct FreezesAfter {
        answers: u32,
    }

    impl NullRoundTrip for FreezesAfter {
        fn null_round_trip(&mut self) -> impl Future<Output = Result<&'static str>> {
            let answer = self.answers > 0;
            self.answers = self.answers.saturating_sub(1);
            async move {
                if !answer {
                    std::future::pending::<()>().await;
                }
                Ok("PING")
            }
        }
    }

    /// A floor on an engine that stops answering ends in a timeout, after the op
    /// timeout, rather than holding the run; one that answers gives its figures.
    #[tokio::test(flavor = "current_thread")]
    async fn a_frozen_engine_fails_the_floor_at_the_op_timeout() {
        let limit = Duration::from_millis(200);
        let started = Instant::now();
        let floor = floor_of(&mut FreezesAfter { answers: 20 }, limit, Idle::Sleep).await;
        let took = started.elapsed();
        assert!(
            matches!(floor, Err(MetaError::Timeout(l)) if l == limit),
            "{floor:?}"
        );
        assert!(took >= limit && took < limit * 10, "took {took:?}");

        let floor = floor_of(
            &mut FreezesAfter { answers: u32::MAX },
            limit,
            Idle::BusyPoll,
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(floor.request, "PING");
        assert!(floor.count > 0 && floor.p99_us < 200_000.0, "{floor:?}");
    }

    /// Sleeping client threads also get the floor's median with the thread polling, from
    /// half as many more calls; the polling task is gone afterwards. Busy-polling ones
    /// poll already: no second figure, no more calls.
    #[tokio::test(flavor = "current_thread")]
    async fn a_sleeping_client_measures_the_floor_polling_too_and_stops_polling() {
        let limit = Duration::from_secs(5);
        let untimed = 1 + 10;
        let mut engine = FreezesAfter { answers: u32::MAX };
        let floor = floor_of(&mut engine, limit, Idle::Sleep)
            .await
            .unwrap()
            .unwrap();
        let calls = u64::from(u32::MAX - engine.answers);
        assert_eq!(calls, untimed + FLOOR_CALLS + FLOOR_CALLS / 2);
        assert!(
            floor.polling_p50_us.is_some_and(|p| p < 200_000.0),
            "{floor:?}"
        );
        tokio::task::yield_now().await;
        let tasks = tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks();
        assert_eq!(tasks, 0, "the polling task was left running");

        let mut engine = FreezesAfter { answers: u32::MAX };
        let floor = floor_of(&mut engine, limit, Idle::BusyPoll)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(u64::from(u32::MAX - engine.answers), untimed + FLOOR_CALLS);
        assert_eq!(floor.polling_p50_us, None);
    }
}
