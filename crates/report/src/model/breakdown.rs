//! Where an operation's time goes at one level: its mean latency split into the parts
//! metabench measures (client CPU, lock wait, wire, engine, client wait, retry waste) and
//! what they leave unexplained.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One operation's mean latency at one level, split into parts, µs per call.
///
/// A part that cannot be measured on an engine is `None` (shown "unknown"), never 0.
/// `unexplained_us` is the mean less the parts that are known: it is its own part, may be
/// negative (parts that overlap), and is never folded into another. At high concurrency
/// it is mostly queueing in the engine; with the engine part unknown it holds the
/// engine's time as well.
///
/// Granularity: lock wait, retry waste and an in-process engine's time (SQLite) are
/// timed per call and summed; client CPU, client wait and wire are per phase (each
/// operation's own window), and so is an engine's own accounting from totals per command
/// or statement (Redis `INFO commandstats`, `pg_stat_statements`, …): a figure shared out
/// over the window's calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Breakdown {
    /// The mean latency split (µs): of the successful calls, from each call's actual
    /// start (an open loop's service time).
    pub mean_us: f64,
    /// metabench's own CPU per call, per level: the process's CPU over the windows per
    /// call, less an in-process engine's time.
    pub client_us: Option<f64>,
    /// Time queued on JuiceFS's process-local transaction locks (`txLock`) while another
    /// worker of the same client held them, per call.
    pub lock_wait_us: Option<f64>,
    /// Round trips per call (and MySQL's prepares) × the floor's mean (the engine's null
    /// round trip through the same client path) less the floor's own client CPU and engine time
    /// ([`crate::Floor::wire_per_round_trip_us`]): transport, socket work, wake-ups.
    pub wire_us: Option<f64>,
    /// Time the engine itself spent on the call's commands or statements, by its own
    /// accounting ([`Breakdown::engine_source`] says which).
    pub engine_us: Option<f64>,
    /// Time a ready client waited for its client thread, per level: the mean scheduling
    /// lag of the client threads × round trips per call (each reply wakes the client).
    pub client_wait_us: Option<f64>,
    /// Time in transaction attempts that conflicted and were retried (the backoff sleeps
    /// included), per call.
    pub retry_waste_us: Option<f64>,
    /// The mean less every known part above; may be negative.
    pub unexplained_us: f64,
    /// Where the engine part comes from, or why it is unknown ("engine time unknown: …").
    pub engine_source: String,
    /// Round trips per call that the wire and engine parts count: those of the attempts
    /// that were not retried (a retried attempt's time is all retry waste).
    #[serde(default)]
    pub round_trips_per_op: f64,
    /// MySQL/MariaDB: the statements per call that were prepared first (each
    /// parameterized statement is prepared, executed and closed, as JuiceFS's
    /// go-sql-driver sends it): each prepare is a network exchange the wire part counts
    /// beside the round trips, not a statement.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prepares_per_op: f64,
    /// Redis: the top-level commands sent per call, by name (what the engine part is
    /// computed from).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub commands_per_op: BTreeMap<String, f64>,
}

fn is_zero(n: &f64) -> bool {
    *n == 0.0
}

/// The parts' names, in the order tables and charts show them.
pub const BREAKDOWN_PARTS: [&str; 7] = [
    "client",
    "lock wait",
    "wire",
    "engine",
    "client wait",
    "retry waste",
    "unexplained",
];

impl Breakdown {
    /// The parts in [`BREAKDOWN_PARTS`] order (unexplained always known).
    pub fn parts(&self) -> [Option<f64>; 7] {
        [
            self.client_us,
            self.lock_wait_us,
            self.wire_us,
            self.engine_us,
            self.client_wait_us,
            self.retry_waste_us,
            Some(self.unexplained_us),
        ]
    }

    /// Sets [`Breakdown::unexplained_us`]: the mean less the known parts.
    pub fn explain(&mut self) {
        let known: f64 = self.parts()[..6].iter().flatten().sum();
        self.unexplained_us = self.mean_us - known;
    }

    /// A part as a table cell: µs with one decimal, or "unknown".
    pub fn cell(part: Option<f64>) -> String {
        part.map_or_else(|| "unknown".to_owned(), |v| format!("{v:.1}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unexplained_is_the_mean_less_the_known_parts_and_may_be_negative() {
        let mut b = Breakdown {
            mean_us: 100.0,
            client_us: Some(10.0),
            wire_us: Some(60.0),
            engine_us: None,
            ..Default::default()
        };
        b.explain();
        assert_eq!(b.unexplained_us, 30.0);
        b.engine_us = Some(50.0);
        b.explain();
        assert_eq!(b.unexplained_us, -20.0, "never clamped");
        assert_eq!(Breakdown::cell(b.lock_wait_us), "unknown");
        let old: Breakdown = serde_json::from_str(
            r#"{"mean_us":1,"client_us":null,"lock_wait_us":null,"wire_us":null,"engine_us":null,"client_wait_us":null,"retry_waste_us":null,"unexplained_us":1,"engine_source":""}"#,
        )
        .unwrap();
        assert!(old.commands_per_op.is_empty());
    }
}
