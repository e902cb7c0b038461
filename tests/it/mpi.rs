//! `mpirun -np N metabench sweep …` on this machine (`--oversubscribe`): the ranks'
//! histograms merge exactly, every level's clients are spread over the ranks, one volume
//! is shared and left clean, and a stop — Ctrl-C to `mpirun`, or a rank killed — ends
//! every rank without a hang, with the results on disk.

use metabench_report::histogram::decode;
use metabench_report::{Latency, SweepResults};
use metabench_testkit::RedisServer;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The sweeps of this file run one at a time: each runs several processes on two cores.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// `mpirun -np N` of a shell that runs metabench with `args`, records its PID in
/// `dir/pid.RANK` and its exit code in `dir/rc.RANK`, and passes on the signals `mpirun`
/// sends its ranks (so metabench sees them as it would as the rank itself).
fn mpirun(np: u32, dir: &Path, args: &[&str]) -> Command {
    mpirun_apps(&[(np, "", args)], dir, &[])
}

/// [`mpirun`] for a job the test stops: after a stop, Open MPI's SIGTERM and SIGKILL
/// follow 1 s apart by default, too soon for rank 0's cleanup on two cores shared with
/// the rest of the suite; 10 s, as the README advises users (`mpirun` then waits out
/// both delays before it exits).
fn mpirun_to_stop(np: u32, dir: &Path, args: &[&str]) -> Command {
    mpirun_apps(
        &[(np, "", args)],
        dir,
        &["--mca", "odls_base_sigkill_timeout", "10"],
    )
}

/// `mpirun` options for a job metabench refuses: after a rank's non-zero exit Open MPI
/// signals the others, SIGKILL 1 s after SIGCONT by default, which on a loaded machine can
/// come before a rank that left the job cleanly has exited; `mpirun` itself waits out
/// both delays.
const REFUSED: &[&str] = &["--mca", "odls_base_sigkill_timeout", "3"];

/// `mpirun` of several apps (`-np N … : -np M …`), each rank wrapped as in [`mpirun`]
/// after its own shell prefix (e.g. `unset META_PASSWORD;`), with `options` for `mpirun`.
fn mpirun_apps(apps: &[(u32, &str, &[&str])], dir: &Path, options: &[&str]) -> Command {
    let mut c = Command::new("mpirun");
    for var in ["METABENCH_META", "META_PASSWORD", "REDIS_PASSWORD"] {
        c.env_remove(var);
    }
    let rank = format!("{}/{{}}.$OMPI_COMM_WORLD_RANK", dir.display());
    let script = format!(
        "\"$0\" \"$@\" & c=$!; echo $c > {pid}; \
         for s in INT TERM CONT; do trap \"kill -$s $c\" $s; done; \
         while kill -0 $c 2>/dev/null; do wait $c; rc=$?; done; echo $rc > {rc}; exit $rc",
        pid = rank.replace("{}", "pid"),
        rc = rank.replace("{}", "rc"),
    );
    // Open MPI refuses to run as root unless told twice (CI runs as root).
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .arg("--oversubscribe")
        .args(options)
        .stdin(Stdio::null());
    for (i, (np, prefix, args)) in apps.iter().enumerate() {
        if i > 0 {
            c.arg(":");
        }
        c.args([
            "-np",
            &np.to_string(),
            "sh",
            "-c",
            &format!("{prefix}{script}"),
        ])
        .arg(env!("CARGO_BIN_EXE_metabench"))
        .args(*args);
    }
    c
}

/// `log`, opened for appending (stdout and stderr share it).
fn log_file(log: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap()
}

