//! A connection that counts its round trips, and the optimistic transaction helper
//! (`redis.go: txn` on top of go-redis `Watch`).
//!
//! The transaction shape is JuiceFS's: `WATCH k1..kn` (1 RTT), the reads one RTT each,
//! `MULTI … EXEC` sent as one pipelined request (1 RTT), then `UNWATCH` (1 RTT), which
//! go-redis sends whenever the transaction closes, after EXEC and after an error alike.
//! A nil EXEC is retried up to [`MAX_TRIES`](crate::retry::MAX_TRIES) times with a random
//! sleep of 0..(i+1)² ms, as `redisMeta.txn` does.

use super::connect::connect_node;
use super::discovery::Dialer;
use super::wire::{Request, Wire};
use crate::stats::{CommandCounts, REDIS_COMMANDS};
use crate::{MetaError, MetaUrl};
use redis::{Cmd, FromRedisValue, Pipeline, RedisError, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::{Mutex, MutexGuard};

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
    /// Top-level commands sent, by [`crate::stats::REDIS_COMMANDS`] slot.
    commands: Arc<[AtomicU64; REDIS_COMMANDS.len() + 1]>,
    /// On a Cluster: how to reach the node a MOVED answer names.
    moves: Option<Arc<(MetaUrl, Dialer)>>,
    /// Between a WATCH and the transaction's end: a MOVED then restarts the transaction
    /// on the new node instead of sending the one command again.
    watching: Arc<AtomicBool>,
    /// Set when a MOVED inside a transaction was followed: the transaction runs again
    /// from its WATCH on the new node, which is no conflict ([`txn!`]).
    redirected: Arc<AtomicBool>,
}

/// What became of a MOVED answer ([`Conn::follow`]).
enum Moved {
    /// Not a MOVED this connection follows.
    No,
    /// Followed: the connection reaches the node named; `resend` when the whole request
    /// may be sent again there (every command of it was answered MOVED, so none ran).
    Followed { resend: bool },
    /// The node named could not be reached (why).
    Unreachable(String),
}

/// The node a MOVED answer names (`MOVED slot host:port`, alone or among a pipeline's
/// answers), and how many of the request's commands were answered MOVED.
fn moved_to(e: &RedisError) -> Option<(String, u16, usize)> {
    let errors = e.clone().into_server_errors()?;
    let moved: Vec<&redis::ServerError> = errors
        .iter()
        .map(|(_, err)| err)
        .filter(|err| err.code() == "MOVED")
        .collect();
    let details = moved.first()?.details()?;
    let addr = details.split_ascii_whitespace().nth(1)?;
    let (host, port) = addr.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some((host.to_owned(), port.parse().ok()?, moved.len()))
}

/// go-redis's pause before a redirected pipeline or transaction: `RetryBackoff(1,
/// MinRetryBackoff, MaxRetryBackoff)` with JuiceFS's defaults (20 ms, 10 s), a random
/// 20–60 ms.
fn redirect_backoff() -> std::time::Duration {
    std::time::Duration::from_micros(20_000 + rand::random_range(0..40_000))
}

