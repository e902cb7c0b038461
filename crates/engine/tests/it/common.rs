//! Set-up shared by the engine tests (the SQL-only tests have theirs in `sql_common`).

use metabench_engine::falloc::{KEEP_SIZE, PUNCH_HOLE};
use metabench_engine::{Ctx, Engine, FallocRange, Meta, MetaUrl, SessionOptions};
use metabench_schema::{Format, Ino};
use metabench_testkit::RedisServer;
use std::sync::Arc;

/// The format of a test volume `name`: JuiceFS's defaults with trash off, as in the Go
/// benchmark, and a bucket nothing is written to.
pub fn volume_format(name: &str, uuid: &str) -> Format {
    Format::new(name, uuid, "/tmp/metabench-unused/", 0)
}

/// A private Redis server, the engine on its database `db` with the test volume `name`
/// formatted ([`volume_format`]), and a session opened with `opts`.
pub async fn redis_volume(
    db: u32,
    name: &str,
    uuid: &str,
    opts: &SessionOptions,
) -> (RedisServer, Arc<dyn Engine>, Box<dyn Meta>) {
    let server = RedisServer::start();
    let url = MetaUrl::parse(&server.url(db)).unwrap();
    let engine = metabench_engine::open(&url).await.unwrap();
    engine.format(&volume_format(name, uuid)).await.unwrap();
    let meta = engine.session(opts).await.unwrap();
    (server, engine, meta)
}

/// The interop volumes' preallocated file `fa` in `parent`: 10 000 bytes allocated, then 10
/// bytes at 10 punched out, the length kept.
pub async fn punched_file(m: &mut dyn Meta, ctx: &Ctx, parent: Ino) -> Ino {
    let (fa, _) = m.create(ctx, parent, b"fa", 0o644, 0).await.unwrap();
    m.fallocate(ctx, fa, FallocRange::new(0, 0, 10_000))
        .await
        .unwrap();
    let punch = PUNCH_HOLE | KEEP_SIZE;
    m.fallocate(ctx, fa, FallocRange::new(punch, 10, 10))
        .await
        .unwrap();
    fa
}

/// An empty directory `name` in `parent` for a test's set-up: mode 0755.
pub async fn mkdir(m: &mut dyn Meta, ctx: &Ctx, parent: Ino, name: &[u8]) -> Ino {
    m.mkdir(ctx, parent, name, 0o755, 0).await.unwrap().0
}

/// An empty file `name` in `parent` for a test's set-up: mode 0644, less `umask`.
pub async fn create(m: &mut dyn Meta, ctx: &Ctx, parent: Ino, name: &[u8], umask: u16) -> Ino {
    m.create(ctx, parent, name, 0o644, umask).await.unwrap().0
}
