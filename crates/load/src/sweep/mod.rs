//! The closed-loop sweep: at each concurrency level, N virtual clients — each its own
//! engine session, as N JuiceFS clients — repeat the workload's operations against their
//! own working set; a warm-up is discarded, then a timed window is measured.
//!
//! This module runs the levels; [`client`] is one client's loop, [`level`] a level's
//! figures, [`check`] the generator's self-check, and [`ranks`] what the ranks of an MPI
//! run tell each other.

use crate::client::within;
use crate::exec::Exec;
use crate::stats::Recorder;
use crate::stop::StopFlag;
use crate::target::{Session, Target};
use crate::team::{agree, from_leader, gather_all, share_clients, Team, TeamError};
use metabench_engine::{MetaError, Result, Telemetry};
use metabench_report::analysis::Point;
use metabench_report::{Level, RankLevel, RunFailure};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{watch, Barrier};

mod check;
mod client;
mod level;
mod ranks;

mod config;
mod host;

pub use config::{
    Arrivals, IntervalHistograms, Live, OpenLoop, SweepConfig, SweepOutcome, ACHIEVED_SHARE,
    CLIENT_CPU_LIMIT, CLIENT_LAG_LIMIT, DEFAULT_OP_TIMEOUT, PLATEAU_GROWTH, PLATEAU_LEVELS,
    POOL_BUSY_LIMIT,
};

use check::{client_check, crowded_host, level_client_check};
use client::{
    engine_answers, grow_sessions, run_client, thread_slot, unless_stopped, ClientArrivals,
    ClientFailure, ClientJob,
};
use config::{DirOf, Window, UNTIMED_AT_ONCE};
use host::{online_cores, process_cpu_time, HostTicks};
use level::{
    finish_level, level_op, measure_floor_on, phase_client_cpu, read_telemetry, LevelFigures,
};
use ranks::{
    merge_reports, DirReady, LevelStart, PhaseEnd, PhaseGo, PhaseReport, RankPart, RankPlace,
    RankTime, SessionsOpened,
};

/// Sleeps until `end`, or until `stop` is set.
async fn wait_until(end: Instant, stop: &StopFlag) {
    while !stop.is_stopped() {
        let now = Instant::now();
        if now >= end {
            return;
        }
        tokio::time::sleep((end - now).min(Duration::from_millis(20))).await;
    }
}

