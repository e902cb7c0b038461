//! What the ranks of a sweep tell each other (a plain sweep is one rank), and how rank 0
//! merges their phase reports exactly.

use super::config::Window;
use super::host::HostTicks;
use super::level::level_op;
use crate::catalog::Op;
use crate::stats::{histogram, BackgroundAcc, OpAcc, WireAcc};
use hdrhistogram::Histogram;
use metabench_report::{LevelOp, RunFailure};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What a rank says once it has opened (or failed to open) its sessions for a level.
#[derive(Serialize, Deserialize)]
pub(super) struct SessionsOpened {
    pub(super) stopped: bool,
    /// Why its sessions could not all be opened, and whether the engine still answers.
    pub(super) failed: Option<(String, bool)>,
}

/// Rank 0's word on how a level starts.
#[derive(Serialize, Deserialize)]
pub(super) enum LevelStart {
    Go,
    Stop,
    /// The engine's connection limit: a finding, the sweep ends with what it measured.
    Limited(String),
    /// The engine failed while sessions were opened.
    Failed(String),
}

/// What a rank says once its level directory for a phase is made.
#[derive(Serialize, Deserialize)]
pub(super) struct DirReady<D> {
    pub(super) stopped: bool,
    pub(super) failure: Option<RunFailure>,
    /// `--shared-dir`: the one directory every rank's clients work in (made by rank 0).
    pub(super) shared_dir: Option<D>,
}

/// Rank 0's word before a phase's clients start, or before its window opens.
#[derive(Serialize, Deserialize)]
pub(super) struct PhaseGo<D> {
    pub(super) go: bool,
    pub(super) failure: Option<RunFailure>,
    pub(super) shared_dir: Option<D>,
}

/// Where a rank runs its clients: what rank 0 needs to judge them, sent with every phase.
#[derive(Clone, Serialize, Deserialize)]
pub(super) struct RankPlace {
    pub(super) host: String,
    pub(super) clients: u32,
    /// The cores this rank's clients may use (one per client thread that runs any of
    /// them, at most), and the cores its host has.
    pub(super) cores: usize,
    pub(super) host_cores: usize,
    /// Whether its client threads busy-poll ([`crate::Idle::BusyPoll`]): they then use
    /// their cores whole, and their busy time ([`crate::Exec::busy_time`]) says how busy
    /// the clients kept them, not their CPU time.
    pub(super) busy_poll: bool,
}

/// A rank's clients' time over a window, or summed over a level's windows: what the
/// self-check holds against the rank's cores.
#[derive(Clone, Copy, Default, Serialize, Deserialize)]
pub(super) struct RankTime {
    /// The process's CPU time, less that of client threads with no client of the level.
    pub(super) cpu: Duration,
    /// The client threads' busy time ([`crate::Exec::busy_time`]).
    pub(super) busy: Duration,
    /// The time in-process engine calls took on the client threads
    /// ([`crate::Exec::engine_time`]).
    pub(super) engine_calls: Duration,
    /// What the rank's host's CPU time and steal grew by, where its kernel counts steal.
    pub(super) host_ticks: Option<HostTicks>,
}

impl RankTime {
    /// Adds another window's time.
    fn add(&mut self, other: RankTime) {
        self.cpu += other.cpu;
        self.busy += other.busy;
        self.engine_calls += other.engine_calls;
        if let Some(ticks) = other.host_ticks {
            self.host_ticks = Some(self.host_ticks.unwrap_or_default().plus(ticks));
        }
    }
}

/// One rank's phase, as it sends it to rank 0 to be merged.
#[derive(Serialize, Deserialize)]
pub(super) struct PhaseReport {
    pub(super) place: RankPlace,
    pub(super) ops: Vec<(String, WireAcc)>,
    pub(super) background: BackgroundAcc,
    /// Its clients' time in the window.
    pub(super) time: RankTime,
    pub(super) lag: String,
    pub(super) failure: Option<RunFailure>,
    pub(super) stopped: bool,
}

