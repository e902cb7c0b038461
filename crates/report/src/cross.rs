//! Cross-engine reports: several results files side by side, in the layout of the JuiceFS
//! docs' metadata-engine comparison (µs/op per operation, "(×N)" against the first
//! run), and per-operation sweep tables, rendered as a terminal table, Markdown, CSV or
//! HTML.

pub use crate::labeled_run::{op_names_of, LabeledRun};
use crate::model::{AnyResults, BackgroundWork};
use crate::plot::LATENCY_AT_CLIENTS;
use crate::table::{fmt_us, thousands};
use comfy_table::{presets, CellAlignment, Table};

/// An engine that could not be measured, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreachable {
    /// Its name (config file stem).
    pub label: String,
    /// Why.
    pub reason: String,
}

/// One table of a report: a title, a header and rows of text cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grid {
    /// What the table shows.
    pub title: String,
    /// Column names.
    pub header: Vec<String>,
    /// Rows; the first cell names the row.
    pub rows: Vec<Vec<String>>,
}

/// Output formats of `metabench report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Boxed terminal table.
    Table,
    /// GitHub Markdown.
    Markdown,
    /// CSV, one block per table.
    Csv,
    /// A standalone HTML page.
    Html,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "table" => Ok(Format::Table),
            "markdown" | "md" => Ok(Format::Markdown),
            "csv" => Ok(Format::Csv),
            "html" => Ok(Format::Html),
            _ => Err(format!(
                "'{s}' is not a report format; use table, markdown, csv or html"
            )),
        }
    }
}

/// The JuiceFS docs' comparison: one row per operation of the `ops` runs, one column per
/// run, µs/op, and "(×N)" against the first run that measured the operation.
pub fn ops_grid(runs: &[LabeledRun]) -> Option<Grid> {
    let ops_runs = LabeledRun::ops_of(runs);
    if ops_runs.is_empty() {
        return None;
    }
    let mut names: Vec<String> = Vec::new();
    for (_, o) in &ops_runs {
        for r in &o.results {
            if !names.contains(&r.op) {
                names.push(r.op.clone());
            }
        }
    }
    let mut header = vec!["µs/op".to_owned()];
    header.extend(ops_runs.iter().map(|(l, _)| l.to_string()));
    let rows = names
        .iter()
        .map(|op| {
            let mut row = vec![op.clone()];
            let mut first: Option<f64> = None;
            for (_, o) in &ops_runs {
                let mut cell = match o.get(op) {
                    None => "–".to_owned(),
                    Some(r) if r.skipped.is_some() => "skipped".to_owned(),
                    Some(r) => match first {
                        None => {
                            first = Some(r.latency.mean_us);
                            fmt_us(r.latency.mean_us)
                        }
                        Some(b) if b > 0.0 => {
                            format!(
                                "{} (×{:.1})",
                                fmt_us(r.latency.mean_us),
                                r.latency.mean_us / b
                            )
                        }
                        Some(_) => fmt_us(r.latency.mean_us),
                    },
                };
                // A listing (listdir): the entries it read per second as well.
                if let Some(rate) = o.get(op).and_then(|r| r.entries_per_s()) {
                    cell += &format!(", {} entries/s", thousands(rate.round() as u64));
                }
                row.push(cell);
            }
            row
        })
        .collect();
    Some(Grid {
        title: format!("Operations, µs/op (×N: relative to {})", ops_runs[0].0),
        header,
        rows,
    })
}

