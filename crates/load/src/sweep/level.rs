//! A level's figures: each operation's summary of its accumulators, the floor, the
//! engine's telemetry, and rank 0's decision whether the sweep goes on.

use super::config::{
    IntervalHistograms, SweepConfig, SweepOutcome, ACHIEVED_SHARE, CLIENT_CPU_LIMIT,
    PLATEAU_GROWTH, PLATEAU_LEVELS, POOL_BUSY_LIMIT, TELEMETRY_TIMEOUT,
};
use crate::catalog::Op;
use crate::exec::Exec;
use crate::stats::{histogram, us, OpAcc};
use crate::target::Target;
use metabench_engine::{EngineTime, MetaError, Result, Telemetry};
use metabench_report::analysis::{plateaued, Point};
use metabench_report::Latency;
use metabench_report::{
    Breakdown, EngineCheck, Floor, IntervalSample, Level, LevelOp, RunFailure, ServiceTime,
};
use std::collections::BTreeMap;
use std::time::Duration;

pub(super) fn level_op(op: Op, phase: &str, acc: &OpAcc, window: Duration) -> LevelOp {
    let mut r = LevelOp {
        op: op.name().to_owned(),
        phase: phase.to_owned(),
        errors: acc.errors.clone(),
        retries: acc.retries,
        ..Default::default()
    };
    if acc.calls > 0 {
        r.round_trips_per_op = acc.round_trips as f64 / acc.calls as f64;
    }
    r.in_flight_at_end = acc.in_flight_at_end;
    r.failed_max_us = us(acc.failed_max.as_nanos() as u64);
    r.window_s = window.as_secs_f64();
    if let Some(h) = &acc.hist {
        r.latency = Latency::of(h);
        r.ops_per_s = r.latency.count as f64 / window.as_secs_f64();
    }
    r.service = acc.service.as_ref().map(|h| {
        let s = Latency::of(h);
        ServiceTime {
            mean_us: s.mean_us,
            p50_us: s.p50_us,
            p99_us: s.p99_us,
            max_us: s.max_us,
            histogram: s.histogram.unwrap_or_default(),
        }
    });
    r.breakdown = call_parts(acc, &r);
    let seconds = acc.intervals.len().max(acc.error_intervals.len());
    let empty = histogram();
    r.intervals = (0..seconds)
        .map(|i| (i, acc.intervals.get(i).unwrap_or(&empty)))
        .map(|(i, h)| IntervalSample {
            count: h.len(),
            errors: acc.error_intervals.get(i).copied().unwrap_or(0),
            mean_us: if h.is_empty() { 0.0 } else { h.mean() / 1000.0 },
            p99_us: us(h.value_at_quantile(0.99)),
            service_p99_us: acc
                .service_intervals
                .get(i)
                .map(|s| us(s.value_at_quantile(0.99))),
        })
        .collect();
    r
}

/// The parts of the breakdown the sessions timed per call (lock wait, retry waste, an
/// in-process engine's time) and the Redis commands sent per call; the level's parts
/// are added by [`complete_breakdowns`]. None without a successful call.
fn call_parts(acc: &OpAcc, op: &LevelOp) -> Option<Breakdown> {
    let parts = &acc.parts;
    if parts.calls == 0 {
        return None;
    }
    let per_call = |ns: u64| us(ns) / parts.calls as f64;
    // A retried attempt's commands and statements are in the retry waste, not in the
    // engine part: the commands are scaled by the round trips kept (a failed attempt
    // sends about what a successful one does), SQLite's time is taken off exactly.
    let kept = parts.round_trips.saturating_sub(parts.retried_round_trips);
    let kept_share = if parts.round_trips > 0 {
        kept as f64 / parts.round_trips as f64
    } else {
        1.0
    };
    let engine_ns = parts.engine_ns.saturating_sub(parts.retried_engine_ns);
    Some(Breakdown {
        // An open loop's latency runs from the intended start: the call is its service.
        mean_us: op
            .service
            .as_ref()
            .map_or(op.latency.mean_us, |s| s.mean_us),
        lock_wait_us: Some(per_call(parts.lock_wait_ns)),
        retry_waste_us: Some(per_call(parts.retry_waste_ns)),
        client_wait_us: Some(per_call(parts.ready_wait_ns)),
        engine_us: (parts.engine_ns > 0).then(|| per_call(engine_ns)),
        round_trips_per_op: kept as f64 / parts.calls as f64,
        prepares_per_op: parts.prepare_round_trips as f64 * kept_share / parts.calls as f64,
        commands_per_op: parts
            .commands
            .named()
            .map(|(name, n)| (name.to_owned(), n as f64 * kept_share / parts.calls as f64))
            .collect(),
        ..Default::default()
    })
}

