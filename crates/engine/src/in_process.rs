//! The time an in-process engine (SQLite) spends in its calls on the thread that makes
//! them. Such an engine does its work on metabench's client threads: that time is the
//! engine's, not the generator's, and the generator's self-check must tell the two apart.
//!
//! A client thread hands this module a meter ([`meter_calls_on_this_thread`]); every
//! in-process engine call it then runs adds its time to it, two clock reads a call.
//! A thread without a meter runs its calls untouched. memkv is not metered: it is
//! metabench's own store, there to show the client's cost, and its time is the client's.

use std::cell::OnceCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

thread_local! {
    /// The calling thread's meter: ns of in-process engine calls, if it keeps one.
    static METER: OnceCell<Arc<AtomicU64>> = const { OnceCell::new() };
}

/// Makes the calling thread add the time of each in-process engine call it runs to
/// `meter`, in ns, from now on (the first meter a thread is given stays its meter).
pub fn meter_calls_on_this_thread(meter: Arc<AtomicU64>) {
    METER.with(|m| {
        let _ = m.set(meter);
    });
}

/// Runs `call`, one in-process engine call, adding its time to the calling thread's
/// meter if it has one. The time is the call's wall time: a wait on the disk inside it
/// (a WAL checkpoint's fsync) counts, as it holds the thread as much as the engine's CPU.
pub fn metered<T>(call: impl FnOnce() -> T) -> T {
    METER.with(|m| match m.get() {
        None => call(),
        Some(meter) => {
            let start = Instant::now();
            let out = call();
            meter.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
            out
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_metered_thread_adds_each_calls_time_and_others_add_nothing() {
        let meter = Arc::new(AtomicU64::new(0));
        let unmetered = std::thread::spawn(|| metered(|| 7)).join().unwrap();
        assert_eq!(unmetered, 7);
        let m = meter.clone();
        std::thread::spawn(move || {
            // Before the thread has a meter: not counted.
            metered(|| std::thread::sleep(Duration::from_millis(200)));
            meter_calls_on_this_thread(m);
            for _ in 0..3 {
                metered(|| std::thread::sleep(Duration::from_millis(5)));
            }
        })
        .join()
        .unwrap();
        let counted = Duration::from_nanos(meter.load(Ordering::Relaxed));
        assert!(counted >= Duration::from_millis(15), "{counted:?}");
        assert!(counted < Duration::from_millis(200), "{counted:?}");
    }
}