/// Waits for `child` at most `limit`; kills it and fails when it takes longer.
fn wait_within(mut child: Child, limit: Duration, log: &Path) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!(
                "mpirun still ran after {limit:?}:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until `log` shows a finished level.
fn wait_for_a_level(log: &Path) {
    let start = Instant::now();
    while !std::fs::read_to_string(log)
        .unwrap_or_default()
        .contains("ops/s")
    {
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "no level finished:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn rank_file(dir: &Path, what: &str, rank: u32) -> String {
    std::fs::read_to_string(dir.join(format!("{what}.{rank}")))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// Every level's clients add up over its ranks, and every figure of the level is the
/// ranks' figures merged exactly: histograms added (count, min, max, percentiles),
/// errors and round trips summed.
fn assert_merged_exactly(run: &SweepResults, ranks: u32) {
    let mpi = run.mpi.as_ref().expect("an MPI run says so");
    assert_eq!((mpi.ranks, mpi.hosts.len()), (ranks, ranks as usize));
    // Each rank's memory, unless the job ended before rank 0 heard from every rank.
    assert!(
        [0, ranks as usize].contains(&mpi.peak_rss_bytes.len()),
        "{mpi:?}"
    );
    assert!(
        mpi.clock_skew_ms >= 0.0 && mpi.clock_skew_ms < 1000.0,
        "{mpi:?}"
    );
    assert!(!run.levels.is_empty());
    for level in &run.levels {
        assert_eq!(level.ranks.len(), ranks as usize, "level {}", level.clients);
        assert_eq!(
            level.ranks.iter().map(|r| r.clients).sum::<u32>(),
            level.clients
        );
        let (least, most) = (
            level.ranks.iter().map(|r| r.clients).min().unwrap(),
            level.ranks.iter().map(|r| r.clients).max().unwrap(),
        );
        assert!(most - least <= 1, "uneven spread at {}", level.clients);
        // Client-bound when any rank was, or when ranks sharing a host used it up.
        let reason = level.client.reason.as_deref().unwrap_or_default();
        assert_eq!(
            level.client.client_bound,
            level.ranks.iter().any(|r| r.client.client_bound) || reason.contains("together used"),
            "{reason}"
        );
        assert!(!level.ops.is_empty());
        for op in &level.ops {
            let parts: Vec<_> = level
                .ranks
                .iter()
                .flat_map(|r| &r.ops)
                .filter(|o| o.op == op.op && o.phase == op.phase)
                .collect();
            let busy = level.ranks.iter().filter(|r| r.clients > 0).count();
            assert_eq!(parts.len(), busy, "{} at {}", op.op, level.clients);
            let mut sum = metabench_report::histogram::new_latency_histogram();
            for p in &parts {
                sum.add(decode(p.latency.histogram.as_deref().unwrap()).unwrap())
                    .unwrap();
            }
            let merged = decode(op.latency.histogram.as_deref().unwrap()).unwrap();
            assert_eq!(merged, sum, "{} at {}", op.op, level.clients);
            // The same figures (the encodings may differ in how far each grew).
            let (mine, theirs) = (&op.latency, Latency::of(&sum));
            let figures = |l: &Latency| {
                [
                    l.p50_us,
                    l.p90_us,
                    l.p99_us,
                    l.p999_us,
                    l.max_us,
                    l.count as f64,
                ]
            };
            assert_eq!(
                figures(mine),
                figures(&theirs),
                "{} at {}",
                op.op,
                level.clients
            );
            assert!((mine.mean_us - theirs.mean_us).abs() < 1e-6 * theirs.mean_us);
            assert_eq!(
                op.latency.count,
                parts.iter().map(|p| p.latency.count).sum::<u64>()
            );
            assert_eq!(
                op.latency.max_us,
                parts.iter().map(|p| p.latency.max_us).fold(0.0, f64::max)
            );
            let calls: u64 = parts.iter().map(|p| p.latency.count).sum();
            let trips: f64 = parts
                .iter()
                .map(|p| p.round_trips_per_op * p.latency.count as f64)
                .sum();
            assert!(
                (op.round_trips_per_op - trips / calls as f64).abs() < 1e-9,
                "{} round trips",
                op.op
            );
            assert_eq!(
                op.intervals.iter().map(|i| i.count).sum::<u64>(),
                op.latency.count
            );
            // Each rank's figures are over the level's window: their rates add up.
            let rates: f64 = parts.iter().map(|p| p.ops_per_s).sum();
            assert!(
                (rates - op.ops_per_s).abs() <= 1e-6 * op.ops_per_s,
                "{} at {}: ranks {rates} vs level {}",
                op.op,
                level.clients,
                op.ops_per_s
            );
        }
    }
}

#[test]
fn four_ranks_on_memkv_merge_their_histograms_exactly() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("mpi.json");
    let out = mpirun(
        4,
        dir.path(),
        &[
            "sweep",
            "--meta",
            "memkv://mpi",
            "--conc",
            "1,3,8",
            "--ops",
            "create,getattr",
            "--warmup",
            "100ms",
            "--duration",
            "1s",
            "--json",
        ],
    )
    .arg(&json)
    .output()
    .unwrap();
    let text = metabench_testkit::output_text(&out);
    assert!(out.status.success(), "{text}");
    for rank in 0..4 {
        assert_eq!(rank_file(dir.path(), "rc", rank), "0", "{text}");
    }
    // Rank 0 alone prints.
    assert_eq!(text.matches("metabench sweep on").count(), 1, "{text}");
    assert!(text.contains("over 4 MPI ranks"), "{text}");
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        run.levels.iter().map(|l| l.clients).collect::<Vec<_>>(),
        [1, 3, 8]
    );
    assert_merged_exactly(&run, 4);
    // At one client, three ranks had none and measured nothing.
    let first = &run.levels[0];
    assert_eq!(first.ranks.iter().filter(|r| r.clients == 0).count(), 3);
    assert!(first
        .ranks
        .iter()
        .filter(|r| r.clients == 0)
        .all(|r| r.ops.is_empty()));
    // `report`, `compare` and `gate` read it as any sweep.
    let report = crate::metabench(&["report", json.to_str().unwrap()]);
    assert!(
        report.status.success(),
        "{}",
        metabench_testkit::output_text(&report)
    );
    let path = json.to_str().unwrap();
    let gate = crate::metabench(&["gate", "--baseline", path, "--current", path]);
    assert!(
        gate.status.success(),
        "{}",
        metabench_testkit::output_text(&gate)
    );
}

#[test]
fn four_ranks_on_redis_share_one_volume_and_leave_it_clean() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let redis = RedisServer::start();
    let url = redis.url(1);
    let dir = tempfile::tempdir().unwrap();
    metabench_testkit::juicefs_format(&url, "mpivol", &dir.path().join("bucket"));
    let json = dir.path().join("mpi.json");
    let out = mpirun(
        4,
        dir.path(),
        &[
            "sweep",
            "--meta",
            &url,
            "--existing",
            "--conc",
            "2,5",
            "--ops",
            "mkdir,getattr",
            "--warmup",
            "100ms",
            "--duration",
            "1s",
            "--json",
        ],
    )
    .arg(&json)
    .output()
    .unwrap();
    let text = metabench_testkit::output_text(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        !text.contains("test-pw") && !text.contains(redis.password()),
        "a password was printed"
    );
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_merged_exactly(&run, 4);
    // Every rank sent JuiceFS's round trips: getattr is one GET, as from one process.
    for level in &run.levels {
        let getattr = level.ops.iter().find(|o| o.op == "getattr").unwrap();
        assert_eq!(getattr.round_trips_per_op, 1.0);
        assert!(getattr.errors.is_empty(), "{:?}", getattr.errors);
    }
    // One volume, shared: the namespace and every rank's session are gone.
    crate::assert_left_clean(&url);
}

