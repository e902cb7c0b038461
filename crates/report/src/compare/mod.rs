//! Comparing two runs honestly, and the regression gate built on it.
//!
//! Every timing change comes with a significance test, so a change is either
//! *significant* (p < α) or *within noise*:
//!
//! - **sweep files**: Welch's t-test on the per-second [`IntervalSample`]s of each level
//!   and operation — per-interval counts for throughput, per-interval mean latency for
//!   the mean, per-interval p99 for the p99.
//! - **ops files** have no intervals: the mean is tested with Welch's t-test on the two
//!   latency histograms' summaries (mean, standard deviation, count of the individual
//!   calls — with thousands of calls this is the normal approximation); throughput of one
//!   client is `1/mean` and shares that test; the p99 of a single run has no test and is
//!   shown but never gated.
//!
//! Round trips per operation are deterministic where no transaction was retried, so any
//! increase there is a regression; rows where either run retried after conflicts (whose
//! retries add round trips) are shown but not gated on round trips.
//!
//! [`IntervalSample`]: crate::model::IntervalSample

use crate::histogram;
use crate::model::{
    AnyResults, Breakdown, LevelOp, OpResult, OpsResults, SweepResults, BREAKDOWN_PARTS,
};
use crate::stats::{welch, welch_series, Summary, Welch};
use crate::table::fmt_us;
use comfy_table::{presets::ASCII_MARKDOWN, CellAlignment, Table};

/// Default significance level.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// Tolerance for comparing round trips per operation (they are averages of integers).
pub const ROUND_TRIP_EPSILON: f64 = 1e-9;

/// Which direction of a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Throughput.
    Higher,
    /// Latency.
    Lower,
}

/// The change of one metric between two runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// `ops/s`, `mean µs` or `p99 µs`.
    pub metric: &'static str,
    /// Which way is better.
    pub better: Better,
    /// Value in the baseline run.
    pub base: f64,
    /// Value in the current run.
    pub current: f64,
    /// The test, when one applies.
    pub test: Option<Welch>,
    /// Whether the change is significant at the chosen α.
    pub significant: bool,
}

impl Change {
    fn new(
        metric: &'static str,
        better: Better,
        base: f64,
        current: f64,
        test: Option<Welch>,
        alpha: f64,
    ) -> Self {
        let significant = test.is_some_and(|w| w.p < alpha) && base != current;
        Change {
            metric,
            better,
            base,
            current,
            test,
            significant,
        }
    }

    /// Relative change `(current − base) / base`; 0 when the base is 0.
    pub fn relative(&self) -> f64 {
        if self.base == 0.0 {
            0.0
        } else {
            (self.current - self.base) / self.base
        }
    }

    /// How much worse the current run is, as a share of the base (negative: better).
    pub fn regression(&self) -> f64 {
        match self.better {
            Better::Higher => -self.relative(),
            Better::Lower => self.relative(),
        }
    }

    /// The cell of a comparison table: `base → current (±x.x%, mark)`.
    pub fn cell(&self) -> String {
        let fmt = |v: f64| {
            if self.better == Better::Higher {
                format!("{v:.0}")
            } else {
                fmt_us(v)
            }
        };
        let mark = match (self.test, self.significant) {
            (None, _) => "no test".to_owned(),
            (Some(w), true) => format!("significant, p={}", fmt_p(w.p)),
            (Some(w), false) => format!("noise, p={}", fmt_p(w.p)),
        };
        format!(
            "{} → {} ({:+.1}%, {mark})",
            fmt(self.base),
            fmt(self.current),
            self.relative() * 100.0
        )
    }
}

fn fmt_p(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// One operation (at one level, for sweeps) in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Operation.
    pub op: String,
    /// Concurrency level (sweeps only).
    pub clients: Option<u32>,
    /// An open loop's offered rate, calls per second (open-loop sweeps only).
    pub offered: Option<f64>,
    /// Throughput, mean and p99.
    pub changes: Vec<Change>,
    /// Round trips per operation: baseline, current.
    pub round_trips: (f64, f64),
    /// Transaction retries after conflicts: baseline, current.
    pub retries: (u64, u64),
    /// Sweeps: where the mean latency went, baseline and current (none in `ops` runs and
    /// in files written before breakdowns).
    pub breakdown: (Option<Breakdown>, Option<Breakdown>),
}

impl Row {
    /// `mkdir`, `mkdir @ 8 clients` or, in an open loop, `mkdir @ 4000/s`.
    pub fn name(&self) -> String {
        match (self.offered, self.clients) {
            (Some(r), _) => format!("{} @ {r:.0}/s", self.op),
            (None, Some(c)) => format!("{} @ {c} clients", self.op),
            (None, None) => self.op.clone(),
        }
    }

