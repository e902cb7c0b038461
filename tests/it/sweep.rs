//! `metabench sweep` end to end: short real sweeps on SQLite and Redis whose results file
//! reads back under the strict results schema, and a Ctrl-C in the middle of a sweep.

use crate::metabench_cmd as metabench;
use metabench_report::SweepResults;
use metabench_testkit::RedisServer;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The sweeps of this file run one at a time: they time windows and read metabench's
/// CPU share, which tests running beside them on two cores would distort.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn short_sweep(meta: Option<&str>, dir: &Path) -> SweepResults {
    let json = dir.join("sweep.json");
    let csv = dir.join("sweep.csv");
    let hdr = dir.join("hdr");
    let mut cmd = metabench();
    cmd.args([
        "sweep",
        "--conc",
        "1,2,4",
        "--ops",
        "create,getattr",
        "--warmup",
        "200ms",
    ])
    .args(["--duration", "1s", "--json"])
    .arg(&json)
    .arg("--csv")
    .arg(&csv)
    .arg("--hdr-dir")
    .arg(&hdr);
    if let Some(url) = meta {
        cmd.args(["--meta", url]);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("knee (≥95% of peak)"), "{stdout}");
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(run.plan.levels, vec![1, 2, 4]);
    assert_eq!(run.levels.len(), 3);
    for level in &run.levels {
        assert_eq!(level.ops.len(), 2);
        for op in &level.ops {
            assert!(op.latency.count > 0 && op.ops_per_s > 0.0, "{op:?}");
            assert!(
                op.latency.p50_us > 0.0
                    && op.latency.p99_us >= op.latency.p50_us
                    && op.latency.max_us >= op.latency.p99_us,
                "{op:?}"
            );
            let h = metabench_report::histogram::decode(op.latency.histogram.as_ref().unwrap())
                .unwrap();
            assert_eq!(h.len(), op.latency.count);
            assert!(!op.intervals.is_empty());
            assert_eq!(
                op.intervals.iter().map(|i| i.count).sum::<u64>(),
                op.latency.count
            );
        }
        assert!(level.client.cpu_s > 0.0 && level.client.cpu_us_per_op > 0.0);
        let getattr = level.ops.iter().find(|o| o.op == "getattr").unwrap();
        assert_eq!(getattr.round_trips_per_op, 1.0);
    }
    assert!(run.saturation.contains_key("create") && run.saturation.contains_key("getattr"));
    // The floor: the engine's null round trip through the same client path.
    let floor = run.floor.as_ref().expect("a floor");
    assert!(floor.count > 0 && floor.p50_us > 0.0 && floor.p99_us >= floor.p50_us);
    assert!(
        stdout.contains("floor (the engine's null round trip"),
        "{stdout}"
    );
    assert!(!run.header.engine.url.contains(metabench_testkit::PASSWORD));
    assert!(!run.header.host.os.is_empty() && run.header.host.cores > 0);
    // A client thread per core, less one for a server on this machine (the test Redis on
    // loopback), none for the embedded SQLite: said on stderr and stored.
    let cores = std::thread::available_parallelism().unwrap().get();
    let threads = if meta.is_some() && cores > 1 {
        cores - 1
    } else {
        cores
    };
    assert_eq!(run.header.host.client_threads, threads);
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains(&format!("client threads: {threads} (")),
        "{said}"
    );
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().count(), 1 + 3 * 2);
    // The last columns: the share of the clients' cores SQLite's statements took, 0 for
    // an engine reached over the network; then the share of this host's CPU time its
    // hypervisor took, which Linux counts (0 on bare metal).
    assert!(rows
        .lines()
        .next()
        .unwrap()
        .ends_with(",engine_call_share,host_steal"));
    for row in rows.lines().skip(1) {
        let mut last = row.rsplit(',');
        let steal: f64 = last.next().unwrap().parse().unwrap();
        assert!((0.0..=1.0).contains(&steal), "{row}");
        let share: f64 = last.next().unwrap().parse().unwrap();
        assert_eq!(share > 0.0, meta.is_none(), "{row}");
    }
    for level in &run.levels {
        assert!(level.client.host_steal.is_some(), "{:?}", level.client);
    }
    for c in [1, 2, 4] {
        assert!(hdr.join(format!("c{c}.hlog")).is_file());
    }
    run
}

#[test]
fn short_sweep_on_the_embedded_sqlite() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let run = short_sweep(None, dir.path());
    assert_eq!(run.header.engine.kind, "sqlite");
    // SQLite's statements run on the client threads: their share of the threads' cores
    // is the engine's, said apart, and judged as the engine's.
    for level in &run.levels {
        let share = level.client.engine_utilisation;
        assert!(share > 0.0 && share <= 1.05, "{:?}", level.client);
        assert!(level.client.cpu_utilisation > 0.0, "{:?}", level.client);
        let engine = level.engine.as_ref().expect("an engine check");
        assert_eq!(engine.counters.get("in_process_call_share"), Some(&share));
        // Its lock waits, counted by metabench (SQLite keeps no such counter).
        assert!(engine.counters.contains_key("busy_wait_s"), "{engine:?}");
        assert!(engine.counters.contains_key("busy_waits"), "{engine:?}");
    }
    // In process: no call waits on a socket, so no wake-up to note.
    assert!(
        !has_sleep_note(&run),
        "{:?}",
        run.header.engine.fidelity_notes
    );
}

/// Whether the results carry the note that sleeping client threads pay a wake-up per
/// round trip.
fn has_sleep_note(run: &SweepResults) -> bool {
    run.header
        .engine
        .fidelity_notes
        .iter()
        .any(|n| n.starts_with("Client threads sleep while a call waits"))
}

