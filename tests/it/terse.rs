//! What a plain run prints: the README's main command fits on one screen, with nothing
//! lost from the files; `-v` prints every note; `--rate` alone picks and names its pool.

use crate::metabench;
use metabench_report::SweepResults;
use std::process::Output;

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The README's main command (`sweep --conc 1..128` on the embedded default), with a tiny
/// window: under 60 terminal lines, holding the run line, a line per level and operation,
/// a table per operation, the floor, one line of flags and one line on the documented
/// differences (their list stays in the JSON).
#[test]
fn the_readme_main_command_fits_on_one_screen() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sweep.json");
    let o = metabench(&[
        "sweep",
        "--conc",
        "1..128",
        "--warmup",
        "0",
        "--duration",
        "100ms",
        "--json",
        json.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let lines = out.lines().count() + err.lines().count();
    assert!(lines < 60, "{lines} lines:\n{err}\n{out}");
    assert!(err.starts_with("metabench sweep on "), "{err}");
    // 8 levels (1, 2, 4, … 128) of create and getattr, a line each.
    let level_lines = err.lines().filter(|l| l.contains(" ops/s  p50 ")).count();
    assert_eq!(level_lines, 16, "{err}");
    for op in ["\ncreate\n", "\ngetattr\n"] {
        assert!(out.contains(op), "no {op:?} table:\n{out}");
    }
    assert!(out.contains("floor (the engine's null round trip"), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("flags: ")).count(),
        1,
        "{out}"
    );
    let differences = out
        .lines()
        .find(|l| l.starts_with("client profile: mount; "))
        .unwrap_or_else(|| panic!("no line on the documented differences:\n{out}"));
    assert!(
        differences.contains("documented differences from a juicefs mount: see --verbose"),
        "{differences}"
    );
    assert!(
        !out.contains("where metabench differs from that client:"),
        "{out}"
    );
    // Nothing lost from the file: every difference is there.
    let saved = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let notes = &saved.header.engine.fidelity_notes;
    let counted: usize = differences
        .split(';')
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("a count");
    assert_eq!(notes.len(), counted, "{differences}");
}

/// `-v` prints everything a plain run leaves out: the list of differences, each under
/// its heading.
#[test]
fn verbose_prints_every_documented_difference() {
    let o = metabench(&[
        "-v",
        "sweep",
        "--conc",
        "1,2",
        "--ops",
        "getattr",
        "--warmup",
        "0",
        "--duration",
        "100ms",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        out.contains("where metabench differs from that client:"),
        "{out}"
    );
    assert!(
        out.lines().filter(|l| l.starts_with("  - ")).count() >= 2,
        "{out}"
    );
    assert!(!out.contains("see --verbose, the JSON"), "{out}");
}

/// `--rate` without `--conc` runs an open loop on a pool it picks from the floor, and says
/// which; a range of rates is still one pool.
#[test]
fn an_open_loop_without_conc_picks_and_names_its_pool() {
    let o = metabench(&[
        "sweep",
        "--rate",
        "500,1000",
        "--ops",
        "getattr",
        "--warmup",
        "0",
        "--duration",
        "200ms",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}\n{out}");
    let pool = err
        .lines()
        .find(|l| l.starts_with("open loop pool: "))
        .unwrap_or_else(|| panic!("no pool line:\n{err}"));
    assert!(pool.contains("for 1000 calls/s at the floor's"), "{pool}");
    let clients: u32 = pool["open loop pool: ".len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a pool size");
    assert!((4..=1024).contains(&clients), "{pool}");
    assert!(
        err.contains(&format!("on a pool of {clients} clients")),
        "the run line names the pool:\n{err}"
    );
}