impl Conn {
    /// Wraps a connection with a fresh counter.
    pub(crate) fn new(wire: Wire) -> Self {
        Self {
            wire: Arc::new(Mutex::new(wire)),
            round_trips: Arc::new(AtomicU64::new(0)),
            commands: Arc::new(std::array::from_fn(|_| AtomicU64::new(0))),
            moves: None,
            watching: Arc::new(AtomicBool::new(false)),
            redirected: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A Cluster session's connection, which follows a MOVED answer as go-redis's
    /// ClusterClient does (MaxRedirects 1): it connects to the node named and sends the
    /// request there once more (a pipeline after go-redis's redirect backoff); inside a
    /// transaction (from its WATCH to its end), the transaction runs again there, after
    /// the backoff.
    pub(crate) fn following_moves(mut self, url: MetaUrl, dialer: Dialer) -> Self {
        self.moves = Some(Arc::new((url, dialer)));
        self
    }

    /// Whether the last transaction attempt ended because a MOVED was followed (and
    /// clears it).
    pub(crate) fn take_redirect(&self) -> bool {
        self.redirected.swap(false, Ordering::Relaxed)
    }

    /// [`Conn::follow_move`], boxed: a MOVED is rare, and its dial (a TLS handshake
    /// among it) would otherwise sit inside the future of every request, which the
    /// session's boxed call futures copy whole.
    fn follow<'a>(
        &'a self,
        wire: &'a mut Wire,
        e: &'a RedisError,
        commands: usize,
        pipeline: bool,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Moved> + Send + 'a>> {
        Box::pin(self.follow_move(wire, e, commands, pipeline))
    }

    /// After `e` to a request of `commands` commands (a `pipeline`, or one command): when it
    /// is a MOVED this connection follows, replaces `wire` by a connection to the node it
    /// names.
    async fn follow_move(
        &self,
        wire: &mut Wire,
        e: &RedisError,
        commands: usize,
        pipeline: bool,
    ) -> Moved {
        let Some((url, dialer)) = self.moves.as_deref() else {
            return Moved::No;
        };
        let Some((host, port, moved)) = moved_to(e) else {
            return Moved::No;
        };
        match connect_node(url, dialer, &host, port).await {
            Ok(fresh) => *wire = fresh,
            Err(reason) => {
                return Moved::Unreachable(format!(
                    "redis: MOVED to {host}:{port}, which could not be reached: {reason}"
                ))
            }
        }
        // go-redis v9.18 waits its retry backoff before a redirected pipeline and before
        // running a transaction again (ClusterClient.Watch), but sends a single command
        // to the node named at once (ClusterClient.process).
        if pipeline || self.watching.load(Ordering::Relaxed) {
            tokio::time::sleep(redirect_backoff()).await;
        }
        if self.watching.swap(false, Ordering::Relaxed) {
            self.redirected.store(true, Ordering::Relaxed);
            return Moved::Followed { resend: false };
        }
        Moved::Followed {
            resend: moved == commands,
        }
    }

    /// The error of request `e` after [`Conn::follow`] said `moved` and the request is not
    /// sent again.
    fn after_move(&self, e: RedisError, moved: Moved) -> TxErr {
        match moved {
            Moved::No => classify(e),
            Moved::Unreachable(why) => TxErr::Meta(MetaError::Engine(why)),
            // Inside a transaction: it runs again from its WATCH on the new node.
            Moved::Followed { .. } if self.redirected.load(Ordering::Relaxed) => {
                TxErr::Retry(format!("redis: {e} (followed to the slot's new primary)"))
            }
            Moved::Followed { .. } => TxErr::Meta(MetaError::Engine(format!(
                "redis: {e}; part of the pipeline ran before the slot moved, so it is not sent \
                 again"
            ))),
        }
    }

    /// The connection, at once when no other request of the session holds it (always,
    /// but for a session's own concurrent requests): no wait queue entered.
    async fn lock(&self) -> MutexGuard<'_, Wire> {
        match self.wire.try_lock() {
            Ok(wire) => wire,
            Err(_) => self.wire.lock().await,
        }
    }

    /// Requests sent so far.
    pub(crate) fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    /// Top-level commands sent so far, by name.
    pub(crate) fn commands(&self) -> CommandCounts {
        let mut counts = CommandCounts::default();
        for (n, c) in counts.0.iter_mut().zip(self.commands.iter()) {
            *n = c.load(Ordering::Relaxed);
        }
        counts
    }

    /// Counts one top-level command named `name`.
    fn count(&self, name: &[u8]) {
        self.commands[CommandCounts::slot(name)].fetch_add(1, Ordering::Relaxed);
    }

    /// Sends one command and waits for its answer (1 RTT).
    pub(crate) async fn query<T: FromRedisValue>(
        &mut self,
        cmd: &(impl Request + ?Sized),
    ) -> Result<T, TxErr> {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        self.count(cmd.name());
        let mut wire = self.lock().await;
        match wire.query(cmd).await {
            Ok(v) => Ok(v),
            Err(e) => match self.follow(&mut wire, &e, 1, false).await {
                Moved::Followed { resend: true } => {
                    self.round_trips.fetch_add(1, Ordering::Relaxed);
                    self.count(cmd.name());
                    wire.query(cmd).await.map_err(classify)
                }
                moved => Err(self.after_move(e, moved)),
            },
        }
    }

    /// Sends one command (1 RTT) and returns the server's answer as it came, an error
    /// reply included: a Lua script's errors carry an errno word.
    pub(crate) async fn query_raw<T: FromRedisValue>(
        &mut self,
        cmd: &Cmd,
    ) -> redis::RedisResult<T> {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        self.count(super::wire::cmd_name(cmd));
        let mut wire = self.lock().await;
        wire.query(cmd).await
    }

