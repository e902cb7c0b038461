//! Where the time goes (`LevelOp::breakdown`), end to end on real engines: time the
//! engine spends on a command lands in the engine part, latency added on the path lands
//! in the wire part, workers of one client queueing on its transaction lock land in the
//! lock wait, and an engine that keeps no statement time says so and still gives the
//! other parts.

use crate::metabench_cmd as metabench;
use metabench_report::{Breakdown, SweepResults};
use metabench_testkit::{fresh_database, Kind, RedisServer};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::Duration;

/// The sweeps of this file run one at a time: they compare timings.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A short sweep of `args` on `meta`; its results and what it printed on stdout.
fn sweep(meta: &str, args: &[&str], dir: &Path, name: &str) -> (SweepResults, String) {
    let json = dir.join(format!("{name}.json"));
    let o = metabench()
        .args([
            "sweep",
            "--meta",
            meta,
            "--warmup",
            "200ms",
            "--duration",
            "1s",
        ])
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = SweepResults::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (run, String::from_utf8_lossy(&o.stdout).into_owned())
}

/// `op`'s breakdown at `clients`.
fn breakdown(run: &SweepResults, op: &str, clients: u32) -> Breakdown {
    let level = run.levels.iter().find(|l| l.clients == clients).unwrap();
    let o = level.ops.iter().find(|o| o.op == op).unwrap();
    o.breakdown
        .clone()
        .unwrap_or_else(|| panic!("no breakdown: {o:?}"))
}

/// Keyspace notifications make every write command slower inside Redis: each event is
/// matched against every pattern a subscriber holds, within the command's own time
/// (`INFO commandstats`). A create's writes (in its `EXEC`) then take longer on the
/// server; its round trips and the floor (`PING`, no event) do not change.
#[test]
fn a_slow_command_on_redis_shows_in_the_engine_part_not_the_wire() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start();
    let url = redis.url(5);
    let args = ["--ops", "create", "--conc", "1"];
    let (plain, _) = sweep(&url, &args, dir.path(), "plain");
    redis.command(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let _subscriber = pattern_subscriber(&redis, 4000);
    let (slow, _) = sweep(&url, &args, dir.path(), "slow");
    let (a, b) = (
        breakdown(&plain, "create", 1),
        breakdown(&slow, "create", 1),
    );
    let (ea, eb) = (a.engine_us.unwrap(), b.engine_us.unwrap());
    assert!(eb > ea + 100.0, "engine part {ea:.1} → {eb:.1} µs");
    // The floor's `PING` is found among INFO's commands (`cmdstat_ping`), its own time
    // kept out of the wire part.
    let floor = plain.floor.clone().unwrap();
    assert_eq!(floor.request, "PING");
    assert!(floor.engine_us.unwrap() > 0.0, "{floor:?}");
    let (wa, wb) = (a.wire_us.unwrap(), b.wire_us.unwrap());
    assert!(
        (wb - wa) < (eb - ea) / 2.0,
        "the wire grew as much: {wa:.1} → {wb:.1} µs, engine {ea:.1} → {eb:.1} µs"
    );
    assert!(b.engine_source.contains("INFO commandstats"), "{b:?}");
    assert_eq!(b.commands_per_op.get("exec"), Some(&1.0), "{b:?}");
}

/// A connection subscribed to `n` patterns that match nothing, held open (its
/// confirmations drained) until dropped.
fn pattern_subscriber(redis: &RedisServer, n: usize) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", redis.port())).unwrap();
    let mut req = resp(&["AUTH", redis.password()]);
    let patterns: Vec<String> = (0..n).map(|i| format!("nomatch{i}:*")).collect();
    let mut args = vec!["PSUBSCRIBE"];
    args.extend(patterns.iter().map(String::as_str));
    req.extend(resp(&args));
    s.write_all(&req).unwrap();
    // Wait for the last confirmation, then keep draining in the background.
    let mut seen = Vec::new();
    let last = format!("nomatch{}:*", n - 1);
    let mut buf = [0u8; 65536];
    while !String::from_utf8_lossy(&seen).contains(&last) {
        let k = s.read(&mut buf).unwrap();
        assert!(k > 0, "the subscriber was closed");
        seen.extend_from_slice(&buf[..k]);
    }
    let mut drain = s.try_clone().unwrap();
    std::thread::spawn(move || while matches!(drain.read(&mut buf), Ok(k) if k > 0) {});
    s
}

/// `args` as one RESP request.
fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend(format!("${}\r\n{a}\r\n", a.len()).into_bytes());
    }
    out
}

