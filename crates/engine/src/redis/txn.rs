//! A connection that counts its round trips, and the optimistic transaction helper
//! (`redis.go: txn` on top of go-redis `Watch`).
//!
//! The transaction shape is JuiceFS's: `WATCH k1..kn` (1 RTT), the reads one RTT each,
//! `MULTI … EXEC` sent as one pipelined request (1 RTT), then `UNWATCH` (1 RTT), which
//! go-redis sends whenever the transaction closes, after EXEC and after an error alike.
//! A nil EXEC is retried up to [`MAX_TRIES`](crate::retry::MAX_TRIES) times with a random
//! sleep of 0..(i+1)² ms, as `redisMeta.txn` does.

use super::stream::Dialer;
use super::wire::Wire;
use crate::{MetaError, MetaUrl};
use redis::{Cmd, FromRedisValue, Pipeline, RedisError, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::Mutex;

pub(crate) use crate::retry::TxErr;

/// Classifies a Redis error as `shouldRetry` does (without `retryOnFailure`): server
/// states that pass (LOADING, READONLY, TRYAGAIN, EXECABORT, …) are retried, anything
/// else (including I/O errors and timeouts) is final. A Cluster's MOVED that the
/// connection could not follow ([`Conn::following_moves`]), or an ASK, is final too: the
/// session must reconnect.
pub(crate) fn classify(e: RedisError) -> TxErr {
    let msg = e.to_string();
    let retry = matches!(
        e.code(),
        Some("LOADING" | "READONLY" | "CLUSTERDOWN" | "TRYAGAIN" | "EXECABORT")
    ) || msg.contains("max number of clients reached")
        || msg.contains("EXECABORT");
    if retry {
        TxErr::Retry(msg)
    } else {
        TxErr::Meta(MetaError::Engine(format!("redis: {msg}")))
    }
}

/// One session's connection. Clones share the TCP connection (and therefore its WATCH
/// state) and the round-trip counter. A request is sent and answered on the calling task
/// ([`Wire`]); the lock is only ever contended by a session's own concurrent requests.
#[derive(Clone)]
pub(crate) struct Conn {
    wire: Arc<Mutex<Wire>>,
    round_trips: Arc<AtomicU64>,
    /// On a Cluster: how to reach the node a MOVED answer names.
    moves: Option<Arc<(MetaUrl, Dialer)>>,
    /// Between a WATCH and the transaction's end: a MOVED then restarts the transaction
    /// on the new node instead of sending the one command again.
    watching: Arc<AtomicBool>,
}

impl Conn {
    /// Wraps a connection with a fresh counter.
    pub(crate) fn new(wire: Wire) -> Self {
        Self {
            wire: Arc::new(Mutex::new(wire)),
            round_trips: Arc::new(AtomicU64::new(0)),
            moves: None,
            watching: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A Cluster session's connection, which follows a MOVED answer as go-redis's
    /// ClusterClient does: it connects to the node named and sends the command there once
    /// more (one more round trip), or, inside a transaction, runs the transaction again
    /// there from its WATCH.
    pub(crate) fn following_moves(mut self, url: MetaUrl, dialer: Dialer) -> Self {
        self.moves = Some(Arc::new((url, dialer)));
        self
    }

    /// After `e`: when it is a MOVED this connection follows, replaces `wire` by a
    /// connection to the node it names and says whether the command should be sent again
    /// (`Some(true)`; `Some(false)` inside a transaction); `None` leaves `e` as it is.
    async fn follow(&self, wire: &mut Wire, e: &RedisError) -> Option<bool> {
        let (url, dialer) = self.moves.as_deref()?;
        if e.code() != Some("MOVED") {
            return None;
        }
        let (addr, _slot) = e.redirect_node()?;
        let (host, port) = addr.rsplit_once(':')?;
        let port: u16 = port.parse().ok()?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        *wire = super::connect_node(url, dialer, host, port).await.ok()?;
        Some(!self.watching.swap(false, Ordering::Relaxed))
    }

    /// The error for a MOVED followed inside a transaction: run it again on the new node.
    fn moved_retry(e: &RedisError) -> TxErr {
        TxErr::Retry(format!("redis: {e} (followed to the slot's new primary)"))
    }

    /// Requests sent so far.
    pub(crate) fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    /// Sends one command and waits for its answer (1 RTT).
    pub(crate) async fn query<T: FromRedisValue>(&mut self, cmd: &Cmd) -> Result<T, TxErr> {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        let mut wire = self.wire.lock().await;
        match cmd.query_async(&mut *wire).await {
            Err(e) => match self.follow(&mut wire, &e).await {
                Some(true) => {
                    self.round_trips.fetch_add(1, Ordering::Relaxed);
                    cmd.query_async(&mut *wire).await.map_err(classify)
                }
                Some(false) => Err(Self::moved_retry(&e)),
                None => Err(classify(e)),
            },
            Ok(v) => Ok(v),
        }
    }

    /// Sends one command (1 RTT) and returns the server's answer as it came, an error
    /// reply included: a Lua script's errors carry an errno word.
    pub(crate) async fn query_raw<T: FromRedisValue>(
        &mut self,
        cmd: &Cmd,
    ) -> redis::RedisResult<T> {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        let mut wire = self.wire.lock().await;
        cmd.query_async(&mut *wire).await
    }

    /// Sends a plain (non-transactional) pipeline as one request (1 RTT).
    pub(crate) async fn pipeline<T: FromRedisValue>(&mut self, p: &Pipeline) -> Result<T, TxErr> {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        let mut wire = self.wire.lock().await;
        match p.query_async(&mut *wire).await {
            Err(e) => match self.follow(&mut wire, &e).await {
                Some(true) => {
                    self.round_trips.fetch_add(1, Ordering::Relaxed);
                    p.query_async(&mut *wire).await.map_err(classify)
                }
                Some(false) => Err(Self::moved_retry(&e)),
                None => Err(classify(e)),
            },
            Ok(v) => Ok(v),
        }
    }

    /// Sends two commands at once and waits for both answers (2 requests, counted as 2
    /// round trips, overlapping as two goroutines' requests would).
    pub(crate) async fn query_two<A: FromRedisValue, B: FromRedisValue>(
        &mut self,
        first: &Cmd,
        second: &Cmd,
    ) -> Result<(A, B), TxErr> {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        let mut p = redis::pipe();
        p.add_command(first.clone()).add_command(second.clone());
        self.pipeline(&p).await
    }

    /// Sends `MULTI … EXEC` as one request (1 RTT) and returns the replies of the queued
    /// commands. A nil EXEC (a watched key changed) is [`TxErr::Retry`].
    pub(crate) async fn exec(&mut self, p: &Pipeline) -> Result<Vec<Value>, TxErr> {
        debug_assert!(p.is_transaction());
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        let reply = {
            let mut wire = self.wire.lock().await;
            match p.query_async::<Value>(&mut *wire).await {
                // Followed or not, a transaction is never sent again by itself.
                Err(e) => match self.follow(&mut wire, &e).await {
                    Some(_) => return Err(Self::moved_retry(&e)),
                    None => return Err(classify(e)),
                },
                Ok(v) => v,
            }
        };
        match reply {
            Value::Nil => Err(TxErr::Retry(
                "redis: transaction failed (a watched key changed)".into(),
            )),
            Value::Array(items) => Ok(items),
            other => Err(TxErr::Meta(MetaError::Engine(format!(
                "redis: unexpected EXEC reply {other:?}"
            )))),
        }
    }

    /// `WATCH keys…` (1 RTT).
    pub(crate) async fn watch(&mut self, keys: &[String]) -> Result<(), TxErr> {
        self.query::<()>(redis::cmd("WATCH").arg(keys)).await?;
        self.watching.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// `UNWATCH` (1 RTT). Its failure is ignored, as go-redis ignores it.
    pub(crate) async fn unwatch(&mut self) {
        self.watching.store(false, Ordering::Relaxed);
        let _ = self.query::<()>(&redis::cmd("UNWATCH")).await;
    }
}

/// Runs `$body` as one JuiceFS Redis transaction on `$sess.conn`, holding the client's
/// transaction lock of the first key (`txLock`): `WATCH $keys`, the body
/// (reads, then usually one [`Conn::exec`]), then `UNWATCH`, retrying on
/// [`TxErr::Retry`] as `redisMeta.txn` does. `$c` names the connection inside the body;
/// the body is an async block whose value is `Result<T, TxErr>`. Evaluates to
/// `crate::Result<T>`.
macro_rules! txn {
    ($sess:expr, $keys:expr, |$c:ident| $body:block) => {{
        let keys: Vec<String> = $keys;
        // `txLock` on the hash of the first key, held through every try.
        let _locked = $sess
            .base
            .tx_lock(match keys.first() {
                Some(k) => $crate::base::TxLock::Key(k),
                None => $crate::base::TxLock::None,
            })
            .await;
        let mut attempt: u32 = 0;
        loop {
            let mut $c = $sess.conn.clone();
            let r: ::std::result::Result<_, $crate::redis::txn::TxErr> = async {
                $c.watch(&keys).await?;
                $body
            }
            .await;
            $c.unwatch().await;
            match r {
                Ok(v) => break Ok(v),
                Err($crate::redis::txn::TxErr::Meta(e)) => break Err(e),
                Err($crate::redis::txn::TxErr::Retry(msg)) => {
                    if let Err(e) = $crate::retry::after_conflict(&mut attempt, "redis", &msg).await
                    {
                        break Err(e);
                    }
                    $sess.retries += 1;
                }
            }
        }
    }};
}

pub(crate) use txn;
