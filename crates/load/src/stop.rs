//! The stop a user asks for (Ctrl-C): every runner holds the flag and stops at its next
//! call boundary.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// Set when the user asked to stop (Ctrl-C); runners stop at the next call boundary.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    stopped: AtomicBool,
    /// Wakes the tasks waiting in [`StopFlag::stopped`].
    told: Notify,
}

impl StopFlag {
    /// Asks every runner holding this flag to stop.
    pub fn stop(&self) {
        self.0.stopped.store(true, Ordering::SeqCst);
        self.0.told.notify_waiters();
    }

    /// Whether a stop was asked.
    pub fn is_stopped(&self) -> bool {
        self.0.stopped.load(Ordering::SeqCst)
    }

    /// Returns once a stop is asked, without polling: thousands of clients may wait on
    /// it at once and cost nothing until then.
    pub async fn stopped(&self) {
        loop {
            let told = self.0.told.notified();
            tokio::pin!(told);
            // Registered before the flag is read, so a stop in between is not missed.
            told.as_mut().enable();
            if self.is_stopped() {
                return;
            }
            told.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_waiter_hears_the_stop_and_a_late_one_returns_at_once() {
        let stop = StopFlag::default();
        let waiter = tokio::spawn({
            let stop = stop.clone();
            async move { stop.stopped().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        stop.stop();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .unwrap();
        tokio::time::timeout(Duration::from_secs(1), stop.stopped())
            .await
            .expect("already stopped");
    }
}
