//! The parity report: per mdtest phase native vs through-mount rates, fio bandwidths,
//! `juicefs bench` rows and `juicefs objbench`'s tables; a table and JSON.

use crate::bench::BenchResult;
use crate::fio::FioResult;
use crate::go_mdtest::GoMdtest;
use crate::mdtest::SummaryRow;
use crate::objbench::ObjbenchResult;
use metabench_pathfs::tree::{Phase, PhaseResult, TreeSpec};
use metabench_report::RunHeader;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// One phase, each way it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseRow {
    /// mdtest's label.
    pub phase: String,
    /// Calls (all tasks), the same on every side.
    pub items: u64,
    /// Native rate, ops/s: metabench, one client per task (a session each).
    pub native_ops_per_s: f64,
    /// Native rate, ops/s: metabench, the tasks as threads of one client
    /// (`--threads-per-client`), the shape of `juicefs mdtest` and of the mount.
    pub native_threads_ops_per_s: Option<f64>,
    /// `juicefs mdtest`'s rate, ops/s (its threads are one Go client's, no FUSE); `None`
    /// when it does not run this phase or this tree's shape.
    pub go_ops_per_s: Option<f64>,
    /// Through-mount rate, ops/s.
    pub mount_ops_per_s: f64,
    /// native / mount: the cost of FUSE plus the Go client.
    pub ratio: f64,
    /// The JuiceFS docs' published rate for this engine, phase and tree
    /// ([`crate::docs_figures`]), when the docs ran them.
    pub docs_ops_per_s: Option<f64>,
    /// That rate as a multiple of the docs' Redis-Always rate, as the docs compare engines.
    pub docs_vs_redis_always: Option<f64>,
}

impl PhaseRow {
    /// Client cost: metabench's threads of one client / the Go client's (same shape, no
    /// FUSE on either side). None for tree creation, whose Go timer also runs two more
    /// mkdirs and the path's lookups.
    pub fn client_ratio(&self) -> Option<f64> {
        if self.phase == Phase::TreeCreation.label() {
            return None;
        }
        ratio(self.native_threads_ops_per_s?, self.go_ops_per_s?)
    }

    /// FUSE cost: the Go client without FUSE / the mount (one client's threads on both).
    /// None for tree creation, as [`PhaseRow::client_ratio`].
    pub fn fuse_ratio(&self) -> Option<f64> {
        if self.phase == Phase::TreeCreation.label() {
            return None;
        }
        ratio(self.go_ops_per_s?, self.mount_ops_per_s)
    }
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// One mdtest-shaped workload, both ways.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeRun {
    /// `metadata` or `small-files`.
    pub name: String,
    /// The mdtest arguments it stands for.
    pub mdtest_args: String,
    /// Its shape.
    pub spec: TreeSpec,
    /// Which driver ran through the mount: `metabench` (its mdtest-equivalent) or `mdtest`.
    pub mount_driver: String,
    /// Per phase.
    pub phases: Vec<PhaseRow>,
    /// The real mdtest's SUMMARY through the mount, when an mdtest binary ran.
    pub mdtest_summary: Option<Vec<SummaryRow>>,
    /// What `juicefs mdtest` logged for this tree (its phases, items and rates).
    pub go_mdtest: Option<GoMdtest>,
    /// Why this tree has no `juicefs mdtest` column, when it has none.
    pub go_missing: Option<String>,
}

impl TreeRun {
    /// Pairs the two sides' phases.
    pub fn pair(
        name: &str,
        spec: &TreeSpec,
        native: &[PhaseResult],
        mount: &[PhaseResult],
    ) -> Self {
        let phases = native
            .iter()
            .filter_map(|n| {
                let m = mount.iter().find(|m| m.phase == n.phase)?;
                Some(PhaseRow {
                    phase: n.phase.label().to_owned(),
                    items: n.items,
                    native_ops_per_s: n.ops_per_s,
                    native_threads_ops_per_s: None,
                    go_ops_per_s: None,
                    mount_ops_per_s: m.ops_per_s,
                    docs_ops_per_s: None,
                    docs_vs_redis_always: None,
                    ratio: if m.ops_per_s > 0.0 {
                        n.ops_per_s / m.ops_per_s
                    } else {
                        0.0
                    },
                })
            })
            .collect();
        Self {
            name: name.to_owned(),
            mdtest_args: spec.mdtest_args().join(" "),
            spec: spec.clone(),
            mount_driver: "metabench".into(),
            phases,
            mdtest_summary: None,
            go_mdtest: None,
            go_missing: Some("not run".into()),
        }
    }

    /// Adds the native run with the tasks as threads of one client.
    pub fn with_native_threads(mut self, threads: &[PhaseResult]) -> Self {
        for row in &mut self.phases {
            row.native_threads_ops_per_s = threads
                .iter()
                .find(|t| t.phase.label() == row.phase)
                .map(|t| t.ops_per_s);
        }
        self
    }