/// A TCP proxy to `to` on a port of its own that holds every chunk the client sends for
/// `delay` before passing it on (replies pass at once): latency added on the path.
fn delaying_proxy(to: u16, delay: Duration) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let Ok(server) = TcpStream::connect(("127.0.0.1", to)) else {
                return;
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (mut s_in, mut c_out) = (server, client);
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                while let Ok(k) = c_in.read(&mut buf) {
                    if k == 0 {
                        break;
                    }
                    std::thread::sleep(delay);
                    if s_out.write_all(&buf[..k]).is_err() {
                        break;
                    }
                }
                let _ = s_out.shutdown(std::net::Shutdown::Both);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut s_in, &mut c_out);
                let _ = c_out.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    port
}

/// 1 ms added to every request on the way to Redis: the floor, measured through the same
/// path, carries most of it into the wire part; the engine's own time does not move, and
/// the unexplained part takes little of it.
#[test]
fn latency_added_on_the_path_shows_in_the_wire_part_not_the_engine() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start();
    let args = ["--ops", "getattr", "--conc", "1"];
    let (direct, _) = sweep(&redis.url(6), &args, dir.path(), "direct");
    let port = delaying_proxy(redis.port(), Duration::from_millis(1));
    let proxied = format!("redis://:{}@127.0.0.1:{port}/7", redis.password());
    let (slow, _) = sweep(&proxied, &args, dir.path(), "proxied");
    let (a, b) = (
        breakdown(&direct, "getattr", 1),
        breakdown(&slow, "getattr", 1),
    );
    let added = b.mean_us - a.mean_us;
    assert!(added > 900.0, "the proxy added {added:.1} µs");
    let wire = b.wire_us.unwrap() - a.wire_us.unwrap();
    // The floor, PINGs through the same proxy, carries most of it (the rest: the proxy's
    // threads wake differently for a PING burst than for calls, and metabench's fixed CPU
    // is shared out over fewer calls).
    assert!(
        wire > 0.6 * added,
        "wire {:.1} → {:.1} µs of {added:.1} added: {a:?} → {b:?}",
        a.wire_us.unwrap(),
        b.wire_us.unwrap()
    );
    let engine = b.engine_us.unwrap() - a.engine_us.unwrap();
    assert!(engine.abs() < 20.0, "engine part moved {engine:.1} µs");
    let unexplained = b.unexplained_us - a.unexplained_us;
    assert!(
        unexplained.abs() < 0.3 * added,
        "unexplained {:.1} → {:.1} µs",
        a.unexplained_us,
        b.unexplained_us
    );
}

/// Four workers of one client (`--threads-per-client 4`) creating in one directory
/// queue on the client's transaction lock of that directory (`txLock`, JuiceFS's
/// process-local lock): the lock wait is measured, where one worker per client never
/// waits.
#[test]
fn workers_of_one_client_in_one_directory_wait_on_its_transaction_lock() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start();
    let (hot, out) = sweep(
        &redis.url(8),
        &[
            "--ops",
            "create",
            "--conc",
            "1,4",
            "--threads-per-client",
            "4",
            "--shared-dir",
            "-v",
        ],
        dir.path(),
        "hot",
    );
    let (one, four) = (breakdown(&hot, "create", 1), breakdown(&hot, "create", 4));
    assert_eq!(one.lock_wait_us, Some(0.0), "one worker: {one:?}");
    let waited = four.lock_wait_us.unwrap();
    assert!(waited > 1.0, "four workers of one client: {four:?}");
    assert!(out.contains("where the time goes"), "{out}");
    let (apart, _) = sweep(
        &redis.url(9),
        &["--ops", "create", "--conc", "4"],
        dir.path(),
        "apart",
    );
    assert_eq!(
        breakdown(&apart, "create", 4).lock_wait_us,
        Some(0.0),
        "four clients of one worker each share no lock"
    );
}

