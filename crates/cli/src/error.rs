//! Errors the command line reports: one line each, never a password.

use metabench_engine::MetaError;

/// Exit code after Ctrl-C (128 + SIGINT).
pub const EXIT_INTERRUPTED: i32 = 130;

/// Exit code when the engine failed mid-run (died, or stopped answering): the levels
/// measured so far, the partial one last, are in every requested output.
pub const EXIT_ENGINE_FAILED: i32 = 3;

/// A reason to stop with a non-zero exit code.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The user asked for something that cannot be done; nothing was written.
    #[error("{0}")]
    Input(String),
    /// The engine failed.
    #[error(transparent)]
    Meta(#[from] MetaError),
    /// A local file could not be read or written.
    #[error("{0}")]
    Io(String),
}

impl CliError {
    /// The message on one line.
    pub fn one_line(&self) -> String {
        self.to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Exit code: 2 for bad input, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Input(_) | CliError::Meta(MetaError::BadUrl(_)) => 2,
            _ => 1,
        }
    }
}

/// Shorthand for bad-input errors.
pub fn input(msg: impl Into<String>) -> CliError {
    CliError::Input(msg.into())
}

/// clap's message up to its first blank line (usage and tips follow), on one line.
pub(crate) fn clap_error_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    first.join(" ").trim_start_matches("error: ").to_owned()
}
