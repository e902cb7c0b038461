//! The engine's shared connection: probe, format, destroy, server facts and the sessions'
//! background inode prefetch, multiplexed by redis-rs. A call that finds it broken (the
//! server restarted, or a Sentinel failover moved the master away) drops it, and the next
//! call dials it again through the engine's [`Dialer`], so the shared work follows a new
//! master as the sessions' own connections do.

use super::stream::Dialer;
use crate::MetaUrl;
use redis::aio::MultiplexedConnection;
use redis::{Cmd, ErrorKind, FromRedisValue, RedisError, RedisResult};
use std::sync::Arc;
use tokio::sync::Mutex;

/// A handle on the engine's shared connection; clones share it.
#[derive(Clone)]
pub(crate) struct Shared(Arc<Inner>);

struct Inner {
    url: MetaUrl,
    dialer: Dialer,
    db: i64,
    /// The connection, or `None` after one broke (until the next call dials again).
    con: Mutex<Option<MultiplexedConnection>>,
}

impl Shared {
    /// Dials the connection (a one-line reason, never the password, on failure).
    pub(crate) async fn open(url: &MetaUrl, dialer: &Dialer, db: i64) -> Result<Self, String> {
        let con = super::connect(url, dialer, db).await?;
        Ok(Self(Arc::new(Inner {
            url: url.clone(),
            dialer: dialer.clone(),
            db,
            con: Mutex::new(Some(con)),
        })))
    }

    /// The connection, dialled again if the last one broke.
    pub(crate) async fn connection(&self) -> RedisResult<MultiplexedConnection> {
        let mut slot = self.0.con.lock().await;
        if let Some(con) = slot.as_ref() {
            return Ok(con.clone());
        }
        let con = super::connect(&self.0.url, &self.0.dialer, self.0.db)
            .await
            .map_err(|reason| RedisError::from((ErrorKind::Io, "cannot reconnect", reason)))?;
        *slot = Some(con.clone());
        Ok(con)
    }

    /// Sends `cmd`; an error that leaves the connection unusable (I/O, a dropped
    /// connection, a master turned replica: `READONLY`) drops it first.
    pub(crate) async fn query<T: FromRedisValue>(&self, cmd: &Cmd) -> RedisResult<T> {
        let mut con = self.connection().await?;
        let reply = cmd.query_async(&mut con).await;
        if let Err(e) = &reply {
            if e.is_io_error()
                || e.is_connection_dropped()
                || e.is_unrecoverable_error()
                || e.code() == Some("READONLY")
            {
                *self.0.con.lock().await = None;
            }
        }
        reply
    }
}