/// Rank 0's word after a phase: the failure that ends the sweep, or a stop.
#[derive(Serialize, Deserialize)]
pub(super) struct PhaseEnd {
    pub(super) failure: Option<RunFailure>,
    pub(super) stop: bool,
}

/// What rank 0 keeps of one rank over a level's phases.
pub(super) struct RankPart {
    pub(super) place: RankPlace,
    /// Its clients' time, summed over the level's windows.
    pub(super) time: RankTime,
    pub(super) lag: Histogram<u64>,
    pub(super) calls: u64,
    pub(super) ops: Vec<LevelOp>,
}

impl RankPart {
    /// The time the self-check holds against the rank's cores: its CPU time, or where its
    /// client threads busy-poll (and so use their cores whole) their busy time.
    pub(super) fn used(&self) -> Duration {
        if self.place.busy_poll {
            self.time.busy
        } else {
            self.time.cpu
        }
    }

    /// What of [`RankPart::used`] was metabench's own: less the time an in-process
    /// engine's calls took on the client threads (SQLite's work, done on them).
    pub(super) fn own(&self) -> Duration {
        self.used().saturating_sub(self.time.engine_calls)
    }

    /// An empty part for a rank at `place` (as its first report of the level says).
    pub(super) fn new(place: RankPlace) -> Self {
        Self {
            place,
            time: RankTime::default(),
            lag: histogram(),
            calls: 0,
            ops: Vec::new(),
        }
    }
}

/// What rank 0 made of one phase's reports: the accumulators merged over every rank.
pub(super) struct MergedPhase {
    pub(super) ops: BTreeMap<Op, OpAcc>,
    pub(super) background: BackgroundAcc,
    /// The measured window, stretched to the end of the last call in flight at its end
    /// on any rank: those calls were counted, so is the time they took.
    pub(super) real_window: Duration,
}

/// Merges the ranks' phase reports (exactly: histograms are added), keeping each rank's
/// own figures and self-check inputs in `parts`. Each rank's figures are over the same
/// window as the level's, so that the ranks' ops/s add up to the level's.
pub(super) fn merge_reports(
    reports: Vec<PhaseReport>,
    window: &Window,
    parts: &mut Vec<RankPart>,
    phase: &str,
) -> std::result::Result<MergedPhase, String> {
    let mut decoded = Vec::with_capacity(reports.len());
    for (r, mut report) in reports.into_iter().enumerate() {
        let mut ops = Vec::with_capacity(report.ops.len());
        for (name, wire) in std::mem::take(&mut report.ops) {
            let op: Op = name
                .parse()
                .map_err(|e| format!("rank {r} sent an unknown operation: {e}"))?;
            ops.push((op, OpAcc::from_wire(wire, window.measure_from)?));
        }
        let lag = metabench_report::histogram::decode(&report.lag)?;
        decoded.push((report, ops, lag));
    }
    let real_end = decoded
        .iter()
        .flat_map(|(_, ops, _)| ops.iter().filter_map(|(_, acc)| acc.last_end))
        .fold(window.end, Instant::max);
    let mut merged = MergedPhase {
        ops: BTreeMap::new(),
        background: BackgroundAcc::default(),
        real_window: real_end - window.measure_from,
    };
    for (r, (report, ops, lag)) in decoded.into_iter().enumerate() {
        if parts.len() <= r {
            parts.push(RankPart::new(report.place.clone()));
        }
        let part = &mut parts[r];
        part.time.add(report.time);
        part.lag.add(lag).expect("auto-resizing histograms merge");
        merged.background.merge(report.background);
        for (op, acc) in ops {
            part.calls += acc.hist.as_ref().map_or(0, |h| h.len());
            part.calls += acc.errors.values().sum::<u64>();
            part.ops.push(level_op(op, phase, &acc, merged.real_window));
            merged.ops.entry(op).or_default().merge(acc);
        }
    }
    Ok(merged)
}
