//! `--tree`: reads over a populated volume. Before the run, untimed and read-only, the
//! tree is listed once ([`Population::walk`]); the read operations then draw their
//! targets from it.

use crate::args::parse_amount;
use crate::error::{input, CliError};
use crate::lifecycle::Run;
use metabench_engine::{ClientProfile, MetaError};
use metabench_load::{KeyDist, Population, TreeSpec};
use std::sync::Arc;

/// Where the read operations draw their targets from (`ops`, `sweep`).
#[derive(Debug, Clone, clap::Args)]
pub struct TreeArgs {
    /// Read operations (lookup, getattr, access, open, readlink, read_1, getxattr,
    /// listxattr_1, listdir) draw their targets from the entries under this directory of
    /// the volume, e.g. a `metabench fill` tree (/fill-<run>); it is listed once before the
    /// run, read-only. Writes stay in metabench's own directory.
    #[arg(long, value_name = "PATH")]
    pub tree: Option<String>,

    /// How reads pick among the tree's entries: uniform, zipfian (YCSB's θ = 0.99),
    /// zipfian:<θ>, or latest (the newest inodes hottest).
    #[arg(
        long,
        value_name = "DIST",
        default_value = "zipfian",
        requires = "tree"
    )]
    pub keys: KeyDist,

    /// Names kept from the tree at most (100k, 1M): a larger tree is read through a
    /// uniform sample of this many.
    #[arg(long, value_name = "N", default_value = "1M", value_parser = parse_amount, requires = "tree")]
    pub tree_max: u64,
}

impl TreeArgs {
    /// Lists the tree `--tree` names, if it names one, through a session of `run`'s
    /// volume, and says what it holds when `speak`; a path that is missing, not a
    /// directory or empty is refused in one line.
    pub async fn list(&self, run: &Run, speak: bool) -> Result<Option<Arc<Population>>, CliError> {
        let Some(path) = &self.tree else {
            return Ok(None);
        };
        if self.tree_max == 0 {
            return Err(input("--tree-max must be at least 1"));
        }
        let spec = TreeSpec {
            path: path.clone(),
            keys: self.keys,
            max_names: usize::try_from(self.tree_max).unwrap_or(usize::MAX),
        };
        let mut meta = run
            .volume
            .session(&ClientProfile::Gobench.session_options())
            .await?;
        let tree = Population::walk(meta.as_mut(), spec)
            .await
            .map_err(|e| match e {
                MetaError::NotFound => {
                    input(format!("--tree {path}: no such directory in the volume"))
                }
                MetaError::NotDir => input(format!("--tree {path} is not a directory")),
                MetaError::Invalid => input(format!("--tree {path} holds no entries to read")),
                other => CliError::from(other),
            })?;
        if speak {
            say!("metabench: {}", tree.line());
        }
        Ok(Some(Arc::new(tree)))
    }
}