/// Per operation of the sweeps: one row per concurrency level, throughput and p99 of
/// each run.
pub fn sweep_grids(runs: &[LabeledRun]) -> Vec<Grid> {
    let sweeps = LabeledRun::sweeps_of(runs);
    let ops = op_names_of(&sweeps);
    // Rows by level: clients, or an open loop's offered rate.
    let x_of = |l: &crate::Level| l.offered_ops_per_s.unwrap_or(l.clients as f64);
    let open = sweeps.iter().any(|(_, s)| s.is_open_loop());
    ops.iter()
        .map(|op| {
            let mut levels: Vec<f64> = sweeps
                .iter()
                .flat_map(|(_, s)| {
                    s.levels
                        .iter()
                        .filter(|l| l.ops.iter().any(|o| &o.op == op))
                        .map(x_of)
                })
                .collect();
            levels.sort_by(f64::total_cmp);
            levels.dedup();
            let mut header = vec![if open { "clients or offered/s" } else { "clients" }.to_owned()];
            for (l, _) in &sweeps {
                header.push(format!("{l} ops/s"));
                header.push(format!("{l} p99 µs"));
            }
            let rows = levels
                .iter()
                .map(|x| {
                    let mut row = vec![format!("{x:.0}")];
                    for (_, s) in &sweeps {
                        let found = s.levels.iter().find(|l| x_of(l) == *x).and_then(|l| {
                            l.ops.iter().find(|o| &o.op == op).map(|o| (l, o))
                        });
                        match found {
                            Some((l, o)) => {
                                let mut marks = String::new();
                                if l.client.client_bound {
                                    marks += " [client]";
                                }
                                if l.engine.as_ref().is_some_and(|e| e.engine_bound) {
                                    marks += " [engine]";
                                }
                                // A listing (listdir): the entries it read per second too.
                                let entries = o
                                    .entries_per_call
                                    .map(|n| format!(" ({} entries/s)", thousands((n * o.ops_per_s).round() as u64)))
                                    .unwrap_or_default();
                                row.push(format!("{:.0}{entries}{marks}", o.ops_per_s));
                                row.push(fmt_us(o.latency.p99_us));
                            }
                            None => {
                                row.push("–".into());
                                row.push("–".into());
                            }
                        }
                    }
                    row
                })
                .collect();
            Grid {
                title: format!(
                    "{op}: throughput and p99 by {} ([client] / [engine]: that side was the bottleneck)",
                    if open { "level" } else { "concurrency" }
                ),
                header,
                rows,
            }
        })
        .collect()
}

/// Per operation of the closed-loop sweeps: mean and p99 latency of each run at
/// [`LATENCY_AT_CLIENTS`] clients, or at its nearest level (said in the header), as the
/// published HDFS / S3 / JuiceFS comparison set them side by side.
pub fn latency_at_grid(runs: &[LabeledRun]) -> Option<Grid> {
    let near: Vec<(&str, &crate::Level)> = LabeledRun::sweeps_of(runs)
        .into_iter()
        .filter_map(|(label, s)| Some((label, s.level_near(LATENCY_AT_CLIENTS)?)))
        .collect();
    let mut ops: Vec<&str> = Vec::new();
    for (_, level) in &near {
        for o in &level.ops {
            if !ops.contains(&o.op.as_str()) {
                ops.push(&o.op);
            }
        }
    }
    if ops.is_empty() {
        return None;
    }
    let mut header = vec!["operation".to_owned()];
    for (label, level) in &near {
        let at = match level.clients {
            LATENCY_AT_CLIENTS => String::new(),
            c => format!(" (at {c})"),
        };
        header.push(format!("{label}{at} mean µs"));
        header.push(format!("{label}{at} p99 µs"));
    }
    let rows = ops
        .iter()
        .map(|op| {
            let mut row = vec![(*op).to_owned()];
            for (_, level) in &near {
                match level.ops.iter().find(|o| o.op == *op) {
                    Some(o) => {
                        row.push(fmt_us(o.latency.mean_us));
                        row.push(fmt_us(o.latency.p99_us));
                    }
                    None => row.extend(["–".to_owned(), "–".to_owned()]),
                }
            }
            row
        })
        .collect();
    Some(Grid {
        title: format!("Latency per operation at {LATENCY_AT_CLIENTS} clients"),
        header,
        rows,
    })
}

/// Every table of a report.
pub fn grids(runs: &[LabeledRun]) -> Vec<Grid> {
    ops_grid(runs)
        .into_iter()
        .chain(sweep_grids(runs))
        .chain(latency_at_grid(runs))
        .chain(background_grid(runs))
        .chain(fidelity_grid(runs))
        .collect()
}