/// Sets the client part of the breakdown of a phase's operations `ops`: the process's
/// CPU over the phase's window that its calls account for (`cpu`: the background work's
/// share taken off by the caller) per call (`calls`, per phase). Unknown with an
/// in-process engine (SQLite), whose CPU is the process's too and is not told apart (its
/// statements' wall time includes its waits on the disk).
pub(super) fn phase_client_cpu(ops: &mut [LevelOp], cpu: Duration, calls: u64) {
    if calls == 0 || cpu.is_zero() {
        return;
    }
    let per_call = cpu.as_secs_f64() * 1e6 / calls as f64;
    for op in ops {
        if let Some(b) = op.breakdown.as_mut() {
            b.client_us = b.engine_us.is_none().then_some(per_call);
        }
    }
}

/// Completes each operation's breakdown with the level's parts: the engine's own time
/// from the telemetry deltas of the operation's phase in `phases` (or the in-process time
/// the sessions timed) and the wire (round trips × [`Floor::wire_per_round_trip_us`]); then the
/// unexplained rest. A phase is missing from `phases` when its counters were not read.
pub(super) fn complete_breakdowns<T: Target + ?Sized>(
    level: &mut Level,
    engine: &T,
    phases: &BTreeMap<String, Telemetry>,
    floor: Option<&Floor>,
) {
    let unread = Telemetry::default();
    for op in &mut level.ops {
        let Some(b) = op.breakdown.as_mut() else {
            continue;
        };
        let in_process = b.engine_us.is_some();
        let delta = phases.get(&op.phase).unwrap_or(&unread);
        match engine.engine_time(delta, &b.commands_per_op, b.engine_us, b.round_trips_per_op) {
            EngineTime::Known(us, source) => {
                b.engine_us = Some(us);
                b.engine_source = source;
            }
            EngineTime::Unknown(why) => {
                b.engine_us = None;
                b.engine_source = why;
            }
        }
        // A MySQL statement's prepare is an exchange on the wire of its own.
        let round_trips = b.round_trips_per_op + b.prepares_per_op;
        // An in-process engine (SQLite) has no wire: its statements' whole time, each
        // statement's own overhead included, is the engine part.
        b.wire_us = if in_process {
            Some(0.0)
        } else {
            floor.map(|f| f.wire_per_round_trip_us() * round_trips)
        };
        b.explain();
    }
}

/// Why an open loop stops after `level`: the engine no longer keeps up with the offered
/// rate, or its p99 (from the intended start) passed the limit.
pub(super) fn open_loop_stop(level: &Level, p99_limit: Option<Duration>) -> Option<String> {
    let (offered, achieved) = (level.offered_ops_per_s?, level.achieved_ops_per_s?);
    if achieved < ACHIEVED_SHARE * offered {
        return Some(format!(
            "achieved {achieved:.0} of {offered:.0} offered calls/s (below {:.0}%)",
            ACHIEVED_SHARE * 100.0
        ));
    }
    let limit = p99_limit?;
    let worst = level
        .ops
        .iter()
        .map(|o| o.latency.p99_us)
        .fold(0.0, f64::max);
    (worst > limit.as_secs_f64() * 1e6).then(|| {
        format!(
            "p99 {:.0} µs from the intended start passed --p99-limit {limit:?} at {offered:.0} calls/s",
            worst
        )
    })
}

