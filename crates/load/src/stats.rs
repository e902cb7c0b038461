//! What the runners keep of their calls: per-operation accumulators (latency and service
//! time histograms, per-second samples, errors, round trips), sharded so clients record
//! without contending. Every output summarises a histogram as a [`metabench_report::Latency`].

use crate::catalog::Op;
use hdrhistogram::Histogram;
use metabench_engine::{CommandCounts, SessionStats};
use metabench_report::histogram::{decode, encode, new_latency_histogram};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Nanoseconds as microseconds.
pub(crate) fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

#[derive(Default)]
pub(crate) struct OpAcc {
    /// Latency: from the call's start, or in an open loop from its intended start.
    pub(crate) hist: Option<Histogram<u64>>,
    /// Open loop only: service time, from the call's actual start.
    pub(crate) service: Option<Histogram<u64>>,
    /// Summed service time of every recorded call: how long the clients were busy.
    pub(crate) busy: Duration,
    pub(crate) intervals: Vec<Histogram<u64>>,
    /// Open loop only: service time per second of the window.
    pub(crate) service_intervals: Vec<Histogram<u64>>,
    pub(crate) errors: BTreeMap<String, u64>,
    /// Failed calls per second of the window, by when they ended.
    pub(crate) error_intervals: Vec<u64>,
    pub(crate) retries: u64,
    pub(crate) round_trips: u64,
    pub(crate) calls: u64,
    /// Calls that were still in flight at the window's end.
    pub(crate) in_flight_at_end: u64,
    /// When the last recorded call finished.
    pub(crate) last_end: Option<Instant>,
    /// The slowest failed call (a timeout's elapsed time, for one).
    pub(crate) failed_max: Duration,
    /// What the sessions measured of the successful calls' parts (the breakdown).
    pub(crate) parts: CallParts,
}

/// The parts of the successful calls' time that their sessions measured themselves,
/// summed (the latency breakdown's per-call parts; [`SessionStats`]). A rank sends it as
/// it is (the fields added later default to 0 from a rank that does not send them).
#[derive(Debug, Default, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct CallParts {
    /// Successful calls summed.
    pub(crate) calls: u64,
    /// Their round trips.
    pub(crate) round_trips: u64,
    /// ns queued on the client's transaction locks.
    pub(crate) lock_wait_ns: u64,
    /// ns of attempts that conflicted and were retried.
    pub(crate) retry_waste_ns: u64,
    /// ns an in-process engine (SQLite) spent on their statements.
    pub(crate) engine_ns: u64,
    /// Round trips of their attempts that were retried (in `retry_waste_ns`).
    #[serde(default)]
    pub(crate) retried_round_trips: u64,
    /// The part of `engine_ns` in attempts that were retried.
    #[serde(default)]
    pub(crate) retried_engine_ns: u64,
    /// ns the calls, once woken, waited for their client thread.
    #[serde(default)]
    pub(crate) ready_wait_ns: u64,
    /// MySQL: their statements' prepare exchanges ([`SessionStats::prepare_round_trips`]).
    #[serde(default)]
    pub(crate) prepare_round_trips: u64,
    /// ns their untimed preparations took ([`crate::timing::Timed::prepared`]).
    #[serde(default)]
    pub(crate) prepared_ns: u64,
    /// Redis: the top-level commands they sent, by name (a list of counts, by slot).
    #[serde(with = "command_list")]
    pub(crate) commands: CommandCounts,
}

/// [`CommandCounts`] as a list of counts by slot; a longer list's extra counts are
/// dropped, a shorter one's missing ones are 0.
mod command_list {
    use metabench_engine::CommandCounts;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(c: &CommandCounts, s: S) -> Result<S::Ok, S::Error> {
        c.0[..].serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<CommandCounts, D::Error> {
        let list = Vec::<u64>::deserialize(d)?;
        let mut commands = CommandCounts::default();
        for (c, n) in commands.0.iter_mut().zip(&list) {
            *c = *n;
        }
        Ok(commands)
    }
}

impl CallParts {
    /// Adds one successful call's cost, how long it waited for its thread once woken, and
    /// how long its untimed preparation took.
    #[inline]
    pub(crate) fn add_call(
        &mut self,
        cost: &SessionStats,
        ready_wait: Duration,
        prepared: Duration,
    ) {
        self.calls += 1;
        self.prepared_ns += prepared.as_nanos() as u64;
        self.ready_wait_ns += ready_wait.as_nanos() as u64;
        self.round_trips += cost.round_trips;
        self.lock_wait_ns += cost.lock_wait_ns;
        self.retry_waste_ns += cost.retry_waste_ns;
        self.engine_ns += cost.engine_ns;
        self.retried_round_trips += cost.retried_round_trips;
        self.retried_engine_ns += cost.retried_engine_ns;
        self.prepare_round_trips += cost.prepare_round_trips;
        if !cost.commands.is_empty() {
            self.commands.add(&cost.commands);
        }
    }

