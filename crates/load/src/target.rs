//! What the runners drive, whatever the system: a [`Target`] opens [`Session`]s, and a
//! session sets up, prepares and makes an operation's calls.
//!
//! A JuiceFS engine is one target (`Arc<dyn Engine>`, its sessions `Box<dyn Meta>` and
//! the operations' states [`OpState`]); a path-level system beside JuiceFS (HDFS, S3) is
//! another, with its own calls for the operations it has. The sweep's levels, windows,
//! timing, recording and self-check are written once, generic over the target, so a
//! call is timed the same way on every system. The traits are generic, not `dyn`: a
//! JuiceFS session's timed call compiles to what it was before the split.

use crate::catalog::{Op, OpState};
use metabench_engine::namespace::remove_tree;
use metabench_engine::EngineTime;
use metabench_engine::{
    ClientState, ConnectionLimit, Ctx, Engine, Meta, Result, SessionOptions, SessionStats,
    Telemetry,
};
use metabench_schema::Ino;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::future::Future;
use std::time::Duration;

/// A system the sweep measures: where its sessions come from, and what it says of
/// itself while a window runs.
pub trait Target: Send + Sync + 'static {
    /// One client's session.
    type Session: Session + 'static;
    /// What a client's workers share (a JuiceFS client's state); `()` when nothing is.
    type Client: Clone + Send + Sync + 'static;

    /// The system's name in failures (`redis`, `hdfs`).
    fn name(&self) -> &str;

    /// Opens a session: one client with a connection of its own.
    fn session<'a>(
        &'a self,
        opts: &'a SessionOptions,
    ) -> impl Future<Output = Result<Self::Session>> + Send + 'a;

    /// What `session`'s other workers share with it.
    fn client_of(session: &Self::Session) -> Self::Client;

    /// Opens one more worker of `client` (see [`Engine::worker`]).
    fn worker<'a>(
        &'a self,
        opts: &'a SessionOptions,
        client: &'a Self::Client,
    ) -> impl Future<Output = Result<Self::Session>> + Send + 'a;

    /// Brings the system to the same starting point before a window, untimed
    /// ([`Engine::settle`]).
    fn settle(&self) -> impl Future<Output = Result<()>> + Send;

    /// The system's own counters now ([`Engine::telemetry`]); empty when it has none.
    fn telemetry(&self) -> impl Future<Output = Result<Telemetry>> + Send;

    /// Why a window's telemetry deltas show the system as the bottleneck, if they do.
    fn engine_bound(&self, delta: &Telemetry, window: Duration, clients: u32) -> Option<String>;

    /// The engine part of an operation's time per call, from the level's telemetry
    /// deltas, the commands it sent per call (Redis) or its in-process engine time per
    /// call (SQLite); unknown unless the system says otherwise.
    fn engine_time(
        &self,
        _delta: &Telemetry,
        _commands_per_call: &std::collections::BTreeMap<String, f64>,
        _in_process_us: Option<f64>,
        _round_trips_per_call: f64,
    ) -> EngineTime {
        EngineTime::Unknown("engine time unknown: this system keeps no per-call time".into())
    }

    /// The system's own limit on client connections now ([`Engine::connection_limit`]);
    /// none for a system without one.
    fn connection_limit(&self) -> impl Future<Output = Result<Option<ConnectionLimit>>> + Send {
        async { Ok(None) }
    }
}

/// One client's session of a [`Target`]: the calls the sweep makes on it.
pub trait Session: Send {
    /// A handle on a directory (an inode, a path); MPI ranks tell each other a shared one.
    type Dir: Clone + Send + Sync + Serialize + DeserializeOwned + 'static;
    /// One operation's working state on this client (names, targets, counters).
    type Work: Send + 'static;

    /// Makes directory `parent/name`, untimed.
    fn mkdir(
        &mut self,
        parent: &Self::Dir,
        name: &str,
    ) -> impl Future<Output = Result<Self::Dir>> + Send;

    /// Removes `parent/name` and all below it, untimed; an absent one is no error.
    fn remove_tree(
        &mut self,
        parent: &Self::Dir,
        name: &str,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The operation's untimed setup in `dir`; every name it uses starts with `tag`.
    /// An operation the system does not have fails here, before any window.
    fn setup(
        &mut self,
        op: Op,
        dir: &Self::Dir,
        tag: &str,
    ) -> impl Future<Output = Result<Self::Work>> + Send;

    /// Makes `work`'s reads draw their targets from `tree` (`--tree`), with random numbers
    /// from `seed`. Only a JuiceFS volume has inode trees to read: any other system says
    /// so.
    fn draw_from(
        &mut self,
        _work: &mut Self::Work,
        _tree: &std::sync::Arc<crate::population::Population>,
        _seed: u64,
    ) -> Result<()> {
        Err(metabench_engine::MetaError::Engine(
            "--tree reads a JuiceFS volume's tree; this system has none".into(),
        ))
    }

    /// The untimed preparation before each timed call.
    fn prepare(&mut self, work: &mut Self::Work) -> impl Future<Output = Result<()>> + Send;

    /// The timed call when the client answers it from its own memory, as a plain
    /// function call with no future (a JuiceFS client's `NewSlice` from its id batch,
    /// `Read` of a cached chunk), which cannot fail: whether it answered; if not, the
    /// call needs [`Session::call`]. Timed as the call itself.
    fn answer_in_client(&mut self, _work: &mut Self::Work) -> bool {
        false
    }

    /// The timed call.
    fn call<'a>(
        &'a mut self,
        work: &'a mut Self::Work,
    ) -> impl Future<Output = Result<()>> + Send + 'a;