#[test]
fn ctrl_c_to_mpirun_stops_every_rank_cleanly() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let redis = RedisServer::start();
    let url = redis.url(1);
    let dir = tempfile::tempdir().unwrap();
    metabench_testkit::juicefs_format(&url, "mpiint", &dir.path().join("bucket"));
    let (json, log) = (dir.path().join("mpi.json"), dir.path().join("log.txt"));
    let child = mpirun_to_stop(
        3,
        dir.path(),
        &[
            "sweep",
            "--meta",
            &url,
            "--existing",
            "--conc",
            "1..64",
            "--ops",
            "create",
            "--warmup",
            "100ms",
            "--duration",
            "2s",
            "--json",
        ],
    )
    .arg(&json)
    .stdout(log_file(&log))
    .stderr(log_file(&log))
    .spawn()
    .unwrap();
    let mpirun_pid = child.id().to_string();
    wait_for_a_level(&log);
    Command::new("kill")
        .args(["-INT", &mpirun_pid])
        .status()
        .unwrap();
    // Open MPI's mpirun exits 1 after its own Ctrl-C whatever its ranks return, and ends
    // the ranks still running once one has exited; rank 0 stopped as on Ctrl-C (130)
    // after writing the results and cleaning up.
    let status = wait_within(child, Duration::from_secs(60), &log);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!status.success(), "{text}");
    assert_eq!(rank_file(dir.path(), "rc", 0), "130", "{text}");
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(run.interrupted);
    assert!(
        !run.levels.is_empty() && run.levels.len() < 7,
        "{} levels",
        run.levels.len()
    );
    assert_merged_exactly(&run, 3);
    crate::assert_left_clean(&url);
}

