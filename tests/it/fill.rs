//! `metabench fill` against the real client's tools: what it writes is what clients would
//! have written (`juicefs fsck` clean, `juicefs dump` holding the expected tree and
//! counters, a dump → `juicefs load` → dump round trip unchanged), a stop leaves a
//! consistent volume, and bad input is refused before a byte is written.

use crate::{metabench, metabench_cmd, phase};
use metabench_testkit::{
    dump_tree, fresh_database, fsck_problems, juicefs_dump, juicefs_dump_with, juicefs_format,
    juicefs_fsck, juicefs_fsck_dir_stats, juicefs_load, temp_dir, unique_name, write_slice_blocks,
    Kind,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every shape feature on: a tree, one very large directory, symlinks, hard links,
/// xattrs, and a length (one 1-byte slice per file, so fsck has objects to find).
const SHAPE: &[&str] = &[
    "--files-per-dir",
    "50",
    "--fanout",
    "4",
    "--big-dirs",
    "1",
    "--big-dir-files",
    "10k",
    "--symlinks",
    "0.01",
    "--hardlinks",
    "0.005",
    "--xattrs",
    "0.01",
    "--file-size",
    "1",
];

/// What a dumped tree holds: regular inodes, their names, symlinks, directories,
/// xattrs, bytes.
#[derive(Debug, Default, PartialEq, Eq)]
struct Counted {
    files: u64,
    names: u64,
    symlinks: u64,
    dirs: u64,
    xattrs: u64,
    bytes: u64,
}

fn count(dump: &serde_json::Value) -> Counted {
    let mut c = Counted::default();
    let mut seen = BTreeSet::new();
    for node in dump_tree(dump).values() {
        match node.typ.as_str() {
            "regular" => {
                c.names += 1;
                if seen.insert(node.inode) {
                    c.files += 1;
                    c.bytes += node.length;
                    c.xattrs += node.xattrs.len() as u64;
                }
            }
            "symlink" => c.symlinks += 1,
            "directory" => c.dirs += 1,
            other => panic!("unexpected node type {other}"),
        }
    }
    c
}

/// Counts the dumped tree of a volume of empty files and checks that its counters count
/// the same, no more: `usedInodes` every node but the root, `usedSpace` 4 KiB each.
fn counted_by_the_counters(dump: &serde_json::Value, label: &str) -> Counted {
    let c = count(dump);
    let inodes = (c.files + c.symlinks + c.dirs - 1) as i64;
    let counters = &dump["Counters"];
    assert_eq!(
        counters["usedInodes"].as_i64(),
        Some(inodes),
        "{label}: {counters}"
    );
    assert_eq!(
        counters["usedSpace"].as_i64(),
        Some(inodes * 4096),
        "{label}: {counters}"
    );
    c
}

/// `juicefs fsck` of `url` succeeds and finds no problem.
fn assert_fsck_clean(url: &str, label: &str) {
    let fsck = juicefs_fsck(url);
    let problems = fsck_problems(&fsck);
    assert!(
        fsck.status.success() && problems.is_empty(),
        "{label}: fsck: {problems:#?}\n{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
}

/// Writes the block objects of every slice in `dump`, as the clients' uploads would.
fn write_blocks(dump: &serde_json::Value, bucket: &Path) {
    let volume = dump["Setting"]["Name"].as_str().unwrap();
    for node in dump_tree(dump).values() {
        for chunk in &node.chunks {
            for s in &chunk.slices {
                write_slice_blocks(bucket, volume, s.id, s.size, 0);
            }
        }
    }
}

fn fill(url: &str, bucket: &Path, files: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["fill", "--meta", url, "--files", files];
    args.extend_from_slice(extra);
    args.extend(["--bucket", bucket.to_str().unwrap()]);
    metabench(&args)
}

/// Fills `n` entries (a multiple of 1,000, above 10,000) with [`SHAPE`] and checks the
/// volume with the real client's tools.
fn check_filled(url: &str, bucket: &Path, label: &str, n: u64) {
    let start = std::time::Instant::now();
    let out = fill(url, bucket, &n.to_string(), SHAPE);
    eprintln!("{label}: filled in {:?}", start.elapsed());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{label}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("files/s"), "{label}: {stdout}");
    // --fast: the same JSON, read in one pass (an SQL or KV engine dumped entry by entry
    // takes minutes)
    let fast: &[&str] = if url.starts_with("redis") {
        &[]
    } else {
        &["--fast"]
    };
    let dump = juicefs_dump_with(url, fast);
    eprintln!("{label}: dumped at {:?}", start.elapsed());
    // every 100th entry a symlink, every 200th a second name of a file in the same
    // directory, every 100th file an xattr, one byte per file
    let c = count(&dump);
    let names = n - n / 100;
    assert_eq!(c.symlinks, n / 100, "{label}");
    assert_eq!(c.names, names, "{label}");
    assert_eq!(c.files, names - n / 200, "{label}");
    assert_eq!(c.bytes, names - n / 200, "{label}");
    assert!((n / 110..=n / 100).contains(&c.xattrs), "{label}: {c:?}");
    // root, base and the tree's directories (50 entries each), one big one (10,000)
    assert_eq!(c.dirs, 1 + (n - 10_000) / 50 + 1, "{label}");
    let counters = &dump["Counters"];
    assert_eq!(
        counters["usedInodes"].as_i64(),
        Some((c.files + c.symlinks + c.dirs - 1) as i64),
        "{label}: {counters}"
    );
    write_blocks(&dump, bucket);
    assert_fsck_clean(url, label);
    eprintln!("{label}: checked at {:?}", start.elapsed());
}

#[test]
fn fill_writes_what_clients_would_on_every_engine() {
    let _p = phase(module_path!());
    // the engines side by side: fsck and dump wait on round trips, not on the CPU
    std::thread::scope(|scope| {
        for kind in Kind::ALL {
            scope.spawn(move || {
                let db = fresh_database(kind);
                let bucket = temp_dir();
                check_filled(db.url(), bucket.path(), kind.name(), 100_000);
            });
        }
        // juicefs dump and fsck read etcd entry by entry: 100k entries take them about
        // five minutes here, so etcd fills fewer
        for (var, n) in [
            ("METABENCH_ETCD_URL", 25_000),
            ("METABENCH_TIKV_URL", 100_000),
        ] {
            scope.spawn(move || {
                let base =
                    std::env::var(var).unwrap_or_else(|_| panic!("{var}: run scripts/test.sh"));
                let url = format!("{}/{}", base.trim_end_matches('/'), unique_name("fill"));
                let bucket = temp_dir();
                check_filled(&url, bucket.path(), var, n);
                let uuid = juicefs_dump_with(&url, &["--fast"])["Setting"]["UUID"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                let out = metabench_testkit::juicefs(&["destroy", "--yes", &url, &uuid]);
                assert!(
                    out.status.success(),
                    "{var}: destroy: {}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            });
        }
    });
}

#[test]
fn a_dump_of_a_filled_volume_loads_back_unchanged() {
    let _p = phase(module_path!());
    for kind in [Kind::Redis, Kind::Sqlite] {
        let (a, b) = (fresh_database(kind), fresh_database(kind));
        let bucket = temp_dir();
        let out = fill(a.url(), bucket.path(), "20k", SHAPE);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let first = juicefs_dump(a.url());
        juicefs_load(b.url(), &first);
        let second = juicefs_dump(b.url());
        assert_eq!(first, second, "{}: dump → load → dump changed", kind.name());
    }
}

/// A sweep and an `ops` run on a filled volume (`--existing`) leave it as they found it,
/// its root's dir stats included: the run's `/.metabench` is counted when made and when
/// removed, so `juicefs fsck --sync-dir-stat` stays clean.
#[test]
fn runs_on_a_filled_volume_leave_its_dir_stats_as_they_were() {
    let _p = phase(module_path!());
    let db = fresh_database(Kind::Redis);
    let bucket = temp_dir();
    let out = fill(db.url(), bucket.path(), "2000", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let clean = |after: &str| {
        let problems = fsck_problems(&juicefs_fsck_dir_stats(db.url()));
        assert!(problems.is_empty(), "after {after}: {problems:?}");
    };
    clean("the fill");
    for (what, args) in [
        (
            "a sweep",
            &[
                "sweep",
                "--conc",
                "1",
                "--duration",
                "300ms",
                "--warmup",
                "0",
            ][..],
        ),
        (
            "ops",
            &["ops", "--ops", "create,getattr", "--iterations", "20"][..],
        ),
    ] {
        let mut all = args.to_vec();
        all.extend(["--meta", db.url(), "--existing"]);
        let o = metabench(&all);
        assert!(
            o.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        clean(what);
    }
}

#[test]
fn a_stopped_fill_leaves_a_volume_fsck_accepts() {
    let _p = phase(module_path!());
    let dir = temp_dir();
    let sqlite = format!("sqlite3://{}", dir.path().join("v.db").display());
    // etcd: stopped between two waves of commits sent at once
    let etcd = format!(
        "{}/{}",
        std::env::var("METABENCH_ETCD_URL").expect("METABENCH_ETCD_URL: run scripts/test.sh"),
        unique_name("stop")
    );
    for url in [sqlite, etcd] {
        let bucket = temp_dir();
        juicefs_format(&url, "stopped", bucket.path());
        let log = bucket.path().join("stderr");
        let mut child = metabench_cmd()
            .args(["fill", "--meta", &url, "--existing", "--files", "5M"])
            .stderr(std::fs::File::create(&log).unwrap())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // once it writes, let it write some batches, then Ctrl-C
        crate::wait_for_log(&log, "metabench: filling");
        std::thread::sleep(std::time::Duration::from_millis(1000));
        crate::kill("-INT", child.id());
        let status = child.wait().unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(status.code(), Some(130), "{url}: {text}");
        assert!(
            text.contains("fill stopped after")
                && text.contains("consistent")
                && !text.contains("NOT consistent"),
            "{url}: {text}"
        );
        let dump = juicefs_dump_with(&url, &["--fast"]);
        let c = counted_by_the_counters(&dump, &url);
        assert!(c.names > 1_000 && c.names < 5_000_000, "{url}: {c:?}");
        assert_fsck_clean(&url, &url);
        // it wrote under /.metabench only
        let tree = dump_tree(&dump);
        assert!(tree
            .keys()
            .all(|p| p == "/" || p.starts_with("/.metabench")));
    }
}

#[test]
fn an_engine_out_of_room_is_one_line_and_what_was_filled_stays_consistent() {
    let _p = phase(module_path!());
    // etcd 3.4.23 takes a transaction of deletes alone under its NOSPACE alarm, 3.5.1 does
    // not; a wave is taken back on both. The second tree is a directory of 60 sub-directories
    // a batch: more writes than one commit takes.
    type Start = fn(u64) -> metabench_testkit::EtcdServer;
    let etcd34: Start = metabench_testkit::EtcdServer::start_with_quota;
    let etcd35: Start = metabench_testkit::EtcdServer::start_35_with_quota;
    let fanout: &[&str] = &["--fanout", "60"];
    let cases = [
        (etcd34, &[][..], false),
        (etcd35, &[][..], true),
        (etcd35, fanout, true),
    ];
    // the three at once: each waits mostly on its own etcd's disk
    std::thread::scope(|scope| {
        for (start, shape, reads_refused) in cases {
            scope.spawn(move || {
                let mut etcd = start(4_000_000);
                let url = format!("etcd://127.0.0.1:{}/quota", etcd.port());
                let bucket = temp_dir();
                let out = fill(&url, bucket.path(), "200k", shape);
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert_eq!(out.status.code(), Some(1), "{stderr}");
                // the start line, then the error in one line
                let lines: Vec<&str> = stderr
                    .lines()
                    .filter(|l| !l.starts_with("metabench: filling"))
                    .collect();
                assert_eq!(lines.len(), 1, "{stderr}");
                assert!(
                    lines[0].contains("--quota-backend-bytes")
                        && lines[0].contains("consistent")
                        && !lines[0].contains("NOT consistent"),
                    "{stderr}"
                );
                if reads_refused {
                    // as the error says: etcd 3.5.1 refuses the real client's reads too
                    // until then
                    etcd.raise_quota(64_000_000);
                }
                assert_fsck_clean(&url, &url);
                let c = counted_by_the_counters(&juicefs_dump(&url), &url);
                assert!(c.names > 1_000, "{c:?}");
            });
        }
    });
}

#[test]
fn fill_refuses_what_it_must_not_write_into() {
    let _p = phase(module_path!());
    let dir = temp_dir();
    // a volume, without --existing
    let url = format!("sqlite3://{}", dir.path().join("v.db").display());
    juicefs_format(&url, "theirs", dir.path());
    let before = juicefs_dump(&url);
    let out = fill(&url, dir.path(), "1k", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--existing") && stderr.lines().count() == 1,
        "{stderr}"
    );
    let mut after = juicefs_dump(&url);
    after["Counters"] = before["Counters"].clone();
    assert_eq!(dump_tree(&before), dump_tree(&after));
    // an empty database with --existing, and nonsense shapes: nothing written
    let empty = format!("sqlite3://{}", dir.path().join("e.db").display());
    for extra in [
        &["--existing"][..],
        &["--big-dirs", "2", "--big-dir-files", "1k"][..],
        &["--symlinks", "0.9"][..],
        &["--file-size", "lots"][..],
    ] {
        let out = fill(&empty, dir.path(), "1k", extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{extra:?}: {stderr}");
    }
    let left: BTreeMap<_, _> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| (e.unwrap().file_name(), ()))
        .collect();
    assert!(
        !left.contains_key(std::ffi::OsStr::new("e.db"))
            || std::fs::metadata(dir.path().join("e.db")).unwrap().len() == 0,
        "the empty database was written"
    );
}
