//! The `metabench` binary as the integration tests run it.

use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};

/// A `metabench` command (`bin` is the test's `env!("CARGO_BIN_EXE_metabench")`) that
/// sees none of the caller's meta URL or password variables and reads nothing from stdin.
pub fn metabench_command(bin: &str) -> Command {
    let mut c = Command::new(bin);
    for var in [
        "METABENCH_META",
        "META_PASSWORD",
        "META_PASSWORD_FILE",
        "REDIS_PASSWORD",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
    ] {
        c.env_remove(var);
    }
    c.stdin(Stdio::null());
    c
}

/// Confines the process `cmd` starts to `cpus`, as `taskset -c` does: every thread it
/// starts inherits that affinity. The child fails to start if the kernel refuses.
pub fn confine_to_cpus(cmd: &mut Command, cpus: &[usize]) {
    let set = crate::util::cpu_set_of(cpus);
    // SAFETY: the closure runs in the child between fork and exec and only makes one
    // system call (async-signal-safe) on a set copied into it.
    unsafe {
        cmd.pre_exec(move || {
            if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
}

/// Runs [`metabench_command`] with `args` to the end.
pub fn run_metabench(bin: &str, args: &[&str]) -> Output {
    metabench_command(bin)
        .args(args)
        .output()
        .expect("metabench runs")
}

/// A run's stdout followed by its stderr, as text.
pub fn output_text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