    fn merge(&mut self, other: &CallParts) {
        self.calls += other.calls;
        self.round_trips += other.round_trips;
        self.lock_wait_ns += other.lock_wait_ns;
        self.retry_waste_ns += other.retry_waste_ns;
        self.engine_ns += other.engine_ns;
        self.retried_round_trips += other.retried_round_trips;
        self.retried_engine_ns += other.retried_engine_ns;
        self.ready_wait_ns += other.ready_wait_ns;
        self.prepare_round_trips += other.prepare_round_trips;
        self.prepared_ns += other.prepared_ns;
        self.commands.add(&other.commands);
    }
}

/// The one latency histogram constructor of the runners (nanoseconds, 3 significant
/// digits, growing as needed: nothing is clipped).
pub(crate) fn histogram() -> Histogram<u64> {
    new_latency_histogram()
}

impl OpAcc {
    pub(crate) fn record(&mut self, latency: Duration, service: Option<Duration>, interval: usize) {
        let ns = latency.as_nanos() as u64;
        // Auto-resizing histograms grow on `record`; `saturating_record` would clamp.
        let _ = self.hist.get_or_insert_with(histogram).record(ns);
        record_at(&mut self.intervals, interval, ns);
        if let Some(service) = service {
            let service = service.as_nanos() as u64;
            let _ = self.service.get_or_insert_with(histogram).record(service);
            record_at(&mut self.service_intervals, interval, service);
        }
    }

    /// Counts a failed call (of `kind`) that took `took` and ended in second `interval`.
    pub(crate) fn record_failure(&mut self, kind: &str, took: Duration, interval: usize) {
        *self.errors.entry(kind.to_owned()).or_default() += 1;
        self.failed_max = self.failed_max.max(took);
        if self.error_intervals.len() <= interval {
            self.error_intervals.resize(interval + 1, 0);
        }
        self.error_intervals[interval] += 1;
    }

    pub(crate) fn merge(&mut self, other: OpAcc) {
        for (mine, theirs) in [
            (&mut self.hist, other.hist),
            (&mut self.service, other.service),
        ] {
            match (mine, theirs) {
                (Some(mine), Some(h)) => mine.add(&h).expect("auto-resizing histograms merge"),
                (mine @ None, theirs) => *mine = theirs,
                (Some(_), None) => {}
            }
        }
        self.busy += other.busy;
        merge_intervals(&mut self.intervals, other.intervals);
        merge_intervals(&mut self.service_intervals, other.service_intervals);
        for (k, n) in other.errors {
            *self.errors.entry(k).or_default() += n;
        }
        if self.error_intervals.len() < other.error_intervals.len() {
            self.error_intervals.resize(other.error_intervals.len(), 0);
        }
        for (mine, n) in self.error_intervals.iter_mut().zip(other.error_intervals) {
            *mine += n;
        }
        self.retries += other.retries;
        self.round_trips += other.round_trips;
        self.calls += other.calls;
        self.in_flight_at_end += other.in_flight_at_end;
        self.last_end = self.last_end.max(other.last_end);
        self.failed_max = self.failed_max.max(other.failed_max);
        self.parts.merge(&other.parts);
    }
}

/// An [`OpAcc`] as one rank sends it to rank 0: histograms in their portable form, and
/// the last call's end as an offset from the rank's own window start (instants do not
/// cross processes).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct WireAcc {
    hist: Option<String>,
    service: Option<String>,
    busy: Duration,
    intervals: Vec<String>,
    service_intervals: Vec<String>,
    errors: BTreeMap<String, u64>,
    error_intervals: Vec<u64>,
    retries: u64,
    round_trips: u64,
    calls: u64,
    in_flight_at_end: u64,
    last_end: Option<Duration>,
    failed_max: Duration,
    #[serde(default)]
    parts: CallParts,
}

