//! The results of `metabench ops`: the plan and the figures of each operation.

use super::header::RunHeader;
use super::latency::Latency;
use super::read::read_results;
use super::sweep::{Floor, RunFailure};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What an `ops` run was asked to do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpsPlan {
    /// Operations, in run order.
    pub ops: Vec<String>,
    /// Timed calls per operation, when fixed.
    pub iterations: Option<u64>,
    /// Timed time per operation in seconds, when fixed.
    pub duration_s: Option<f64>,
    /// Whether the Go client's caches were reproduced (`--client-cache`).
    pub client_cache: bool,
    /// How long one call may take before it counts as a `timeout` error, seconds
    /// (`--op-timeout`; 0 in files written before it existed).
    #[serde(default)]
    pub op_timeout_s: f64,
    /// Untimed calls' time before each operation's timed ones, seconds (`--warmup`; 0
    /// when only the one untimed call was made, and in files written before it existed).
    #[serde(default)]
    pub warmup_s: f64,
}

/// Figures of one operation (its nested records refuse unknown fields through
/// [`OpsResults::from_json`], as `deny_unknown_fields` cannot be used with `flatten`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpResult {
    /// Operation name as in JuiceFS's benchmark (`mkdir`, `readdir_1k`, …).
    pub op: String,
    /// Timed calls that succeeded, and their latency.
    #[serde(flatten)]
    pub latency: Latency,
    /// Round trips to the engine per timed call (Redis requests, SQL statements).
    pub round_trips_per_op: f64,
    /// Transaction retries after conflicts, in total.
    pub retries: u64,
    /// Failed calls by error kind.
    pub errors: BTreeMap<String, u64>,
    /// Why the operation did not run, if it did not.
    pub skipped: Option<String>,
    /// How metabench ran it where that differs from a plain call (caches, id batches).
    pub note: Option<String>,
    /// `listdir`: the entries a call listed (`.` and `..` counted), on average over the
    /// directories it read; with the mean latency it gives entries per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries_per_call: Option<f64>,
}

impl OpResult {
    /// A listing's entries per second at its mean latency; none for an operation that
    /// lists nothing, or one that did not run.
    pub fn entries_per_s(&self) -> Option<f64> {
        let n = self.entries_per_call?;
        (self.skipped.is_none() && self.latency.mean_us > 0.0)
            .then(|| n / (self.latency.mean_us / 1e6))
    }

    /// An operation that did not run, and why (`ENOTSUP`).
    pub fn skipped(op: &str, why: &str) -> Self {
        OpResult {
            op: op.into(),
            skipped: Some(why.into()),
            ..Default::default()
        }
    }
}

/// How late the client thread of an `ops` run got to run while its operations did,
/// probed from another thread as a sweep probes its client threads in a window (a
/// stamped task every 10 ms, the kernel's wait figures for a thread found asleep). The
/// probe runs in both commands so that the two time their calls amid the same wake-ups:
/// run in `sweep` alone, its wake-ups would make that command's round trips faster
/// (measurements: docs/src/history.md, "The lag probe every 10 ms, in `ops` too").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientLag {
    /// Lags recorded (a wait longer than the probe's interval counts once per interval
    /// it took, as in a sweep's windows).
    pub samples: u64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// Largest, µs.
    pub max_us: f64,
    /// Set when the p99 passed the limit at which a sweep level is flagged client-bound:
    /// the client thread, not the engine, held some calls up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The results of `metabench ops`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpsResults {
    /// Kind `ops`, who wrote it, when, on what.
    #[serde(flatten)]
    pub header: RunHeader,
    /// The plan.
    pub plan: OpsPlan,
    /// The engine's null round trip through the same client path, before the run.
    #[serde(default)]
    pub floor: Option<Floor>,
    /// The client thread's scheduling lag while the operations ran. None in results from
    /// before it was probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_lag: Option<ClientLag>,
    /// Per-operation figures, in run order.
    pub results: Vec<OpResult>,
    /// Whether the run was stopped early (Ctrl-C).
    pub interrupted: bool,
    /// Set when the engine failed mid-run: the operations before it are complete.
    #[serde(default)]
    pub failure: Option<Box<RunFailure>>,
}

impl OpsResults {
    /// An `ops` run of `results` whose header says only its kind (for reports built in code).
    pub fn of(results: Vec<OpResult>) -> Self {
        OpsResults {
            header: RunHeader {
                kind: "ops".into(),
                ..Default::default()
            },
            results,
            ..Default::default()
        }
    }

    /// Reads a results file, checking its kind and version.
    pub fn from_json(s: &str) -> Result<Self, String> {
        read_results(s, "ops")
    }

    /// The result of one operation.
    pub fn get(&self, op: &str) -> Option<&OpResult> {
        self.results.iter().find(|r| r.op == op)
    }
}