    /// What this session has sent so far.
    fn stats(&self) -> SessionStats;

    /// Sends what the client holds (dir stats, counters), untimed.
    fn flush(&mut self) -> impl Future<Output = Result<()>> + Send;

    /// The system's null round trip on this session (the floor); the request's name.
    fn null_round_trip(&mut self) -> impl Future<Output = Result<&'static str>> + Send;

    /// Files deleted whose data this session has not freed yet (JuiceFS only).
    fn deleted_pending(&mut self) -> usize;

    /// Frees the data of this session's deleted files now (JuiceFS only).
    fn free_deleted(&mut self) -> impl Future<Output = Result<()>> + Send;
}

impl Target for dyn Engine {
    type Session = Box<dyn Meta>;
    type Client = ClientState;

    fn name(&self) -> &str {
        self.kind().name()
    }

    // The engine's own boxed futures, handed on: their `Send` is in their type.
    fn session<'a>(
        &'a self,
        opts: &'a SessionOptions,
    ) -> impl Future<Output = Result<Box<dyn Meta>>> + Send + 'a {
        Engine::session(self, opts)
    }

    fn client_of(session: &Box<dyn Meta>) -> ClientState {
        session.client()
    }

    fn worker<'a>(
        &'a self,
        opts: &'a SessionOptions,
        client: &'a ClientState,
    ) -> impl Future<Output = Result<Box<dyn Meta>>> + Send + 'a {
        Engine::worker(self, opts, client)
    }

    fn settle(&self) -> impl Future<Output = Result<()>> + Send {
        Engine::settle(self)
    }

    fn connection_limit(&self) -> impl Future<Output = Result<Option<ConnectionLimit>>> + Send {
        Engine::connection_limit(self)
    }

    fn telemetry(&self) -> impl Future<Output = Result<Telemetry>> + Send {
        Engine::telemetry(self)
    }

    fn engine_bound(&self, delta: &Telemetry, window: Duration, clients: u32) -> Option<String> {
        Engine::engine_bound(self, delta, window, clients)
    }

    fn engine_time(
        &self,
        delta: &Telemetry,
        commands_per_call: &std::collections::BTreeMap<String, f64>,
        in_process_us: Option<f64>,
        round_trips_per_call: f64,
    ) -> EngineTime {
        Engine::engine_time(
            self,
            delta,
            commands_per_call,
            in_process_us,
            round_trips_per_call,
        )
    }
}

// For every lifetime of the trait object, not only `'static`: the compiler proves a
// spawned runner's future `Send` for any lifetime it could name.
impl<'m> Session for Box<dyn Meta + 'm> {
    type Dir = Ino;
    type Work = OpState;

    async fn mkdir(&mut self, parent: &Ino, name: &str) -> Result<Ino> {
        let ctx = Ctx::root();
        let made = Meta::mkdir(self.as_mut(), &ctx, *parent, name.as_bytes(), 0o755, 0).await?;
        Ok(made.0)
    }

    async fn remove_tree(&mut self, parent: &Ino, name: &str) -> Result<()> {
        remove_tree(self.as_mut(), *parent, name.as_bytes()).await
    }

    async fn setup(&mut self, op: Op, dir: &Ino, tag: &str) -> Result<OpState> {
        OpState::setup(op, self.as_mut(), *dir, tag).await
    }

    fn draw_from(
        &mut self,
        work: &mut OpState,
        tree: &std::sync::Arc<crate::population::Population>,
        seed: u64,
    ) -> Result<()> {
        work.draw_from(tree, seed)
    }

    async fn prepare(&mut self, work: &mut OpState) -> Result<()> {
        work.prepare(self.as_mut()).await
    }

    fn answer_in_client(&mut self, work: &mut OpState) -> bool {
        work.answer_in_client(self.as_mut())
    }

    fn call<'a>(
        &'a mut self,
        work: &'a mut OpState,
    ) -> impl Future<Output = Result<()>> + Send + 'a {
        work.call(self.as_mut())
    }

    fn stats(&self) -> SessionStats {
        Meta::stats(self.as_ref())
    }

    async fn flush(&mut self) -> Result<()> {
        Meta::flush(self.as_mut()).await
    }

    async fn null_round_trip(&mut self) -> Result<&'static str> {
        Meta::null_round_trip(self.as_mut()).await
    }

    fn deleted_pending(&mut self) -> usize {
        Meta::deleted_pending(self.as_mut())
    }

    async fn free_deleted(&mut self) -> Result<()> {
        Meta::free_deleted(self.as_mut()).await
    }
}
