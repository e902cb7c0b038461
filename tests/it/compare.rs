//! `metabench compare` and `metabench gate` on synthetic results files: a significant
//! slowdown fails the gate, noise does not, one more round trip always does.

use crate::metabench;
use metabench_report::{IntervalSample, Level, LevelOp, SweepResults};
use metabench_testkit::output_text;
use std::path::{Path, PathBuf};

/// A sweep with mkdir and lookup at 1 and 4 clients; mkdir at 4 clients has mean latency
/// `mkdir4_us` with per-second swings of ±`noise`, and `rt` round trips.
fn sweep_file(dir: &Path, name: &str, mkdir4_us: f64, noise: f64, rt: f64) -> PathBuf {
    let level = |clients: u32, mkdir_us: f64| Level {
        clients,
        ops: [("mkdir", mkdir_us, rt), ("lookup", 200.0, 2.0)]
            .iter()
            .map(|&(op, mean, rt)| {
                let intervals: Vec<IntervalSample> = (0..8)
                    .map(|i| {
                        let m = mean * (1.0 + noise * if i % 2 == 0 { 1.0 } else { -1.0 });
                        IntervalSample {
                            count: (clients as f64 * 1e6 / m) as u64,
                            mean_us: m,
                            p99_us: 2.0 * m,
                            service_p99_us: None,
                            errors: 0,
                        }
                    })
                    .collect();
                LevelOp {
                    op: op.into(),
                    phase: "mix".into(),
                    latency: metabench_report::Latency {
                        count: 8000,
                        mean_us: mean,
                        p99_us: 2.0 * mean,
                        ..Default::default()
                    },
                    ops_per_s: clients as f64 * 1e6 / mean,
                    round_trips_per_op: rt,
                    intervals,
                    ..Default::default()
                }
            })
            .collect(),
        ..Default::default()
    };
    let run = SweepResults {
        header: metabench_report::RunHeader::new("sweep", String::new(), Default::default(), None),
        levels: vec![level(1, 1000.0), level(4, mkdir4_us)],
        ..Default::default()
    };
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(&run).unwrap()).unwrap();
    path
}

#[test]
fn gate_fails_on_significant_slowdowns_and_round_trips_only() {
    let _phase = crate::phase(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let base = sweep_file(dir.path(), "base.json", 1000.0, 0.02, 5.0);
    let slow = sweep_file(dir.path(), "slow.json", 1200.0, 0.02, 5.0);
    let noisy_base = sweep_file(dir.path(), "noisy-base.json", 1000.0, 0.8, 5.0);
    let noisy = sweep_file(dir.path(), "noisy.json", 1200.0, 0.8, 5.0);
    let more_rt = sweep_file(dir.path(), "rt.json", 1000.0, 0.02, 6.0);
    let p = |p: &PathBuf| p.to_str().unwrap().to_owned();

    let o = metabench(&["compare", &p(&base), &p(&slow)]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let t = output_text(&o);
    assert!(t.contains("| mkdir"), "{t}");
    assert!(t.contains("+20.0%, significant"), "{t}");
    assert!(
        t.contains("Welch's t-test on the per-second interval samples"),
        "{t}"
    );

    let gate = |b: &PathBuf, c: &PathBuf, extra: &[&str]| {
        let mut args = vec![
            "gate".to_owned(),
            "--baseline".into(),
            p(b),
            "--current".into(),
            p(c),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        metabench(&args)
    };

    let o = gate(&base, &slow, &["--max-regression", "10%"]);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    let t = output_text(&o);
    assert!(t.contains("gate FAILED: 1 of 4 rows"), "{t}");
    assert!(t.contains("mkdir @ 4 clients: mean µs rose 20.0%"), "{t}");
    assert!(!t.contains("lookup @"), "{t}");

    let o = gate(&base, &slow, &["--max-regression", "25%"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let o = gate(&base, &slow, &["--round-trips-only"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));

    let o = gate(&noisy_base, &noisy, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(
        output_text(&o).contains("gate passed"),
        "{}",
        output_text(&o)
    );

    let o = gate(&base, &more_rt, &["--round-trips-only"]);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    let t = output_text(&o);
    assert!(
        t.contains("mkdir @ 1 clients: round trips per operation increased from 5.00 to 6.00"),
        "{t}"
    );
    assert!(t.contains("mkdir @ 4 clients: round trips"), "{t}");

    // Bad input: one line, exit 2.
    let o = gate(&base, &dir.path().join("missing.json"), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    let o = gate(&base, &slow, &["--max-regression", "lots"]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);
}
