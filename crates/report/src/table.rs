//! Terminal tables in the layout of the JuiceFS docs' metadata-engine comparison, as
//! Markdown so they paste straight into a document.

use crate::model::{OpResult, OpsResults};
use comfy_table::{presets::ASCII_MARKDOWN, CellAlignment, Table};

/// Formats a latency in µs with precision that suits its size.
pub fn fmt_us(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn errors_cell(r: &OpResult) -> String {
    if r.errors.is_empty() {
        return String::new();
    }
    r.errors
        .iter()
        .map(|(k, n)| format!("{k}×{n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Renders the `ops` table: one row per operation with µs/op, p50, p99 and round trips
/// per call; with a baseline, a "×base" column gives µs/op relative to it, as the JuiceFS
/// docs print "(×N)".
pub fn ops_table(run: &OpsResults, baseline: Option<&OpsResults>) -> String {
    let mut t = Table::new();
    t.load_style(ASCII_MARKDOWN);
    let mut header = vec!["op", "µs/op"];
    if baseline.is_some() {
        header.push("×base");
    }
    header.extend([
        "p50 µs",
        "p99 µs",
        "calls",
        "round trips/op",
        "retries",
        "errors",
    ]);
    t.set_header(header);
    for r in &run.results {
        let mut row: Vec<String> = vec![r.op.clone()];
        if let Some(why) = &r.skipped {
            row.push(format!("skipped: {why}"));
            if baseline.is_some() {
                row.push(String::new());
            }
            row.extend(std::iter::repeat_n(String::new(), 6));
            t.add_row(row);
            continue;
        }
        row.push(fmt_us(r.mean_us));
        if let Some(base) = baseline {
            row.push(match base.get(&r.op) {
                Some(b) if b.skipped.is_none() && b.mean_us > 0.0 => {
                    format!("×{:.2}", r.mean_us / b.mean_us)
                }
                _ => "n/a".to_owned(),
            });
        }
        row.extend([
            fmt_us(r.p50_us),
            fmt_us(r.p99_us),
            r.count.to_string(),
            format!("{:.2}", r.round_trips_per_op),
            r.retries.to_string(),
            errors_cell(r),
        ]);
        t.add_row(row);
    }
    for i in 1..t.column_count() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t.to_string()
}

/// The notes printed under the table: how operations were run where metabench differs
/// from a plain engine call.
pub fn ops_notes(run: &OpsResults) -> Vec<String> {
    run.results
        .iter()
        .filter_map(|r| r.note.as_ref().map(|n| format!("{}: {n}", r.op)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(mean: f64) -> OpsResults {
        OpsResults {
            kind: "ops".into(),
            results: vec![
                OpResult {
                    op: "mkdir".into(),
                    count: 10,
                    mean_us: mean,
                    p50_us: mean,
                    p99_us: mean * 2.0,
                    round_trips_per_op: 5.0,
                    ..Default::default()
                },
                OpResult {
                    op: "resolve".into(),
                    skipped: Some("ENOTSUP".into()),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn table_has_ratio_against_baseline() {
        let t = ops_table(&run(300.0), Some(&run(100.0)));
        assert!(t.contains("×3.00"), "{t}");
        assert!(t.contains("| mkdir"), "{t}");
        assert!(t.contains("skipped: ENOTSUP"), "{t}");
        assert!(t.contains("5.00"));
        let plain = ops_table(&run(1.5), None);
        assert!(!plain.contains("×base"));
        assert!(plain.contains("1.50"));
    }
}