/// A PostgreSQL without `pg_stat_statements` keeps no statement time: the engine part
/// is unknown (never 0) and says why, in the JSON and the table, and the other parts
/// are still measured.
#[test]
fn postgres_without_pg_stat_statements_says_engine_time_unknown() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_database(Kind::Postgres);
    let loaded = db.query("SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'");
    assert_eq!(
        loaded[0][0], "0",
        "this test needs a PostgreSQL without pg_stat_statements"
    );
    let (run, out) = sweep(
        db.url(),
        &["--ops", "getattr", "--conc", "1", "-v"],
        dir.path(),
        "pg",
    );
    let b = breakdown(&run, "getattr", 1);
    assert_eq!(b.engine_us, None, "{b:?}");
    assert!(
        b.engine_source
            .starts_with("engine time unknown: PostgreSQL has no pg_stat_statements"),
        "{b:?}"
    );
    assert!(
        b.wire_us.unwrap() > 0.0 && b.client_us.unwrap() > 0.0,
        "{b:?}"
    );
    assert_eq!(b.lock_wait_us, Some(0.0));
    let known = b.client_us.unwrap() + b.wire_us.unwrap() + b.client_wait_us.unwrap();
    assert!(
        (b.unexplained_us - (b.mean_us - known)).abs() < 0.01,
        "the unknown engine part is left in the unexplained one: {b:?}"
    );
    let row = out
        .lines()
        .find(|l| l.starts_with("| getattr") && l.contains("unknown"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(row.contains("unknown"), "{row}");
    assert!(out.contains("engine time unknown: PostgreSQL"), "{out}");
}

/// Where the server keeps its own time per statement or request (the test engines run
/// PostgreSQL with pg_stat_statements, on this host, where its backends' CPU is read too;
/// MariaDB with performance_schema and etcd with `--metrics extensive`), the engine part
/// is known, comes from the operation's own phase
/// (a create's statements cost more than a getattr's one), and the floor's own engine
/// time is read too and left out of the wire. MariaDB's prepared statements are counted:
/// each is a second exchange on the wire.
#[test]
fn servers_that_time_their_statements_give_each_phase_its_engine_part() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let postgres = fresh_database(Kind::Postgres);
    postgres.query("CREATE EXTENSION pg_stat_statements");
    let mysql = fresh_database(Kind::Mysql);
    let etcd = format!(
        "{}/{}",
        std::env::var("METABENCH_ETCD_URL")
            .expect("METABENCH_ETCD_URL is set by scripts/test.sh (run the tests with it)")
            .trim_end_matches('/'),
        metabench_testkit::unique_name("mb-breakdown")
    );
    for (meta, name, source) in [
        // the test server runs on this host: its backends' CPU, counted per statement
        (
            postgres.url(),
            "pg",
            "PostgreSQL backends' CPU (/proc/<pid>/schedstat",
        ),
        (mysql.url(), "mysql", "performance_schema"),
        (etcd.as_str(), "etcd", "etcd grpc_server_handling_seconds"),
    ] {
        let (run, out) = sweep(
            meta,
            &["--ops", "create,getattr", "--conc", "1", "-v"],
            dir.path(),
            name,
        );
        let (create, getattr) = (breakdown(&run, "create", 1), breakdown(&run, "getattr", 1));
        for b in [&create, &getattr] {
            assert!(b.engine_source.starts_with(source), "{name}: {b:?}");
            assert!(b.engine_us.unwrap() > 0.0, "{name}: {b:?}");
        }
        // Per phase: the level's mean statement time × statements would give the two
        // operations the same engine time per round trip.
        let per_rt = |b: &Breakdown| b.engine_us.unwrap() / b.round_trips_per_op;
        assert!(
            (per_rt(&create) - per_rt(&getattr)).abs() > 1e-6,
            "{name}: one mean for both phases: {create:?} {getattr:?}"
        );
        let floor = run.floor.clone().unwrap();
        assert!(floor.engine_us.unwrap() > 0.0, "{name}: {floor:?}");
        let exchanges = getattr.round_trips_per_op + getattr.prepares_per_op;
        assert!(
            (getattr.wire_us.unwrap() - exchanges * floor.wire_per_round_trip_us()).abs() < 1e-6,
            "{name}: {getattr:?} {floor:?}"
        );
        if name == "mysql" {
            // getattr is one parameterized SELECT: prepared, then executed.
            assert_eq!(
                getattr.prepares_per_op, getattr.round_trips_per_op,
                "{getattr:?}"
            );
            assert!(getattr.prepares_per_op >= 1.0, "{getattr:?}");
        } else {
            assert_eq!(getattr.prepares_per_op, 0.0, "{name}: {getattr:?}");
        }
        assert!(out.contains("  wire part: round trips × "), "{name}: {out}");
    }
}

/// `--no-engine-counters` leaves the engine's counters unread: no engine check, the
/// engine part unknown and saying why, the other parts still measured, and the results
/// say it was asked for.
#[test]
fn without_the_engine_counters_the_engine_part_is_unknown() {
    let _phase = crate::phase(module_path!());
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start();
    let (run, out) = sweep(
        &redis.url(10),
        &[
            "--ops",
            "getattr",
            "--conc",
            "1",
            "--no-engine-counters",
            "-v",
        ],
        dir.path(),
        "unread",
    );
    assert!(run.plan.engine_counters_off);
    assert!(
        run.levels.iter().all(|l| l.engine.is_none()),
        "{:?}",
        run.levels
    );
    let b = breakdown(&run, "getattr", 1);
    assert_eq!(b.engine_us, None, "{b:?}");
    assert!(
        b.engine_source
            .starts_with("engine time unknown: Redis's INFO was not read"),
        "{b:?}"
    );
    assert!(
        b.wire_us.unwrap() > 0.0 && b.client_us.unwrap() > 0.0,
        "{b:?}"
    );
    assert_eq!(run.floor.as_ref().unwrap().engine_us, None);
    assert!(out.contains("unknown"), "{out}");
}