/// The engine's telemetry now, within [`TELEMETRY_TIMEOUT`]; the reason on failure.
pub(super) async fn read_telemetry<T: Target + ?Sized>(
    engine: &T,
) -> std::result::Result<Telemetry, String> {
    match tokio::time::timeout(TELEMETRY_TIMEOUT, engine.telemetry()).await {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(e)) => Err(format!("its counters could not be read: {e}")),
        Err(_) => Err(format!(
            "its counters could not be read: no answer within {TELEMETRY_TIMEOUT:?}"
        )),
    }
}

/// Measures the floor on client 0's thread and session (the first of `sessions`), once,
/// each call bounded by the op timeout; with the engine's counters read around it (unless
/// `--no-engine-counters`), also the engine's own time per null request.
pub(super) async fn measure_floor_on<T: Target + ?Sized>(
    exec: &Exec,
    engine: &T,
    sessions: &mut Vec<T::Session>,
    config: &SweepConfig,
    outcome: &mut SweepOutcome,
) -> Result<()> {
    if outcome.floor.is_some() {
        return Ok(());
    }
    let mut meta = sessions.remove(0);
    let (idle, op_timeout) = (exec.idle(), config.op_timeout);
    let before = match config.engine_counters {
        true => read_telemetry(engine).await.ok(),
        false => None,
    };
    let measured = exec
        .spawn(0, async move {
            let floor = crate::floor::measure_session_floor(&mut meta, op_timeout, idle).await;
            (meta, floor)
        })
        .await
        .map_err(|e| MetaError::Engine(format!("client task failed: {e}")))?;
    sessions.insert(0, measured.0);
    let mut floor = measured.1?;
    if let (Some(f), Some(before)) = (floor.as_mut(), before) {
        if let Ok(after) = read_telemetry(engine).await {
            // One null request, by the name the floor gives it (Redis: `PING`).
            let sent = BTreeMap::from([(f.request.clone(), 1.0)]);
            if let EngineTime::Known(us, _) =
                engine.engine_time(&after.since(&before), &sent, None, 1.0)
            {
                f.engine_us = Some(us);
            }
        }
    }
    outcome.floor = floor;
    Ok(())
}

pub(super) struct LevelFigures {
    pub(super) rate: Option<u32>,
    pub(super) achieved: f64,
    pub(super) pool_busy: f64,
    pub(super) telemetry: Telemetry,
    /// Each phase's own deltas, by phase name (the breakdown's engine part).
    pub(super) phase_telemetry: BTreeMap<String, Telemetry>,
    pub(super) telemetry_error: Option<String>,
    pub(super) measured: Duration,
}