    /// Adds `juicefs mdtest`'s rates, for the phases it runs.
    pub fn with_go(mut self, go: &GoMdtest) -> Self {
        for row in &mut self.phases {
            row.go_ops_per_s = Phase::from_label(&row.phase).and_then(|p| go.rate(p));
        }
        self.go_missing = None;
        self.go_mdtest = Some(go.clone());
        self
    }

    /// Adds the JuiceFS docs' published rates of engine column `col`
    /// ([`crate::docs_figures::ENGINES`]) for the phases of this tree the docs ran.
    pub fn with_docs(mut self, col: usize) -> Self {
        for row in &mut self.phases {
            if let Some((rate, ratio)) = crate::docs_figures::figure(&self.name, &row.phase, col) {
                row.docs_ops_per_s = Some(rate);
                row.docs_vs_redis_always = Some(ratio);
            }
        }
        self
    }

    /// Says why this tree has no `juicefs mdtest` column.
    pub fn without_go(mut self, why: impl Into<String>) -> Self {
        self.go_missing = Some(why.into());
        self
    }
}

/// The layout version of parity results. 2: the run header is the one of every results
/// file (`engine` is the full engine record with its `url`, and `host` is there); 1 had
/// `engine` as a name and a top-level `url`.
pub const PARITY_SCHEMA_VERSION: u32 = 2;

/// The whole parity run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParityReport {
    /// Kind `parity` ([`PARITY_SCHEMA_VERSION`]), who wrote it, when, on what (the meta
    /// URL with its password redacted is the engine's).
    #[serde(flatten)]
    pub header: RunHeader,
    /// `juicefs version`.
    pub juicefs_version: String,
    /// Tasks of the mdtest-shaped runs (ranks, native sessions).
    pub tasks: u32,
    /// Tasks of the data suites (fio numjobs, juicefs bench -p, objbench -p).
    pub io_tasks: u32,
    /// `small` or `docs`.
    pub scale: String,
    /// mdtest-shaped runs.
    pub trees: Vec<TreeRun>,
    /// fio jobs through the mount.
    pub fio: Vec<FioResult>,
    /// `juicefs bench` through the mount.
    pub bench: Option<BenchResult>,
    /// `juicefs objbench` on the volume's object store.
    pub objbench: Option<ObjbenchResult>,
    /// The JuiceFS docs' engine column set beside this run (e.g. `PostgreSQL`), when the
    /// docs ran this engine.
    pub docs_engine: Option<String>,
    /// Where those published figures come from, and on what hardware.
    pub docs_source: Option<String>,
    /// Notes on what was skipped or how to read the figures.
    pub notes: Vec<String>,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
}

fn mib(b: f64) -> f64 {
    b / (1u64 << 20) as f64
}

impl ParityReport {
    /// Reads a parity results file (`parity --json`): its kind and layout version
    /// ([`PARITY_SCHEMA_VERSION`]) are checked first, and an unknown field is refused.
    pub fn from_json(s: &str) -> Result<Self, String> {
        metabench_report::read_results_of(
            s,
            "parity",
            PARITY_SCHEMA_VERSION..=PARITY_SCHEMA_VERSION,
        )
    }