/// A getattr workload, 200 ms of warm-up and 1 s windows: the Redis sweeps' arguments.
const GETATTR_1S_WINDOWS: [&str; 6] = ["--ops", "getattr", "--warmup", "200ms", "--duration", "1s"];

/// What a sweep printed: its results on stdout, its progress on stderr.
struct Printed {
    out: String,
    said: String,
}

/// `metabench sweep ARGS --json DIR/NAME.json`, which must succeed: its results and what
/// it printed.
fn sweep_json(args: &[&str], dir: &Path, name: &str) -> (SweepResults, Printed) {
    sweep_json_by(metabench(), args, dir, name)
}

/// [`sweep_json`], run by `cmd` (a metabench command set up by the caller).
fn sweep_json_by(
    mut cmd: Command,
    args: &[&str],
    dir: &Path,
    name: &str,
) -> (SweepResults, Printed) {
    let json = dir.join(format!("{name}.json"));
    let o = cmd
        .arg("sweep")
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{said}");
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    (run, Printed { out, said })
}

/// One level of `create,unlink` on a fresh SQLite volume under `profile`: its results and
/// what it printed on stdout.
fn unlink_level(profile: &str, dir: &Path) -> (SweepResults, String) {
    // -v: the background work's table is part of the full report.
    let args = [
        "-v",
        "--profile",
        profile,
        "--conc",
        "2",
        "--ops",
        "create,unlink",
    ];
    let window = ["--warmup", "200ms", "--duration", "1500ms"];
    let (run, printed) = sweep_json(&[&args[..], &window].concat(), dir, profile);
    (run, printed.out)
}

/// Under the mount profile the clients' background work runs in the window and is
/// reported per level, apart from the calls: the dir-stat and counter flushes, and the
/// data of every unlinked file freed after its unlink. Under gobench it runs after the
/// window and no level reports any. Both profiles are named in the results.
#[test]
fn background_work_runs_in_the_window_under_the_mount_profile_only() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let (mount, printed) = unlink_level("mount", tmp.path());
    assert!(
        printed.contains("background work in the windows"),
        "{printed}"
    );
    assert_eq!(mount.header.engine.client_settings["profile"], "mount");
    assert_eq!(
        mount.header.engine.client_settings["skip_dir_mtime"],
        "100ms"
    );
    let level = &mount.levels[0];
    let b = level
        .background
        .as_ref()
        .expect("background work in the window");
    let unlinks = level.ops.iter().find(|o| o.op == "unlink").unwrap();
    // Each unlinked file's data is freed at once (one pass each), plus the flushes; only
    // each client's last unlink may finish, and be freed, after the window's end.
    assert!(b.runs + 2 >= unlinks.latency.count, "{b:?} for {unlinks:?}");
    assert!(
        b.round_trips >= b.runs && b.busy_s > 0.0 && b.errors == 0,
        "{b:?}"
    );
    // Two phases of 1.5 s each; a real window runs on to its last in-flight answer.
    assert!(b.window_s >= 2.99, "{b:?}");
    let (gobench, printed) = unlink_level("gobench", tmp.path());
    assert!(
        !printed.contains("background work in the windows"),
        "{printed}"
    );
    assert_eq!(gobench.header.engine.client_settings["profile"], "gobench");
    assert!(gobench.levels[0].background.is_none());
}

/// On memkv every level is client-bound by construction (no I/O: the calls never wait).
/// With more clients than client threads, the self-check must still see the CPU the
/// clients burn and flag the level, rather than starve with them.
#[test]
fn memkv_levels_beyond_the_client_threads_are_flagged_client_bound() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let (run, _) = sweep_json(
        &[
            "--meta",
            "memkv://selfcheck",
            "--conc",
            "8",
            "--ops",
            "getattr",
            "--warmup",
            "200ms",
            "--duration",
            "2s",
        ],
        dir.path(),
        "memkv",
    );
    let level = &run.levels[0];
    let window = 2.0 * run.header.host.cores as f64;
    assert!(
        level.client.cpu_s >= 0.5 * window,
        "CPU {} s of a {window} core-second window",
        level.client.cpu_s
    );
    assert!(level.client.client_bound, "{:?}", level.client);
    assert!(level.client.cpu_us_per_op > 0.0, "{:?}", level.client);
    // memkv's time is the client's: nothing of it is left out as an engine's.
    assert_eq!(level.client.engine_utilisation, 0.0, "{:?}", level.client);
    assert!(level.engine.is_none(), "{:?}", level.engine);
    assert_eq!(run.floor.as_ref().unwrap().request, "get of an absent key");
}

/// One memkv client holds one client thread, whatever the other threads could add: with
/// two client threads and one client, the level is judged against the one core the
/// client can use, and flagged, whether the threads sleep or busy-poll (an idle thread
/// busy-polling alone is not counted as the clients' work).
#[test]
fn a_lone_memkv_client_is_flagged_client_bound_beside_an_idle_client_thread() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    for idle in [None, Some("--busy-poll")] {
        let mut args = vec![
            "--meta",
            "memkv://lone",
            "--conc",
            "1",
            "--ops",
            "getattr",
            "--client-threads",
            "2",
            "--warmup",
            "200ms",
            "--duration",
            "2s",
        ];
        args.extend(idle);
        let (run, _) = sweep_json(&args, dir.path(), &format!("lone-{}", idle.is_some()));
        assert_eq!(run.header.host.client_threads, 2);
        let client = &run.levels[0].client;
        assert!(client.client_bound, "{idle:?}: {client:?}");
        if client.lag_p99_us <= metabench_load::sweep::CLIENT_LAG_LIMIT.as_micros() as f64 {
            // Not starved by other processes: flagged by its share of the one core.
            let reason = client.reason.as_deref().unwrap_or_default();
            assert!(reason.contains("(1"), "{idle:?}: {reason}");
        }
    }
}

