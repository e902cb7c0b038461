//! metabench running itself as a child process (`matrix` per engine, `scale` per size):
//! the meta URL handed over in the environment, and the child's one-line error.

use crate::error::CliError;
use std::ffi::OsStr;
use std::process::{Command, Output, Stdio};

/// Runs this metabench binary with `args` on the meta URL `meta` to its end: its stdout
/// dropped, its stderr kept. The URL goes in the environment (`METABENCH_META`), not on
/// a command line `ps` shows to others, with its password.
pub(crate) fn run_metabench<I, S>(args: I, meta: &str) -> Result<Output, CliError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Io(format!("cannot find the metabench binary: {e}")))?;
    Command::new(&exe)
        .args(args)
        .env("METABENCH_META", meta)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| CliError::Io(format!("cannot run {}: {e}", exe.display())))
}

/// Why a metabench child process failed: the last line it said on stderr (its one-line
/// error), without the `metabench: error: ` prefix.
pub(crate) fn child_error(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("failed without a message")
        .trim_start_matches("metabench: error: ")
        .to_owned()
}
