//! The `ops` runner: every operation in turn on one client, as JuiceFS's Go benchmark
//! runs them (untimed setup, one untimed call as Go's `b.N = 1` run, timed calls), with an
//! HdrHistogram per operation.

use crate::catalog::{Op, OpState};
use crate::client::{reopen, within, ClientBackground};
use crate::stats::histogram;
use crate::stop::StopFlag;
use crate::timing::{timed_call, OpTimeout, Timed};
use metabench_engine::namespace::remove_tree;
use metabench_engine::{Ctx, Engine, Meta, MetaError, Result, SessionOptions};
use metabench_report::Latency;
use metabench_report::{ClientLag, OpResult, RunFailure};
use metabench_schema::Ino;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How much of each operation to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// Exactly this many timed calls.
    Iterations(u64),
    /// Timed calls until their summed time reaches this (like `go test -benchtime`).
    Duration(Duration),
}

/// Upper bound on calls in duration mode, so a very fast operation cannot run forever.
const MAX_CALLS: u64 = 10_000_000;

/// Consecutive failures after which an operation is abandoned.
const MAX_CONSECUTIVE_ERRORS: u32 = 10;

/// What to run.
#[derive(Debug, Clone)]
pub struct OpsConfig {
    /// Operations, in order.
    pub ops: Vec<Op>,
    /// How much of each.
    pub budget: Budget,
    /// How sessions are opened (the caches also change the notes), and the fresh session
    /// that replaces one a failed call left unusable.
    pub session: SessionOptions,
    /// Whether the session's background work runs between the calls (the mount
    /// profile), untimed, rather than once after each operation's calls.
    pub background_in_window: bool,
    /// How long one call may take: a call without an answer by then counts as a
    /// `timeout` error and the run continues on a fresh session.
    pub op_timeout: Duration,
    /// Untimed calls for this long before each operation's timed ones (after its one
    /// untimed call), as a sweep's warm-up comes before its window. Zero, as Go's
    /// benchmark with a fixed `-benchtime=Nx`, makes the one untimed call alone.
    pub warmup: Duration,
    /// The volume's tree the read operations draw their targets from (`--tree`); `None`:
    /// they read what their setup made.
    pub tree: Option<std::sync::Arc<crate::population::Population>>,
}

/// What an `ops` run produced.
#[derive(Debug, Default)]
pub struct OpsOutcome {
    /// The operations measured, in order.
    pub results: Vec<OpResult>,
    /// Set when the engine failed mid-run: the operation it failed in, whose result is
    /// not in `results`.
    pub failure: Option<RunFailure>,
}

/// The `ops` client thread's scheduling lag from a [`crate::exec::LagProbe`] that ran
/// beside its operations, flagged as a sweep level is when its p99 passes
/// [`crate::sweep::CLIENT_LAG_LIMIT`]; None when the probe took no sample.
pub fn client_lag(lags: &hdrhistogram::Histogram<u64>) -> Option<ClientLag> {
    if lags.is_empty() {
        return None;
    }
    let p99_ns = lags.value_at_quantile(0.99);
    let p99 = Duration::from_nanos(p99_ns);
    let reason = (p99 > crate::sweep::CLIENT_LAG_LIMIT).then(|| {
        format!(
            "scheduling lag p99 {:.1} ms: calls ready to go on waited that long for the client thread (for metabench's own work on it, or for a core, behind other processes on the same cores, an engine on this machine among them), and some of that wait is in their figures",
            p99.as_secs_f64() * 1000.0
        )
    });
    Some(ClientLag {
        samples: lags.len(),
        // Both by one conversion: with few samples the p99 is the largest, and must not
        // read a rounding above it.
        p99_us: p99_ns as f64 / 1000.0,
        max_us: lags.max() as f64 / 1000.0,
        reason,
    })
}