/// `--warmup 0` (or `0s`) is no warm-up, not an error: the first window starts at once.
#[test]
fn a_sweep_may_have_no_warm_up() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    for warmup in ["0", "0s"] {
        let (run, _) = sweep_json(
            &[
                "--meta",
                "memkv://nowarm",
                "--conc",
                "1",
                "--ops",
                "getattr",
                "--warmup",
                warmup,
                "--duration",
                "500ms",
            ],
            dir.path(),
            &format!("nowarm-{warmup}"),
        );
        assert_eq!(run.plan.warmup_s, 0.0);
        assert!(
            run.levels[0].ops[0].latency.count > 0,
            "{:?}",
            run.levels[0]
        );
    }
}

#[test]
fn short_sweep_on_redis_leaves_the_database_empty() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start();
    let url = redis.url(3);
    let run = short_sweep(Some(&url), dir.path());
    assert_eq!(run.header.engine.kind, "redis");
    assert!(
        has_sleep_note(&run),
        "{:?}",
        run.header.engine.fidelity_notes
    );
    // The floor is measured sleeping, then polling.
    let floor = run.floor.as_ref().expect("a floor");
    assert!(floor.polling_p50_us.is_some_and(|p| p > 0.0), "{floor:?}");
    assert!(
        run.header.engine.settings.contains_key("appendfsync"),
        "{:?}",
        run.header.engine.settings
    );
    // Create is WATCH, GET, HGET, MULTI/EXEC, UNWATCH on Redis.
    let create = run.levels[0].ops.iter().find(|o| o.op == "create").unwrap();
    assert_eq!(create.round_trips_per_op, 5.0);
    // metabench formatted the empty DB 3 itself, so it removed the whole volume again.
    match redis.command(&["INFO", "keyspace"]) {
        metabench_testkit::Resp::Bulk(Some(b)) => {
            let text = String::from_utf8_lossy(&b);
            assert!(!text.contains("db3:"), "keys left in db 3: {text}");
        }
        other => panic!("INFO keyspace answered {other:?}"),
    }
}

/// A Redis on this machine bound to one CPU keeps it: the client threads are bound to
/// this process's other CPUs, one each, said and stored with the server's CPU. Bound to
/// all of them, nothing is left apart: the kernel places the threads, and the run says
/// how to keep them off the server. On one CPU there is no other to go to, and a run
/// confined to the server's CPU says it shares it.
#[test]
fn client_threads_keep_off_the_cpus_a_local_redis_is_bound_to() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let ours = metabench_load::placement::this_thread_cpus();
    let redis = RedisServer::start();
    let url = redis.url(4);
    let args = ["--meta", &url, "--conc", "2", "--ops", "getattr"];
    let window = ["--warmup", "0s", "--duration", "300ms"];
    redis.bind_to_cpus(&ours[..1]);
    let (run, printed) = sweep_json(&[&args[..], &window].concat(), dir.path(), "bound");
    let host = &run.header.host;
    let server = format!("redis-server (pid {})", redis.pid());
    if ours.len() > 1 {
        let others = &ours[1..];
        assert_eq!(host.client_cpus, others, "{}", printed.said);
        assert_eq!(host.engine_cpus, [ours[0]]);
        assert_eq!(host.client_threads, others.len());
        let said = format!(
            "client threads: {} on CPU {} (one per CPU the engine's server may not use: \
             {server} is bound to CPU {})",
            others.len(),
            metabench_report::cpu_list(others),
            ours[0]
        );
        assert!(printed.said.contains(&said), "{}", printed.said);
        // With the results: how that differs from a client the kernel places beside the
        // server, and not the note for a server that shares the client's CPUs.
        let notes = &run.header.engine.fidelity_notes;
        let apart = format!(
            "The engine's server, {server}, is bound to CPU {}, and the client threads run on other CPUs",
            ours[0]
        );
        assert!(notes.iter().any(|n| n.starts_with(&apart)), "{notes:?}");
        assert!(
            !notes
                .iter()
                .any(|n| n.contains("may use every CPU the client threads may")),
            "{notes:?}"
        );
    } else {
        assert!(host.client_cpus.is_empty() && host.engine_cpus.is_empty());
    }
    assert_eq!(run.levels[0].ops[0].round_trips_per_op, 1.0);
    // metabench confined to the bound server's CPU as well: it cannot keep apart, and
    // says the client threads share the server's CPU (not that the server is unbound).
    if metabench_load::placement::online_cpus().len() > 1 {
        confined_to_the_servers_cpu(&server, ours[0], &args, &window, dir.path());
    }
    redis.bind_to_cpus(&ours);
    let (run, printed) = sweep_json(&[&args[..], &window].concat(), dir.path(), "unbound");
    assert!(run.header.host.client_cpus.is_empty());
    assert!(run.header.host.engine_cpus.is_empty());
    if ours.len() > 1 {
        let hint = format!("{server} is not bound to CPUs of its own: bind it to some (taskset)");
        assert!(printed.said.contains(&hint), "{}", printed.said);
        // And with the results: the engine may have been charged for the client's work.
        let note = format!("The engine's server, {server}, runs on this machine");
        let notes = &run.header.engine.fidelity_notes;
        assert!(notes.iter().any(|n| n.starts_with(&note)), "{notes:?}");
    }
}