    /// The terminal table.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "parity on {} ({}), {} tasks ({} for fio and bench), scale {}, {}",
            self.header.engine.kind,
            self.header.engine.url,
            self.tasks,
            self.io_tasks,
            self.scale,
            self.juicefs_version
        );
        for t in &self.trees {
            let _ = writeln!(
                s,
                "\nmdtest {} ({}), through the mount: {}",
                t.mdtest_args,
                t.name,
                if t.mount_driver == "mdtest" {
                    "mdtest"
                } else {
                    "metabench's mdtest-equivalent driver"
                }
            );
            let tasks = t.spec.tasks;
            let _ = writeln!(
                s,
                "  ops/s: native = metabench on the engine, {tasks} clients | 1 client × {tasks} \
                 threads; go = juicefs mdtest, 1 Go client × {tasks} threads, no FUSE; mount = \
                 {tasks} threads through one mount"
            );
            let docs_head = self
                .docs_engine
                .as_ref()
                .map_or(String::new(), |e| format!("  docs {e} (×Redis-Always)"));
            let _ = writeln!(
                s,
                "  {:<20} {:>8} {:>12} {:>12} {:>10} {:>10} {:>13} {:>12} {:>10}{docs_head}",
                "phase",
                "items",
                "native ×cl",
                "native ×thr",
                "go",
                "mount",
                "native/mount",
                "client cost",
                "FUSE cost"
            );
            let opt =
                |v: Option<f64>, prec: usize| v.map_or("-".to_owned(), |v| format!("{v:.prec$}"));
            for p in &t.phases {
                let docs = match (&self.docs_engine, p.docs_ops_per_s, p.docs_vs_redis_always) {
                    (Some(_), Some(rate), Some(x)) => format!("  {rate:>10.0} ({x:.2})"),
                    (Some(_), _, _) => format!("  {:>10}", "-"),
                    _ => String::new(),
                };
                let _ = writeln!(
                    s,
                    "  {:<20} {:>8} {:>12.0} {:>12} {:>10} {:>10.0} {:>12.2}x {:>12} {:>10}{docs}",
                    p.phase,
                    p.items,
                    p.native_ops_per_s,
                    opt(p.native_threads_ops_per_s, 0),
                    opt(p.go_ops_per_s, 0),
                    p.mount_ops_per_s,
                    p.ratio,
                    opt(p.client_ratio(), 2),
                    opt(p.fuse_ratio(), 2)
                );
            }
            match &t.go_missing {
                Some(why) => {
                    let _ = writeln!(s, "  go: {why}");
                }
                None => {
                    let _ = writeln!(
                        s,
                        "  go: juicefs mdtest times tree and file creation only (\"-\" in other \
                         rows; its tree timer also runs two more mkdirs, so that row has no \
                         ratios). Its threads visit the subdirectories in a shuffled order, \
                         metabench's in one order. client cost = native ×thr / go, FUSE cost = \
                         go / mount"
                    );
                }
            }
            if let Some(rows) = &t.mdtest_summary {
                let _ = writeln!(s, "  mdtest SUMMARY (mean ops/s):");
                for r in rows {
                    let _ = writeln!(s, "    {:<20} {:>14.0}", r.phase.label(), r.mean);
                }
            }
        }
        if !self.fio.is_empty() {
            let _ = writeln!(s, "\nfio through the mount");
            let _ = writeln!(
                s,
                "  {:<12} {:>5} {:>10} {:>12} {:>10} {:>12}",
                "job", "jobs", "MiB", "MiB/s", "IOPS", "clat µs"
            );
            for f in &self.fio {
                let _ = writeln!(
                    s,
                    "  {:<12} {:>5} {:>10.1} {:>12.1} {:>10.0} {:>12.0}",
                    f.name,
                    f.jobs,
                    mib(f.io_bytes as f64),
                    mib(f.bw_bytes_per_s),
                    f.iops,
                    f.clat_mean_us
                );
            }
        }
        if let Some(b) = &self.bench {
            let _ = writeln!(s, "\njuicefs bench through the mount ({})", b.params);
            for r in &b.rows {
                let _ = writeln!(s, "  {:<18} {:>16} {:>14}", r.item, r.value, r.cost);
            }
        }
        if let Some(o) = &self.objbench {
            let _ = writeln!(s, "\njuicefs objbench on {} ({})", o.storage, o.params);
            for r in &o.perf {
                let value = match r.value {
                    Some(v) => format!("{v} {}", r.value_unit),
                    None => "-".into(),
                };
                let _ = writeln!(s, "  {:<18} {:>22} {:>20}", r.item, value, r.cost);
            }
            let failed: Vec<String> = o
                .functions
                .iter()
                .filter(|f| f.result != "pass")
                .map(|f| format!("{} ({})", f.test, f.result))
                .collect();
            let _ = writeln!(
                s,
                "  functional tests: {} of {} pass{}",
                o.functions.len() - failed.len(),
                o.functions.len(),
                if failed.is_empty() {
                    String::new()
                } else {
                    format!("; not passed: {}", failed.join(", "))
                }
            );
        }
        if let (Some(e), Some(src)) = (&self.docs_engine, &self.docs_source) {
            let sizes = if self.scale == "docs" && self.tasks == 12 {
                String::new()
            } else {
                format!(
                    " The docs ran their sizes with 12 tasks; this run is scale {} with {} \
                     tasks, so even the multiples are only a rough guide.",
                    self.scale, self.tasks
                )
            };
            let _ = writeln!(
                s,
                "* docs: the published rate of {e} for the docs' two trees, and its multiple \
                 of Redis-Always's; from {src}. Other hardware and a 3-host run: compare the \
                 multiples across engines, not the rates with this machine's.{sizes}"
            );
        }
        for n in &self.notes {
            let _ = writeln!(s, "* {n}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metabench_pathfs::tree::Phase;

    #[test]
    fn pairs_phases_and_ratios() {
        let spec = TreeSpec::docs_metadata(1);
        let pr = |phase, ops| PhaseResult {
            phase,
            items: 400,
            seconds: 400.0 / ops,
            ops_per_s: ops,
        };
        let run = TreeRun::pair(
            "metadata",
            &spec,
            &[pr(Phase::DirCreation, 4000.0), pr(Phase::DirStat, 8000.0)],
            &[pr(Phase::DirCreation, 1000.0), pr(Phase::DirStat, 16000.0)],
        );
        assert_eq!(run.phases.len(), 2);
        assert_eq!(run.phases[0].ratio, 4.0);
        assert_eq!(run.phases[1].ratio, 0.5);
        assert_eq!(run.mdtest_args, "-b 3 -z 1 -I 100 -u");
    }
}