/// Renders a grid as a terminal table or Markdown.
pub fn render_text(g: &Grid, markdown: bool) -> String {
    let mut t = Table::new();
    t.load_style(if markdown {
        presets::ASCII_MARKDOWN
    } else {
        presets::UTF8_FULL_CONDENSED
    });
    t.set_header(g.header.clone());
    for r in &g.rows {
        t.add_row(r.clone());
    }
    for i in 1..t.column_count() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    if markdown {
        format!("### {}\n\n{t}\n", g.title)
    } else {
        format!("{}\n{t}\n", g.title)
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// Renders a grid as CSV: a `# title` line, the header, the rows.
pub fn render_csv(g: &Grid) -> String {
    let line = |cells: &[String]| {
        cells
            .iter()
            .map(|c| csv_field(c))
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut out = format!("# {}\n{}\n", g.title, line(&g.header));
    for r in &g.rows {
        out += &line(r);
        out.push('\n');
    }
    out
}

/// Escapes text for HTML.
pub fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Renders a grid as an HTML table.
pub fn render_html_table(g: &Grid) -> String {
    let mut out = format!("<h3>{}</h3>\n<table>\n<tr>", html_escape(&g.title));
    for h in &g.header {
        out += &format!("<th>{}</th>", html_escape(h));
    }
    out += "</tr>\n";
    for r in &g.rows {
        out += "<tr>";
        for (i, c) in r.iter().enumerate() {
            if i == 0 {
                out += &format!("<th>{}</th>", html_escape(c));
            } else {
                out += &format!("<td>{}</td>", html_escape(c));
            }
        }
        out += "</tr>\n";
    }
    out + "</table>\n"
}

/// What a run's check of its own client found: an `ops` run's client thread lag (from
/// the same probe a sweep runs), or how many of a sweep's levels were client-bound.
fn self_check(run: &AnyResults) -> String {
    match run {
        AnyResults::Ops(r) => match &r.client_lag {
            Some(lag) => format!(
                "lag p99 {} µs{}",
                crate::table::fmt_us(lag.p99_us),
                if lag.reason.is_some() {
                    ", CLIENT-BOUND"
                } else {
                    ""
                }
            ),
            None => "not measured".to_owned(),
        },
        AnyResults::Sweep(r) => format!(
            "{} of {} levels client-bound",
            r.levels.iter().filter(|l| l.client.client_bound).count(),
            r.levels.len()
        ),
    }
}

/// The run context of each file: engine, version, settings, where the engine ran, host,
/// when and by which metabench.
pub fn context_grid(runs: &[LabeledRun]) -> Grid {
    let rows = runs
        .iter()
        .map(|r| {
            let e = r.run.engine();
            let h = r.run.host();
            let (started, version, commit) = r.run.provenance();
            vec![
                r.label.clone(),
                r.run.kind().to_owned(),
                e.kind.clone(),
                e.version.clone(),
                e.settings_line(),
                e.placement_line(),
                e.footprint
                    .as_ref()
                    .map_or_else(|| "not recorded".to_owned(), |f| f.line()),
                h.summary(),
                match r.run.floor() {
                    Some(f) => format!("{}: {}", f.request, crate::table::floor_figures(f)),
                    None => "not measured".to_owned(),
                },
                self_check(&r.run),
                e.client_summary(),
                started.to_owned(),
                match commit {
                    Some(c) => format!("{version} ({})", &c[..c.len().min(10)]),
                    None => version.to_owned(),
                },
            ]
        })
        .collect();
    Grid {
        title: "Runs".into(),
        header: [
            "run",
            "kind",
            "engine",
            "version",
            "settings",
            "where the engine ran",
            "engine held at the start",
            "host",
            "floor (null round trip)",
            "client self-check",
            "client",
            "started",
            "metabench",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// Where metabench knowingly differs from the client each run modelled: one row per
/// documented difference, with the runs it applies to. `None` when no run records any.
pub fn fidelity_grid(runs: &[LabeledRun]) -> Option<Grid> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for r in runs {
        for note in &r.run.engine().fidelity_notes {
            match rows.iter_mut().find(|row| &row[0] == note) {
                Some(row) => row[1] = format!("{}, {}", row[1], r.label),
                None => rows.push(vec![note.clone(), r.label.clone()]),
            }
        }
    }
    (!rows.is_empty()).then(|| Grid {
        title: "Where metabench differs from the client it models".into(),
        header: vec!["difference".into(), "runs".into()],
        rows,
    })
}

/// The clients' background work inside the sweep windows (the mount profile), per run
/// and level: passes, round trips per second and client time. `None` when no sweep ran
/// any there.
pub fn background_grid(runs: &[LabeledRun]) -> Option<Grid> {
    let rows: Vec<Vec<String>> = LabeledRun::sweeps_of(runs)
        .into_iter()
        .flat_map(|(label, s)| {
            s.levels.iter().filter_map(move |l| {
                let b = l.background.as_ref()?;
                let mut row = vec![label.to_owned(), l.clients.to_string()];
                row.extend(b.cells());
                Some(row)
            })
        })
        .collect();
    (!rows.is_empty()).then(|| Grid {
        title: "Background work in the windows (apart from the calls)".into(),
        header: ["run", "clients"]
            .into_iter()
            .chain(BackgroundWork::COLUMNS)
            .map(String::from)
            .collect(),
        rows,
    })
}

/// The whole report as text (`table`, `markdown` or `csv`): the runs' context and tables,
/// then `more` (tables built elsewhere, e.g. of parity runs).
pub fn render_report(
    runs: &[LabeledRun],
    more: &[Grid],
    unreachable: &[Unreachable],
    format: Format,
) -> String {
    let mut out = String::new();
    let context = (!runs.is_empty()).then(|| context_grid(runs));
    let all: Vec<Grid> = context
        .into_iter()
        .chain(grids(runs))
        .chain(more.iter().cloned())
        .collect();
    for g in &all {
        match format {
            Format::Csv => out += &render_csv(g),
            Format::Markdown => out += &render_text(g, true),
            _ => out += &render_text(g, false),
        }
        out.push('\n');
    }
    if !unreachable.is_empty() {
        match format {
            Format::Csv => {
                out += "# Unreachable engines\nengine,reason\n";
                for u in unreachable {
                    out += &format!("{},{}\n", csv_field(&u.label), csv_field(&u.reason));
                }
            }
            _ => {
                out += "Unreachable engines (not measured):\n";
                for u in unreachable {
                    out += &format!("- {}: {}\n", u.label, u.reason);
                }
            }
        }
    }
    out
}

/// The report as one standalone HTML page: run context, tables (the runs', then `more`),
/// the plots inline, and the engines that could not be measured.
pub fn render_html(
    runs: &[LabeledRun],
    more: &[Grid],
    unreachable: &[Unreachable],
    plots: &[crate::plot::Plot],
) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <title>metabench report</title>\n<style>\n\
         body{font-family:sans-serif;margin:2em;color:#222}\n\
         table{border-collapse:collapse;margin:0 0 1.5em}\n\
         th,td{border:1px solid #ccc;padding:3px 8px;font-size:13px}\n\
         td{text-align:right}\nth{background:#f4f4f4;text-align:left}\n\
         figure{margin:0 0 1.5em}\n.plots svg{max-width:100%;height:auto;border:1px solid #eee}\n\
         </style></head><body>\n<h1>metabench report</h1>\n",
    );
    if !runs.is_empty() {
        out += &render_html_table(&context_grid(runs));
    }
    if !unreachable.is_empty() {
        out += "<h2>Unreachable engines (not measured)</h2>\n<ul>\n";
        for u in unreachable {
            out += &format!(
                "<li><b>{}</b>: {}</li>\n",
                html_escape(&u.label),
                html_escape(&u.reason)
            );
        }
        out += "</ul>\n";
    }
    if !plots.is_empty() {
        out += "<h2>Plots</h2>\n<div class=\"plots\">\n";
        for p in plots {
            let svg = p
                .svg
                .trim_start_matches(|c: char| c != '<')
                .trim_start_matches("<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
            out += &format!(
                "<figure id=\"{}\">{}<figcaption>{}</figcaption></figure>\n",
                html_escape(&p.file),
                svg.trim(),
                html_escape(&p.title)
            );
        }
        out += "</div>\n";
    }
    out += "<h2>Tables</h2>\n";
    for g in grids(runs).iter().chain(more) {
        out += &render_html_table(g);
    }
    out + "</body></html>\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{OpResult, OpsResults};

    /// The cells of the column named `name`, one per row.
    fn column<'g>(grid: &'g Grid, name: &str) -> Vec<&'g str> {
        let col = grid.header.iter().position(|h| h == name).unwrap();
        grid.rows.iter().map(|r| r[col].as_str()).collect()
    }

    fn ops(label: &str, mkdir_us: f64, version: &str) -> LabeledRun {
        LabeledRun {
            label: label.into(),
            run: AnyResults::Ops(OpsResults {
                header: crate::RunHeader {
                    kind: "ops".into(),
                    engine: crate::EngineInfo {
                        kind: label.into(),
                        version: version.into(),
                        settings: [("appendfsync".to_owned(), "always".to_owned())].into(),
                        ..Default::default()
                    },
                    ..Default::default()
                },
                results: vec![
                    OpResult {
                        op: "mkdir".into(),
                        latency: crate::Latency {
                            count: 10,
                            mean_us: mkdir_us,
                            ..Default::default()
                        },
                        ..Default::default()
                    },
                    OpResult {
                        op: "rename".into(),
                        latency: crate::Latency {
                            count: 10,
                            mean_us: 2.0 * mkdir_us,
                            ..Default::default()
                        },
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }),
        }
    }

    /// The report names the client each run modelled, lists each documented difference
    /// once with its runs, and shows a sweep's background work per level.
    #[test]
    fn the_report_shows_the_client_profile_its_notes_and_background_work() {
        let mut a = ops("redis-mount", 10.0, "7.0");
        let b = ops("redis-old", 10.0, "7.0");
        if let AnyResults::Ops(o) = &mut a.run {
            let e = &mut o.header.engine;
            e.client_settings = [
                ("profile", "mount"),
                ("skip_dir_mtime", "100ms"),
                ("client_cache", "on"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
            e.fidelity_notes = vec!["no session".into(), "no ACLs".into()];
            o.client_lag = Some(crate::ClientLag {
                samples: 120,
                p99_us: 41.5,
                max_us: 77.0,
                reason: None,
            });
        }
        let mut sweep = crate::SweepResults::default();
        sweep.header.engine.fidelity_notes = vec!["no session".into()];
        sweep.levels = vec![crate::Level {
            clients: 4,
            client: crate::ClientCheck {
                client_bound: true,
                ..Default::default()
            },
            background: Some(crate::BackgroundWork {
                runs: 10,
                round_trips: 40,
                busy_s: 0.002,
                window_s: 2.0,
                heartbeats: 3,
                ..Default::default()
            }),
            ..Default::default()
        }];
        let c = LabeledRun {
            label: "pg-sweep".into(),
            run: AnyResults::Sweep(sweep),
        };
        let runs = vec![a, b, c];
        let ctx = context_grid(&runs);
        let client = column(&ctx, "client");
        assert_eq!(client[0], "mount: client-cache on, skip-dir-mtime 100ms");
        assert_eq!(client[1], "not recorded");
        assert_eq!(
            column(&ctx, "client self-check"),
            [
                "lag p99 41.5 µs",
                "not measured",
                "1 of 1 levels client-bound"
            ]
        );
        let notes = fidelity_grid(&runs).unwrap();
        assert_eq!(
            notes.rows,
            vec![
                vec!["no session".to_owned(), "redis-mount, pg-sweep".to_owned()],
                vec!["no ACLs".to_owned(), "redis-mount".to_owned()],
            ]
        );
        let bg = background_grid(&runs).unwrap();
        assert_eq!(
            bg.rows,
            vec![["pg-sweep", "4", "10", "3", "20", "2.0", "0"]
                .map(String::from)
                .to_vec()]
        );
        assert!(background_grid(&runs[..2]).is_none());
        let text = render_report(&runs, &[], &[], Format::Markdown);
        assert!(
            text.contains("Where metabench differs from the client it models"),
            "{text}"
        );
    }

    /// A listing (listdir) shows the entries it read per second beside its µs/op and its
    /// ops/s, and the Runs table what the engine held at the start.
    #[test]
    fn listings_show_entries_per_second_and_runs_what_the_engine_held() {
        let mut a = ops("redis", 600.0, "7.0");
        if let AnyResults::Ops(o) = &mut a.run {
            o.results.push(OpResult {
                op: "listdir".into(),
                latency: crate::Latency {
                    count: 5,
                    mean_us: 2000.0,
                    ..Default::default()
                },
                entries_per_call: Some(1002.0),
                ..Default::default()
            });
            o.header.engine.footprint = Some(crate::Footprint {
                bytes: Some(3 << 20),
                rss_bytes: None,
                what: "Redis used_memory".into(),
            });
        }
        let sweep = crate::SweepResults {
            levels: vec![crate::Level {
                clients: 2,
                ops: vec![crate::LevelOp {
                    op: "listdir".into(),
                    ops_per_s: 400.0,
                    entries_per_call: Some(1002.0),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let runs = vec![
            a,
            LabeledRun {
                label: "sweep".into(),
                run: AnyResults::Sweep(sweep),
            },
        ];
        let g = ops_grid(&runs).unwrap();
        let row = g.rows.iter().find(|r| r[0] == "listdir").unwrap();
        assert_eq!(row[1], "2000, 501,000 entries/s");
        let s = sweep_grids(&runs);
        let listdir = s.iter().find(|g| g.title.starts_with("listdir")).unwrap();
        assert_eq!(listdir.rows[0][1], "400 (400,800 entries/s)");
        assert_eq!(
            column(&context_grid(&runs), "engine held at the start"),
            ["3.0 MiB (Redis used_memory)", "not recorded"]
        );
    }

    #[test]
    fn cross_engine_table_in_the_docs_layout() {
        let runs = vec![
            ops("redis-always", 600.0, "7.0.15"),
            ops("mysql", 1100.0, "11.8"),
        ];
        let g = ops_grid(&runs).unwrap();
        assert_eq!(g.header, ["µs/op", "redis-always", "mysql"]);
        assert_eq!(g.rows[0], ["mkdir", "600", "1100 (×1.8)"]);
        assert_eq!(g.rows[1], ["rename", "1200", "2200 (×1.8)"]);
        let unreachable = [Unreachable {
            label: "tikv".into(),
            reason: "connection refused".into(),
        }];
        let md = render_report(&runs, &[], &unreachable, Format::Markdown);
        assert!(
            md.contains("| mkdir  | 600          | 1100 (×1.8) |") || md.contains("1100 (×1.8)"),
            "{md}"
        );
        assert!(md.contains("- tikv: connection refused"), "{md}");
        let csv = render_report(&runs, &[], &unreachable, Format::Csv);
        assert!(csv.contains("mkdir,600,1100 (×1.8)\n"), "{csv}");
        assert!(csv.contains("tikv,connection refused"), "{csv}");
        let html = render_html(&runs, &[], &unreachable, &[]);
        assert!(html.contains("<td>1100 (×1.8)</td>"), "{html}");
        assert!(html.contains("appendfsync=always"), "{html}");
        assert!(html.contains("7.0.15"), "{html}");
        assert!("pdf".parse::<Format>().is_err());
    }
}