    /// The level column of a sweep comparison: clients, or an open loop's offered rate.
    fn level(&self) -> String {
        match (self.offered, self.clients) {
            (Some(r), _) => format!("{r:.0}/s"),
            (None, Some(c)) => c.to_string(),
            (None, None) => String::new(),
        }
    }

    /// Whether round trips per operation went up.
    pub fn round_trips_increased(&self) -> bool {
        self.round_trips.1 > self.round_trips.0 + ROUND_TRIP_EPSILON
    }

    /// Whether round trips are deterministic in this row: neither run retried a
    /// transaction (retries add round trips that depend on contention).
    pub fn round_trips_deterministic(&self) -> bool {
        self.retries == (0, 0)
    }
}

/// Two runs side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// `ops` or `sweep`.
    pub kind: &'static str,
    /// Significance level used.
    pub alpha: f64,
    /// Rows present in both runs.
    pub rows: Vec<Row>,
    /// Rows only the baseline has.
    pub only_in_base: Vec<String>,
    /// Rows only the current run has.
    pub only_in_current: Vec<String>,
    /// What makes the two runs not like for like (they model different clients).
    pub warnings: Vec<String>,
    /// Where the engines' setups differ (version, settings, where they ran, CPU
    /// sharing), one line each ([`crate::EngineInfo::setup_differences`]).
    pub setup_differences: Vec<String>,
    /// Whether round trips per call depend on timing in either run: with SkipDirMtime
    /// above 0, a parent is rewritten only when its mtime is old enough, so a slower run
    /// sends more. Such round trips are shown, not gated.
    pub round_trips_timed: bool,
}

impl Comparison {
    /// The rows of a comparison and the rows only one side has (baseline, current); no
    /// warnings yet.
    fn new(
        kind: &'static str,
        alpha: f64,
        rows: Vec<Row>,
        (only_in_base, only_in_current): (Vec<String>, Vec<String>),
    ) -> Self {
        Comparison {
            kind,
            alpha,
            rows,
            only_in_base,
            only_in_current,
            warnings: Vec::new(),
            setup_differences: Vec::new(),
            round_trips_timed: false,
        }
    }

    /// Which test backs the timing columns.
    pub fn test_description(&self) -> &'static str {
        if self.kind == "sweep" {
            "Welch's t-test on the per-second interval samples (counts for ops/s, \
             per-interval mean and p99 latency)"
        } else {
            "Welch's t-test on the latency histograms' per-call mean, standard deviation and \
             count (normal approximation; ops/s of one client is 1/mean and shares the test); \
             a single run's p99 has no test"
        }
    }
}

/// Compares `current` against `base` at significance level `alpha`.
pub fn compare(base: &AnyResults, current: &AnyResults, alpha: f64) -> Result<Comparison, String> {
    let mut c = match (base, current) {
        (AnyResults::Ops(a), AnyResults::Ops(b)) => compare_ops(a, b, alpha),
        (AnyResults::Sweep(a), AnyResults::Sweep(b)) => compare_sweeps(a, b, alpha),
        (a, b) => {
            return Err(format!(
                "cannot compare a '{}' run with a '{}' run",
                a.kind(),
                b.kind()
            ))
        }
    };
    let (b, n) = (base.engine(), current.engine());
    let (was, is) = (b.client_summary(), n.client_summary());
    // A setting only one run records (an older metabench recorded fewer) is no difference.
    let agree = b
        .client_settings
        .iter()
        .all(|(k, v)| n.client_settings.get(k).is_none_or(|w| w == v));
    match (b.profile_name(), n.profile_name()) {
        (Some(x), Some(y)) if x == y && agree => {}
        (Some(_), Some(_)) => c.warnings.push(format!(
            "the runs model different clients (baseline {was}; current {is}): the changes below \
             reflect the client settings as well as the engine"
        )),
        _ => c.warnings.push(format!(
            "a run does not record its client (baseline {was}; current {is}): they may model \
             different clients"
        )),
    }
    if let (AnyResults::Sweep(a), AnyResults::Sweep(b)) = (base, current) {
        let per_client = |r: &SweepResults| r.plan.threads_per_client.max(1);
        let (x, y) = (per_client(a), per_client(b));
        if x != y {
            c.warnings.push(format!(
                "the runs group their workers differently (baseline {x}, current {y} per \
                 client, --threads-per-client): a level's workers make up other clients"
            ));
        }
        let layout = |r: &SweepResults| match r.plan.shared_dir {
            true => "one hot directory for all clients (--shared-dir)",
            false => "a directory per client",
        };
        if a.plan.shared_dir != b.plan.shared_dir {
            c.warnings.push(format!(
                "the runs place their clients differently (baseline {}, current {}): the \
                 lock wait and conflicts a shared parent adds differ by design",
                layout(a),
                layout(b)
            ));
        }
        if a.plan.engine_counters_off != b.plan.engine_counters_off {
            c.warnings.push(
                "one run left the engine's counters unread (--no-engine-counters): its engine \
                 check and the breakdown's engine part are missing"
                    .to_owned(),
            );
        }
    }
    c.setup_differences = b.setup_differences(n);
    let tree = |h: &crate::RunHeader| {
        h.reads
            .as_ref()
            .map_or("what each run made (no --tree)".to_owned(), |r| {
                format!("{} names under {} ({})", r.names, r.path, r.keys)
            })
    };
    let (was, is) = (tree(base.header()), tree(current.header()));
    if was != is {
        c.setup_differences.push(format!(
            "the reads drew their targets from different trees: baseline {was}, current {is}"
        ));
    }
    c.round_trips_timed = base.engine().skips_dir_mtime() || current.engine().skips_dir_mtime();
    Ok(c)
}

