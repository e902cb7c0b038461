//! The tree driver's calls issued directly against the engine: one [`Meta`] session per
//! task, the JuiceFS operations the mounted client makes for each call.

use crate::Result;
use async_trait::async_trait;
use metabench_engine::{Ctx, Meta};
use metabench_pathfs::FsOps;
use metabench_schema::{Ino, Slice, Timestamp, CHUNK_SIZE};

/// One task's engine session.
pub struct NativeFs {
    meta: Box<dyn Meta>,
    ctx: Ctx,
}

impl NativeFs {
    /// Wraps a session (as root, like the mount run by root).
    pub fn new(meta: Box<dyn Meta>) -> Self {
        Self {
            meta,
            ctx: Ctx::root(),
        }
    }
}

#[async_trait]
impl FsOps for NativeFs {
    type Dir = Ino;

    /// `Mkdir` with mdtest's mode 0777 under umask 022.
    async fn mkdir(&mut self, parent: &Ino, name: &str) -> Result<Ino> {
        let (ino, _) = self
            .meta
            .mkdir(&self.ctx, *parent, name.as_bytes(), 0o777, 0o022)
            .await?;
        Ok(ino)
    }

    async fn rmdir(&mut self, parent: &Ino, name: &str) -> Result<()> {
        Ok(self.meta.rmdir(&self.ctx, *parent, name.as_bytes()).await?)
    }

    /// `stat(2)` of a name reaches JuiceFS as `Lookup`, which returns the attributes.
    async fn stat(&mut self, parent: &Ino, name: &str) -> Result<()> {
        self.meta
            .lookup(&self.ctx, *parent, name.as_bytes())
            .await?;
        Ok(())
    }

    /// `Create`, then per 64 MiB chunk written one `NewSlice` and one `Write` (the
    /// client's flush on close); close itself costs no metadata call.
    async fn create(&mut self, parent: &Ino, name: &str, bytes: u64) -> Result<()> {
        let (ino, _) = self
            .meta
            .create(&self.ctx, *parent, name.as_bytes(), 0o666, 0o022)
            .await?;
        let mut left = bytes;
        let mut indx = 0u32;
        while left > 0 {
            let len = left.min(CHUNK_SIZE) as u32;
            let id = self.meta.new_slice().await?;
            let slice = Slice::whole(0, id, len);
            self.meta.write(ino, indx, slice, Timestamp::now()).await?;
            left -= u64::from(len);
            indx += 1;
        }
        Ok(())
    }

    /// `Lookup` (open), then `Read` of each chunk read.
    async fn read(&mut self, parent: &Ino, name: &str, bytes: u64) -> Result<()> {
        let (ino, _) = self
            .meta
            .lookup(&self.ctx, *parent, name.as_bytes())
            .await?;
        let chunks = bytes.div_ceil(CHUNK_SIZE);
        for indx in 0..chunks {
            self.meta.read(ino, indx as u32).await?;
        }
        Ok(())
    }

    async fn unlink(&mut self, parent: &Ino, name: &str) -> Result<()> {
        Ok(self
            .meta
            .unlink(&self.ctx, *parent, name.as_bytes())
            .await?)
    }

    /// `Lookup`, then `GetAttr` (the open of JuiceFS's SDK; the open itself costs no
    /// metadata call).
    async fn open(&mut self, parent: &Ino, name: &str) -> Result<()> {
        let (ino, _) = self
            .meta
            .lookup(&self.ctx, *parent, name.as_bytes())
            .await?;
        self.meta.getattr(ino).await?;
        Ok(())
    }

    async fn rename(&mut self, parent: &Ino, from: &str, to: &str) -> Result<()> {
        self.meta
            .rename(
                &self.ctx,
                *parent,
                from.as_bytes(),
                *parent,
                to.as_bytes(),
                0,
            )
            .await?;
        Ok(())
    }

    async fn remove_tree(&mut self, parent: &Ino, name: &str) -> Result<()> {
        let meta = self.meta.as_mut();
        Ok(metabench_engine::namespace::remove_tree(meta, *parent, name.as_bytes()).await?)
    }

    async fn null_round_trip(&mut self, _dir: &Ino) -> Result<&'static str> {
        Ok(self.meta.null_round_trip().await?)
    }

    async fn between_phases(&mut self) -> Result<()> {
        Ok(self.meta.flush().await?)
    }
}
