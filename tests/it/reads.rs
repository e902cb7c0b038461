//! Reads over a populated volume (`--tree`): a sweep's reads draw their targets from a
//! filled tree, spread as the key distribution predicts, and the engine itself sees that
//! spread.

use crate::{metabench, phase};
use metabench_load::dist::{expected_distinct, KeyDist};
use metabench_testkit::{temp_dir, RedisServer, Resp};
use std::time::{Duration, Instant};

/// The tree's directory from `metabench fill`'s last line (`filled /fill-… on …`).
fn filled_path(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("filled "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no `filled` line in: {stdout}"))
        .to_owned()
}

/// Redis's idle time (seconds since the last access) of each of `keys`, read in one
/// script call, so that reading it takes a moment and touches none of them.
fn idle_times(redis: &RedisServer, keys: &[String]) -> Vec<i64> {
    let script = "local r = {} for i, k in ipairs(KEYS) do \
                  r[i] = redis.call('OBJECT', 'IDLETIME', k) end return r";
    let n = keys.len().to_string();
    let mut args = vec!["EVAL", script, &n];
    args.extend(keys.iter().map(String::as_str));
    match redis.command(&args) {
        Resp::Array(Some(items)) => items
            .into_iter()
            .map(|r| match r {
                Resp::Integer(i) => i,
                other => panic!("OBJECT IDLETIME answered {other:?}"),
            })
            .collect(),
        other => panic!("EVAL answered {other:?}"),
    }
}

#[test]
fn a_zipfian_read_sweep_over_a_filled_tree_reaches_the_spread_the_distribution_predicts() {
    let _p = phase(module_path!());
    let redis = RedisServer::start();
    let url = redis.url(0);
    let out = metabench(&["fill", "--meta", &url, "--files", "20k"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = filled_path(&stdout);
    // The tree's regular files: every inode but the directories (with entries, `d…`),
    // the symlinks (`s…`) and the root. The reads below (read_1 of an empty file: the
    // chunk, then the file's attribute) touch a file's `i…` key; the walk that finds the
    // tree reads only directories.
    let numbers = |pattern: &str, prefix: char| -> Vec<u64> {
        match redis.command(&["KEYS", pattern]) {
            Resp::Array(Some(keys)) => keys
                .into_iter()
                .filter_map(|k| match k {
                    Resp::Bulk(Some(b)) => String::from_utf8(b)
                        .ok()?
                        .strip_prefix(prefix)?
                        .parse()
                        .ok(),
                    _ => None,
                })
                .collect(),
            other => panic!("KEYS answered {other:?}"),
        }
    };
    let (dirs, symlinks) = (numbers("d*", 'd'), numbers("s*", 's'));
    let mut inodes = numbers("i*", 'i');
    inodes.retain(|i| *i != 1 && !dirs.contains(i) && !symlinks.contains(i));
    inodes.sort_unstable();
    assert!(inodes.len() > 19_000, "{} files", inodes.len());
    let keys: Vec<String> = inodes.iter().map(|i| format!("i{i}")).collect();

    // Nothing reads the tree for GAP: a key the sweep read is idle for less than the
    // sweep took, one it did not for longer than GAP on top of that.
    const GAP: Duration = Duration::from_secs(6);
    std::thread::sleep(GAP);
    let dir = temp_dir();
    let json = dir.path().join("reads.json");
    let started = Instant::now();
    let out = metabench(&[
        "sweep",
        "--meta",
        &url,
        "--existing",
        "--tree",
        &tree,
        "--keys",
        "zipfian",
        "--ops",
        "read_1",
        "--conc",
        "2",
        "--warmup",
        "200ms",
        "--duration",
        "1500ms",
        "--json",
        json.to_str().unwrap(),
    ]);
    let swept = started.elapsed();
    let idle = idle_times(&redis, &keys);
    let read_for = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("reads draw from the tree under {tree}: 20,")),
        "{stderr}"
    );
    assert!(
        read_for - swept < GAP - Duration::from_secs(2),
        "reading the idle times took {:?}: too long to tell read keys apart",
        read_for - swept
    );
    let cutoff = read_for.as_secs() as i64 + 1;
    let read: Vec<u64> = inodes
        .iter()
        .zip(&idle)
        .filter(|&(_, &t)| t <= cutoff)
        .map(|(&i, _)| i)
        .collect();

    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let reads = &results["reads"];
    assert_eq!(reads["path"], tree.as_str());
    assert_eq!(reads["keys"], "zipfian:0.99");
    let reach = &reads["reach"][0];
    assert_eq!(reach["op"], "read_1");
    assert_eq!(reach["pool"], "files");
    let members = reach["members"].as_u64().unwrap();
    let draws = reach["draws"].as_u64().unwrap();
    let distinct = reach["distinct"].as_u64().unwrap();
    assert_eq!(members, inodes.len() as u64);
    assert!(draws > 5_000, "{reach}");

    // The engine served the files metabench says it drew, no more, no fewer.
    let seen = read.len() as u64;
    assert_eq!(
        seen, distinct,
        "the engine served read_1 on {seen} distinct files, metabench drew {distinct}"
    );
    // As many as the distribution predicts for that many draws (the standard deviation
    // is well under 1 %), and far fewer than uniform draws would reach.
    let zipf = expected_distinct(KeyDist::ZIPFIAN, members, draws);
    let uniform = expected_distinct(KeyDist::Uniform, members, draws);
    eprintln!(
        "{draws} draws over {members} files: {seen} distinct read by the engine, {distinct} \
         drawn; zipfian predicts {zipf:.0}, uniform {uniform:.0}"
    );
    let off = (seen as f64 - zipf).abs() / zipf;
    assert!(
        off < 0.04,
        "{seen} distinct files read, zipfian predicts {zipf:.0} ({:.1} % off)",
        off * 100.0
    );
    assert!(
        (seen as f64) < 0.8 * uniform,
        "{seen} distinct files read: no fewer than uniform draws would reach ({uniform:.0})"
    );
    // From all over the tree: every tenth of its files holds a share of the reads.
    let tenth = inodes.len() / 10;
    for (k, part) in inodes.chunks(tenth).take(10).enumerate() {
        let (lo, hi) = (part[0], part[part.len() - 1]);
        let here = read.iter().filter(|&&i| (lo..=hi).contains(&i)).count();
        assert!(
            here as f64 > 0.3 * seen as f64 / 10.0,
            "tenth {k} of the tree (inodes {lo}..={hi}) had {here} of {seen} distinct reads"
        );
    }
}

#[test]
fn a_tree_that_is_not_there_is_refused_in_one_line() {
    let _p = phase(module_path!());
    let dir = temp_dir();
    let url = format!("sqlite3://{}", dir.path().join("v.db").display());
    let out = metabench(&["fill", "--meta", &url, "--files", "1k"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (asked, said) in [
        (
            ["--tree", "/nowhere", "--keys", "zipfian"],
            "error: --tree /nowhere: no such directory in the volume",
        ),
        (
            ["--tree", "/", "--keys", "zipfian:-1"],
            "bad key distribution `zipfian:-1`",
        ),
    ] {
        let mut args = vec!["ops", "--meta", &url, "--existing", "--ops", "getattr"];
        args.extend(asked);
        let out = metabench(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{asked:?}: {stderr}");
        assert!(stderr.contains(said), "{asked:?}: {stderr}");
    }
}

/// The listing of large directories: a module of its own, so that its six engines' fills
/// never run beside the idle-time measurement above.
mod pages {
    use super::filled_path;
    use crate::{metabench, phase};
    use metabench_testkit::{fresh_database, temp_dir, unique_name, Kind};

    /// `ops --ops listdir` of a directory of `thousands` thousand files (41: past a page on every
    /// engine that pages): the entries of one call and the round trips, pages as
    /// `pkg/meta`'s dir fetchers make them. Returns nothing; panics with the engine's name.
    fn check_listdir(label: &str, url: &str, thousands: u64, pages_rt: Option<(u64, u64)>) {
        let (files, big_files) = (format!("{}k", thousands + 4), format!("{thousands}k"));
        let out = metabench(&[
            "fill",
            "--meta",
            url,
            "--files",
            &files,
            "--big-dirs",
            "1",
            "--big-dir-files",
            &big_files,
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{label}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let big = format!("{}/big0", filled_path(&stdout));
        let dir = temp_dir();
        let json = dir.path().join("listdir.json");
        let out = metabench(&[
            "ops",
            "--meta",
            url,
            "--existing",
            "--tree",
            &big,
            "--ops",
            "listdir",
            "--iterations",
            "2",
            "--json",
            json.to_str().unwrap(),
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{label}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let entries = thousands * 1000 + 2;
        assert!(
            stdout.contains(&format!("listdir: {entries} entries a call, ")),
            "{label}: {stdout}"
        );
        let results: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let r = &results["results"][0];
        assert_eq!(r["op"], "listdir", "{label}");
        assert_eq!(r["entries_per_call"], entries as f64, "{label}: {r}");
        if let Some((pages, per_page)) = pages_rt {
            // the directory's attribute, its parent's (for `..`), then the pages
            assert_eq!(
                r["round_trips_per_op"].as_f64(),
                Some((2 + pages * per_page) as f64),
                "{label}: {pages} pages of {per_page} round trips"
            );
        }
    }

    #[test]
    fn listdir_reads_a_large_directory_page_by_page_on_every_engine() {
        let _p = phase(module_path!());
        std::thread::scope(|scope| {
            // SQL: a read-only transaction per page (its BEGIN statements, the page's ids,
            // its entries joined with their nodes, ROLLBACK); pages of 40960 entries, 4096
            // on SQLite. Redis reads the whole directory at once (HSCAN's cursor steps
            // depend on the server's table): its count is not fixed here.
            for (kind, pages_rt) in [
                (Kind::Sqlite, Some((11, 4))),
                (Kind::Postgres, Some((2, 4))),
                (Kind::Mysql, Some((2, 5))),
                (Kind::Redis, None),
            ] {
                scope.spawn(move || {
                    let db = fresh_database(kind);
                    check_listdir(kind.name(), db.url(), 41, pages_rt);
                });
            }
            // TKV: pages of 4096, each a scan then one read of the page's attributes (etcd
            // splits that read into its 128-operation transactions). On etcd a directory of
            // 100,000: its scan's reply is over gRPC's default 4 MiB, which JuiceFS's Go
            // client takes.
            for (var, big, pages_rt) in [
                ("METABENCH_TIKV_URL", 41, Some((11, 3))),
                ("METABENCH_ETCD_URL", 100, None),
            ] {
                scope.spawn(move || {
                    let base =
                        std::env::var(var).unwrap_or_else(|_| panic!("{var}: run scripts/test.sh"));
                    let url = format!("{}/{}", base.trim_end_matches('/'), unique_name("lsdir"));
                    check_listdir(var, &url, big, pages_rt);
                    let uuid = metabench_testkit::juicefs_dump_with(&url, &["--fast"])["Setting"]
                        ["UUID"]
                        .as_str()
                        .unwrap()
                        .to_owned();
                    let out = metabench_testkit::juicefs(&["destroy", "--yes", &url, &uuid]);
                    assert!(out.status.success(), "{var}: destroy");
                });
            }
        });
    }
}