impl OpAcc {
    /// The portable form, with `last_end` counted from `measure_from`.
    pub(crate) fn to_wire(&self, measure_from: Instant) -> WireAcc {
        let all = |v: &[Histogram<u64>]| v.iter().map(encode).collect();
        WireAcc {
            hist: self.hist.as_ref().map(encode),
            service: self.service.as_ref().map(encode),
            busy: self.busy,
            intervals: all(&self.intervals),
            service_intervals: all(&self.service_intervals),
            errors: self.errors.clone(),
            error_intervals: self.error_intervals.clone(),
            retries: self.retries,
            round_trips: self.round_trips,
            calls: self.calls,
            in_flight_at_end: self.in_flight_at_end,
            last_end: self
                .last_end
                .map(|t| t.saturating_duration_since(measure_from)),
            failed_max: self.failed_max,
            parts: self.parts,
        }
    }

    /// Back from the portable form, `last_end` placed after this rank's `measure_from`.
    pub(crate) fn from_wire(w: WireAcc, measure_from: Instant) -> Result<Self, String> {
        let one = |s: &Option<String>| s.as_deref().map(decode).transpose();
        let all = |v: &[String]| v.iter().map(|s| decode(s)).collect::<Result<Vec<_>, _>>();
        Ok(Self {
            hist: one(&w.hist)?,
            service: one(&w.service)?,
            busy: w.busy,
            intervals: all(&w.intervals)?,
            service_intervals: all(&w.service_intervals)?,
            errors: w.errors,
            error_intervals: w.error_intervals,
            retries: w.retries,
            round_trips: w.round_trips,
            calls: w.calls,
            in_flight_at_end: w.in_flight_at_end,
            last_end: w.last_end.map(|d| measure_from + d),
            failed_max: w.failed_max,
            parts: w.parts,
        })
    }
}

/// A client's background work in a window (its registered session's heartbeat, dir-stat
/// and counter flushes, freeing deleted files' data), kept apart from its calls.
#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct BackgroundAcc {
    pub(crate) runs: u64,
    pub(crate) round_trips: u64,
    pub(crate) retries: u64,
    pub(crate) busy: Duration,
    pub(crate) errors: u64,
    /// Heartbeats of registered sessions among the passes' work.
    pub(crate) heartbeats: u64,
}

impl BackgroundAcc {
    pub(crate) fn merge(&mut self, other: BackgroundAcc) {
        self.runs += other.runs;
        self.round_trips += other.round_trips;
        self.retries += other.retries;
        self.busy += other.busy;
        self.errors += other.errors;
        self.heartbeats += other.heartbeats;
    }
}

/// One shard: its clients' calls by operation, and their background work.
#[derive(Default)]
struct Shard {
    ops: BTreeMap<Op, OpAcc>,
    background: BackgroundAcc,
}

/// Shards of accumulators, so clients record without contending on one lock.
pub(crate) struct Recorder {
    shards: Vec<Mutex<Shard>>,
}

impl Recorder {
    pub(crate) fn new(shards: usize) -> Self {
        Self {
            shards: (0..shards).map(|_| Mutex::default()).collect(),
        }
    }

    fn shard(&self, client: usize) -> std::sync::MutexGuard<'_, Shard> {
        self.shards[client % self.shards.len()]
            .lock()
            .expect("recorder lock")
    }

    pub(crate) fn with<R>(&self, client: usize, op: Op, f: impl FnOnce(&mut OpAcc) -> R) -> R {
        f(self.shard(client).ops.entry(op).or_default())
    }

    /// Adds one pass of `client`'s background work.
    pub(crate) fn background(&self, client: usize, pass: BackgroundAcc) {
        self.shard(client).background.merge(pass);
    }

    /// Every client's calls by operation, and their background work.
    pub(crate) fn merged(self) -> (BTreeMap<Op, OpAcc>, BackgroundAcc) {
        let mut all: BTreeMap<Op, OpAcc> = BTreeMap::new();
        let mut background = BackgroundAcc::default();
        for shard in self.shards {
            let shard = shard.into_inner().expect("recorder lock");
            for (op, acc) in shard.ops {
                all.entry(op).or_default().merge(acc);
            }
            background.merge(shard.background);
        }
        (all, background)
    }
}

/// Records `ns` in the per-second histogram `interval`, adding seconds as needed.
fn record_at(intervals: &mut Vec<Histogram<u64>>, interval: usize, ns: u64) {
    while intervals.len() <= interval {
        intervals.push(histogram());
    }
    let _ = intervals[interval].record(ns);
}

