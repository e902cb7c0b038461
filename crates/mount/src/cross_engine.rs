//! Several parity runs side by side, the way the JuiceFS docs compare engines: per mdtest
//! tree and phase, each run's columns (metabench natively as clients and as one client's
//! threads, `juicefs mdtest`, the mount) in ops/s and as multiples of one reference run,
//! beside the docs' published rate for that engine and its multiple of the docs'
//! Redis-Always. The reference is the run on Redis with `appendonly yes` and
//! `appendfsync always` when one is given, as the docs' is; otherwise the first run.

use crate::docs_figures;
use crate::report::{ParityReport, PhaseRow, TreeRun};
use metabench_report::cross::Grid;

/// A parity results file with the name it goes by in the report (its file stem).
#[derive(Debug, Clone)]
pub struct LabeledParity {
    /// Row name (`redis-always`).
    pub label: String,
    /// The parity run.
    pub run: ParityReport,
}

/// A measured column: its header, and its value in a phase row.
type Column = (&'static str, fn(&PhaseRow) -> Option<f64>);

/// The measured columns of a phase row.
const COLUMNS: [Column; 4] = [
    ("native ×cl", |p| Some(p.native_ops_per_s)),
    ("native ×thr", |p| p.native_threads_ops_per_s),
    ("go", |p| p.go_ops_per_s),
    ("mount", |p| Some(p.mount_ops_per_s)),
];

/// The run every multiple is taken against, and why it is the one.
fn reference(runs: &[LabeledParity]) -> (usize, &'static str) {
    let always = docs_figures::ENGINES
        .iter()
        .position(|e| *e == "Redis-Always");
    runs.iter()
        .position(|r| docs_figures::column_of(&r.run.header.engine) == always)
        .map(|i| (i, "the Redis-Always run, as the docs compare"))
        .unwrap_or((
            0,
            "the first run; no run is Redis with appendonly yes and appendfsync always, the \
             docs' reference",
        ))
}

/// `rate`, and its multiple of `base` unless this is the base itself.
fn cell(rate: Option<f64>, base: Option<f64>, is_base: bool) -> String {
    match (rate, base) {
        (None, _) => "–".to_owned(),
        (Some(r), Some(b)) if !is_base && b > 0.0 => format!("{r:.0} (×{:.2})", r / b),
        (Some(r), _) => format!("{r:.0}"),
    }
}

fn tree<'a>(run: &'a ParityReport, name: &str) -> Option<&'a TreeRun> {
    run.trees.iter().find(|t| t.name == name)
}

fn phase<'a>(tree: Option<&'a TreeRun>, label: &str) -> Option<&'a PhaseRow> {
    tree?.phases.iter().find(|p| p.phase == label)
}

/// The report's tables: the runs, one table per mdtest tree, and the notes that say how
/// to read them. Empty when `runs` is.
pub fn grids(runs: &[LabeledParity]) -> Vec<Grid> {
    if runs.is_empty() {
        return vec![];
    }
    let (base, why) = reference(runs);
    let mut out = vec![context_grid(runs)];
    let mut names: Vec<&str> = Vec::new();
    for r in runs {
        for t in &r.run.trees {
            if !names.contains(&t.name.as_str()) {
                names.push(&t.name);
            }
        }
    }
    for name in names {
        let base_tree = tree(&runs[base].run, name);
        let mut labels: Vec<&str> = Vec::new();
        let mut args = "";
        for r in runs {
            if let Some(t) = tree(&r.run, name) {
                args = if args.is_empty() {
                    &t.mdtest_args
                } else {
                    args
                };
                for p in &t.phases {
                    if !labels.contains(&p.phase.as_str()) {
                        labels.push(&p.phase);
                    }
                }
            }
        }
        let mut rows = Vec::new();
        for label in labels {
            let base_row = phase(base_tree, label);
            for (i, r) in runs.iter().enumerate() {
                let Some(row) = phase(tree(&r.run, name), label) else {
                    continue;
                };
                let mut cells = vec![label.to_owned(), r.label.clone()];
                for (_, value) in COLUMNS {
                    cells.push(cell(value(row), base_row.and_then(value), i == base));
                }
                cells.push(match (row.docs_ops_per_s, row.docs_vs_redis_always) {
                    (Some(rate), Some(x)) => format!("{rate:.0} (×{x:.2})"),
                    _ => "–".to_owned(),
                });
                rows.push(cells);
            }
        }
        let mut header: Vec<String> = vec!["phase".into(), "run".into()];
        header.extend(COLUMNS.iter().map(|(h, _)| (*h).to_owned()));
        header.push("docs (×Redis-Always)".into());
        out.push(Grid {
            title: format!(
                "Parity, mdtest {args} ({name}): ops/s (×N: relative to {}, {why})",
                runs[base].label
            ),
            header,
            rows,
        });
    }
    out.push(notes_grid(runs));
    out
}