/// Rank 0 completes a level (engine check, open-loop figures), hands it to `on_level`
/// and keeps it; says whether the sweep goes on to the next level.
#[allow(clippy::too_many_arguments)]
pub(super) fn finish_level<T: Target + ?Sized>(
    level: &mut Level,
    figures: LevelFigures,
    engine: &T,
    config: &SweepConfig,
    failure: Option<RunFailure>,
    raw_intervals: &IntervalHistograms,
    totals: &mut Vec<Point>,
    outcome: &mut SweepOutcome,
    on_level: &mut impl FnMut(&Level, &IntervalHistograms),
) -> bool {
    let clients = level.clients;
    let (rate, achieved, pool_busy) = (figures.rate, figures.achieved, figures.pool_busy);
    let mut telemetry = figures.telemetry;
    // A phase whose counters could not be read has no deltas (its engine part unknown);
    // the others keep theirs.
    complete_breakdowns(
        level,
        engine,
        &figures.phase_telemetry,
        outcome.floor.as_ref(),
    );
    // An in-process engine's calls ran on the client threads: their share of the threads'
    // cores is the engine's, and says whether it used them up.
    let in_process = level.client.engine_utilisation;
    if in_process > 0.0 {
        telemetry
            .counters
            .insert("in_process_call_share".to_owned(), in_process);
    }
    if !telemetry.is_empty() || figures.telemetry_error.is_some() {
        let reason = engine
            .engine_bound(&telemetry, figures.measured, clients)
            .or_else(|| {
                (in_process >= CLIENT_CPU_LIMIT).then(|| {
                    format!(
                        "the in-process engine's calls took {:.0}% of the time on the cores the clients' threads can use",
                        in_process * 100.0
                    )
                })
            });
        level.engine = Some(EngineCheck {
            counters: telemetry.counters,
            gauges: telemetry.gauges,
            engine_bound: reason.is_some(),
            reason,
            error: figures.telemetry_error,
        });
    }
    if rate.is_some() && achieved.is_finite() {
        level.achieved_ops_per_s = Some(achieved);
        level.pool_busy = Some(pool_busy);
        let offered = f64::from(rate.unwrap_or_default());
        let reason = if pool_busy >= POOL_BUSY_LIMIT {
            Some(format!(
                "the pool of {clients} clients was busy {:.0}% of the window: too few clients for this rate (raise --conc)",
                pool_busy * 100.0
            ))
        } else if achieved < ACHIEVED_SHARE * offered {
            Some(format!(
                "metabench fell behind its schedule ({achieved:.0} of {offered:.0} calls/s) with its pool only {:.0}% busy: the generator, not the engine, set the pace",
                pool_busy * 100.0
            ))
        } else {
            None
        };
        if let (false, Some(reason)) = (level.client.client_bound, reason) {
            level.client.client_bound = true;
            level.client.reason = Some(reason);
        }
    }
    level.disruptions = level.find_disruptions();
    let level = std::mem::take(level);
    if let Some(failure) = failure {
        let mut level = level;
        level.partial = true;
        on_level(&level, raw_intervals);
        outcome.levels.push(level);
        outcome.failure = Some(failure);
        return false;
    }
    on_level(&level, raw_intervals);
    totals.push(Point {
        clients,
        ops_per_s: level.ops.iter().map(|o| o.ops_per_s).sum(),
        p99_us: 0.0,
    });
    let open_loop_end = config
        .open_loop
        .as_ref()
        .and_then(|open| open_loop_stop(&level, open.p99_limit));
    outcome.levels.push(level);
    if let Some(why) = open_loop_end {
        if rate
            != config
                .open_loop
                .as_ref()
                .and_then(|o| o.rates.last().copied())
        {
            outcome.stopped_early = Some(why);
        }
        return false;
    }
    if config.until_plateau && plateaued(totals, PLATEAU_GROWTH, PLATEAU_LEVELS) {
        if clients != *config.levels.last().expect("non-empty") {
            outcome.stopped_early = Some(format!(
                "throughput grew less than {:.0}% over {PLATEAU_LEVELS} levels (--until-plateau)",
                PLATEAU_GROWTH * 100.0
            ));
        }
        return false;
    }
    true
}

#[cfg(test)]
mod breakdown_tests {
    use super::*;
    use metabench_engine::CommandCounts;

    /// A retried attempt's time is retry waste alone: its round trips, commands and
    /// SQLite statement time are left out of what the wire and engine parts count.
    #[test]
    fn retried_attempts_are_left_out_of_the_wire_and_engine_parts() {
        let mut acc = OpAcc::default();
        acc.parts.calls = 2;
        acc.parts.round_trips = 10;
        acc.parts.retried_round_trips = 4;
        acc.parts.retry_waste_ns = 6_000;
        acc.parts.engine_ns = 9_000;
        acc.parts.retried_engine_ns = 3_000;
        acc.parts.lock_wait_ns = 500;
        acc.parts.prepare_round_trips = 10;
        let mut commands = CommandCounts::default();
        commands.0[CommandCounts::slot(b"get")] = 10;
        acc.parts.commands = commands;
        let op = LevelOp {
            latency: Latency {
                mean_us: 20.0,
                ..Default::default()
            },
            ..Default::default()
        };
        let b = call_parts(&acc, &op).unwrap();
        assert_eq!(b.mean_us, 20.0);
        assert_eq!(b.round_trips_per_op, 3.0);
        // MySQL's prepares, scaled as the round trips are.
        assert!((b.prepares_per_op - 3.0).abs() < 1e-9, "{b:?}");
        assert_eq!(b.commands_per_op["get"], 3.0);
        assert_eq!(b.engine_us, Some(3.0));
        assert_eq!(b.retry_waste_us, Some(3.0));
        assert_eq!(b.lock_wait_us, Some(0.25));
        assert!(call_parts(&OpAcc::default(), &op).is_none());
    }
}