/// Adds per-second histograms into `mine`, second by second.
fn merge_intervals(mine: &mut Vec<Histogram<u64>>, theirs: Vec<Histogram<u64>>) {
    for (i, h) in theirs.into_iter().enumerate() {
        match mine.get_mut(i) {
            Some(m) => m.add(&h).expect("auto-resizing histograms merge"),
            None => mine.push(h),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metabench_report::Latency;

    #[test]
    fn failures_are_counted_per_second_and_merged_second_by_second() {
        let mut a = OpAcc::default();
        a.record_failure("timeout", Duration::from_millis(30), 2);
        a.record_failure("engine", Duration::from_millis(5), 2);
        let mut b = OpAcc::default();
        b.record_failure("engine", Duration::from_millis(7), 0);
        b.record_failure("engine", Duration::from_millis(1), 4);
        assert_eq!(a.error_intervals, [0, 0, 2]);
        a.merge(b);
        assert_eq!(a.error_intervals, [1, 0, 2, 0, 1]);
        assert_eq!(a.errors["engine"], 3);
        assert_eq!(a.failed_max, Duration::from_millis(30));
        let back = OpAcc::from_wire(a.to_wire(Instant::now()), Instant::now()).unwrap();
        assert_eq!(back.error_intervals, a.error_intervals);
    }

    #[test]
    fn a_stall_of_any_length_is_kept_whole() {
        let mut h = histogram();
        let two_hours = Duration::from_secs(7200).as_nanos() as u64;
        h.record(50_000).unwrap();
        h.record(two_hours).unwrap();
        let s = Latency::of(&h);
        assert_eq!(s.count, 2);
        assert!(s.max_us >= 0.999 * two_hours as f64 / 1000.0, "{s:?}");
        assert!(s.histogram.is_some());
        assert_eq!(Latency::of(&histogram()), Latency::default());
    }

    #[test]
    fn shards_merge_exactly() {
        let recorder = Recorder::new(2);
        for client in 0..4 {
            recorder.with(client, Op::Getattr, |acc| {
                acc.calls += 1;
                acc.record(Duration::from_micros(10 * (client as u64 + 1)), None, 0);
            });
        }
        let (merged, _) = recorder.merged();
        let acc = &merged[&Op::Getattr];
        assert_eq!(acc.calls, 4);
        let h = acc.hist.as_ref().unwrap();
        assert_eq!((h.len(), h.max() / 1000), (4, 40));
        assert_eq!(acc.intervals[0].len(), 4);
    }

    #[test]
    fn an_accumulator_crosses_processes_whole() {
        let from = Instant::now();
        let mut acc = OpAcc::default();
        for us in [10, 20, 5000] {
            acc.calls += 1;
            acc.round_trips += 2;
            acc.record(
                Duration::from_micros(us),
                Some(Duration::from_micros(us / 2)),
                1,
            );
        }
        acc.errors.insert("timeout".into(), 1);
        acc.last_end = Some(from + Duration::from_millis(1500));
        acc.failed_max = Duration::from_secs(30);
        let json = serde_json::to_string(&acc.to_wire(from)).unwrap();
        let elsewhere = Instant::now() + Duration::from_secs(7);
        let back = OpAcc::from_wire(serde_json::from_str(&json).unwrap(), elsewhere).unwrap();
        assert_eq!(back.hist, acc.hist);
        assert_eq!(back.service, acc.service);
        assert_eq!(back.intervals, acc.intervals);
        assert_eq!(back.service_intervals, acc.service_intervals);
        assert_eq!(back.intervals.len(), 2);
        assert_eq!(
            (
                back.calls,
                back.round_trips,
                back.errors.clone(),
                back.failed_max
            ),
            (3, 6, acc.errors.clone(), acc.failed_max)
        );
        assert_eq!(back.last_end, Some(elsewhere + Duration::from_millis(1500)));
    }

    #[test]
    fn call_parts_travel_as_a_list_of_command_counts_and_default_what_a_rank_left_out() {
        let mut parts = CallParts {
            calls: 2,
            round_trips: 5,
            ready_wait_ns: 7,
            ..Default::default()
        };
        parts.commands.0[0] = 3;
        let json = serde_json::to_value(parts).unwrap();
        let n = parts.commands.0.len();
        assert_eq!(json["commands"].as_array().unwrap().len(), n);
        assert_eq!(json["commands"][0], 3);
        assert_eq!(serde_json::from_value::<CallParts>(json).unwrap(), parts);
        // A rank of an older build: no retried or ready-wait parts, a shorter list.
        let old: CallParts = serde_json::from_str(
            r#"{"calls":1,"round_trips":2,"lock_wait_ns":3,"retry_waste_ns":4,"engine_ns":5,"commands":[6]}"#,
        )
        .unwrap();
        let mut want = CallParts {
            calls: 1,
            round_trips: 2,
            lock_wait_ns: 3,
            retry_waste_ns: 4,
            engine_ns: 5,
            ..Default::default()
        };
        want.commands.0[0] = 6;
        assert_eq!(old, want);
    }
}
