//! The path-level interface: what metabench asks of a file system it reaches by path, not
//! through a JuiceFS engine's transactions.
//!
//! [`FsOps`] is the calls (mkdir, stat, create, read, open, rename, unlink, …), one
//! instance per task; [`tree`] is an mdtest-equivalent driver generic over them, so a
//! JuiceFS mount, JuiceFS sessions, HDFS and S3 run the same phases on the same tree
//! shape; [`PathSystem`] is a path-level system beside JuiceFS (HDFS, S3) whose clients
//! are [`FsOps`], and [`PathTarget`] makes one a sweep [`Target`](metabench_load::Target)
//! running NNBench's operations. The implementations live with their systems
//! (`metabench-mount`, `metabench-hdfs`, `metabench-s3`); this crate knows none of them.

mod error;
mod fs_ops;
pub mod path_target;
pub mod tree;

pub use error::{FsError, Result};
pub use fs_ops::FsOps;
pub use path_target::{PathSession, PathSystem, PathTarget, PathWork, BLOCK_BYTES};