/// Who ran each parity run, on what, at which size.
fn context_grid(runs: &[LabeledParity]) -> Grid {
    let rows = runs
        .iter()
        .map(|r| {
            let (h, e) = (&r.run.header, &r.run.header.engine);
            vec![
                r.label.clone(),
                e.kind.clone(),
                e.version.clone(),
                e.settings_line(),
                r.run.docs_engine.clone().unwrap_or_else(|| "–".into()),
                format!("{}, {} tasks", r.run.scale, r.run.tasks),
                r.run.juicefs_version.clone(),
                e.client_summary(),
                h.host.summary(),
                h.started_at.clone(),
            ]
        })
        .collect();
    Grid {
        title: "Parity runs".into(),
        header: [
            "run",
            "engine",
            "version",
            "settings",
            "docs column",
            "scale",
            "juicefs",
            "client",
            "host",
            "started",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// The values of `field` across the runs, when they are not all the same: "a: x, b: y".
fn differing(runs: &[LabeledParity], field: impl Fn(&ParityReport) -> String) -> Option<String> {
    let values: Vec<String> = runs.iter().map(|r| field(&r.run)).collect();
    (values.iter().any(|v| *v != values[0])).then(|| {
        runs.iter()
            .zip(&values)
            .map(|(r, v)| format!("{}: {v}", r.label))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// How to read the tables, and where the runs cannot be compared.
fn notes_grid(runs: &[LabeledParity]) -> Grid {
    let mut notes = vec![
        "native ×cl = metabench on the engine, one client per task; native ×thr = metabench, \
         the tasks as threads of one client; go = juicefs mdtest, one Go client's threads, no \
         FUSE (it times tree and file creation only); mount = the tasks as threads through \
         one FUSE mount"
            .to_owned(),
    ];
    if runs.iter().any(|r| r.run.docs_engine.is_some()) {
        notes.push(format!(
            "docs = the published rate of the run's engine for the docs' two trees, and its \
             multiple of the docs' Redis-Always; from {}. Other hardware and 3 client \
             hosts: set the multiples beside the runs' multiples, not the rates beside the \
             rates",
            docs_figures::SOURCE
        ));
    }
    let no_docs: Vec<&str> = runs
        .iter()
        .filter(|r| r.run.docs_engine.is_none())
        .map(|r| r.label.as_str())
        .collect();
    if !no_docs.is_empty() {
        notes.push(format!(
            "the docs ran no setup like {} (they ran Redis with the AOF on, MySQL, \
             PostgreSQL, TiKV, etcd and FoundationDB; not SQLite, Redis without the AOF or \
             the TiKV stand-in)",
            no_docs.join(", ")
        ));
    }
    if !runs
        .iter()
        .all(|r| r.run.scale == "docs" && r.run.tasks == 12)
    {
        notes.push(
            "the docs ran 12 tasks at their sizes (scale docs); runs at other sizes show \
             multiples that are only a rough guide"
                .to_owned(),
        );
    }
    type Field = fn(&ParityReport) -> String;
    let checks: [(&str, Field); 4] = [
        ("scale", |r| r.scale.clone()),
        ("tasks", |r| r.tasks.to_string()),
        ("juicefs", |r| r.juicefs_version.clone()),
        ("client settings", |r| r.header.engine.client_summary()),
    ];
    for (what, field) in checks {
        if let Some(values) = differing(runs, field) {
            notes.push(format!(
                "the runs differ in {what} ({values}): their multiples mix unlike runs"
            ));
        }
    }
    for r in runs.iter().filter(|r| r.run.interrupted) {
        notes.push(format!(
            "{} was stopped by Ctrl-C: its trees may be partial",
            r.label
        ));
    }
    let mut fidelity: Vec<(&str, Vec<&str>)> = Vec::new();
    for r in runs {
        for n in &r.run.header.engine.fidelity_notes {
            match fidelity.iter_mut().find(|(note, _)| note == n) {
                Some((_, labels)) => labels.push(&r.label),
                None => fidelity.push((n, vec![&r.label])),
            }
        }
    }
    for (note, labels) in fidelity {
        notes.push(format!("{} ({})", note, labels.join(", ")));
    }
    Grid {
        title: "Parity notes".into(),
        header: vec!["note".into()],
        rows: notes.into_iter().map(|n| vec![n]).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metabench_pathfs::tree::TreeSpec;

    /// A parity run on `kind` (with Redis's durability `fsync`) whose metadata tree
    /// created files at `create` ops/s on every side.
    fn run(label: &str, kind: &str, fsync: Option<&str>, tasks: u32, create: f64) -> LabeledParity {
        let mut engine = metabench_report::EngineInfo {
            kind: kind.into(),
            ..Default::default()
        };
        if let Some(f) = fsync {
            engine.settings.insert("appendonly".into(), "yes".into());
            engine.settings.insert("appendfsync".into(), f.into());
        }
        let col = docs_figures::column_of(&engine);
        let row = PhaseRow {
            phase: "File creation".into(),
            items: 100,
            native_ops_per_s: create,
            native_threads_ops_per_s: Some(create / 2.0),
            go_ops_per_s: None,
            mount_ops_per_s: create / 4.0,
            ratio: 4.0,
            docs_ops_per_s: None,
            docs_vs_redis_always: None,
        };
        let spec = TreeSpec::docs_metadata(tasks);
        let mut tree = TreeRun::pair("metadata", &spec, &[], &[]);
        tree.phases = vec![row];
        let tree = match col {
            Some(c) => tree.with_docs(c),
            None => tree,
        };
        LabeledParity {
            label: label.into(),
            run: ParityReport {
                header: metabench_report::RunHeader {
                    kind: "parity".into(),
                    engine,
                    ..Default::default()
                },
                juicefs_version: "juicefs version 1.4.2".into(),
                tasks,
                io_tasks: tasks,
                scale: "docs".into(),
                trees: vec![tree],
                fio: vec![],
                bench: None,
                objbench: None,
                docs_engine: col.map(|c| docs_figures::ENGINES[c].to_owned()),
                docs_source: col.map(|_| docs_figures::SOURCE.to_owned()),
                notes: vec![],
                interrupted: false,
            },
        }
    }

    #[test]
    fn multiples_are_of_the_redis_always_run_wherever_it_stands() {
        let runs = [
            run("pg", "postgres", None, 12, 3000.0),
            run("always", "redis", Some("always"), 12, 2000.0),
        ];
        let g = grids(&runs);
        assert_eq!(g.len(), 3, "runs, one tree, notes");
        assert_eq!(g[0].rows[0][4], "PostgreSQL");
        assert_eq!(g[0].rows[1][4], "Redis-Always");
        let t = &g[1];
        assert!(
            t.title.contains("relative to always, the Redis-Always run"),
            "{}",
            t.title
        );
        assert_eq!(
            t.rows[0],
            [
                "File creation",
                "pg",
                "3000 (×1.50)",
                "1500 (×1.50)",
                "–",
                "750 (×1.50)",
                "4727 (×0.86)"
            ]
        );
        assert_eq!(
            t.rows[1],
            [
                "File creation",
                "always",
                "2000",
                "1000",
                "–",
                "500",
                "5473 (×1.00)"
            ]
        );
        // Same size, docs' size, one engine each: nothing to warn about beyond the legend
        // and the docs' source.
        assert_eq!(g[2].rows.len(), 2, "{:?}", g[2].rows);
    }

    #[test]
    fn without_redis_always_the_first_run_is_the_reference_and_unlike_runs_are_named() {
        let runs = [
            run("lite", "sqlite", None, 2, 1000.0),
            run("everysec", "redis", Some("everysec"), 12, 4000.0),
        ];
        let g = grids(&runs);
        let t = &g[1];
        assert!(
            t.title.contains("relative to lite, the first run"),
            "{}",
            t.title
        );
        assert_eq!(t.rows[0][2], "1000");
        assert_eq!(t.rows[1][2], "4000 (×4.00)");
        assert_eq!(t.rows[0][6], "–", "the docs ran no SQLite");
        assert_eq!(t.rows[1][6], "9985 (×1.82)");
        let notes: Vec<&str> = g[2].rows.iter().map(|r| r[0].as_str()).collect();
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("the docs ran no setup like lite")),
            "{notes:?}"
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("differ in tasks (lite: 2, everysec: 12)")),
            "{notes:?}"
        );
        assert!(grids(&[]).is_empty());
    }
}