/// Runs the operations one after the other in directory `base`, each in a directory of
/// its own that is removed afterwards. `progress` hears about each finished operation.
/// Returns the results gathered so far when `stop` is set. A call that leaves the session
/// unusable (a timeout, a dropped connection) is counted and `meta` is replaced by a
/// fresh session of `engine`; when none can be had (or the engine fails otherwise), the
/// run ends with the operations measured so far and the failure.
pub async fn run_ops(
    meta: &mut Box<dyn Meta>,
    engine: &(dyn Engine + 'static),
    base: Ino,
    config: &OpsConfig,
    stop: &StopFlag,
    mut progress: impl FnMut(&OpResult),
) -> OpsOutcome {
    let mut outcome = OpsOutcome::default();
    for &op in &config.ops {
        if stop.is_stopped() {
            break;
        }
        match run_one(meta, engine, base, op, config, stop).await {
            Ok(result) => {
                progress(&result);
                outcome.results.push(result);
            }
            Err(e) => {
                outcome.failure = Some(RunFailure::at(
                    engine.kind().name(),
                    1,
                    op.name(),
                    op.name(),
                    &e,
                ));
                break;
            }
        }
    }
    outcome
}

/// Replaces the one client's session, which a call left unusable, with a fresh client,
/// trying for one op timeout ([`reopen`]). Boxed, with its `Send` proven here: proven
/// inside the runner's future, it would have to hold for every lifetime of `engine`,
/// which the compiler cannot show for a generic call (rust-lang/rust#110338).
fn fresh_session<'a>(
    meta: &'a mut Box<dyn Meta>,
    engine: &'a (dyn Engine + 'static),
    config: &'a OpsConfig,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send + 'a>> {
    let give_up_at = Instant::now() + config.op_timeout;
    Box::pin(reopen(
        meta,
        engine,
        &config.session,
        None,
        config.op_timeout,
        give_up_at,
    ))
}

