//! What a client does beside its timed calls: a mounted client's background work
//! (dir stats, counters, deleted files' data), untimed steps bounded as a call is, and
//! the replacement of a session a call left unusable.

use crate::stats::BackgroundAcc;
use crate::target::{Session, Target};
use metabench_engine::{MetaError, Result, SessionOptions};
use std::future::Future;
use std::time::{Duration, Instant};

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
                heartbeats: cost.heartbeats,
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