/// A sweep started on `cpu` alone (as under `taskset -c`), the CPU Redis is bound to.
/// `server` describes Redis as the run names it.
fn confined_to_the_servers_cpu(
    server: &str,
    cpu: usize,
    args: &[&str],
    window: &[&str],
    dir: &Path,
) {
    let mut confined = metabench();
    metabench_testkit::confine_to_cpus(&mut confined, &[cpu]);
    let (run, printed) = sweep_json_by(confined, &[args, window].concat(), dir, "confined");
    assert!(run.header.host.client_cpus.is_empty(), "{}", printed.said);
    assert_eq!(run.header.host.engine_cpus, [cpu]);
    let said = format!(
        "{server} is bound to CPU {}, and metabench may use no other: the client threads \
         share its CPUs",
        cpu
    );
    assert!(printed.said.contains(&said), "{}", printed.said);
    assert!(
        !printed.said.contains("is not bound to CPUs of its own"),
        "{}",
        printed.said
    );
    let notes = &run.header.engine.fidelity_notes;
    let confined = format!(
        "The engine's server, {server}, is bound to CPU {}, and metabench may use no other CPU",
        cpu
    );
    assert!(notes.iter().any(|n| n.starts_with(&confined)), "{notes:?}");
    assert!(
        !notes
            .iter()
            .any(|n| n.contains("may use every CPU the client threads may")),
        "{notes:?}"
    );
}

/// `--busy-poll`: the client thread polls instead of sleeping while its client waits for
/// Redis, so it uses its core whole; that is said and stored, and the self-check judges
/// how busy the client kept the thread, not its CPU share.
#[test]
fn busy_polling_client_threads_are_judged_by_how_busy_their_clients_keep_them() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start();
    let url = redis.url(4);
    let (run, Printed { out, said }) = sweep_json(
        &[
            &[
                // -v: the documented differences are part of the full report.
                "-v",
                "--meta",
                &url,
                "--busy-poll",
                "--client-threads",
                "1",
                "--conc",
                "1",
            ][..],
            &GETATTR_1S_WINDOWS,
        ]
        .concat(),
        dir.path(),
        "busy",
    );
    assert!(
        said.contains("client threads: 1 (--client-threads), busy-polling"),
        "{said}"
    );
    // Printed with the results as a difference from the client modelled, and stored.
    assert!(
        out.contains("  - Client threads busy-poll (--busy-poll)"),
        "{out}"
    );
    assert!(run.header.host.busy_poll);
    assert!(
        !has_sleep_note(&run),
        "{:?}",
        run.header.engine.fidelity_notes
    );
    // Its floor polled already: no second median.
    let floor = run.floor.as_ref().expect("a floor");
    assert_eq!(floor.polling_p50_us, None, "{floor:?}");
    assert!(run
        .header
        .engine
        .fidelity_notes
        .iter()
        .any(|n| n.contains("--busy-poll")));
    assert!(
        run.header.host.summary().contains("busy-polling"),
        "{}",
        run.header.host.summary()
    );
    let client = &run.levels[0].client;
    // The one client thread polled through the window: most of its core, whatever the
    // client did, unless other processes took the core from it (once, on a loaded host:
    // 44 %), which its lag then says; that share is not what judges it.
    assert!(
        client.cpu_utilisation >= 0.6
            || client.lag_p99_us > metabench_load::sweep::CLIENT_LAG_LIMIT.as_micros() as f64,
        "{client:?}"
    );
    assert!(
        client
            .reason
            .as_deref()
            .is_none_or(|r| !r.starts_with("metabench used")),
        "{client:?}"
    );
}

#[test]
fn ctrl_c_mid_sweep_writes_partial_results_and_cleans_up() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("vol.db");
    let o = Command::new(metabench_testkit::juicefs_bin())
        .args(["format", "--storage", "file", "--bucket"])
        .arg(dir.path().join("bucket"))
        .arg(format!("sqlite3://{}", db.display()))
        .arg("sweeptest")
        .output()
        .unwrap();
    assert!(o.status.success());
    let url = format!("sqlite3://{}", db.display());
    let json = dir.path().join("partial.json");
    let log = dir.path().join("stderr.txt");
    let child = metabench()
        .args([
            "sweep",
            "--meta",
            &url,
            "--existing",
            "--conc",
            "1,2,4,8,16",
            "--ops",
            "create",
        ])
        .args(["--warmup", "100ms", "--duration", "1s", "--json"])
        .arg(&json)
        .stderr(std::fs::File::create(&log).unwrap())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Let the first level finish (its line goes to stderr), then interrupt.
    crate::wait_for_log(&log, "ops/s");
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        std::fs::read_to_string(&log).unwrap()
    );
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(run.interrupted);
    assert!(
        !run.levels.is_empty() && run.levels.len() < 5,
        "{} levels",
        run.levels.len()
    );
    // Only the root (and the trash) remain: the namespace is gone.
    crate::assert_left_clean(&url);
}