/// Summary of the calls of an `ops` result in µs: from its histogram, else none.
fn ops_summary(r: &OpResult) -> Option<Summary> {
    let h = histogram::decode(r.latency.histogram.as_deref()?).ok()?;
    if h.is_empty() {
        return None;
    }
    Some(Summary {
        mean: h.mean() / 1000.0,
        sd: h.stdev() / 1000.0,
        n: h.len() as f64,
    })
}

/// Compares two `ops` runs.
pub fn compare_ops(a: &OpsResults, b: &OpsResults, alpha: f64) -> Comparison {
    let usable = |r: &&OpResult| r.skipped.is_none() && r.latency.count > 0;
    let mut rows = Vec::new();
    let mut only_in_base = Vec::new();
    for ra in a.results.iter().filter(usable) {
        let Some(rb) = b.get(&ra.op).filter(usable) else {
            only_in_base.push(ra.op.clone());
            continue;
        };
        let test = match (ops_summary(ra), ops_summary(rb)) {
            (Some(sa), Some(sb)) => welch(&sa, &sb),
            _ => None,
        };
        let tput = |m: f64| if m > 0.0 { 1e6 / m } else { 0.0 };
        rows.push(Row {
            op: ra.op.clone(),
            clients: None,
            offered: None,
            changes: vec![
                Change::new(
                    "ops/s",
                    Better::Higher,
                    tput(ra.latency.mean_us),
                    tput(rb.latency.mean_us),
                    test,
                    alpha,
                ),
                Change::new(
                    "mean µs",
                    Better::Lower,
                    ra.latency.mean_us,
                    rb.latency.mean_us,
                    test,
                    alpha,
                ),
                Change::new(
                    "p99 µs",
                    Better::Lower,
                    ra.latency.p99_us,
                    rb.latency.p99_us,
                    None,
                    alpha,
                ),
            ],
            round_trips: (ra.round_trips_per_op, rb.round_trips_per_op),
            retries: (ra.retries, rb.retries),
            breakdown: (None, None),
        });
    }
    let only_in_current = b
        .results
        .iter()
        .filter(usable)
        .filter(|r| !a.results.iter().filter(usable).any(|x| x.op == r.op))
        .map(|r| r.op.clone())
        .collect();
    Comparison::new("ops", alpha, rows, (only_in_base, only_in_current))
}

/// A sweep level's identity across runs: clients, and an open loop's offered rate.
#[derive(Debug, Clone, Copy, PartialEq)]
struct LevelKey {
    clients: u32,
    offered: Option<f64>,
}

impl std::fmt::Display for LevelKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.offered {
            Some(r) => write!(f, "{r:.0}/s"),
            None => write!(f, "{} clients", self.clients),
        }
    }
}

fn sweep_rows(r: &SweepResults) -> Vec<(LevelKey, &LevelOp)> {
    r.levels
        .iter()
        .flat_map(|l| {
            let key = LevelKey {
                clients: l.clients,
                offered: l.offered_ops_per_s,
            };
            l.ops.iter().map(move |o| (key, o))
        })
        .collect()
}