#[test]
fn a_killed_rank_ends_the_job_with_the_levels_on_disk() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let redis = RedisServer::start();
    let url = redis.url(1);
    let dir = tempfile::tempdir().unwrap();
    let (json, log) = (dir.path().join("mpi.json"), dir.path().join("log.txt"));
    let child = mpirun_to_stop(
        3,
        dir.path(),
        &[
            "sweep",
            "--meta",
            &url,
            "--conc",
            "1..64",
            "--ops",
            "create",
            "--warmup",
            "100ms",
            "--duration",
            "2s",
            "--json",
        ],
    )
    .arg(&json)
    .stdout(log_file(&log))
    .stderr(log_file(&log))
    .spawn()
    .unwrap();
    wait_for_a_level(&log);
    Command::new("kill")
        .args(["-KILL", &rank_file(dir.path(), "pid", 2)])
        .status()
        .unwrap();
    let status = wait_within(child, Duration::from_secs(60), &log);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!status.success(), "{text}");
    // The job ended with the levels rank 0 had merged written, one of two ways, whichever
    // comes first: rank 0 gave up on the dead rank and ended the job itself (MPI_Abort),
    // or `mpirun` saw the dead rank's exit first and ended the job, and rank 0, told to
    // stop, ended as after a Ctrl-C.
    let aborted_by_rank0 = text.contains("MPI_ABORT was invoked on rank 0");
    let ended_by_mpirun = text.contains("process returned\na non-zero exit code")
        && text.contains("metabench: interrupted");
    assert!(aborted_by_rank0 || ended_by_mpirun, "{text}");
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(!run.levels.is_empty(), "{text}");
    assert!(run.interrupted);
    assert_merged_exactly(&run, 3);
    // Rank 0 gave up on the dead rank and removed the volume it formatted.
    assert_eq!(
        redis.command(&["DBSIZE"]),
        metabench_testkit::Resp::Integer(0),
        "{text}"
    );
}

/// A job of two ranks was refused: `mpirun` failed, one error line saying `says`, and
/// both ranks exited with `code`. Returns the job's output.
fn assert_refused(out: &std::process::Output, dir: &Path, code: i32, says: &[&str]) -> String {
    let text = metabench_testkit::output_text(out);
    assert!(!out.status.success(), "{text}");
    assert!(says.iter().all(|s| text.contains(s)), "{says:?}:\n{text}");
    assert_eq!(text.matches("metabench: error:").count(), 1, "{text}");
    for rank in 0..2 {
        assert_eq!(rank_file(dir, "rc", rank), code.to_string(), "{text}");
    }
    text
}

#[test]
fn ranks_that_cannot_run_the_same_sweep_are_refused_before_anything_is_written() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let redis = RedisServer::start();
    let url = redis.url(0);
    let dir = tempfile::tempdir().unwrap();
    metabench_testkit::juicefs_format(&url, "mpivol", &dir.path().join("bucket"));
    let keys_before = redis.command(&["DBSIZE"]);
    redis.reset_stats();
    let sweep = |ops: &'static str| -> Vec<&str> {
        let mut args = vec!["sweep", "--meta", &url, "--existing", "--conc", "2"];
        args.extend(["--ops", ops, "--warmup", "100ms", "--duration", "500ms"]);
        args
    };
    let (create, getattr) = (sweep("create"), sweep("getattr"));
    // Rank 1 was started with other operations than rank 0.
    let out = mpirun_apps(&[(1, "", &create), (1, "", &getattr)], dir.path(), REFUSED)
        .output()
        .unwrap();
    let text = assert_refused(
        &out,
        dir.path(),
        2,
        &["rank 1 on", "would run another sweep"],
    );
    // Nothing was written: no key made, no write command sent.
    assert_eq!(redis.command(&["DBSIZE"]), keys_before, "{text}");
    let writes: Vec<_> = redis
        .commandstats()
        .into_keys()
        .filter(|c| {
            !c.starts_with("config")
                && ["set", "incr", "del", "add", "push", "exec", "eval"]
                    .iter()
                    .any(|w| c.contains(w))
        })
        .collect();
    assert!(writes.is_empty(), "{writes:?}\n{text}");
    assert!(!text.contains(redis.password()), "a password was printed");

    // Rank 1 was not given the password (`mpirun -x META_PASSWORD` forgotten): rank 0
    // had made the namespace, and removes it.
    let bare = format!("redis://127.0.0.1:{}/0", redis.port());
    let sweep = ["sweep", "--meta", &bare, "--existing", "--conc", "2"];
    let out = mpirun_apps(
        &[(1, "", &sweep), (1, "unset META_PASSWORD; ", &sweep)],
        dir.path(),
        REFUSED,
    )
    .env("META_PASSWORD", redis.password())
    .output()
    .unwrap();
    let text = assert_refused(&out, dir.path(), 1, &["rank 1 on", "could not start"]);
    assert!(!text.contains(redis.password()), "a password was printed");
    crate::assert_left_clean(&url);

    // With memkv every rank has its own store: no directory all ranks can share.
    let out = mpirun_apps(
        &[(
            2,
            "",
            &[
                "sweep",
                "--meta",
                "memkv://x",
                "--shared-dir",
                "--conc",
                "2",
            ],
        )],
        dir.path(),
        REFUSED,
    )
    .output()
    .unwrap();
    assert_refused(&out, dir.path(), 2, &["--shared-dir under MPI"]);
}
