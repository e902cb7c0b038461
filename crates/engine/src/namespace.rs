//! metabench's private subtree inside a volume, and its removal.
//!
//! Every run works below `/.metabench/<run-id>`, so it never touches a user's files, and
//! removes that subtree at the end (on success, on error and on Ctrl-C).

use crate::{Ctx, Meta, MetaError, Result};
use metabench_schema::{FileType, Ino, ROOT_INODE};

/// The directory under the root that holds every run's subtree.
pub const NAMESPACE_DIR: &[u8] = b".metabench";

/// `/.metabench`, made when missing: its inode.
pub async fn top_dir(meta: &mut dyn Meta) -> Result<Ino> {
    let ctx = Ctx::root();
    match meta.mkdir(&ctx, ROOT_INODE, NAMESPACE_DIR, 0o755, 0).await {
        Ok((ino, _)) => Ok(ino),
        Err(MetaError::Exists) => Ok(meta.lookup(&ctx, ROOT_INODE, NAMESPACE_DIR).await?.0),
        Err(e) => Err(e),
    }
}

/// A run's private directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    /// Inode of `/.metabench`.
    pub top: Ino,
    /// Inode of `/.metabench/<run-id>`.
    pub dir: Ino,
    /// The run id (the directory's name).
    pub run_id: String,
}

impl Namespace {
    /// Creates `/.metabench` (if needed) and `/.metabench/<run_id>`, and writes the dir
    /// stats the session buffered for them: the root's among them, which [`Self::remove`]
    /// takes back (a session dropped unflushed would leave the root one entry short).
    pub async fn create(meta: &mut dyn Meta, run_id: &str) -> Result<Self> {
        let top = top_dir(meta).await?;
        let (dir, _) = meta
            .mkdir(&Ctx::root(), top, run_id.as_bytes(), 0o755, 0)
            .await?;
        meta.flush().await?;
        Ok(Self {
            top,
            dir,
            run_id: run_id.to_owned(),
        })
    }

    /// Removes the run's directory with everything below it, then `/.metabench` if no
    /// other run is using it, then flushes the session's background work.
    pub async fn remove(&self, meta: &mut dyn Meta) -> Result<()> {
        remove_tree(meta, self.top, self.run_id.as_bytes()).await?;
        match meta.rmdir(&Ctx::root(), ROOT_INODE, NAMESPACE_DIR).await {
            Ok(()) | Err(MetaError::NotEmpty) | Err(MetaError::NotFound) => {}
            Err(e) => return Err(e),
        }
        meta.flush().await
    }
}

/// Removes `name` in `parent` and everything below it, through the session's own
/// operations (as `juicefs rmr` does, one entry at a time). A missing entry is not an error.
pub async fn remove_tree(meta: &mut dyn Meta, parent: Ino, name: &[u8]) -> Result<()> {
    let ctx = Ctx::root();
    let (ino, attr) = match meta.lookup(&ctx, parent, name).await {
        Ok(found) => found,
        Err(MetaError::NotFound) => return Ok(()),
        Err(e) => return Err(e),
    };
    if attr.typ != FileType::Directory {
        return meta.unlink(&ctx, parent, name).await;
    }
    // Depth-first with an explicit stack: (parent, name, ino, children listed?).
    let mut stack = vec![(parent, name.to_vec(), ino, false)];
    while let Some((p, n, dir, listed)) = stack.pop() {
        if listed {
            match meta.rmdir(&ctx, p, &n).await {
                Ok(()) | Err(MetaError::NotFound) => continue,
                Err(e) => return Err(e),
            }
        }
        stack.push((p, n, dir, true));
        for e in meta.readdir(&ctx, dir, false).await? {
            if e.name == b"." || e.name == b".." {
                continue;
            }
            if e.attr.typ == FileType::Directory {
                stack.push((dir, e.name, e.inode, false));
            } else {
                match meta.unlink(&ctx, dir, &e.name).await {
                    Ok(()) | Err(MetaError::NotFound) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        meta.flush().await?;
    }
    Ok(())
}