/// Compares two sweeps level by level.
pub fn compare_sweeps(a: &SweepResults, b: &SweepResults, alpha: f64) -> Comparison {
    let ra = sweep_rows(a);
    let rb = sweep_rows(b);
    let mut rows = Vec::new();
    let mut only_in_base = Vec::new();
    for (c, oa) in &ra {
        let Some((_, ob)) = rb.iter().find(|(cb, ob)| cb == c && ob.op == oa.op) else {
            only_in_base.push(format!("{} @ {c}", oa.op));
            continue;
        };
        // A second in which no call completed has a count but no latency.
        let series = |o: &LevelOp, f: fn(&crate::IntervalSample) -> f64| -> Vec<f64> {
            o.intervals.iter().filter(|s| s.count > 0).map(f).collect()
        };
        let test =
            |f: fn(&crate::IntervalSample) -> f64| welch_series(&series(oa, f), &series(ob, f));
        let counts =
            |o: &LevelOp| -> Vec<f64> { o.intervals.iter().map(|s| s.count as f64).collect() };
        let mut changes = vec![
            Change::new(
                "ops/s",
                Better::Higher,
                oa.ops_per_s,
                ob.ops_per_s,
                welch_series(&counts(oa), &counts(ob)),
                alpha,
            ),
            Change::new(
                "mean µs",
                Better::Lower,
                oa.latency.mean_us,
                ob.latency.mean_us,
                test(|s| s.mean_us),
                alpha,
            ),
            Change::new(
                "p99 µs",
                Better::Lower,
                oa.latency.p99_us,
                ob.latency.p99_us,
                test(|s| s.p99_us),
                alpha,
            ),
        ];
        // Open loops: the latency above runs from the intended start; service time is
        // compared (and gated) on its own per-second p99 samples.
        if let (Some(sa), Some(sb)) = (&oa.service, &ob.service) {
            changes.push(Change::new(
                "service p99 µs",
                Better::Lower,
                sa.p99_us,
                sb.p99_us,
                test(|s| s.service_p99_us.unwrap_or(0.0)),
                alpha,
            ));
        }
        rows.push(Row {
            op: oa.op.clone(),
            clients: Some(c.clients),
            offered: c.offered,
            changes,
            round_trips: (oa.round_trips_per_op, ob.round_trips_per_op),
            retries: (oa.retries, ob.retries),
            breakdown: (oa.breakdown.clone(), ob.breakdown.clone()),
        });
    }
    let only_in_current = rb
        .iter()
        .filter(|(c, ob)| !ra.iter().any(|(ca, oa)| ca == c && oa.op == ob.op))
        .map(|(c, o)| format!("{} @ {c}", o.op))
        .collect();
    Comparison::new("sweep", alpha, rows, (only_in_base, only_in_current))
}

fn round_trip_cell(r: &Row) -> String {
    let rt = r.round_trips;
    let cell = if (rt.1 - rt.0).abs() <= ROUND_TRIP_EPSILON {
        format!("{:.2}", rt.0)
    } else {
        format!("{:.2} → {:.2} ({:+.2})", rt.0, rt.1, rt.1 - rt.0)
    };
    if r.round_trips_deterministic() {
        cell
    } else {
        format!("{cell}, retries {} → {}", r.retries.0, r.retries.1)
    }
}

