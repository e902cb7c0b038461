//! Tests of [`super`]: comparisons, their rendering and the gate.

use super::*;
use crate::model::{IntervalSample, Level};

/// A deterministic pseudo-random stream (xorshift), uniform in [−1, 1).
struct Noise(u64);
impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// A one-level sweep of `mkdir` with `n` one-second intervals around `mean_us`, each
/// off by up to ±`noise` (a share), round trips `rt`.
fn sweep(mean_us: f64, noise: f64, n: usize, rt: f64, seed: u64) -> AnyResults {
    let mut rng = Noise(seed);
    let clients = 4.0;
    let intervals: Vec<IntervalSample> = (0..n)
        .map(|_| {
            let m = mean_us * (1.0 + noise * rng.next());
            IntervalSample {
                count: (clients * 1e6 / m) as u64,
                mean_us: m,
                p99_us: 3.0 * m * (1.0 + noise * rng.next()),
                service_p99_us: None,
                errors: 0,
            }
        })
        .collect();
    let mean = intervals.iter().map(|s| s.mean_us).sum::<f64>() / n as f64;
    let ops = intervals.iter().map(|s| s.count as f64).sum::<f64>() / n as f64;
    let p99 = intervals.iter().map(|s| s.p99_us).sum::<f64>() / n as f64;
    AnyResults::Sweep(SweepResults {
        header: crate::RunHeader {
            kind: "sweep".into(),
            ..Default::default()
        },
        levels: vec![Level {
            clients: 4,
            ops: vec![LevelOp {
                op: "mkdir".into(),
                latency: crate::Latency {
                    count: ops as u64 * n as u64,
                    mean_us: mean,
                    p99_us: p99,
                    ..Default::default()
                },
                ops_per_s: ops,
                round_trips_per_op: rt,
                intervals,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

fn policy(max: f64) -> GatePolicy {
    GatePolicy {
        max_regression: Some(max),
        alpha: DEFAULT_ALPHA,
    }
}

/// `mkdir` slowed from 1000 to 1200 µs (round trips unchanged), both sweeps with `n`
/// intervals off by up to ±`noise` (the base seeded by the first seed, the current run
/// by the second): the base, the current run and their comparison.
fn slowdown_of_20_percent(
    noise: f64,
    n: usize,
    [base_seed, cur_seed]: [u64; 2],
) -> (AnyResults, AnyResults, Comparison) {
    let base = sweep(1000.0, noise, n, 5.0, base_seed);
    let cur = sweep(1200.0, noise, n, 5.0, cur_seed);
    let c = compare(&base, &cur, DEFAULT_ALPHA).unwrap();
    (base, cur, c)
}

#[test]
fn low_noise_slowdown_of_20_percent_is_flagged() {
    let (base, cur, c) = slowdown_of_20_percent(0.02, 10, [1, 2]);
    let row = &c.rows[0];
    assert!(row.changes.iter().all(|ch| ch.significant), "{row:?}");
    assert!((row.changes[1].relative() - 0.2).abs() < 0.03, "{row:?}");
    let fails = gate(&c, &policy(0.10));
    assert!(!fails.is_empty());
    assert!(
        fails.iter().all(|f| f.row == "mkdir @ 4 clients"),
        "{fails:?}"
    );
    assert!(
        fails.iter().any(|f| f.reason.starts_with("mean µs rose")),
        "{fails:?}"
    );
    assert!(
        fails.iter().any(|f| f.reason.starts_with("ops/s fell")),
        "{fails:?}"
    );
    // Beyond a looser threshold, or on round trips only, the same change passes.
    assert!(gate(&c, &policy(0.30)).is_empty());
    let rt_only = GatePolicy {
        max_regression: None,
        alpha: DEFAULT_ALPHA,
    };
    assert!(gate(&c, &rt_only).is_empty());
    let text = render(&c);
    assert!(text.contains("significant, p=<0.001"), "{text}");
    // An improvement is significant but never a failure.
    let back = compare(&cur, &base, DEFAULT_ALPHA).unwrap();
    assert!(back.rows[0].changes[1].significant);
    assert!(gate(&back, &policy(0.10)).is_empty());
}

#[test]
fn difference_of_20_percent_inside_the_noise_is_not_flagged() {
    // ±80 % per-second swings over 5 seconds: a 20 % shift in the means is noise.
    let (_, _, c) = slowdown_of_20_percent(0.8, 5, [3, 4]);
    let row = &c.rows[0];
    let mean = &row.changes[1];
    assert!(mean.regression() > 0.1, "{row:?}");
    assert!(!mean.significant, "{row:?}");
    assert!(row.changes.iter().all(|ch| !ch.significant), "{row:?}");
    assert!(gate(&c, &policy(0.10)).is_empty());
    assert!(render(&c).contains("noise, p="));
}

#[test]
fn one_more_round_trip_always_fails() {
    let base = sweep(1000.0, 0.02, 10, 5.0, 5);
    let cur = sweep(1000.0, 0.02, 10, 6.0, 6);
    let c = compare(&base, &cur, DEFAULT_ALPHA).unwrap();
    for p in [
        policy(0.10),
        policy(10.0),
        GatePolicy {
            max_regression: None,
            alpha: DEFAULT_ALPHA,
        },
    ] {
        let f = gate(&c, &p);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].reason.contains("from 5.00 to 6.00"), "{f:?}");
    }
    assert!(render(&c).contains("5.00 → 6.00 (+1.00)"));
    // Fewer round trips pass.
    let c = compare(&cur, &base, DEFAULT_ALPHA).unwrap();
    assert!(gate(&c, &policy(0.10)).is_empty());
    // Where transactions were retried, retries add round trips: shown, not gated.
    let mut retried = cur.clone();
    if let AnyResults::Sweep(s) = &mut retried {
        s.levels[0].ops[0].retries = 40;
    }
    let c = compare(&base, &retried, DEFAULT_ALPHA).unwrap();
    assert!(gate(&c, &policy(0.10)).is_empty());
    assert_eq!(
        round_trips_not_gated(&c),
        ["mkdir @ 4 clients: round trips 5.00 → 6.00 with retries 0 → 40 (not gated)"]
    );
    assert!(render(&c).contains("5.00 → 6.00 (+1.00), retries 0 → 40"));
}

fn ops_run(latencies_us: &[f64], rt: f64) -> AnyResults {
    let mut h = histogram::new_latency_histogram();
    for l in latencies_us {
        h.record((l * 1000.0) as u64).unwrap();
    }
    let mut run = OpsResults::of(vec![
        OpResult {
            op: "mkdir".into(),
            latency: crate::Latency {
                count: h.len(),
                mean_us: h.mean() / 1000.0,
                p99_us: h.value_at_quantile(0.99) as f64 / 1000.0,
                histogram: Some(histogram::encode(&h)),
                ..Default::default()
            },
            round_trips_per_op: rt,
            ..Default::default()
        },
        OpResult::skipped("readlink", "ENOTSUP"),
    ]);
    run.header.engine.client_settings = [("profile", "gobench"), ("skip_dir_mtime", "0s")]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into();
    AnyResults::Ops(run)
}

#[test]
fn ops_runs_use_the_histograms() {
    let mut rng = Noise(7);
    let tight_a: Vec<f64> = (0..2000)
        .map(|_| 100.0 * (1.0 + 0.05 * rng.next()))
        .collect();
    let tight_b: Vec<f64> = (0..2000)
        .map(|_| 120.0 * (1.0 + 0.05 * rng.next()))
        .collect();
    let c = compare(&ops_run(&tight_a, 4.0), &ops_run(&tight_b, 4.0), 0.05).unwrap();
    assert_eq!(c.rows.len(), 1);
    assert!(c.rows[0].changes[1].significant);
    assert!(c.rows[0].changes[2].test.is_none());
    assert!(!gate(&c, &policy(0.10)).is_empty());
    // 20 calls scattered over a factor of ten: a 20 % shift is noise.
    let wide_a: Vec<f64> = (0..20).map(|_| 100.0 * (1.0 + 0.9 * rng.next())).collect();
    let wide_b: Vec<f64> = wide_a.iter().map(|v| v * 1.2).collect();
    let c = compare(&ops_run(&wide_a, 4.0), &ops_run(&wide_b, 4.0), 0.05).unwrap();
    assert!(!c.rows[0].changes[1].significant, "{:?}", c.rows[0]);
    assert!(gate(&c, &policy(0.10)).is_empty());
    let c = compare(&ops_run(&wide_a, 4.0), &ops_run(&wide_a, 5.0), 0.05).unwrap();
    assert_eq!(gate(&c, &policy(0.10)).len(), 1);
    assert!(compare(&ops_run(&wide_a, 4.0), &sweep(1.0, 0.1, 3, 1.0, 1), 0.05).is_err());
    assert!(c.warnings.is_empty());
    // Runs of two client profiles are compared, with a warning.
    let mut mount = ops_run(&wide_a, 4.0);
    if let AnyResults::Ops(o) = &mut mount {
        let settings = &mut o.header.engine.client_settings;
        settings.insert("profile".into(), "mount".into());
        settings.insert("skip_dir_mtime".into(), "100ms".into());
    }
    let c = compare(&ops_run(&wide_a, 4.0), &mount, 0.05).unwrap();
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    assert!(render(&c).contains("Warning: the runs model different clients"));
    // A setting recorded by one run only (a newer metabench) is not a difference; one
    // recorded by both with other values is.
    let mut newer = ops_run(&wide_a, 4.0);
    if let AnyResults::Ops(o) = &mut newer {
        let settings = &mut o.header.engine.client_settings;
        settings.insert("session".into(), "not registered".into());
    }
    let c = compare(&ops_run(&wide_a, 4.0), &newer, 0.05).unwrap();
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let mut registered = newer.clone();
    if let AnyResults::Ops(o) = &mut registered {
        let settings = &mut o.header.engine.client_settings;
        settings.insert("session".into(), "registered (set)".into());
    }
    let c = compare(&newer, &registered, 0.05).unwrap();
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    // Under SkipDirMtime, more round trips are shown, not gated.
    let mut timed = mount.clone();
    if let AnyResults::Ops(o) = &mut timed {
        o.results[0].round_trips_per_op = 5.0;
    }
    let c = compare(&mount, &timed, 0.05).unwrap();
    assert!(c.round_trips_timed && c.warnings.is_empty(), "{c:?}");
    assert!(gate(&c, &policy(0.10)).is_empty());
    assert!(round_trips_not_gated(&c)[0].contains("depend on timing"));
}

#[test]
fn open_loops_compare_by_offered_rate_and_gate_service_time() {
    // The same intended-start latency, service p99 per second around `service_us`.
    let open = |service_us: f64, seed: u64| {
        let AnyResults::Sweep(mut run) = sweep(1000.0, 0.0, 10, 1.0, 7) else {
            unreachable!()
        };
        let mut rng = Noise(seed);
        run.plan.rate = Some("4000".into());
        let level = &mut run.levels[0];
        level.offered_ops_per_s = Some(4000.0);
        let op = &mut level.ops[0];
        for s in &mut op.intervals {
            s.service_p99_us = Some(service_us * (1.0 + 0.02 * rng.next()));
        }
        op.service = Some(crate::model::ServiceTime {
            p99_us: service_us,
            ..Default::default()
        });
        AnyResults::Sweep(run)
    };
    let c = compare(&open(50.0, 1), &open(75.0, 2), DEFAULT_ALPHA).unwrap();
    assert_eq!(c.rows.len(), 1);
    assert_eq!(c.rows[0].name(), "mkdir @ 4000/s");
    let service = c.rows[0]
        .changes
        .iter()
        .find(|ch| ch.metric == "service p99 µs")
        .expect("a service time change");
    assert_eq!((service.base, service.current), (50.0, 75.0));
    assert!(service.significant, "{service:?}");
    let table = render(&c);
    assert!(table.contains(" level "), "{table}");
    assert!(
        table.contains("service p99 µs") && table.contains("4000/s"),
        "{table}"
    );
    let fails = gate(&c, &policy(0.10));
    assert_eq!(fails.len(), 1, "{fails:?}");
    assert!(
        fails[0].row == "mkdir @ 4000/s" && fails[0].reason.starts_with("service p99 µs rose"),
        "{fails:?}"
    );
}

#[test]
fn percentages_parse() {
    assert_eq!(parse_percent("10%").unwrap(), 0.1);
    assert_eq!(parse_percent("25").unwrap(), 0.25);
    assert!(parse_percent("ten").is_err());
    assert!(parse_percent("-1%").is_err());
}

#[test]
fn sweeps_grouping_workers_differently_are_said_to() {
    let base = sweep(1000.0, 0.0, 10, 1.0, 7);
    let mut grouped = sweep(1000.0, 0.0, 10, 1.0, 7);
    if let AnyResults::Sweep(s) = &mut grouped {
        s.plan.threads_per_client = 4;
    }
    let c = compare(&base, &grouped, 0.05).unwrap();
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("baseline 1, current 4 per client")),
        "{:?}",
        c.warnings
    );
    let same = compare(&base, &base, 0.05).unwrap();
    assert!(!same.warnings.iter().any(|w| w.contains("per client")));
}

/// A hot directory against one per client, and a run without the engine's counters, are
/// named: the breakdowns differ by design.
#[test]
fn sweeps_placing_clients_or_reading_counters_differently_are_said_to() {
    let base = sweep(1000.0, 0.0, 10, 1.0, 7);
    let mut hot = sweep(1000.0, 0.0, 10, 1.0, 7);
    if let AnyResults::Sweep(s) = &mut hot {
        s.plan.shared_dir = true;
        s.plan.engine_counters_off = true;
    }
    let c = compare(&base, &hot, 0.05).unwrap();
    let said = |what: &str| c.warnings.iter().any(|w| w.contains(what));
    assert!(
        said("baseline a directory per client, current one hot directory"),
        "{:?}",
        c.warnings
    );
    assert!(said("--no-engine-counters"), "{:?}", c.warnings);
    let same = compare(&hot, &hot, 0.05).unwrap();
    assert!(same
        .warnings
        .iter()
        .all(|w| !w.contains("directory") && !w.contains("counters")));
}

/// `compare` shows both runs' breakdown parts side by side, "unknown" as it is.
#[test]
fn breakdowns_are_shown_side_by_side() {
    let with = |engine: Option<f64>, mean: f64| {
        let mut run = match sweep(mean, 0.0, 3, 2.0, 1) {
            AnyResults::Sweep(s) => s,
            _ => unreachable!(),
        };
        for l in &mut run.levels {
            for o in &mut l.ops {
                let mut b = Breakdown {
                    mean_us: mean,
                    wire_us: Some(30.0),
                    engine_us: engine,
                    ..Default::default()
                };
                b.explain();
                o.breakdown = Some(b);
            }
        }
        AnyResults::Sweep(run)
    };
    let c = compare(&with(None, 100.0), &with(Some(20.0), 120.0), 0.05).unwrap();
    let text = render(&c);
    assert!(
        text.contains("Where the time goes, baseline → current"),
        "{text}"
    );
    assert!(text.contains("unknown → 20.0"), "{text}");
    assert!(text.contains("70.0 → 70.0"), "unexplained: {text}");
    let plain = compare(
        &sweep(100.0, 0.0, 3, 2.0, 1),
        &sweep(100.0, 0.0, 3, 2.0, 2),
        0.05,
    );
    assert!(!render(&plain.unwrap()).contains("Where the time goes"));
}
