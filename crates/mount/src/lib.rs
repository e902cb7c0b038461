//! The real JuiceFS client on the same engine as metabench.
//!
//! [`juicefs`] finds the `juicefs` binary and mounts a volume behind a guard that always
//! unmounts ([`juicefs::Mount`]); the mdtest-equivalent driver ([`metabench_pathfs::tree`],
//! generic over [`FsOps`](metabench_pathfs::FsOps)) has two implementations here: POSIX
//! calls through the mount ([`posix::PosixFs`]) and engine sessions
//! ([`native::NativeFs`]), so both sides run the same phases on the same tree shape.
//! [`fio`], [`bench`], [`mdtest`] and [`objbench`] run the external benchmarks and parse
//! their output.

pub mod bench;
pub mod cross_engine;
pub mod docs_figures;
pub mod fio;
pub mod go_mdtest;
pub mod juicefs;
pub mod mdtest;
pub mod native;
pub mod objbench;
pub mod posix;
pub mod report;

/// A reason a parity step failed, on one line: the path-level error, one type with the
/// tree driver's and the FsOps implementations' (HDFS, S3).
pub use metabench_pathfs::FsError as MountError;
/// Result of this crate.
pub use metabench_pathfs::Result;

/// A file captured from a real tool run, from `tests/data`.
#[cfg(test)]
pub(crate) fn test_data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}