/// Renders a comparison as a Markdown table with the test used and the unmatched rows.
pub fn render(c: &Comparison) -> String {
    let mut t = Table::new();
    t.load_style(ASCII_MARKDOWN);
    // Every metric any row has, in first-seen order (open loops add service time).
    let mut metrics: Vec<&str> = Vec::new();
    for ch in c.rows.iter().flat_map(|r| &r.changes) {
        if !metrics.contains(&ch.metric) {
            metrics.push(ch.metric);
        }
    }
    if metrics.is_empty() {
        metrics = vec!["ops/s", "mean µs", "p99 µs"];
    }
    let mut header = vec!["op"];
    if c.kind == "sweep" {
        header.push(if c.rows.iter().any(|r| r.offered.is_some()) {
            "level"
        } else {
            "clients"
        });
    }
    header.extend(metrics.iter().copied());
    header.push("round trips/op");
    t.set_header(header);
    for r in &c.rows {
        let mut row = vec![r.op.clone()];
        if r.clients.is_some() {
            row.push(r.level());
        }
        row.extend(metrics.iter().map(|m| {
            r.changes
                .iter()
                .find(|ch| ch.metric == *m)
                .map_or("–".to_owned(), Change::cell)
        }));
        row.push(round_trip_cell(r));
        t.add_row(row);
    }
    for i in 1..t.column_count() {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = format!("{t}\n");
    out += &format!(
        "Changes are current against baseline; significant means p < {} by {}.\n",
        c.alpha,
        c.test_description()
    );
    out += &render_breakdowns(c);
    if !c.only_in_base.is_empty() {
        out += &format!("Only in the baseline: {}\n", c.only_in_base.join(", "));
    }
    if !c.only_in_current.is_empty() {
        out += &format!(
            "Only in the current run: {}\n",
            c.only_in_current.join(", ")
        );
    }
    for w in &c.warnings {
        out += &format!("Warning: {w}\n");
    }
    for d in &c.setup_differences {
        out += &format!("Setup: {d}\n");
    }
    out
}

/// The rows' breakdowns side by side (baseline → current, µs per call, "unknown" where
/// a part is not measured), when any row has both; empty otherwise.
fn render_breakdowns(c: &Comparison) -> String {
    let mut t = Table::new();
    t.load_style(ASCII_MARKDOWN);
    let mut header = vec!["op", "clients", "mean µs"];
    header.extend(BREAKDOWN_PARTS);
    t.set_header(header);
    for r in &c.rows {
        let (Some(a), Some(b)) = &r.breakdown else {
            continue;
        };
        let mut row = vec![r.op.clone(), r.level()];
        row.push(format!("{:.1} → {:.1}", a.mean_us, b.mean_us));
        row.extend(
            a.parts()
                .iter()
                .zip(b.parts())
                .map(|(x, y)| format!("{} → {}", Breakdown::cell(*x), Breakdown::cell(y))),
        );
        t.add_row(row);
    }
    if t.row_count() == 0 {
        return String::new();
    }
    for i in 1..t.column_count() {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    format!(
        "\nWhere the time goes, baseline → current (µs per call; unexplained = mean less \
         the known parts):\n{t}\n"
    )
}

/// What the gate checks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GatePolicy {
    /// Largest tolerated significant regression of a timing, as a share (0.10 = 10 %);
    /// `None` gates on round trips only.
    pub max_regression: Option<f64>,
    /// Significance level.
    pub alpha: f64,
}

/// One reason a row failed the gate.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// The row (`mkdir`, `mkdir @ 8 clients`).
    pub row: String,
    /// Why.
    pub reason: String,
}

/// Rows whose round trips rose where retries make them non-deterministic: reported by
/// the gate, not failed.
pub fn round_trips_not_gated(c: &Comparison) -> Vec<String> {
    c.rows
        .iter()
        .filter(|r| {
            r.round_trips_increased() && (c.round_trips_timed || !r.round_trips_deterministic())
        })
        .map(|r| {
            let why = if c.round_trips_timed {
                ", SkipDirMtime above 0 makes them depend on timing"
            } else {
                ""
            };
            format!(
                "{}: round trips {:.2} → {:.2} with retries {} → {}{why} (not gated)",
                r.name(),
                r.round_trips.0,
                r.round_trips.1,
                r.retries.0,
                r.retries.1
            )
        })
        .collect()
}

/// Applies the gate: every failing row with its reason (empty: the gate passes).
pub fn gate(c: &Comparison, policy: &GatePolicy) -> Vec<Failure> {
    let mut failures = Vec::new();
    for r in &c.rows {
        if r.round_trips_increased() && r.round_trips_deterministic() && !c.round_trips_timed {
            failures.push(Failure {
                row: r.name(),
                reason: format!(
                    "round trips per operation increased from {:.2} to {:.2}",
                    r.round_trips.0, r.round_trips.1
                ),
            });
        }
        let Some(max) = policy.max_regression else {
            continue;
        };
        for ch in &r.changes {
            let Some(w) = ch.test else { continue };
            if w.p < policy.alpha && ch.base != ch.current && ch.regression() > max {
                failures.push(Failure {
                    row: r.name(),
                    reason: format!(
                        "{} {} beyond the {:.1}% allowed ({}, p={})",
                        ch.metric,
                        if ch.better == Better::Higher {
                            format!("fell {:.1}%", ch.regression() * 100.0)
                        } else {
                            format!("rose {:.1}%", ch.regression() * 100.0)
                        },
                        max * 100.0,
                        if ch.better == Better::Higher {
                            format!("{:.0} → {:.0}", ch.base, ch.current)
                        } else {
                            format!("{} → {}", fmt_us(ch.base), fmt_us(ch.current))
                        },
                        fmt_p(w.p)
                    ),
                });
            }
        }
    }
    failures
}

/// Parses a regression threshold, `10%` or `10` (both percent), as a share (0.1).
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let num = t.strip_suffix('%').unwrap_or(t).trim();
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage; try 10%"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("'{s}' must be a percentage of at least 0"));
    }
    Ok(v / 100.0)
}

#[cfg(test)]
mod tests;