/// Starts `metabench sweep` on `url` with `args`, its stderr in `log`.
fn spawn_sweep(url: &str, args: &[&str], json: &Path, log: &Path) -> std::process::Child {
    metabench()
        .args(["sweep", "--meta", url])
        .args(args)
        .arg("--json")
        .arg(json)
        .stderr(std::fs::File::create(log).unwrap())
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits until the sweep has reported a level whose progress line holds `line`, e.g.
/// `" 1 clients "` or `" clients at 1000/s "`, on stderr.
fn wait_for_level(log: &Path, line: &str) {
    let start = Instant::now();
    while !std::fs::read_to_string(log)
        .unwrap_or_default()
        .contains(line)
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "sweep never reported a level with '{line}': {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success(), "kill {sig} {pid}");
}

/// The level of `clients` clients and its getattr figures.
fn getattr_at(run: &SweepResults, clients: u32) -> &metabench_report::LevelOp {
    let level = run.levels.iter().find(|l| l.clients == clients).unwrap();
    level.ops.iter().find(|o| o.op == "getattr").unwrap()
}

/// Runs a sweep of getattr on a private Redis at `conc` levels with `extra` arguments,
/// freezes Redis (SIGSTOP) for `freeze` once the level with `after` on its progress line
/// is reported and `delay` has passed, and returns the results of the sweep (which must
/// exit 0).
fn sweep_through_a_freeze(
    extra: &[&str],
    after: &str,
    delay: Duration,
    freeze: Duration,
) -> SweepResults {
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (json, log) = (dir.path().join("out.json"), dir.path().join("stderr.txt"));
    let mut args = vec!["--ops", "getattr"];
    args.extend_from_slice(extra);
    let child = spawn_sweep(&redis.url(1), &args, &json, &log);
    wait_for_level(&log, after);
    std::thread::sleep(delay);
    signal(redis.pid(), "-STOP");
    std::thread::sleep(freeze);
    signal(redis.pid(), "-CONT");
    let out = child.wait_with_output().unwrap();
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

#[test]
fn a_frozen_engine_shows_in_the_tail_even_past_the_window() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    // Into the 2-client level's 1 s window (after its 500 ms warm-up), then a 3 s freeze:
    // the calls in flight outlast the window and must still be recorded.
    let run = sweep_through_a_freeze(
        &["--conc", "1,2", "--warmup", "500ms", "--duration", "1s"],
        " 1 clients ",
        Duration::from_millis(900),
        Duration::from_secs(3),
    );
    let frozen = getattr_at(&run, 2);
    assert!(
        frozen.latency.max_us >= 2.5e6,
        "the freeze is missing from the tail: max {} µs",
        frozen.latency.max_us
    );
    assert!(frozen.in_flight_at_end >= 1, "{frozen:?}");
    // Throughput divides by the real window, which the stalled calls stretched.
    assert!(frozen.window_s >= 2.0, "window {} s", frozen.window_s);
    assert!(
        (frozen.ops_per_s - frozen.latency.count as f64 / frozen.window_s).abs() < 1.0,
        "{frozen:?}"
    );
    assert_eq!(run.plan.op_timeout_s, 30.0);
    assert!(run.failure.is_none());
}

#[test]
fn a_call_past_the_op_timeout_counts_as_a_timeout_and_the_sweep_goes_on() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let run = sweep_through_a_freeze(
        &[
            "--conc",
            "1,2",
            "--warmup",
            "500ms",
            "--duration",
            "4s",
            "--op-timeout",
            "500ms",
        ],
        " 1 clients ",
        Duration::from_millis(1000),
        Duration::from_secs(2),
    );
    let frozen = getattr_at(&run, 2);
    let timeouts = frozen.errors.get("timeout").copied().unwrap_or(0);
    assert!(timeouts >= 2, "one timeout per client at least: {frozen:?}");
    assert!(
        frozen.failed_max_us >= 0.5e6 && frozen.latency.max_us < 0.5e6,
        "a timeout is kept with its elapsed time, apart from the answered calls: {frozen:?}"
    );
    // The clients went on with fresh sessions once the engine answered again.
    assert!(frozen.latency.count > 100, "{frozen:?}");
    assert_eq!(run.plan.op_timeout_s, 0.5);
    // And the namespace was removed: only the volume's own keys are left.
    assert!(run.failure.is_none());
}

/// Runs a sweep of getattr on a private Redis at 1, 2, 4 and 8 clients (1 s op timeout),
/// sends Redis `sig` 600 ms after the 1-client level is reported, and returns the sweep's
/// exit code, its stderr and its results. The engine stays as `sig` left it until the sweep
/// has exited (a stopped one is then resumed); a sweep still running 90 s later fails.
fn sweep_with_the_engine_failing(sig: &str) -> (Option<i32>, String, SweepResults) {
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (json, log) = (dir.path().join("out.json"), dir.path().join("stderr.txt"));
    let args = [
        &["--conc", "1,2,4,8"][..],
        &GETATTR_1S_WINDOWS,
        &["--op-timeout", "1s"],
    ]
    .concat();
    let mut child = spawn_sweep(&redis.url(1), &args, &json, &log);
    wait_for_level(&log, " 1 clients ");
    std::thread::sleep(Duration::from_millis(600));
    signal(redis.pid(), sig);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            if sig == "-STOP" {
                signal(redis.pid(), "-CONT");
            }
            panic!(
                "the sweep still runs 90 s after {sig}: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if sig == "-STOP" {
        signal(redis.pid(), "-CONT");
    }
    let stderr = std::fs::read_to_string(&log).unwrap();
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap())
        .unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (status.code(), stderr, run)
}

#[test]
fn a_killed_engine_leaves_the_measured_levels_on_disk_and_exits_3() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let (code, stderr, run) = sweep_with_the_engine_failing("-KILL");
    assert_eq!(code, Some(3), "{stderr}");
    assert_eq!(run.levels.len(), 2, "{stderr}");
    assert!(!run.levels[0].partial && getattr_at(&run, 1).latency.count > 0);
    assert!(run.levels[1].partial);
    let failure = run.failure.as_ref().expect("the failure is in the results");
    assert_eq!(
        (
            failure.engine.as_str(),
            failure.clients,
            failure.op.as_str()
        ),
        ("redis", 2, "getattr"),
        "{failure:?}"
    );
    assert!(failure.left_behind.is_some(), "{failure:?}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line: {stderr}"));
    assert!(
        line.contains("redis engine failed at the 2-client level, during getattr"),
        "{line}"
    );
    assert!(
        stderr.contains("left behind: the volume metabench-") && stderr.contains("juicefs destroy"),
        "{stderr}"
    );
    assert!(!stderr.contains(metabench_testkit::PASSWORD));
}

