//! The tree driver's calls as POSIX calls on a mounted file system (each on the blocking
//! pool, one task per mdtest rank).

use crate::{MountError, Result};
use async_trait::async_trait;
use metabench_pathfs::FsOps;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// One task's view of the mount.
#[derive(Debug, Default)]
pub struct PosixFs;

async fn blocking<T: Send + 'static>(
    what: String,
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| MountError::Io(format!("{what}: {e}")))?
        .map_err(|e| MountError::Io(format!("{what}: {e}")))
}

/// [`blocking`] `f` on `parent/name`; its errors name the call `what` and the path.
async fn at<T: Send + 'static>(
    what: &str,
    parent: &Path,
    name: &str,
    f: impl FnOnce(&Path) -> std::io::Result<T> + Send + 'static,
) -> Result<T> {
    let p = parent.join(name);
    blocking(format!("{what} {}", p.display()), move || f(&p)).await
}

#[async_trait]
impl FsOps for PosixFs {
    type Dir = PathBuf;

    async fn mkdir(&mut self, parent: &PathBuf, name: &str) -> Result<PathBuf> {
        let p = parent.join(name);
        let q = p.clone();
        blocking(format!("mkdir {}", p.display()), move || {
            std::fs::create_dir(&q)
        })
        .await?;
        Ok(p)
    }

    async fn rmdir(&mut self, parent: &PathBuf, name: &str) -> Result<()> {
        at("rmdir", parent, name, |p| std::fs::remove_dir(p)).await
    }

    async fn stat(&mut self, parent: &PathBuf, name: &str) -> Result<()> {
        at("stat", parent, name, |p| std::fs::metadata(p).map(drop)).await
    }

    async fn create(&mut self, parent: &PathBuf, name: &str, bytes: u64) -> Result<()> {
        at("create", parent, name, move |p| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(p)?;
            let buf = vec![b'x'; bytes.min(1 << 20) as usize];
            let mut left = bytes;
            while left > 0 {
                let n = left.min(buf.len() as u64) as usize;
                f.write_all(&buf[..n])?;
                left -= n as u64;
            }
            Ok(())
        })
        .await
    }

    async fn read(&mut self, parent: &PathBuf, name: &str, bytes: u64) -> Result<()> {
        at("read", parent, name, move |p| {
            let mut f = std::fs::File::open(p)?;
            let mut buf = vec![0u8; bytes.min(1 << 20) as usize];
            let mut left = bytes;
            while left > 0 {
                let n = left.min(buf.len() as u64) as usize;
                f.read_exact(&mut buf[..n])?;
                left -= n as u64;
            }
            Ok(())
        })
        .await
    }

    async fn unlink(&mut self, parent: &PathBuf, name: &str) -> Result<()> {
        at("unlink", parent, name, |p| std::fs::remove_file(p)).await
    }

    async fn open(&mut self, parent: &PathBuf, name: &str) -> Result<()> {
        at("open", parent, name, |p| std::fs::File::open(p).map(drop)).await
    }

    async fn rename(&mut self, parent: &PathBuf, from: &str, to: &str) -> Result<()> {
        let (a, b) = (parent.join(from), parent.join(to));
        blocking(format!("rename {}", a.display()), move || {
            std::fs::rename(&a, &b)
        })
        .await
    }

    async fn remove_tree(&mut self, parent: &PathBuf, name: &str) -> Result<()> {
        at("remove", parent, name, |p| {
            match std::fs::remove_dir_all(p) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                done => done,
            }
        })
        .await
    }
}
