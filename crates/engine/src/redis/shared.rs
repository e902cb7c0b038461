//! The engine's shared connection: probe, format, destroy, server facts and the sessions'
//! background inode prefetch, multiplexed by redis-rs. A query that finds it broken (the
//! server restarted, or a Sentinel failover moved the master away) drops it, dials it
//! again through the engine's [`Dialer`] and sends the command once more, so the shared
//! work follows a new master as the sessions' own connections do.

use super::connect::connect;
use super::discovery::Dialer;
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
    /// The connection and its generation (how many were dialled before it), or `None`
    /// after one broke, until the next call dials again.
    con: Mutex<(u64, Option<MultiplexedConnection>)>,
}

impl Shared {
    /// Dials the connection (a one-line reason, never the password, on failure).
    pub(crate) async fn open(url: &MetaUrl, dialer: &Dialer, db: i64) -> Result<Self, String> {
        let con = connect(url, dialer, db).await?;
        Ok(Self(Arc::new(Inner {
            url: url.clone(),
            dialer: dialer.clone(),
            db,
            con: Mutex::new((0, Some(con))),
        })))
    }

    /// The connection, dialled again if the last one broke, and its generation.
    async fn current(&self) -> RedisResult<(u64, MultiplexedConnection)> {
        let mut slot = self.0.con.lock().await;
        if let Some(con) = slot.1.as_ref() {
            return Ok((slot.0, con.clone()));
        }
        let con = connect(&self.0.url, &self.0.dialer, self.0.db)
            .await
            .map_err(|reason| RedisError::from((ErrorKind::Io, "cannot reconnect", reason)))?;
        slot.0 += 1;
        slot.1 = Some(con.clone());
        Ok((slot.0, con))
    }

    /// How many times the connection was dialled again: a command sent under another
    /// generation may have reached another server (a cursor of the last one means
    /// nothing there).
    pub(crate) async fn generation(&self) -> u64 {
        self.0.con.lock().await.0
    }

    /// Sends `cmd`. An error that leaves the connection unusable (I/O, a dropped
    /// connection, a master turned replica: `READONLY`, a Cluster slot that moved: `MOVED`)
    /// drops that connection, and the
    /// command is sent once more on a new one.
    pub(crate) async fn query<T: FromRedisValue>(&self, cmd: &Cmd) -> RedisResult<T> {
        let mut tries = 0;
        loop {
            let (generation, mut con) = self.current().await?;
            let reply = cmd.query_async(&mut con).await;
            match &reply {
                Err(e) if broken(e) => {
                    let mut slot = self.0.con.lock().await;
                    // Only the connection that failed: another caller may have dialled a
                    // new one meanwhile.
                    if slot.0 == generation {
                        slot.1 = None;
                    }
                    tries += 1;
                    if tries == 2 {
                        return reply;
                    }
                }
                _ => return reply,
            }
        }
    }
}

/// Whether `e` leaves the connection unusable.
fn broken(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_unrecoverable_error()
        || matches!(e.code(), Some("READONLY" | "MOVED"))
}
