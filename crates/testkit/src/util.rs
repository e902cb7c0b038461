//! Small shared helpers: unique names, temp dirs, environment lookups, child processes.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A name no other test (in this or another process) uses: `<prefix>_<pid>_<n>_<rand>`,
/// lower-case ASCII letters, digits and `_` only, so it is a valid database name on every
/// engine and a valid JuiceFS volume name once `_` is replaced by `-`.
pub fn unique_name(prefix: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut h = RandomState::new().build_hasher();
    h.write_u32(n);
    let rand = h.finish() & 0xff_ffff;
    format!("{prefix}_{}_{n}_{rand:06x}", std::process::id())
}

/// A fresh temp dir, removed when dropped. It lives under `$METABENCH_ENGINES_DIR/tmp`
/// when the test engines run (so `scripts/engines.sh stop` can clean up what a killed
/// test left behind), else under the system temp dir.
pub fn temp_dir() -> tempfile::TempDir {
    let mut b = tempfile::Builder::new();
    b.prefix("mbtest-");
    let under = std::env::var_os("METABENCH_ENGINES_DIR")
        .map(|d| PathBuf::from(d).join("tmp"))
        .filter(|d| d.is_dir());
    match under {
        Some(d) => b.tempdir_in(d),
        None => b.tempdir(),
    }
    .expect("cannot create a temp dir")
}

/// The value of a variable that `scripts/test.sh` exports; panics with a hint when unset.
pub(crate) fn required_env(var: &str) -> String {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!(
            "{var} is not set: run the tests with `scripts/test.sh` (it starts the test \
             engines), or `source scripts/engines.sh start` first and then `cargo test`"
        ),
    }
}

/// Runs a command to completion, panicking with its output when it cannot start.
pub(crate) fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", cmd.get_program()))
}

/// Panics with the command's output unless it succeeded.
pub(crate) fn check(what: &str, out: Output) -> Output {
    if !out.status.success() {
        panic!(
            "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

/// `%XX` decoding, as used in URLs (invalid escapes kept as they are).
pub(crate) fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// A TCP port on 127.0.0.1 that nothing listens on (the OS's pick; free when asked).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("cannot find a free port on 127.0.0.1")
}

/// `cpus` as the kernel's CPU set, for `sched_setaffinity`. Panics on a CPU past the
/// set's size.
pub(crate) fn cpu_set_of(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: a zeroed `cpu_set_t` is an empty set; each CPU is checked to be inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        assert!(
            cpu < libc::CPU_SETSIZE as usize,
            "CPU {cpu} is out of range"
        );
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names_differ_and_are_safe() {
        let a = unique_name("mb");
        let b = unique_name("mb");
        assert_ne!(a, b);
        assert!(a.starts_with(&format!("mb_{}_", std::process::id())));
        assert!(a
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'));
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("p%40ss"), "p@ss");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("%41%42"), "AB");
        assert_eq!(percent_decode("%+1"), "%+1");
    }
}