/// Runs the sweep below directory `base` (the run's namespace), its clients on `exec`'s
/// threads. `on_level` hears each finished level with its per-second histograms. When
/// `stop` is set, the window in progress ends at once, its level is dropped and the
/// completed levels are returned; the level's directories are left to the namespace.
///
/// Run by every rank of `team`: each level's clients are spread over the ranks, which
/// start each window together. Rank 0 merges the ranks' histograms exactly, decides
/// when the sweep ends, and alone returns levels (the other ranks return none). A rank
/// that stops answering ends the sweep with the levels merged so far.
///
/// A failed engine is a result, not an error: the sweep ends with the levels measured so
/// far, the partial level last, and [`SweepOutcome::failure`] naming the level, phase and
/// operation. `Err` is left for failures before the first level.
#[allow(clippy::too_many_arguments)]
pub async fn run_sweep<T: Target + ?Sized>(
    exec: &Exec,
    engine: Arc<T>,
    base: DirOf<T>,
    config: &SweepConfig,
    stop: &StopFlag,
    live: Arc<Live>,
    team: &dyn Team,
    mut on_level: impl FnMut(&Level, &IntervalHistograms),
) -> Result<SweepOutcome> {
    let mut outcome = SweepOutcome::default();
    // The levels, each added to `outcome`: `Err` when a rank stopped answering, or (rank
    // 0) when the engine failed before the first level.
    let levels: std::result::Result<(), Ended> = async {
        let mut sessions: Vec<T::Session> = Vec::new();
        let mut totals: Vec<Point> = Vec::new();
        let cores = crate::placement::usable_cores();
        let (rank, ranks) = (team.rank(), team.size());
        let leader = rank == 0;
        let failure_at = |clients: u32, phase: &str, step: &str, e: &dyn std::fmt::Display| {
            RunFailure::at(engine.name(), clients, phase, step, &e.to_string())
        };
        // A closed loop's levels are its concurrencies; an open loop's, its offered rates
        // with the one client pool.
        let steps: Vec<(u32, Option<u32>)> = match &config.open_loop {
            None => config.levels.iter().map(|&c| (c, None)).collect(),
            Some(open) => {
                let pool = config.levels.first().copied().unwrap_or(1);
                open.rates.iter().map(|&r| (pool, Some(r))).collect()
            }
        };
        let arrivals = config.open_loop.as_ref().map(|o| o.arrivals);
        // The engine's own connection limit, read once before the first level: a level
        // with more clients than it takes is refused in one line, not tried until a wall
        // of connection errors (one that cannot be read is met, if at all, by the first
        // refused connection, which the engine says in one line too).
        let connection_limit = if leader && !stop.is_stopped() {
            within(config.op_timeout, engine.connection_limit())
                .await
                .ok()
                .flatten()
        } else {
            None
        };
        for (level_index, (clients, rate)) in steps.into_iter().enumerate() {
            // This rank's share of the level: `n` clients, the first numbered `first`.
            let (n, first) = share_clients(clients, config.threads_per_client, rank, ranks);
            let n = n as usize;
            // Each worker holds one connection of its own; the limit was read before any
            // session of the run was open.
            let refused = connection_limit
                .as_ref()
                .filter(|l| !l.fits(u64::from(clients)))
                .map(|l| l.refusal(u64::from(clients)));
            let opened = if stop.is_stopped() || refused.is_some() {
                Ok(())
            } else {
                let per_client = config.threads_per_client as usize;
                grow_sessions(exec, &engine, &config.session, per_client, &mut sessions, n).await
            };
            let mut own_error = None;
            let mut failed = match opened {
                Ok(()) => refused.map(|line| {
                    own_error = Some(MetaError::Engine(line.clone()));
                    (line, true)
                }),
                Err(e) => {
                    let answers = engine_answers(exec, &mut sessions, config.op_timeout).await;
                    let said = (e.to_string(), answers);
                    own_error = Some(e);
                    Some(said)
                }
            };
            if leader && failed.is_none() && !stop.is_stopped() && outcome.levels.is_empty() {
                // The floor, before the first level, on client 0's thread and session, as
                // its calls will be timed. A failure is the level's, decided for all ranks.
                if let Err(e) =
                    measure_floor_on(exec, engine.as_ref(), &mut sessions, config, &mut outcome)
                        .await
                {
                    failed = Some((format!("measuring the floor: {e}"), false));
                    own_error = Some(e);
                }
            }
            let said = SessionsOpened {
                stopped: stop.is_stopped(),
                failed,
            };
            let start = agree(team, &said, stop, |all| {
                if all.iter().any(|s| s.stopped) {
                    return LevelStart::Stop;
                }
                match all.into_iter().find_map(|s| s.failed) {
                    None => LevelStart::Go,
                    // A limit met after levels were measured ends the sweep with them; met
                    // at the first level, the run has nothing to show and fails with it.
                    Some((e, true)) if level_index > 0 => {
                        LevelStart::Limited(format!("could not open {clients} sessions: {e}"))
                    }
                    Some((e, _)) => LevelStart::Failed(e),
                }
            })
            .await?;
            match start {
                LevelStart::Go => {}
                LevelStart::Stop => break,
                LevelStart::Limited(why) => {
                    outcome.stopped_early = Some(why);
                    break;
                }
                LevelStart::Failed(e) => {
                    // Before the first level (which only rank 0 keeps), every rank fails alike.
                    if level_index == 0 {
                        return Err(Ended::Engine(own_error.unwrap_or(MetaError::Engine(e))));
                    }
                    if leader {
                        outcome.failure = Some(failure_at(clients, "", "opening sessions", &e));
                    }
                    break;
                }
            }
            live.clients.store(clients, Ordering::Relaxed);
            let mut level = Level {
                clients,
                offered_ops_per_s: rate.map(f64::from),
                ..Default::default()
            };
            let (mut achieved, mut pool_busy) = (f64::INFINITY, 0.0f64);
            let (mut telemetry, mut telemetry_error) = (Telemetry::default(), None);
            // Each phase's own deltas: the breakdown's engine part of an operation is its
            // phase's, not the level's mean over every phase.
            let mut phase_telemetry = BTreeMap::new();
            let mut raw_intervals = IntervalHistograms::new();
            let mut measured = Duration::ZERO;
            let mut parts: Vec<RankPart> = Vec::new();
            let mut failure = None;
            let mut stopped = false;
            for (phase_index, phase) in config.workload.phases.iter().enumerate() {
                live.phase.store(phase_index as u32, Ordering::Relaxed);
                live.measuring.store(false, Ordering::Relaxed);
                live.completed.store(0, Ordering::Relaxed);
                let mut level_dir_name = match rate {
                    Some(rate) => format!("c{clients}-r{rate}-{}", phase.name),
                    None => format!("c{clients}-{}", phase.name),
                };
                // Each rank works in a directory of its own, unless all clients share one.
                if ranks > 1 && !config.shared_dir {
                    level_dir_name += &format!("-rank{rank}");
                }
                let makes_dir = if config.shared_dir { leader } else { n > 0 };
                let mut ready = DirReady {
                    stopped: stop.is_stopped(),
                    failure: None,
                    shared_dir: None,
                };
                let mut own_dir = None;
                if makes_dir && !ready.stopped {
                    match sessions[0].mkdir(&base, &level_dir_name).await {
                        Ok(dir) => {
                            ready.shared_dir = config.shared_dir.then(|| dir.clone());
                            own_dir = Some(dir);
                        }
                        Err(e) => {
                            ready.failure = Some(failure_at(clients, &phase.name, "setup", &e))
                        }
                    }
                }
                let go = agree(team, &ready, stop, |all| PhaseGo {
                    go: all.iter().all(|r| !r.stopped && r.failure.is_none()),
                    shared_dir: all[0].shared_dir.clone(),
                    failure: all.into_iter().find_map(|r| r.failure),
                })
                .await?;
                if !go.go {
                    // What was made is in the namespace, removed with it.
                    failure = go.failure;
                    stopped = failure.is_none();
                    break;
                }
                let level_dir = go
                    .shared_dir
                    .or_else(|| own_dir.clone())
                    .unwrap_or_else(|| base.clone());
                let barrier = Arc::new(Barrier::new(n + 1));
                let (start_tx, start_rx) = watch::channel(None);
                let recorder = Arc::new(Recorder::new((cores * 2).max(2)));
                let untimed = Arc::new(tokio::sync::Semaphore::new(UNTIMED_AT_ONCE));
                let mut tasks = Vec::with_capacity(n);
                for (index, meta) in sessions.drain(..n).enumerate() {
                    // Names and the open loop's schedule follow the client's level-wide number.
                    let global = first as usize + index;
                    let job = ClientJob {
                        index,
                        phase: phase.clone(),
                        dir: level_dir.clone(),
                        own_dir: (!config.shared_dir).then(|| format!("c{global}")),
                        tag: if config.shared_dir {
                            format!("c{global}-")
                        } else {
                            String::new()
                        },
                        engine: engine.clone(),
                        session: config.session.clone(),
                        op_timeout: config.op_timeout,
                        background: config.background_in_window
                            && index % config.threads_per_client.max(1) as usize == 0,
                        shares_client: config.threads_per_client > 1,
                        arrivals: rate.zip(arrivals).map(|(rate, kind)| {
                            ClientArrivals::new(rate, clients as usize, global, kind)
                        }),
                        untimed: untimed.clone(),
                        tree: config.tree.clone(),
                        seed: ((level_index as u64) << 40)
                            ^ ((phase_index as u64) << 32)
                            ^ global as u64,
                    };
                    tasks.push(exec.spawn(
                        thread_slot(index, config.threads_per_client as usize),
                        run_client(
                            meta,
                            job,
                            barrier.clone(),
                            start_rx.clone(),
                            recorder.clone(),
                            live.clone(),
                            stop.clone(),
                        ),
                    ));
                }
                barrier.wait().await;
                let settled = if leader {
                    within(config.op_timeout, engine.settle())
                        .await
                        .err()
                        .map(|e| failure_at(clients, &phase.name, "setup", &e))
                } else {
                    None
                };
                let ready = DirReady::<DirOf<T>> {
                    stopped: stop.is_stopped(),
                    failure: settled,
                    shared_dir: None,
                };
                let release = agree(team, &ready, stop, |all| PhaseGo::<DirOf<T>> {
                    go: all.iter().all(|r| !r.stopped && r.failure.is_none()),
                    shared_dir: None,
                    failure: all.into_iter().find_map(|r| r.failure),
                });
                let release = match release.await {
                    Ok(r) => r,
                    Err(e) => {
                        drop(start_tx);
                        return Err(e.into());
                    }
                };
                if !release.go {
                    // No window: the clients return at once with their sessions.
                    drop(start_tx);
                    for t in tasks {
                        if let Ok((meta, _)) = t.await {
                            sessions.push(meta);
                        }
                    }
                    failure = release.failure;
                    stopped = failure.is_none();
                    break;
                }
                let now = Instant::now();
                let window = Window {
                    released: now,
                    measure_from: now + config.warmup,
                    end: now + config.warmup + config.duration,
                };
                let _ = start_tx.send(Some(window));
                // The window is owned by this task, on the coordinator's runtime: the clients
                // run on other threads and cannot keep it from reading CPU time and lag.
                wait_until(window.measure_from, stop).await;
                live.measuring.store(true, Ordering::Relaxed);
                // Client threads with no client of this level are left out: one that
                // busy-polls alone burns a core that is not the clients' cost.
                let cpu_start = process_cpu_time();
                let host_ticks_start = HostTicks::read();
                let idle_threads_start = exec.cpu_time_without_clients(n);
                let busy_start = exec.busy_time(n);
                let engine_calls_start = exec.engine_time();
                let probe = exec.lag_probe(n);
                let engine_start = if leader && config.engine_counters {
                    Some(read_telemetry(engine.as_ref()).await)
                } else {
                    None
                };
                wait_until(window.end, stop).await;
                let cpu = process_cpu_time().saturating_sub(cpu_start).saturating_sub(
                    exec.cpu_time_without_clients(n)
                        .saturating_sub(idle_threads_start),
                );
                let host_ticks = HostTicks::read()
                    .zip(host_ticks_start)
                    .map(|(end, start)| end.since(start));
                let busy = exec.busy_time(n).saturating_sub(busy_start);
                let engine_calls = exec.engine_time().saturating_sub(engine_calls_start);
                let lag = probe.finish();
                if let Some(engine_start) = engine_start {
                    match (engine_start, read_telemetry(engine.as_ref()).await) {
                        (Ok(start), Ok(end)) => {
                            let delta = end.since(&start);
                            telemetry.add(&delta);
                            phase_telemetry.insert(phase.name.clone(), delta);
                        }
                        (Err(e), _) | (_, Err(e)) => {
                            telemetry_error.get_or_insert(e);
                        }
                    }
                }
                live.measuring.store(false, Ordering::Relaxed);
                measured += config.duration;
                // Clients finish their calls in flight (each bounded by the op timeout).
                let mut first_failure = None;
                let mut returned = Vec::with_capacity(n);
                for t in tasks {
                    // A client task that failed lost its session; the level fails on every
                    // rank alike, through the reports.
                    match t.await {
                        Ok((meta, result)) => {
                            returned.push(meta);
                            if let Err(f) = result {
                                first_failure.get_or_insert(f);
                            }
                        }
                        Err(e) => {
                            first_failure.get_or_insert(ClientFailure::new(
                                "client task",
                                MetaError::Engine(format!("client task failed: {e}")),
                            ));
                        }
                    }
                }
                returned.append(&mut sessions);
                sessions = returned;
                if first_failure.is_none() && own_dir.is_some() && !config.shared_dir {
                    let removed = sessions[0].remove_tree(&base, &level_dir_name);
                    if let Some(Err(e)) = unless_stopped(removed, stop).await {
                        first_failure = Some(ClientFailure::new("cleanup", e));
                    }
                }
                let recorder =
                    Arc::try_unwrap(recorder).unwrap_or_else(|_| unreachable!("clients finished"));
                let (merged, background) = recorder.merged();
                let report = PhaseReport {
                    place: RankPlace {
                        host: team.host().to_owned(),
                        clients: n as u32,
                        // The cores this rank's clients can use: one per client thread
                        // that runs any of them, at most (and at most the CPUs those
                        // threads are bound to). A lone client that holds its thread uses
                        // one core, whatever idle threads sit beside it.
                        cores: exec.cores_running(n),
                        host_cores: online_cores(),
                        busy_poll: exec.idle() == crate::Idle::BusyPoll,
                    },
                    ops: merged
                        .iter()
                        .map(|(op, acc)| (op.name().to_owned(), acc.to_wire(window.measure_from)))
                        .collect(),
                    background,
                    time: RankTime {
                        cpu,
                        busy,
                        engine_calls,
                        host_ticks,
                    },
                    lag: metabench_report::histogram::encode(&lag),
                    failure: first_failure
                        .map(|f| failure_at(clients, &phase.name, &f.step, &f.error)),
                    stopped: stop.is_stopped(),
                };
                drop(merged);
                let reports = gather_all(team, &report, stop).await?;
                let mut end = PhaseEnd {
                    failure: None,
                    stop: false,
                };
                if let Some(reports) = reports {
                    end.stop = reports.iter().any(|r| r.stopped);
                    end.failure = reports.iter().find_map(|r| r.failure.clone());
                    if end.failure.is_none() && config.shared_dir {
                        // Every rank's clients are done with the shared directory.
                        if let Err(e) = sessions[0].remove_tree(&base, &level_dir_name).await {
                            end.failure = Some(failure_at(clients, &phase.name, "cleanup", &e));
                        }
                    }
                    // The phase's client CPU (the breakdown's client part).
                    let phase_cpu: Duration = reports.iter().map(|r| r.time.cpu).sum();
                    let merged = if end.stop && end.failure.is_none() {
                        None
                    } else {
                        match merge_reports(reports, &window, &mut parts, &phase.name) {
                            Ok(merged) => Some(merged),
                            Err(e) => {
                                // Told to every rank, like an engine failure.
                                end.failure.get_or_insert_with(|| {
                                    failure_at(
                                        clients,
                                        &phase.name,
                                        "merging the ranks' results",
                                        &e,
                                    )
                                });
                                None
                            }
                        }
                    };
                    if let Some(merged) = merged {
                        let real_window = merged.real_window;
                        let phase_calls: u64 = merged.ops.values().map(|acc| acc.calls).sum();
                        achieved = achieved.min(phase_calls as f64 / real_window.as_secs_f64());
                        // The clients' background work keeps them busy too.
                        let busy: Duration =
                            merged.ops.values().map(|acc| acc.busy).sum::<Duration>()
                                + merged.background.busy;
                        let (merged_busy, merged_background_busy) = (busy, merged.background.busy);
                        pool_busy = pool_busy.max(
                            busy.as_secs_f64() / (config.duration.as_secs_f64() * clients as f64),
                        );
                        if config.background_in_window {
                            let b = level.background.get_or_insert_with(Default::default);
                            b.runs += merged.background.runs;
                            b.round_trips += merged.background.round_trips;
                            b.retries += merged.background.retries;
                            b.busy_s += merged.background.busy.as_secs_f64();
                            b.errors += merged.background.errors;
                            b.heartbeats += merged.background.heartbeats;
                            b.window_s += real_window.as_secs_f64();
                        }
                        let first_op = level.ops.len();
                        let prepared_ns: u64 =
                            merged.ops.values().map(|acc| acc.parts.prepared_ns).sum();
                        for (op, acc) in merged.ops {
                            let mut r = level_op(op, &phase.name, &acc, real_window);
                            r.entries_per_call = op.entries_per_call(config.tree.as_deref());
                            level.ops.push(r);
                            raw_intervals.insert(op.name().to_owned(), acc.intervals);
                        }
                        // The calls' share of the phase's CPU: the background work's part
                        // and the calls' untimed preparations' (an unlink's file made), by
                        // the time each kept the clients busy, are not the calls'.
                        let calls_busy: f64 =
                            merged_busy.as_secs_f64() - merged_background_busy.as_secs_f64();
                        let all_busy = merged_busy.as_secs_f64() + prepared_ns as f64 / 1e9;
                        let share = if all_busy == 0.0 {
                            1.0
                        } else {
                            calls_busy / all_busy
                        };
                        phase_client_cpu(
                            &mut level.ops[first_op..],
                            phase_cpu.mul_f64(share.clamp(0.0, 1.0)),
                            phase_calls,
                        );
                    }
                }
                let end = from_leader(team, leader.then_some(&end), stop).await?;
                if let Some(f) = end.failure {
                    failure = Some(f);
                    break;
                }
                if end.stop {
                    stopped = true;
                    break;
                }
            }
            if failure.is_none() && stopped {
                break;
            }
            let mut go_on = false;
            if leader {
                let calls: u64 = parts.iter().map(|p| p.calls).sum();
                let crowded = crowded_host(&parts, measured);
                level.ranks = parts
                    .into_iter()
                    .enumerate()
                    .map(|(r, part)| RankLevel {
                        rank: r as u32,
                        client: client_check(&part, measured),
                        host: part.place.host,
                        clients: part.place.clients,
                        ops: part.ops,
                    })
                    .collect();
                level.client = level_client_check(&level.ranks, calls);
                if let (false, Some(reason)) = (level.client.client_bound, crowded) {
                    level.client.client_bound = true;
                    level.client.reason = Some(reason);
                }
                if ranks == 1 {
                    // A run of one process: its level says it all.
                    level.ranks.clear();
                }
                go_on = finish_level(
                    &mut level,
                    LevelFigures {
                        rate,
                        achieved,
                        pool_busy,
                        telemetry,
                        phase_telemetry,
                        telemetry_error,
                        measured,
                    },
                    engine.as_ref(),
                    config,
                    failure,
                    &raw_intervals,
                    &mut totals,
                    &mut outcome,
                    &mut on_level,
                );
            }
            if !from_leader(team, leader.then_some(&go_on), stop).await? {
                break;
            }
        }
        Ok(())
    }
    .await;
    match levels {
        Ok(()) => Ok(outcome),
        Err(Ended::Engine(e)) => Err(e),
        Err(Ended::Team(e)) => {
            outcome.stopped_early = Some(format!("the MPI job stopped: {e}"));
            outcome.team_lost = true;
            Ok(outcome)
        }
    }
}

