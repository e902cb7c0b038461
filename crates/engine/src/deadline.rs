//! A time limit on each of a series of calls, with one timer for the whole series.
//!
//! `tokio::time::timeout` registers a timer in the runtime's wheel on every call that
//! waits and removes it when the call ends: two trips through the time driver's lock per
//! round trip, which `redis-benchmark` and the engines' own clients do not pay. A
//! [`CallDeadlines`] arms its timer once and moves it only when it fires: a call's deadline
//! is never earlier than the previous call's (every call gets the same limit, counted from
//! its own start), so a timer armed for an earlier call can only fire early, and then it is
//! re-armed for the call in flight. A fast series costs one re-arm per limit's length,
//! and the timer is polled again only when it fired or another task waits on it.

use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Poll, Waker};
use tokio::time::{Instant, Sleep};

/// One timer shared by a series of calls, each bounded by its own deadline.
#[derive(Default)]
pub struct CallDeadlines {
    /// Made by the first call that waits; armed for that call's or a later call's deadline.
    timer: Option<Pin<Box<Sleep>>>,
    /// The waker the timer was last polled with, while it has not fired since.
    registered: Option<Waker>,
}

impl CallDeadlines {
    /// No timer yet: the first call that waits makes it.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `call` until it ends (`Some` of what it returned) or `deadline` passes
    /// (`None`; `call` is dropped). A call that ends on its first poll never touches the
    /// timer: only a call that waits can be ended by it, and that one is polled again.
    pub async fn run<F: Future>(&mut self, deadline: Instant, call: F) -> Option<F::Output> {
        let mut call = pin!(call);
        let first = std::future::poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await;
        match first {
            Poll::Ready(outcome) => Some(outcome),
            Poll::Pending => self.wait(deadline, call).await,
        }
    }

