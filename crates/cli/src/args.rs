//! Argument parsers and checks shared by the subcommands.

use crate::error::{input, CliError};
use std::path::Path;
use std::time::Duration;

/// Parses a count of at least 1.
pub fn parse_count(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a whole number")),
    }
}

/// Parses a positive duration such as `1s`, `250ms` or `2m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("'{s}' is not a duration ({e}); try 1s or 500ms"))?;
    if d.is_zero() {
        return Err("duration must be greater than zero".into());
    }
    Ok(d)
}

/// Fails early (before any engine is touched) when `path` cannot be written.
pub fn check_output_path(path: &Path) -> Result<(), CliError> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = parent {
        if !dir.is_dir() {
            return Err(input(format!(
                "cannot write {}: directory {} does not exist",
                path.display(),
                dir.display()
            )));
        }
    }
    if path.is_dir() {
        return Err(input(format!(
            "cannot write {}: it is a directory",
            path.display()
        )));
    }
    Ok(())
}

/// Sets `stop` on the first Ctrl-C, saying what the command does next (e.g. "finishing
/// the current window and cleaning up"); abort the returned handle when the run is over.
/// Every command stops through this one flag.
pub fn watch_ctrl_c(
    stop: metabench_load::StopFlag,
    then: &'static str,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            say!("metabench: interrupted; {then}");
            stop.stop();
        }
    })
}

/// Writes a results file, mapping failures to one-line errors.
pub fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text)
        .map_err(|e| CliError::Io(format!("cannot write {}: {e}", path.display())))
}

/// `--meta URL` where a command needs one: the JuiceFS meta URL, also read from
/// `METABENCH_META` (never printed).
#[derive(Debug, clap::Args)]
pub struct MetaArg {
    /// JuiceFS meta URL (a password missing from it is read from META_PASSWORD, and
    /// REDIS_PASSWORD for Redis, as JuiceFS does).
    #[arg(
        long,
        value_name = "URL",
        env = "METABENCH_META",
        hide_env_values = true
    )]
    pub meta: String,
}

/// How each simulated client behaves, the same for `ops` and `sweep`.
#[derive(Debug, clap::Args)]
pub struct ClientArgs {
    /// Reproduce the Go client's caches (chunk cache for read, symlink cache for
    /// readlink) instead of asking the engine on every call.
    #[arg(long)]
    pub client_cache: bool,

    /// How long one call may take. A call started in a window is recorded when it
    /// finishes, after the window's end too; one without an answer by this time counts
    /// as a `timeout` error, and its client goes on with a fresh session.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub op_timeout: std::time::Duration,
}
