//! The `metabench` binary's integration tests, in one binary as ripgrep keeps its own.
//!
//! Each module was a test binary of its own, and cargo ran those one after another. The
//! modules keep that: a test takes its module's [`phase`] first, so tests of one module
//! run in parallel but never beside another module's. Sweeps and mounts spend real CPU,
//! and some assertions (achieved rates, client-bound flags) must not share it with
//! another module's runs.

mod baselines;
mod beside;
mod breakdown;
mod cli;
mod clients;
mod compare;
mod docs;
mod fill;
mod matrix;
mod mounted_resizes;
#[cfg(feature = "mpi")]
mod mpi;
mod parity;
mod reads;
mod report;
mod scale;
mod setup;
mod sweep;
mod terse;

use std::sync::{Condvar, Mutex};
use std::time::Instant;

/// Which module runs now, how many of its tests, and since when.
static RUNNING: Mutex<(Option<&'static str>, usize, Option<Instant>)> = Mutex::new((None, 0, None));
static CHANGED: Condvar = Condvar::new();

/// Held by a test while it runs: tests of other modules wait until every test of this
/// one has dropped its guard.
pub struct Phase;

/// Waits until no other module's test runs, then counts this test in.
pub fn phase(module: &'static str) -> Phase {
    let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    while running.0.is_some_and(|m| m != module) {
        running = CHANGED.wait(running).unwrap_or_else(|e| e.into_inner());
    }
    let since = running.2.unwrap_or_else(Instant::now);
    *running = (Some(module), running.1 + 1, Some(since));
    Phase
}

impl Drop for Phase {
    fn drop(&mut self) {
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        running.1 -= 1;
        if running.1 == 0 {
            // straight to stderr, past the harness's capture: where CI's minutes go
            if let (Some(module), Some(since)) = (running.0, running.2) {
                let line = format!(
                    "it: {module} ran for {:.0} s\n",
                    since.elapsed().as_secs_f64()
                );
                let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            }
            *running = (None, 0, None);
            CHANGED.notify_all();
        }
    }
}

/// Runs the binary under test with `args` to completion (none of the caller's
/// `METABENCH_META` or password variables leak in).
pub fn metabench(args: &[&str]) -> std::process::Output {
    metabench_testkit::run_metabench(env!("CARGO_BIN_EXE_metabench"), args)
}

/// Runs `cmd` with its stdout and stderr pipes closed as soon as it has started (as
/// `metabench … | head` leaves them); its exit status.
pub fn status_with_closed_pipes(cmd: &mut std::process::Command) -> std::process::ExitStatus {
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    drop(child.stderr.take());
    child.wait().unwrap()
}

/// The binary under test as a command still to be set up, with the same clean
/// environment as [`metabench`].
pub fn metabench_cmd() -> std::process::Command {
    metabench_testkit::metabench_command(env!("CARGO_BIN_EXE_metabench"))
}

/// The volume at `url` keeps no trace of a run: no `.metabench` namespace in
/// `juicefs dump`, and no session (the mount profile registers them) in `juicefs status`.
pub fn assert_left_clean(url: &str) {
    let tree = metabench_testkit::dump_tree(&metabench_testkit::juicefs_dump(url));
    assert!(
        tree.keys().all(|p| !p.contains(".metabench")),
        "{:?}",
        tree.keys().collect::<Vec<_>>()
    );
    let status = metabench_testkit::juicefs_status(url);
    assert_eq!(status["Sessions"], serde_json::json!([]), "{status}");
}

/// Waits until the file `log` (a run's stderr) holds `text`; fails the test after 60 s,
/// with what the log holds.
pub fn wait_for_log(log: &std::path::Path, text: &str) {
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(log)
        .unwrap_or_default()
        .contains(text)
    {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "no '{text}' within 60 s: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A metabench process a test started: if the test fails before it has waited for it,
/// the process is asked to stop (SIGTERM, which it passes on to the metabench processes
/// it started) and then killed, so that no run outlives the test.
pub struct Started(pub Option<std::process::Child>);

impl Drop for Started {
    fn drop(&mut self) {
        let Some(mut child) = self.0.take() else {
            return;
        };
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let asked = std::time::Instant::now();
        while asked.elapsed() < std::time::Duration::from_secs(30) {
            if !matches!(child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Sends `signal` (`-INT`, `-TERM`, `-STOP`, `-KILL`) to process `pid`, as `kill` does,
/// and checks that it was sent.
pub fn kill(signal: &str, pid: u32) {
    let sent = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {signal} {pid}");
}

/// Runs metabench with `args` (its stderr to a file), waits until it says `ready` and 3 s
/// more (for the processes it starts to be under way), then sends SIGTERM to that process
/// alone, as `kill PID` does, not to the metabench processes it started. Returns its exit
/// status, how long it took to end after the signal, and what it said on stderr.
pub fn terminated_once(
    args: &[&str],
    ready: &str,
) -> (std::process::ExitStatus, std::time::Duration, String) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stderr");
    let mut started = Started(Some(
        metabench_cmd()
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    ));
    wait_for_log(&log, ready);
    std::thread::sleep(std::time::Duration::from_secs(3));
    let child = started.0.as_mut().expect("started");
    assert!(
        child.try_wait().unwrap().is_none(),
        "ended before the signal"
    );
    kill("-TERM", child.id());
    let sent = std::time::Instant::now();
    let status = child.wait().unwrap();
    started.0 = None;
    (
        status,
        sent.elapsed(),
        std::fs::read_to_string(&log).unwrap(),
    )
}