/// Why the sweep's levels ended before their plan.
enum Ended {
    /// The engine failed before the first level.
    Engine(MetaError),
    /// A rank stopped answering.
    Team(TeamError),
}

impl From<TeamError> for Ended {
    fn from(e: TeamError) -> Self {
        Self::Team(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_sampled_in_the_second_it_ended_and_a_late_one_in_the_last() {
        let released = Instant::now();
        let measure_from = released + Duration::from_secs(1);
        let window = |secs: f64| Window {
            released,
            measure_from,
            end: measure_from + Duration::from_secs_f64(secs),
        };
        let at = |secs: f64| measure_from + Duration::from_secs_f64(secs);
        let three = window(3.0);
        assert_eq!(
            three.interval_of(released),
            0,
            "before the window: its first"
        );
        assert_eq!(three.interval_of(at(0.0)), 0);
        assert_eq!(three.interval_of(at(0.999)), 0);
        assert_eq!(three.interval_of(at(1.0)), 1);
        assert_eq!(three.interval_of(at(2.5)), 2);
        assert_eq!(three.interval_of(at(7.0)), 2, "after the end: its last");
        // A window of 2.5 s has three samples, the last one half a second long.
        assert_eq!(window(2.5).interval_of(at(2.4)), 2);
        assert_eq!(window(2.5).interval_of(at(9.0)), 2);
        // One shorter than a second has one.
        assert_eq!(window(0.2).interval_of(at(0.5)), 0);
    }
}
