//! Shared set-up of the SQL engine tests: every test body is written once and run on
//! MariaDB, PostgreSQL and SQLite (`engine_matrix!`).

#![allow(dead_code)]

use metabench_engine::sql::{SqlEngine, SqlSession};
use metabench_engine::{Ctx, Engine, Meta, MetaUrl, SessionOptions};
use metabench_schema::{Format, Ino, ROOT_INODE};
use metabench_testkit::{fresh_database, Kind, TestDb};

/// A formatted volume with one session.
pub struct Vol {
    /// The database (dropped last).
    pub db: TestDb,
    /// The engine.
    pub engine: SqlEngine,
    /// A session with default options.
    pub s: SqlSession,
    /// uid 0.
    pub ctx: Ctx,
}

/// The volume format metabench's tests use: JuiceFS defaults, trash off as in the Go
/// benchmark, DirStats on.
pub fn test_format(bucket: &str) -> Format {
    Format::new("mbtest", &uuid(), bucket, 0)
}

/// A fresh v4 UUID text.
pub fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Opens the engine of a test database.
pub async fn engine(db: &TestDb) -> SqlEngine {
    SqlEngine::open(&MetaUrl::parse(db.url()).unwrap())
        .await
        .unwrap_or_else(|e| panic!("open {}: {e}", db.kind().name()))
}

/// A fresh database of `kind`, formatted, with one session.
pub async fn volume(kind: Kind) -> Vol {
    volume_with(kind, SessionOptions::default()).await
}

/// As [`volume`], with session options.
pub async fn volume_with(kind: Kind, opts: SessionOptions) -> Vol {
    let db = fresh_database(kind);
    let engine = engine(&db).await;
    engine
        .format(&test_format("/tmp/metabench-unused-bucket/"))
        .await
        .unwrap();
    let s = engine.sql_session(&opts).await.unwrap();
    Vol {
        db,
        engine,
        s,
        ctx: Ctx::root(),
    }
}

impl Vol {
    /// `prepareParent`: a fresh directory under the root.
    pub async fn parent(&mut self, name: &str) -> Ino {
        self.s
            .mkdir(&self.ctx, ROOT_INODE, name.as_bytes(), 0o755, 0)
            .await
            .unwrap()
            .0
    }

    /// Statements the session has sent so far.
    pub fn rtt(&self) -> u64 {
        self.s.stats().round_trips
    }
}