    /// What [`CallDeadlines::run`] does after the first poll: waits for `call`, which has
    /// been polled once and is waiting, until it ends or `deadline` passes. For a caller
    /// that makes the first poll itself, so that a call that returns at once goes through
    /// no future of this type.
    pub async fn wait<F: Future + ?Sized>(
        &mut self,
        deadline: Instant,
        mut call: Pin<&mut F>,
    ) -> Option<F::Output> {
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        // Deadlines only grow while the limit stays the same; a shorter limit than the
        // last call's moves the timer back at once.
        if timer.deadline() > deadline {
            timer.as_mut().reset(deadline);
            self.registered = None;
        }
        let registered = &mut self.registered;
        std::future::poll_fn(|cx| {
            if let Poll::Ready(outcome) = call.as_mut().poll(cx) {
                return Poll::Ready(Some(outcome));
            }
            // The timer keeps the waker of the task that last polled it, so it is polled
            // again only when it fired or another task waits on it: not on every wait of
            // every call, which the time driver would charge each time.
            if !timer.is_elapsed() && registered.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                return Poll::Pending;
            }
            // `will_wake` may say no for the very waker the timer holds (its clone can carry
            // another copy of the same vtable, as the waker of `block_on` does in a release
            // build): that costs one more poll of the timer, so the loop ends on what the
            // timer answers, never on `will_wake`.
            loop {
                match timer.as_mut().poll(cx) {
                    Poll::Pending => {
                        *registered = Some(cx.waker().clone());
                        return Poll::Pending;
                    }
                    Poll::Ready(()) if Instant::now() >= deadline => return Poll::Ready(None),
                    // Armed for an earlier call: re-armed for this one.
                    Poll::Ready(()) => {
                        timer.as_mut().reset(deadline);
                        *registered = None;
                    }
                }
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Deadlines whose timer a first call of 1 s, on this task, armed for its own deadline
    /// `limit` from its start.
    async fn armed_by_a_first_call(limit: Duration) -> CallDeadlines {
        let mut deadlines = CallDeadlines::new();
        let first = deadlines
            .run(
                Instant::now() + limit,
                tokio::time::sleep(Duration::from_secs(1)),
            )
            .await;
        assert_eq!(first, Some(()));
        deadlines
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_past_its_deadline_ends_there_and_not_before() {
        let limit = Duration::from_secs(10);
        let mut deadlines = armed_by_a_first_call(limit).await;
        // The second call starts 1 s later: the armed timer fires at 10 s, 1 s before
        // this call's deadline, and must not end it.
        let start = Instant::now();
        let second = deadlines
            .run(start + limit, tokio::time::sleep(Duration::from_secs(30)))
            .await;
        assert_eq!(second, None);
        assert_eq!(Instant::now() - start, limit);
        // A call that ends in time after a timeout is not ended by the fired timer.
        let start = Instant::now();
        let third = deadlines
            .run(start + limit, tokio::time::sleep(Duration::from_secs(9)))
            .await;
        assert_eq!(third, Some(()));
        assert_eq!(Instant::now() - start, Duration::from_secs(9));
    }

    #[tokio::test(start_paused = true)]
    async fn a_shorter_limit_than_the_last_call_s_is_kept() {
        let mut deadlines = CallDeadlines::new();
        let waits = deadlines
            .run(
                Instant::now() + Duration::from_secs(60),
                tokio::time::sleep(Duration::from_millis(1)),
            )
            .await;
        assert_eq!(waits, Some(()));
        let start = Instant::now();
        let short = deadlines
            .run(
                start + Duration::from_secs(2),
                tokio::time::sleep(Duration::from_secs(5)),
            )
            .await;
        assert_eq!(short, None);
        assert_eq!(Instant::now() - start, Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_waited_on_by_another_task_is_still_ended_at_its_deadline() {
        let limit = Duration::from_secs(10);
        // The timer is polled on this task for the first call…
        let deadlines = armed_by_a_first_call(limit).await;
        // …and the next call waits on another task: the timer must wake that one.
        let start = Instant::now();
        let second = tokio::spawn(async move {
            let mut deadlines = deadlines;
            deadlines
                .run(start + limit, std::future::pending::<()>())
                .await
        });
        let ended = tokio::time::timeout(2 * limit, second)
            .await
            .expect("the call on the other task is ended by its deadline");
        assert_eq!(ended.unwrap(), None);
        assert_eq!(Instant::now() - start, limit);
    }

    /// A waker that wakes `inner`, each of whose clones is a copy of its own: `will_wake`
    /// then never says yes for the waker a timer holds, which `Waker` allows (a clone of
    /// `block_on`'s waker can carry another copy of the same vtable in a release build).
    fn a_waker_never_the_same_as_its_clones(inner: &Waker) -> Waker {
        use std::task::{RawWaker, RawWakerVTable};
        static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop);
        fn raw(inner: Waker) -> RawWaker {
            RawWaker::new(Box::into_raw(Box::new(inner)).cast(), &VTABLE)
        }
        // SAFETY (each of the four): `data` is a `Box<Waker>` made by `raw` and not freed;
        // only `wake` and `drop` free it, and the waker is not used after either.
        unsafe fn clone(data: *const ()) -> RawWaker {
            raw(unsafe { &*data.cast::<Waker>() }.clone())
        }
        unsafe fn wake(data: *const ()) {
            unsafe { Box::from_raw(data.cast_mut().cast::<Waker>()) }.wake();
        }
        unsafe fn wake_by_ref(data: *const ()) {
            unsafe { &*data.cast::<Waker>() }.wake_by_ref();
        }
        unsafe fn drop(data: *const ()) {
            std::mem::drop(unsafe { Box::from_raw(data.cast_mut().cast::<Waker>()) });
        }
        // SAFETY: the vtable's functions keep the contract above.
        unsafe { Waker::from_raw(raw(inner.clone())) }
    }

    /// A waker that never `will_wake` the one the timer holds costs a poll of the timer
    /// each time, and nothing more: the wait still says "pending" (an earlier version
    /// polled the timer until `will_wake` said yes, for ever in a release build) and still
    /// ends at the deadline.
    #[test]
    fn a_waker_that_never_will_wake_the_timer_s_still_waits_and_ends_at_the_deadline() {
        let (answer, answered) = std::sync::mpsc::channel();
        // On a thread of its own, so that a wait that never returns fails the test.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            let limit = Duration::from_millis(50);
            let mut deadlines = CallDeadlines::new();
            let (polls, ended, took) = runtime.block_on(async {
                let start = Instant::now();
                let mut waits = pin!(deadlines.run(start + limit, std::future::pending::<()>()));
                let mut polls = 0;
                let ended = std::future::poll_fn(|cx| {
                    polls += 1;
                    let waker = a_waker_never_the_same_as_its_clones(cx.waker());
                    waits
                        .as_mut()
                        .poll(&mut std::task::Context::from_waker(&waker))
                })
                .await;
                (polls, ended, start.elapsed())
            });
            let _ = answer.send((polls, ended, took));
        });
        let (polls, ended, took) = answered
            .recv_timeout(Duration::from_secs(10))
            .expect("every poll of the wait returns");
        assert_eq!(ended, None);
        assert!(took >= Duration::from_millis(50), "{took:?}");
        assert!(
            polls >= 2,
            "pending once at least, then ended: {polls} polls"
        );
    }

    #[tokio::test]
    async fn a_call_that_returns_at_once_makes_no_timer() {
        let mut deadlines = CallDeadlines::new();
        let now = deadlines
            .run(Instant::now() + Duration::from_secs(1), async { 7 })
            .await;
        assert_eq!(now, Some(7));
        assert!(deadlines.timer.is_none());
    }
}
