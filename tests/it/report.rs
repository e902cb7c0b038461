//! `metabench report` on real runs: the cross-engine table, CSV, HTML with the run
//! context and inline plots, and SVG files that parse.

use crate::metabench;
use std::path::Path;
use std::process::Output;

fn ok(o: &Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn report_of_real_sqlite_runs() {
    let _phase = crate::phase(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ops = d.join("sqlite-ops.json");
    let sweep = d.join("sqlite.json");
    ok(&metabench(&[
        "ops",
        "--iterations",
        "20",
        "--ops",
        "mkdir,lookup,getattr",
        "--json",
        p(&ops),
    ]));
    ok(&metabench(&[
        "sweep",
        "--conc",
        "1,2",
        "--ops",
        "mkdir,getattr",
        "--duration",
        "300ms",
        "--warmup",
        "100ms",
        "--json",
        p(&sweep),
    ]));
    // The same run twice: the second column is ×1.0 of the first.
    let md = ok(&metabench(&[
        "report",
        p(&ops),
        p(&ops),
        "--format",
        "markdown",
    ]));
    assert!(md.contains("| µs/op "), "{md}");
    assert!(md.contains("sqlite-ops#2"), "{md}");
    assert!(md.contains("(×1.0)"), "{md}");
    let csv = ok(&metabench(&[
        "report",
        p(&ops),
        p(&sweep),
        "--format",
        "csv",
    ]));
    assert!(
        csv.contains("# mkdir: throughput and p99 by concurrency ([client] / [engine]"),
        "{csv}"
    );
    assert!(
        csv.contains("clients,sqlite ops/s,sqlite p99 µs\n"),
        "{csv}"
    );

    let plots = d.join("plots");
    let html = d.join("report.html");
    ok(&metabench(&[
        "report",
        p(&ops),
        p(&sweep),
        "--format",
        "html",
        "--plot",
        p(&plots),
        "-o",
        p(&html),
    ]));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("journal_mode=wal"), "run context missing");
    assert_eq!(page.matches("<svg").count(), 8, "inline plots");
    let mut files: Vec<String> = std::fs::read_dir(&plots)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "breakdown-sqlite.svg",
            "latency-at-20.svg",
            "latency-getattr.svg",
            "latency-mkdir.svg",
            "ops.svg",
            "throughput-getattr.svg",
            "throughput-mkdir.svg",
            "throughput.svg"
        ]
    );
    let svg = std::fs::read_to_string(plots.join("throughput.svg")).unwrap();
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(svg.contains("mkdir — sqlite") && svg.contains("getattr — sqlite"));
    // Where the time goes: a stacked bar per operation and level, every part named.
    let svg = std::fs::read_to_string(plots.join("breakdown-sqlite.svg")).unwrap();
    for part in metabench_report::BREAKDOWN_PARTS {
        assert!(
            svg.contains(&format!(">\n{part}\n</text>")),
            "{part}: {svg}"
        );
    }
    assert!(
        page.contains("where the time goes"),
        "the chart's title in the page"
    );

    // Bad input: one line, exit 2.
    let o = metabench(&["report", p(&d.join("none.json"))]);
    assert_eq!(o.status.code(), Some(2));
    let o = metabench(&["report", p(&ops), "--format", "pdf"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);
}
