//! JuiceFS metadata engines, spoken to directly.
//!
//! [`open`] turns a JuiceFS meta URL into an [`Engine`]; an engine opens [`Meta`] sessions,
//! one per virtual client, each issuing the same commands, statements or KV calls, in the
//! same transaction shape, as one JuiceFS client. Every session counts what it sends
//! ([`SessionStats`]) so callers can report and assert round trips per operation.

pub mod base;
pub mod deadline;
pub mod error;
pub mod fill;
pub mod in_process;
pub mod meta;
pub mod namespace;
pub mod procfs;
pub mod redis;
pub mod retry;
pub(crate) mod rules;
pub mod sql;
pub mod stats;
pub mod telemetry;
pub mod tkv;
pub mod types;
pub mod url;

pub use base::{ClientState, ResizeSteps, SessionSteps, Storage, TxGuard, TxLock};
pub use error::{MetaError, Result};
pub use meta::{
    ChunkWrite, ClientProfile, Ctx, Engine, EngineKind, Entry, Made, Meta, NewNode, Rename,
    Renamed, ServerInfo, SessionOptions, SetAttr, StandIn, VolumeState, Xattr, XattrFlags,
};
pub use stats::{CommandCounts, SessionStats, OTHER_COMMAND, REDIS_COMMANDS};
pub use telemetry::{EngineTime, Telemetry};
pub use types::{falloc, ConnectionLimit, FallocRange, Footprint, Resized};
pub use url::{Address, MetaUrl, Scheme};

use std::sync::Arc;

/// Connects to the engine a meta URL names (after `META_PASSWORD` handling) and checks it
/// answers. Nothing is written.
pub async fn open(url: &MetaUrl) -> Result<Arc<dyn Engine>> {
    match url.scheme() {
        Scheme::Redis | Scheme::Rediss | Scheme::Unix => redis::open(url).await,
        Scheme::Mysql | Scheme::Postgres | Scheme::Sqlite => sql::open(url).await,
        Scheme::Etcd | Scheme::Tikv | Scheme::Memkv | Scheme::Fdb => tkv::open(url).await,
    }
}
