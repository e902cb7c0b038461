//! How long a call, once woken (its reply in), waited for its client thread: the
//! breakdown's client wait, measured per call. The call's future is polled with a waker
//! of this client's own that stamps the time of each wake-up before passing it on; the
//! next poll reads the clock once more and adds the difference. A reply the thread's I/O
//! driver has not yet seen (the thread busy with other clients) is not yet a wake-up:
//! that wait is not counted here, and the breakdown leaves it unexplained.

use atomic_waker::AtomicWaker;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

/// One client's wake-up clock, made once per client: no allocation per call (a clone
/// shares it).
#[derive(Clone)]
pub(crate) struct ReadyWait {
    clock: Arc<WakeClock>,
    /// The waker the call's future is polled with ([`WakeClock`] behind it).
    waker: Waker,
}

struct WakeClock {
    /// The clock's zero: stamps are ns after it (0: no wake-up pending).
    base: Instant,
    woke: AtomicU64,
    /// ns the calls waited since [`ReadyWait::take`].
    waited: AtomicU64,
    /// The task's own waker, woken after the stamp (lock-free).
    task: AtomicWaker,
}

impl Wake for WakeClock {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let at = self.base.elapsed().as_nanos() as u64;
        self.woke.store(at.max(1), Ordering::Relaxed);
        self.task.wake();
    }
}

impl ReadyWait {
    /// A fresh clock for one client.
    pub(crate) fn new() -> Self {
        let clock = Arc::new(WakeClock {
            base: Instant::now(),
            woke: AtomicU64::new(0),
            waited: AtomicU64::new(0),
            task: AtomicWaker::new(),
        });
        let waker = Waker::from(clock.clone());
        Self { clock, waker }
    }

    /// `call`, polled with this clock's waker: the wait from each wake-up to the poll
    /// after it is added to [`ReadyWait::take`]'s figure.
    pub(crate) fn around<'a, F: Future>(
        &'a self,
        call: Pin<&'a mut F>,
    ) -> impl Future<Output = F::Output> + 'a {
        let (clock, waker) = (&self.clock, &self.waker);
        let mut call = call;
        clock.woke.store(0, Ordering::Relaxed);
        std::future::poll_fn(move |cx: &mut Context<'_>| {
            let woke = clock.woke.swap(0, Ordering::Relaxed);
            if woke != 0 {
                let now = clock.base.elapsed().as_nanos() as u64;
                clock
                    .waited
                    .fetch_add(now.saturating_sub(woke), Ordering::Relaxed);
            }
            clock.task.register(cx.waker());
            let mut ours = Context::from_waker(waker);
            match call.as_mut().poll(&mut ours) {
                Poll::Ready(v) => Poll::Ready(v),
                Poll::Pending => Poll::Pending,
            }
        })
    }

    /// The waits counted since the last take, and zero again.
    pub(crate) fn take(&self) -> Duration {
        Duration::from_nanos(self.clock.waited.swap(0, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call woken while its thread runs another task for 20 ms waits those 20 ms
    /// before it runs again; a call that is never woken waits nothing.
    #[tokio::test(flavor = "current_thread")]
    async fn a_woken_call_that_waits_for_its_thread_is_timed() {
        let ready = ReadyWait::new();
        let at_once = std::pin::pin!(async { 7 });
        assert_eq!(ready.around(at_once).await, 7);
        assert_eq!(ready.take(), Duration::ZERO);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        // Another task on this thread: answers the call, then holds the thread 20 ms.
        tokio::spawn(async move {
            tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        });
        let call = std::pin::pin!(async { rx.await.unwrap() });
        ready.around(call).await;
        let waited = ready.take();
        assert!(waited >= Duration::from_millis(19), "{waited:?}");
        assert!(waited < Duration::from_millis(500), "{waited:?}");
        assert_eq!(ready.take(), Duration::ZERO, "taken once");
    }
}