#[test]
fn an_engine_that_stays_frozen_ends_the_sweep_with_the_levels_on_disk_and_exits_3() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    // The engine never answers again while the sweep runs: the calls time out, no fresh
    // session opens, and the cleanup, which would wait on the engine for ever, is
    // skipped after its grace period, with the measured level written.
    let (code, stderr, run) = sweep_with_the_engine_failing("-STOP");
    assert_eq!(code, Some(3), "{stderr}");
    assert!(!run.levels[0].partial && getattr_at(&run, 1).latency.count > 0);
    let failure = run.failure.as_ref().expect("the failure is in the results");
    assert_eq!((failure.engine.as_str(), failure.clients), ("redis", 2));
    let left = failure.left_behind.as_deref().unwrap_or_default();
    assert!(
        left.contains("juicefs destroy") && left.contains("cleanup skipped"),
        "{failure:?}"
    );
    assert!(!stderr.contains(metabench_testkit::PASSWORD));
}

#[test]
fn an_open_loop_on_memkv_achieves_the_offered_rate() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("open.json");
    let o = metabench()
        .args(["sweep", "--meta", "memkv://openloop", "--conc", "4"])
        .args(["--rate", "20000", "--ops", "getattr"])
        .args(["--warmup", "300ms", "--duration", "2s", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let text = metabench_testkit::output_text(&o);
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("offered/s") && text.contains("service p99 µs"),
        "{text}"
    );
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(run.plan.rate.as_deref(), Some("20000"));
    assert_eq!(run.plan.arrivals.as_deref(), Some("constant"));
    let level = &run.levels[0];
    assert_eq!(level.offered_ops_per_s, Some(20000.0));
    let achieved = level.achieved_ops_per_s.unwrap();
    assert!(
        (achieved - 20000.0).abs() <= 0.02 * 20000.0,
        "achieved {achieved} of 20000/s"
    );
    let getattr = &level.ops[0];
    let service = getattr
        .service
        .as_ref()
        .expect("service time in an open loop");
    // Latency from the intended start is never below the service time.
    assert!(getattr.latency.p50_us >= service.p50_us && getattr.latency.p99_us >= service.p99_us);
    assert!(run.saturation.is_empty());
}

#[test]
fn an_open_loop_charges_a_stall_to_the_calls_queued_behind_it() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    // Into the 2000/s level's window, then a 300 ms freeze.
    let run = sweep_through_a_freeze(
        &[
            "--conc",
            "4",
            "--rate",
            "1000,2000",
            "--warmup",
            "300ms",
            "--duration",
            "2s",
        ],
        " clients at 1000/s ",
        Duration::from_millis(900),
        Duration::from_millis(300),
    );
    let level = run
        .levels
        .iter()
        .find(|l| l.offered_ops_per_s == Some(2000.0))
        .expect("a 2000/s level");
    let getattr = &level.ops[0];
    let service = getattr.service.as_ref().unwrap();
    // About 600 calls were due during the freeze: they fill the tail measured from the
    // intended start, while a call's own service time saw the freeze only once per client.
    assert!(getattr.latency.p99_us >= 50_000.0, "{getattr:?}");
    assert!(service.p99_us < 50_000.0, "{service:?}");
    assert!(service.max_us >= 200_000.0, "{service:?}");
}

