//! The calls a file system answers by path, as the tree driver and a path-level sweep make
//! them: what a POSIX mount, JuiceFS sessions, HDFS and S3 each implement.

use crate::error::{FsError, Result};
use async_trait::async_trait;

/// The calls the [tree driver](crate::tree) and a [`PathTarget`](crate::PathTarget)'s
/// sessions make, one instance per task.
#[async_trait]
pub trait FsOps: Send + 'static {
    /// A handle on a directory (a path, an inode).
    type Dir: Clone + Send + Sync + 'static;

    /// `mkdir(parent/name)`.
    async fn mkdir(&mut self, parent: &Self::Dir, name: &str) -> Result<Self::Dir>;
    /// `rmdir(parent/name)`.
    async fn rmdir(&mut self, parent: &Self::Dir, name: &str) -> Result<()>;
    /// `stat(parent/name)`.
    async fn stat(&mut self, parent: &Self::Dir, name: &str) -> Result<()>;
    /// `open(O_CREAT)`, write `bytes`, close.
    async fn create(&mut self, parent: &Self::Dir, name: &str, bytes: u64) -> Result<()>;
    /// `open`, read `bytes`, close.
    async fn read(&mut self, parent: &Self::Dir, name: &str, bytes: u64) -> Result<()>;
    /// `unlink(parent/name)`.
    async fn unlink(&mut self, parent: &Self::Dir, name: &str) -> Result<()>;
    /// NNBench's open: `open(parent/name)` and close, reading nothing.
    async fn open(&mut self, parent: &Self::Dir, name: &str) -> Result<()>;
    /// `rename(parent/from, parent/to)` of a file.
    async fn rename(&mut self, parent: &Self::Dir, from: &str, to: &str) -> Result<()>;
    /// Removes `parent/name` and everything below it; an absent one is no error.
    async fn remove_tree(&mut self, parent: &Self::Dir, name: &str) -> Result<()>;
    /// The system's cheapest request that reaches its server (the floor), under `dir`;
    /// the request's name. Not every side has one (a mount's calls may never leave the
    /// kernel): those answer `NotSupported`.
    async fn null_round_trip(&mut self, _dir: &Self::Dir) -> Result<&'static str> {
        Err(FsError::Meta(metabench_engine::MetaError::NotSupported))
    }
    /// Untimed work between phases (a JuiceFS client's background work).
    async fn between_phases(&mut self) -> Result<()> {
        Ok(())
    }
    /// The requests to its servers this task has made so far, where it counts them (the
    /// round trips of a call are the difference); 0 where it does not (a mount's calls
    /// are system calls).
    fn requests(&self) -> u64 {
        0
    }
}
