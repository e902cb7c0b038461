//! The HTML report in a real browser: headless Chromium (Debian `chromium`, installed by
//! scripts/engines.sh) screenshots a report of two synthetic sweeps, and the screenshot
//! must show the plots — the legend swatches of both engines in their exact colours.
//! Takes a few seconds; without chromium on PATH it fails and says how to get it (the test
//! command, scripts/test.sh, installs it).

use metabench_report::cross::{render_html, LabeledRun};
use metabench_report::plot::{sweep_plots, Plot};
use metabench_report::{AnyResults, Latency, Level, LevelOp, RunHeader, SweepResults};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// A synthetic sweep: `mkdir` and `getattr` at 1 to 16 clients, `scale` times the
/// throughput (and a `scale`th of the latency) of scale 1.
fn sweep(scale: f64) -> AnyResults {
    let op = |op: &str, c: f64| LevelOp {
        op: op.to_string(),
        ops_per_s: scale * c * 1000.0 / (1.0 + 0.2 * c),
        latency: Latency {
            p50_us: 100.0 * c / scale,
            p99_us: 400.0 * c / scale,
            ..Default::default()
        },
        ..Default::default()
    };
    let level = |c: u32| Level {
        clients: c,
        ops: vec![op("mkdir", c as f64), op("getattr", c as f64)],
        ..Default::default()
    };
    AnyResults::Sweep(SweepResults {
        header: RunHeader {
            kind: "sweep".into(),
            ..Default::default()
        },
        levels: [1, 2, 4, 8, 16].into_iter().map(level).collect(),
        ..Default::default()
    })
}

/// Pixels of exactly this colour in an RGB(A) PNG.
fn count_colour(png_bytes: &[u8], rgb: (u8, u8, u8)) -> usize {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = match info.color_type {
        png::ColorType::Rgba => 4,
        png::ColorType::Rgb => 3,
        other => panic!("unexpected PNG colour type {other:?}"),
    };
    buf[..info.buffer_size()]
        .chunks(step)
        .filter(|p| (p[0], p[1], p[2]) == rgb)
        .count()
}

/// The HTML report of `runs` with `plots` in headless Chromium, 1000×1400: the directory
/// it is written in (removed when dropped), the screenshot's path in it and how long
/// Chromium took; fails when Chromium is not installed or wrote no screenshot.
fn screenshot(runs: &[LabeledRun], plots: &[Plot]) -> (tempfile::TempDir, PathBuf, Duration) {
    assert!(
        Command::new("chromium").arg("--version").output().is_ok(),
        "chromium is not installed: run the tests with scripts/test.sh (scripts/engines.sh install adds it)"
    );
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    std::fs::write(&html, render_html(runs, &[], &[], plots)).unwrap();
    let shot = dir.path().join("shot.png");
    let t0 = Instant::now();
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1000,1400")
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium runs");
    assert!(
        shot.is_file(),
        "no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let took = t0.elapsed();
    (dir, shot, took)
}

#[test]
fn html_report_screenshot_shows_the_plots() {
    let runs = vec![
        LabeledRun {
            label: "redis".into(),
            run: sweep(2.0),
        },
        LabeledRun {
            label: "sqlite".into(),
            run: sweep(1.0),
        },
    ];
    let plots = sweep_plots(&runs).unwrap();
    let (_dir, shot, took) = screenshot(&runs, &plots);
    assert!(took < Duration::from_secs(60), "{took:?}");
    let bytes = std::fs::read(&shot).unwrap();
    // The first plot (throughput, 4 series) is on screen: its legend swatches are
    // solid rectangles in the first colours of the palette.
    let blue = count_colour(&bytes, (31, 119, 180));
    let orange = count_colour(&bytes, (255, 127, 14));
    assert!(blue > 100 && orange > 100, "blue {blue}, orange {orange}");
    if let Some(keep) = std::env::var_os("METABENCH_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

/// The stacked breakdown chart in a real browser: a sweep whose every part is known
/// shows each part's colour as bars, the engine's green and the retry waste's purple
/// among them; its negative unexplained part is drawn too (below zero).
#[test]
fn html_report_screenshot_shows_the_breakdown_bars() {
    let mut run = match sweep(1.0) {
        AnyResults::Sweep(s) => s,
        _ => unreachable!(),
    };
    for l in &mut run.levels {
        let c = l.clients as f64;
        for o in &mut l.ops {
            let mut b = metabench_report::Breakdown {
                mean_us: 100.0 * c,
                client_us: Some(10.0),
                lock_wait_us: Some(5.0 * c),
                wire_us: Some(30.0),
                engine_us: Some(20.0 * c),
                client_wait_us: Some(4.0 * c),
                retry_waste_us: Some(15.0 * c),
                ..Default::default()
            };
            b.explain();
            o.breakdown = Some(b);
        }
    }
    let runs = vec![LabeledRun {
        label: "redis".into(),
        run: AnyResults::Sweep(run),
    }];
    let plots = metabench_report::plot::breakdown_plots(&runs).unwrap();
    assert_eq!(plots.len(), 1);
    let (_dir, shot, _) = screenshot(&runs, &plots);
    let bytes = std::fs::read(&shot).unwrap();
    let engine = count_colour(&bytes, (44, 160, 44));
    let retry = count_colour(&bytes, (148, 103, 189));
    assert!(
        engine > 500 && retry > 500,
        "engine {engine}, retry waste {retry}"
    );
    if let Some(keep) = std::env::var_os("METABENCH_KEEP_BREAKDOWN_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}