async fn run_one(
    meta: &mut Box<dyn Meta>,
    engine: &(dyn Engine + 'static),
    base: Ino,
    op: Op,
    config: &OpsConfig,
    stop: &StopFlag,
) -> Result<OpResult> {
    let dir_name = format!("bench-{}", op.name()).into_bytes();
    let note = op.note(config.session.client_cache).map(str::to_owned);
    let tree_note = config
        .tree
        .as_ref()
        .zip(op.tree_pool())
        .map(|(t, pool)| t.note_for(pool));
    let mut result = OpResult {
        op: op.name().to_owned(),
        note: match (note, tree_note) {
            (Some(n), Some(t)) => Some(format!("{t}; {n}")),
            (n, t) => t.or(n),
        },
        ..Default::default()
    };
    let setup = async {
        let (dir, _) = meta.mkdir(&Ctx::root(), base, &dir_name, 0o755, 0).await?;
        let mut state = OpState::setup(op, meta.as_mut(), dir, "").await?;
        if let Some(tree) = &config.tree {
            state.draw_from(tree, op as u64)?;
        }
        Ok::<_, MetaError>(state)
    };
    let mut state = match setup.await {
        Ok(s) => s,
        Err(e) => {
            result.skipped = Some(format!("setup failed: {e}"));
            remove_tree(meta.as_mut(), base, &dir_name).await?;
            return Ok(result);
        }
    };
    within(config.op_timeout, meta.flush()).await?;
    within(config.op_timeout, engine.settle()).await?;

    let mut hist = histogram();
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    let (mut round_trips, mut retries, mut calls) = (0u64, 0u64, 0u64);
    let mut timed = Duration::ZERO;
    let mut consecutive_errors = 0;
    let mut op_timeout = OpTimeout::new(config.op_timeout);
    // Go's `testing` runs every benchmark once with b.N = 1 before its timed run
    // (`B.run1`), so the one-off cost of a first call falls outside the timed loop there:
    // newchunk's slice-id batch (`baseMeta.NewSlice` fetches 4096 ids), the first fetch of
    // a chunk the client then caches. One untimed call does the same here, as a sweep's
    // warm-up does. Its outcome is not recorded; a call it left unusable is replaced.
    // `--warmup` goes on with untimed calls, as a sweep's warm-up does before its window:
    // what the first calls pay (an engine's log growing, a client's caches filling)
    // stays out of the figures of both commands alike. A call the engine does not
    // support ends it: the timed loop says so.
    let warm_until = Instant::now() + config.warmup;
    while !stop.is_stopped() {
        let warm = timed_call(&mut state, meta, &mut op_timeout, None).await?;
        match &warm.call.outcome {
            Err(e) if e.breaks_session() => fresh_session(meta, engine, config).await?,
            Err(MetaError::NotSupported) => break,
            _ => {}
        }
        if Instant::now() >= warm_until {
            break;
        }
    }
    let mut background = config
        .background_in_window
        .then(|| ClientBackground::starting(Instant::now()));
    loop {
        // A mounted client's background work, untimed, between calls. It fails as a
        // mount's does, without failing the operation: logged, and a session it left
        // unusable is replaced.
        if let Some(b) = &mut background {
            if let Some(Err(e)) = b
                .run_due(meta, config.op_timeout)
                .await
                .map(|pass| pass.outcome)
            {
                tracing::warn!("background work failed: {e}");
                if e.breaks_session() {
                    fresh_session(meta, engine, config).await.map_err(|r| {
                        MetaError::Engine(format!(
                            "background work failed: {e}; no fresh session: {r}"
                        ))
                    })?;
                    b.session_replaced();
                }
            }
        }
        let done = match config.budget {
            Budget::Iterations(n) => calls >= n,
            Budget::Duration(d) => timed >= d || calls >= MAX_CALLS,
        };
        if done || stop.is_stopped() {
            break;
        }
        let Timed { call, cost, .. } = timed_call(&mut state, meta, &mut op_timeout, None).await?;
        let elapsed = call.elapsed();
        calls += 1;
        // The budget counts what the calls took, the clock's part too (as `-benchtime`
        // counts a whole loop): a call of a few ns still spends time.
        timed += call.end - call.start;
        round_trips += cost.round_trips;
        retries += cost.retries;
        match call.outcome {
            Ok(()) => {
                consecutive_errors = 0;
                let _ = hist.record(elapsed.as_nanos() as u64);
            }
            Err(MetaError::NotSupported) if calls == 1 => {
                result.skipped = Some(
                    "ENOTSUP: JuiceFS answers this only with Lua scripts loaded by a mounted client; its benchmark skips it too"
                        .to_owned(),
                );
                break;
            }
            Err(e) => {
                *errors.entry(e.kind().to_owned()).or_default() += 1;
                if e.breaks_session() {
                    fresh_session(meta, engine, config).await?;
                }
                consecutive_errors += 1;
                if consecutive_errors >= MAX_CONSECUTIVE_ERRORS {
                    result.skipped = Some(format!(
                        "abandoned after {consecutive_errors} failures in a row: {e}"
                    ));
                    break;
                }
            }
        }
    }
    within(config.op_timeout, meta.flush()).await?;
    remove_tree(meta.as_mut(), base, &dir_name).await?;

    result.latency = Latency::of(&hist);
    if calls > 0 {
        result.round_trips_per_op = round_trips as f64 / calls as f64;
        result.entries_per_call = op.entries_per_call(config.tree.as_deref());
    }
    result.retries = retries;
    result.errors = errors;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::Histogram;

    #[test]
    fn the_client_lag_of_an_ops_run_is_flagged_past_a_sweeps_limit() {
        let mut lags = Histogram::<u64>::new(3).unwrap();
        assert_eq!(client_lag(&lags), None, "no sample, no figure");
        lags.record_n(40_000, 99).unwrap();
        lags.record(9_000_000).unwrap();
        let lag = client_lag(&lags).unwrap();
        assert_eq!(lag.samples, 100);
        assert!((lag.p99_us - 40.0).abs() < 0.1, "{lag:?}");
        assert!((lag.max_us - 9000.0).abs() < 10.0, "{lag:?}");
        assert_eq!(lag.reason, None, "one late sample in 100 is under the p99");
        // With few samples the p99 is the largest, and reads as no more than it.
        for ns in (40_000..41_000).step_by(7) {
            let mut few = Histogram::<u64>::new(3).unwrap();
            few.record_n(ns, 30).unwrap();
            let lag = client_lag(&few).unwrap();
            assert!(lag.p99_us <= lag.max_us, "{ns} ns: {lag:?}");
        }
        lags.record_n(9_000_000, 5).unwrap();
        let why = client_lag(&lags).unwrap().reason.expect("flagged");
        assert!(why.starts_with("scheduling lag p99 9.0 ms"), "{why}");
    }
}