    /// Sends a plain (non-transactional) pipeline as one request (1 RTT). When every
    /// command of it was answered MOVED, it is sent again on the new node (as go-redis
    /// resends a pipeline's redirected commands); when only some were, the others ran on
    /// the old node, and the call fails rather than run them twice.
    pub(crate) async fn pipeline<T: FromRedisValue>(&mut self, p: &Pipeline) -> Result<T, TxErr> {
        self.send_pipeline(p, 1).await
    }

    /// [`Conn::pipeline`], counted as `requests` round trips (each again on a resend).
    async fn send_pipeline<T: FromRedisValue>(
        &mut self,
        p: &Pipeline,
        requests: u64,
    ) -> Result<T, TxErr> {
        self.round_trips.fetch_add(requests, Ordering::Relaxed);
        for c in p.cmd_iter() {
            self.count(super::wire::cmd_name(c));
        }
        let mut wire = self.lock().await;
        match p.query_async(&mut *wire).await {
            Ok(v) => Ok(v),
            Err(e) => match self.follow(&mut wire, &e, p.len(), true).await {
                Moved::Followed { resend: true } => {
                    self.round_trips.fetch_add(requests, Ordering::Relaxed);
                    p.query_async(&mut *wire).await.map_err(classify)
                }
                moved => Err(self.after_move(e, moved)),
            },
        }
    }

    /// Sends two commands at once and waits for both answers (2 requests, counted as 2
    /// round trips, overlapping as two goroutines' requests would).
    pub(crate) async fn query_two<A: FromRedisValue, B: FromRedisValue>(
        &mut self,
        first: &Cmd,
        second: &Cmd,
    ) -> Result<(A, B), TxErr> {
        let mut p = redis::pipe();
        p.add_command(first.clone()).add_command(second.clone());
        self.send_pipeline(&p, 2).await
    }

    /// Sends `MULTI … EXEC` as one request (1 RTT) and returns the replies of the queued
    /// commands. A nil EXEC (a watched key changed) is [`TxErr::Retry`].
    pub(crate) async fn exec(&mut self, p: &Pipeline) -> Result<Vec<Value>, TxErr> {
        debug_assert!(p.is_transaction());
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        // Redis times the queued commands inside EXEC's own time: MULTI and EXEC alone
        // are the top-level commands.
        self.count(b"multi");
        self.count(b"exec");
        let reply = {
            let mut wire = self.lock().await;
            match p.query_async::<Value>(&mut *wire).await {
                // Followed or not, a transaction is never sent again by itself.
                Err(e) => {
                    let moved = self.follow(&mut wire, &e, p.len(), true).await;
                    return Err(self.after_move(e, moved));
                }
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
        // From here on, a MOVED runs the transaction again (go-redis's ClusterClient.Watch
        // re-runs it on the node named, the WATCH's own MOVED included).
        self.watching.store(true, Ordering::Relaxed);
        self.query::<()>(redis::cmd("WATCH").arg(keys)).await
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
        let mut redirected = false;
        // When the attempt in progress started: an attempt that conflicts is retry waste.
        let mut tried = ::std::time::Instant::now();
        loop {
            let mut $c = $sess.conn.clone();
            let sent = $c.round_trips();
            let r: ::std::result::Result<_, $crate::redis::txn::TxErr> = async {
                $c.watch(&keys).await?;
                $body
            }
            .await;
            $c.unwatch().await;
            match r {
                Ok(v) => break Ok(v),
                Err($crate::redis::txn::TxErr::Meta(e)) => break Err(e),
                // A MOVED followed: once more on the new node, which is no conflict
                // (ClusterClient.Watch, MaxRedirects 1; the backoff was waited).
                Err($crate::redis::txn::TxErr::Retry(msg)) if $c.take_redirect() => {
                    if redirected {
                        break Err($crate::MetaError::Engine(msg));
                    }
                    redirected = true;
                }
                Err($crate::redis::txn::TxErr::Retry(msg)) => {
                    if let Err(e) = $crate::retry::after_conflict(&mut attempt, "redis", &msg).await
                    {
                        break Err(e);
                    }
                    $sess.retries += 1;
                    $sess.retry_waste_ns += $crate::retry::wasted_since(&mut tried);
                    $sess.retried_round_trips += $sess.conn.round_trips() - sent;
                }
            }
        }
    }};
}

pub(crate) use txn;
