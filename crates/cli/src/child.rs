//! metabench running itself as a child process (`matrix` per engine, `scale` per size):
//! the meta URL handed over in the environment, a stop passed on, and the child's one-line
//! error.

use crate::error::{CliError, EXIT_INTERRUPTED};
use metabench_load::StopFlag;
use std::ffi::OsStr;
use std::process::Stdio;
use tokio::io::AsyncReadExt as _;

/// How a metabench child process ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ChildEnd {
    /// It ran to its end (exit code 0).
    Done,
    /// It stopped on a Ctrl-C or SIGTERM, having cleaned up (exit code 130), or was
    /// killed after this process was asked to stop.
    Interrupted,
    /// It failed: its one-line error, without the `metabench: error: ` prefix.
    Failed(String),
}

/// Runs this metabench binary with `args` on the meta URL `meta` to its end: its stdout
/// dropped, its stderr kept for the error. The URL goes in the environment
/// (`METABENCH_META`), not on a command line `ps` shows to others, with its password.
///
/// Nothing is started once a stop was asked. When `stop` is set (this process heard
/// Ctrl-C or SIGTERM), the child is sent SIGTERM and waited for, so that it cleans up as
/// it would on its own Ctrl-C: a SIGTERM sent to this process alone does not reach it
/// otherwise. A child that heard the Ctrl-C from the terminal itself ignores the second
/// signal. A further Ctrl-C or SIGTERM kills the child.
pub(crate) async fn run_metabench<I, S>(
    args: I,
    meta: &str,
    stop: &StopFlag,
) -> Result<ChildEnd, CliError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    if stop.is_stopped() {
        return Ok(ChildEnd::Interrupted);
    }
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Io(format!("cannot find the metabench binary: {e}")))?;
    let mut child = tokio::process::Command::new(&exe)
        .args(args)
        .env("METABENCH_META", meta)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| CliError::Io(format!("cannot run {}: {e}", exe.display())))?;
    let mut stderr = child.stderr.take();
    let said = tokio::spawn(async move {
        let mut text = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.read_to_end(&mut text).await;
        }
        text
    });
    let waited = tokio::select! {
        status = child.wait() => status,
        () = stop.stopped() => {
            if let Some(pid) = child.id() {
                // SAFETY: kill(2) on the pid of a child this process has not yet reaped.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
            }
            // A second Ctrl-C or SIGTERM while the child cleans up (an engine that no
            // longer answers) kills it.
            tokio::select! {
                status = child.wait() => status,
                true = crate::args::stop_signal() => {
                    say!("metabench: asked again: killing the run in progress; what it had not cleaned up stays");
                    let _ = child.start_kill();
                    child.wait().await
                }
            }
        }
    };
    let status =
        waited.map_err(|e| CliError::Io(format!("cannot wait for {}: {e}", exe.display())))?;
    let stderr = said.await.unwrap_or_default();
    Ok(match status.code() {
        Some(0) => ChildEnd::Done,
        Some(EXIT_INTERRUPTED) => ChildEnd::Interrupted,
        _ if stop.is_stopped() => ChildEnd::Interrupted,
        _ => ChildEnd::Failed(child_error(&stderr)),
    })
}

/// Why a metabench child process failed: the last line it said on stderr (its one-line
/// error), without the `metabench: error: ` prefix.
fn child_error(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("failed without a message")
        .trim_start_matches("metabench: error: ")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_childs_error_is_its_last_line_without_the_prefix() {
        let said = b"metabench: warming up\nmetabench: error: cannot reach 127.0.0.1:1\n\n";
        assert_eq!(child_error(said), "cannot reach 127.0.0.1:1");
        assert_eq!(child_error(b""), "failed without a message");
    }
}