#[test]
fn an_open_loop_on_memkv_charges_a_synthetic_stall_to_intended_start_not_service_time() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("stall.json");
    // One call 1.5 s after the engine opens (inside the window) sleeps 300 ms.
    let o = metabench()
        .args([
            "sweep",
            "--meta",
            "memkv://stall?stall_ms=300&stall_after_ms=1500",
        ])
        .args(["--conc", "4", "--rate", "2000", "--ops", "getattr"])
        .args(["--warmup", "300ms", "--duration", "2s", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", metabench_testkit::output_text(&o));
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let getattr = &run.levels[0].ops[0];
    let service = getattr.service.as_ref().unwrap();
    // About 150 calls of the stalled client were due during the stall: they fill the tail
    // from the intended start, while service time saw the stall once.
    assert!(getattr.latency.p99_us >= 50_000.0, "{getattr:?}");
    assert!(service.p99_us < 50_000.0, "{service:?}");
    assert!(service.max_us >= 290_000.0, "{service:?}");
}

#[test]
fn an_open_loop_takes_one_pool_size() {
    let _phase = crate::phase(module_path!());
    let o = metabench()
        .args([
            "sweep",
            "--meta",
            "memkv://x",
            "--rate",
            "1000",
            "--conc",
            "1,2",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let text = metabench_testkit::output_text(&o);
    assert!(
        text.contains("with --rate, --conc is the fixed client pool"),
        "{text}"
    );
    assert_eq!(text.trim().lines().count(), 1, "{text}");
}

#[test]
fn every_engine_with_counters_reports_them_per_level() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    use metabench_testkit::{fresh_database, Kind};
    let redis = fresh_database(Kind::Redis);
    let mysql = fresh_database(Kind::Mysql);
    let postgres = fresh_database(Kind::Postgres);
    let etcd = format!(
        "{}/{}",
        std::env::var("METABENCH_ETCD_URL")
            .expect("METABENCH_ETCD_URL is set by scripts/test.sh (run the tests with it)")
            .trim_end_matches('/'),
        metabench_testkit::unique_name("mb-telemetry")
    );
    // What each engine's counters must show after a window of creates.
    let expect: [(&str, &str, &str); 4] = [
        (redis.url(), "calls.exec", "connected_clients"),
        (mysql.url(), "Com_commit", "Threads_connected"),
        (postgres.url(), "xact_commit", "lock_waiters"),
        (
            &etcd,
            "etcd_server_proposals_committed_total",
            "etcd_server_proposals_pending",
        ),
    ];
    for (url, counter, gauge) in expect {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("t.json");
        let o = metabench()
            .args(["sweep", "--meta", url, "--conc", "2", "--ops", "create"])
            .args(["--warmup", "100ms", "--duration", "1s", "--json"])
            .arg(&json)
            .output()
            .unwrap();
        let text = metabench_testkit::output_text(&o);
        assert!(o.status.success(), "{url}: {text}");
        assert!(text.contains("| engine |"), "{text}");
        let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let engine = run.levels[0]
            .engine
            .as_ref()
            .unwrap_or_else(|| panic!("{url}: no telemetry"));
        assert!(engine.error.is_none(), "{url}: {:?}", engine.error);
        let moved = engine.counters.get(counter).copied().unwrap_or(0.0);
        assert!(moved > 0.0, "{url}: {counter} did not move: {engine:?}");
        assert!(
            engine.gauges.contains_key(gauge),
            "{url}: no {gauge}: {engine:?}"
        );
    }
}

#[test]
fn engines_without_counters_report_no_telemetry() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    let o = metabench()
        .args([
            "sweep",
            "--meta",
            "memkv://quiet",
            "--conc",
            "1",
            "--ops",
            "getattr",
        ])
        .args(["--warmup", "100ms", "--duration", "300ms", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", metabench_testkit::output_text(&o));
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(run.levels[0].engine.is_none());
}

/// `--threads-per-client`: a level's workers grouped into JuiceFS clients, one registered
/// session per client (Redis's `nextsession` counts them), and results that say so.
#[test]
fn workers_grouped_into_clients_register_one_session_per_client() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start();
    // Database 0, which the test's own commands read.
    let url = redis.url(0);
    metabench_testkit::juicefs_format(&url, "workers", &dir.path().join("bucket"));
    let sessions_taken = || match redis.command(&["GET", "nextsession"]) {
        metabench_testkit::Resp::Bulk(Some(b)) => {
            String::from_utf8(b).unwrap().parse::<i64>().unwrap()
        }
        metabench_testkit::Resp::Bulk(None) => 0,
        other => panic!("GET nextsession answered {other:?}"),
    };
    let mut taken = Vec::new();
    for per_client in ["4", "1"] {
        let json = dir.path().join(format!("k{per_client}.json"));
        let before = sessions_taken();
        let o = metabench()
            // -v: the client settings are part of the full report.
            .args(["-v", "sweep", "--meta", &url, "--existing", "--conc", "8"])
            .args(["--threads-per-client", per_client, "--profile", "mount"])
            .args(["--ops", "create", "--warmup", "100ms", "--duration", "1s"])
            .arg("--json")
            .arg(&json)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        taken.push(sessions_taken() - before);
        let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(run.plan.threads_per_client.to_string(), per_client);
        let create = &run.levels[0].ops[0];
        assert!(
            create.latency.count > 0 && create.errors.is_empty(),
            "{create:?}"
        );
        let said = run.header.engine.client_settings.get("threads_per_client");
        if per_client == "4" {
            assert!(
                said.is_some_and(|s| s.starts_with("4 workers share each client")),
                "{said:?}"
            );
            let stdout = String::from_utf8_lossy(&o.stdout);
            assert!(stdout.contains("4 workers share each client"), "{stdout}");
        } else {
            assert!(said.is_none(), "{said:?}");
        }
    }
    // 8 workers: 2 clients of 4, then 8 clients of 1.
    assert_eq!(taken, vec![2, 8]);
    crate::assert_left_clean(&url);
}

#[test]
fn threads_per_client_of_zero_is_refused() {
    let _phase = crate::phase(module_path!());
    let o = metabench()
        .args([
            "sweep",
            "--meta",
            "memkv://tpc0",
            "--threads-per-client",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--threads-per-client"), "{err}");
}

/// `sweep --conc 2 --ops create --warmup 500ms --duration {duration}` through `url`, with
/// `event` (a failover, a crash) 3 s after the start; asserts the sweep exits 0 and
/// returns its results, its stdout (the table) and its stderr.
fn sweep_through_an_event(
    url: &str,
    duration: &str,
    event: impl FnOnce(),
) -> (SweepResults, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (json, log, out) = (
        dir.path().join("out.json"),
        dir.path().join("stderr.txt"),
        dir.path().join("stdout.txt"),
    );
    let mut child = metabench()
        // -v: the disrupted seconds are part of the full report.
        .args(["-v", "sweep", "--meta", url])
        .args(["--conc", "2", "--ops", "create", "--warmup", "500ms"])
        .args(["--duration", duration, "--json"])
        .arg(&json)
        .stderr(std::fs::File::create(&log).unwrap())
        .stdout(std::fs::File::create(&out).unwrap())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    event();
    let status = child.wait().unwrap();
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{stderr}");
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (run, std::fs::read_to_string(&out).unwrap(), stderr)
}

/// The first level of `run` (one operation, `create`) went through a failover mid-level,
/// and `stdout` (its table) says so: calls failed, each in its second (the per-second
/// errors add up to the level's); the level's record holds them, with calls completed
/// before it and after it; calls completed after every second that failed or was silent.
fn a_failover_is_measured_mid_level(run: &SweepResults, stdout: &str) {
    let level = &run.levels[0];
    let create = &level.ops[0];
    let failing = create.failing_seconds();
    assert!(
        !failing.is_empty(),
        "no failed call: {:?}",
        create.intervals
    );
    let per_second: u64 = create.intervals.iter().map(|s| s.errors).sum();
    assert_eq!(per_second, create.errors.values().sum::<u64>());
    let disruptions = &level.disruptions;
    assert!(!disruptions.is_empty(), "{:?}", create.intervals);
    assert_eq!(
        disruptions.iter().map(|d| d.failed_calls).sum::<u64>(),
        per_second
    );
    let d = &disruptions[0];
    let completed = |seconds: &[metabench_report::IntervalSample]| -> u64 {
        seconds.iter().map(|s| s.count).sum()
    };
    assert!(
        d.from_s > 1
            && completed(&create.intervals[..d.from_s - 1]) > 0
            && completed(&create.intervals[d.to_s..]) > 0,
        "{disruptions:?}"
    );
    let gap_end = failing
        .iter()
        .chain(&level.silent_seconds())
        .map(|(_, end)| *end)
        .max()
        .unwrap();
    assert!(
        completed(&create.intervals[gap_end..]) > 0,
        "{:?}",
        create.intervals
    );
    assert!(
        stdout.contains("calls failed or none completed in second"),
        "{stdout}"
    );
}

/// A Sentinel failover mid-sweep is a measured event: the primary is killed while the
/// level runs, calls fail until the Sentinel promotes the replica, and the sweep follows
/// the new primary (every new connection asks the Sentinel) and goes on. The level says
/// in which seconds calls failed or none completed, and metabench removes its volume from
/// the new primary at the end.
#[test]
fn a_sentinel_failover_mid_sweep_is_measured_and_followed() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let set = metabench_testkit::SentinelSet::start();
    let (run, stdout, _) =
        sweep_through_an_event(&set.url(1), "10s", || signal(set.primary.pid(), "-KILL"));
    a_failover_is_measured_mid_level(&run, &stdout);
    // The Sentinel names the replica now, and metabench cleaned its volume up there.
    let named = std::process::Command::new("redis-cli")
        .args(["-p", &set.sentinel_port().to_string()])
        .args(["SENTINEL", "get-master-addr-by-name", "mymaster"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&named.stdout).contains(&set.replica.port().to_string()),
        "{}",
        String::from_utf8_lossy(&named.stdout)
    );
    let keys = set.replica.command(&["INFO", "keyspace"]);
    assert!(
        !format!("{keys:?}").contains("db1:"),
        "metabench left keys on the new primary: {keys:?}"
    );
}

/// A Redis Cluster primary that serves the volume's slot crashes (SIGKILL) mid-level and
/// comes back on its port with its append-only file: calls on it fail, each session
/// reconnects through the seeds once the node answers, the sweep goes on, and the level
/// says in which seconds calls failed or none completed. metabench removes its volume
/// from the restarted primary at the end.
#[test]
fn a_cluster_primary_restart_mid_sweep_is_measured_and_followed() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let mut cluster = metabench_testkit::RedisCluster::start_durable();
    let owner = cluster.owner_of(1);
    let url = cluster.url(1);
    let (run, stdout, _) = sweep_through_an_event(&url, "8s", || cluster.nodes[owner].restart());
    assert!(
        run.header.engine.settings.contains_key("cluster"),
        "{:?}",
        run.header.engine
    );
    a_failover_is_measured_mid_level(&run, &stdout);
    // The volume is gone from the restarted primary; the others never held a key.
    for node in &cluster.nodes {
        let keys = node.command(&["DBSIZE"]);
        assert_eq!(keys, metabench_testkit::Resp::Integer(0), "{keys:?}");
    }
}

/// A Redis Cluster fails over mid-level (`CLUSTER FAILOVER` on the replica of the primary
/// that serves the volume's slot: the coordinated failover of a managed service): the old
/// primary answers MOVED, and each session follows it to the new primary within the call,
/// as go-redis does, so no call fails; the shared connection follows too. The sweep goes
/// on there, and metabench removes its volume from the new primary at the end.
#[test]
fn a_cluster_failover_mid_sweep_moves_the_sessions_to_the_new_primary() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let mut cluster = metabench_testkit::RedisCluster::start();
    let owner = cluster.owner_of(1);
    let url = cluster.url(1);
    let replica = cluster.add_replica(owner);
    let (run, _, stderr) = sweep_through_an_event(&url, "8s", || cluster.fail_over_to(replica));
    assert_eq!(cluster.owner_of(1), replica);
    let level = &run.levels[0];
    let create = &level.ops[0];
    assert!(create.errors.is_empty(), "{:?}", create.errors);
    // The new primary served the calls of the window's last seconds: its WATCHes (a
    // replica never gets a WATCH replicated) count at least the creates of those seconds.
    let creates_late: u64 = create.intervals[create.intervals.len() - 3..]
        .iter()
        .map(|s| s.count)
        .sum();
    let info = match cluster.nodes[replica].command(&["INFO", "commandstats"]) {
        metabench_testkit::Resp::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    let watches: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_watch:calls="))
        .and_then(|l| l.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        creates_late > 0 && watches >= creates_late,
        "{watches} {creates_late}"
    );
    // Nothing is left on the new primary; the old one, its replica now, follows it.
    let dbsize = |i: usize| cluster.nodes[i].command(&["DBSIZE"]);
    let zero = metabench_testkit::Resp::Integer(0);
    assert_eq!(dbsize(replica), zero, "{stderr}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while dbsize(owner) != zero && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for i in 0..cluster.nodes.len() {
        assert_eq!(
            dbsize(i),
            zero,
            "node {i} (old primary {owner}, new {replica})"
        );
    }
}
