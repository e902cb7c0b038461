//! `metabench scale`: one volume grown through several sizes, a sweep at each over the
//! whole tree, and the curve (latency, throughput, the engine's bytes per file) across
//! them; each size's sweep an ordinary results file that `report` and `compare` read.

use crate::{metabench, phase};
use metabench_report::scale::ScaleCurve;
use metabench_report::SweepResults;
use metabench_testkit::{fresh_database, fsck_problems, juicefs_fsck_dir_stats, Kind};
use std::path::Path;

/// A short scale run on `meta` into `out`; what it printed on stdout.
fn scale(meta: &str, files: &str, out: &Path) -> String {
    let o = metabench(&[
        "scale",
        "--meta",
        meta,
        "--files",
        files,
        "--ops",
        "getattr,create",
        "--conc",
        "1,2",
        "--warmup",
        "100ms",
        "--duration",
        "400ms",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn sweep_at(out: &Path, files: u64) -> SweepResults {
    let text = std::fs::read_to_string(out.join(format!("scale-{files}.json"))).unwrap();
    SweepResults::from_json(&text).unwrap()
}

/// On Redis: the volume grows to each size (its tree fsck-clean), each size's sweep reads
/// the whole tree and records what Redis held, the engine's bytes per file come from
/// `used_memory`, the plots are written, and `compare` of the first and last sizes names
/// the difference in what the engine held.
#[test]
fn a_volume_grown_through_sizes_gives_the_curve() {
    let _phase = phase(module_path!());
    let db = fresh_database(Kind::Redis);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("curve");
    let printed = scale(db.url(), "0,10k,30k", &out);
    let curve: ScaleCurve =
        serde_json::from_str(&std::fs::read_to_string(out.join("scale.json")).unwrap()).unwrap();
    let files: Vec<u64> = curve.sizes.iter().map(|s| s.files).collect();
    assert_eq!(files, [0, 10_000, 30_000]);
    assert!(curve.engine.starts_with("redis"), "{curve:?}");
    assert!(curve.tree.starts_with("/scale-"), "{curve:?}");
    let held: Vec<u64> = curve
        .sizes
        .iter()
        .map(|s| s.footprint.as_ref().unwrap().bytes.unwrap())
        .collect();
    assert!(held[0] < held[1] && held[1] < held[2], "{held:?}");
    for s in &curve.sizes[1..] {
        let per_file = s.bytes_per_file.unwrap();
        // Redis keeps each filled entry in a few hundred bytes (the guide's table: ~180).
        assert!((50.0..2000.0).contains(&per_file), "{s:?}");
        assert!(s.fill_s > 0.0, "{s:?}");
    }
    for s in &curve.sizes {
        let ops: Vec<(&str, u32)> = s
            .points
            .iter()
            .map(|p| (p.op.as_str(), p.clients))
            .collect();
        for want in [("getattr", 1), ("getattr", 2), ("create", 1), ("create", 2)] {
            assert!(
                ops.contains(&want),
                "{want:?} missing at {}: {ops:?}",
                s.files
            );
        }
        assert!(s.points.iter().all(|p| p.ops_per_s > 0.0), "{s:?}");
    }
    // The sweeps: the first read what it made, the others the whole tree.
    assert!(sweep_at(&out, 0).header.reads.is_none());
    for n in [10_000u64, 30_000] {
        let run = sweep_at(&out, n);
        let reads = run.header.reads.as_ref().unwrap();
        assert_eq!(reads.path, curve.tree);
        assert!(reads.names >= n, "{n}: {reads:?}");
        let f = run.header.engine.footprint.as_ref().unwrap();
        assert!(f.what.contains("used_memory"), "{f:?}");
    }
    for plot in [
        "scale-getattr.svg",
        "scale-create.svg",
        "scale-throughput.svg",
        "scale-bytes.svg",
    ] {
        let svg = std::fs::read_to_string(out.join(plot)).unwrap();
        assert!(svg.contains("<svg"), "{plot}");
    }
    assert!(
        printed.contains("| files | fill | engine held | bytes per file |"),
        "{printed}"
    );
    assert!(printed.contains("| getattr | 30,000 |"), "{printed}");
    assert!(
        printed.contains("the volume 'metabench' stays"),
        "{printed}"
    );
    // A client finds the grown volume consistent, every directory's stats included.
    let fsck = juicefs_fsck_dir_stats(db.url());
    assert!(
        fsck_problems(&fsck).is_empty(),
        "{:?}",
        fsck_problems(&fsck)
    );
    let base = out.join("scale-0.json");
    let last = out.join("scale-30000.json");
    let o = metabench(&["compare", base.to_str().unwrap(), last.to_str().unwrap()]);
    let said =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("the engine held different amounts when the runs started"),
        "{said}"
    );
}

/// Sizes that do not grow, and a sweep the sizes could not run, are refused in one line
/// before a byte is written.
#[test]
fn bad_sizes_and_sweeps_are_refused_before_anything_is_written() {
    let _phase = phase(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("never.db");
    let meta = format!("sqlite3://{}", db.display());
    let out = dir.path().join("out");
    for (args, says) in [
        (vec!["--files", "0,1M,100k"], "--files must grow"),
        (vec!["--files", "0,0"], "--files must grow"),
        (vec!["--files", "ten"], "is not a count"),
        (
            vec!["--files", "0,1k", "--ops", "frobnicate"],
            "the sweep at each size",
        ),
        (
            vec!["--files", "0,1k", "--conc", "0"],
            "the sweep at each size",
        ),
        (
            vec!["--files", "0,1k", "--keys", "gaussian"],
            "the sweep at each size",
        ),
    ] {
        let mut all = vec!["scale", "--meta", &meta, "--out", out.to_str().unwrap()];
        all.extend(args.iter().copied());
        let o = metabench(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(!db.exists(), "{args:?} wrote the database");
        assert!(!out.exists(), "{args:?} made the output directory");
    }
}

/// SIGTERM sent to `scale` alone (its sweep is a process of its own) is passed on: the
/// sweep stops and cleans up, and scale ends with 130 at once, not after the sweep's 60 s.
#[test]
fn sigterm_to_scale_stops_its_sweep_too() {
    let _phase = phase(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let meta = format!("sqlite3://{}", dir.path().join("meta.db").display());
    let out = dir.path().join("curve");
    let (status, took, said) = crate::terminated_once(
        &[
            "scale",
            "--meta",
            &meta,
            "--files",
            "0",
            "--ops",
            "getattr",
            "--conc",
            "1",
            "--warmup",
            "0s",
            "--duration",
            "60s",
            "--out",
            out.to_str().unwrap(),
        ],
        "sweeping at 0 files",
    );
    assert_eq!(status.code(), Some(130), "{said}");
    assert!(
        took.as_secs() < 30,
        "ended {took:?} after the signal: {said}"
    );
    // The sweep ended as interrupted (not failed), before the first size was measured.
    assert!(
        said.contains("scale stopped before its first size"),
        "{said}"
    );
    crate::assert_left_clean(&meta);
}
