//! The operations of a JuiceFS client, as one async trait per engine session ([`Meta`]),
//! and the engine a session is opened on ([`Engine`]). Their value types are in
//! [`crate::types`] (re-exported here, as they were defined here before).

pub use crate::types::{
    ChunkWrite, ClientProfile, Ctx, EngineKind, Entry, Made, NewNode, Rename, Renamed, ServerInfo,
    SessionOptions, SetAttr, StandIn, VolumeState, Xattr, XattrFlags,
};
use crate::{MetaError, MetaUrl, Result, SessionStats};
use async_trait::async_trait;
use metabench_schema::{Attr, FileType, Format, Ino, Slice, Timestamp};
use std::sync::Arc;

/// One JuiceFS client's view of a volume: the operations of `pkg/meta/benchmarks_test.go`.
///
/// A session is used by one task at a time and owns its connection (a Redis connection
/// that can carry WATCH, an SQL connection or pool), so it takes `&mut self`.
/// Each call sends exactly what the JuiceFS client sends for it (`pkg/meta/base.go` and
/// the engine's `redis.go`, `sql.go` or `tkv.go`).
///
/// The client logic is written once, in `crate::base`: every family's session gets this
/// trait from its [`crate::Storage`] steps, as JuiceFS's `baseMeta` implements `Meta` over each
/// engine's `do*` methods.
#[async_trait]
pub trait Meta: Send {
    /// Creates a directory (`Mkdir`).
    async fn mkdir(
        &mut self,
        ctx: &Ctx,
        parent: Ino,
        name: &[u8],
        mode: u16,
        umask: u16,
    ) -> Result<(Ino, Attr)>;

    /// Creates a file, device, fifo or socket node (`Mknod`); a symlink needs a target,
    /// so it is EINVAL here (use `symlink`).
    #[allow(clippy::too_many_arguments)]
    async fn mknod(
        &mut self,
        ctx: &Ctx,
        parent: Ino,
        name: &[u8],
        typ: FileType,
        mode: u16,
        umask: u16,
        rdev: u32,
    ) -> Result<(Ino, Attr)>;

    /// Creates and opens a regular file (`Create` = `Mknod` + open-file registration,
    /// which costs no I/O). With flags 0, as the Go benchmark calls it: an existing
    /// regular file is no error (no `O_EXCL`), its inode and attributes are returned.
    async fn create(
        &mut self,
        ctx: &Ctx,
        parent: Ino,
        name: &[u8],
        mode: u16,
        umask: u16,
    ) -> Result<(Ino, Attr)>;

    /// Creates a symbolic link (`Symlink`): EINVAL for an empty target, one longer than
    /// 4096 bytes or one holding a NUL byte.
    async fn symlink(
        &mut self,
        ctx: &Ctx,
        parent: Ino,
        name: &[u8],
        target: &[u8],
    ) -> Result<(Ino, Attr)>;

    /// Adds a hard link to `ino` (`Link`).
    async fn link(&mut self, ctx: &Ctx, ino: Ino, parent: Ino, name: &[u8]) -> Result<Attr>;

    /// Removes a non-directory entry (`Unlink`). Freeing the file's data happens later,
    /// in [`Meta::flush`], as JuiceFS does it in the background.
    async fn unlink(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<()>;

    /// Removes an empty directory (`Rmdir`).
    async fn rmdir(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<()>;

    /// Moves an entry (`Rename`, flags 0 = replace allowed): `baseMeta.Rename`'s checks
    /// and quota walks, then the family's `doRename`.
    #[allow(clippy::too_many_arguments)]
    async fn rename(
        &mut self,
        ctx: &Ctx,
        parent_src: Ino,
        name_src: &[u8],
        parent_dst: Ino,
        name_dst: &[u8],
        flags: u32,
    ) -> Result<(Ino, Attr)>;

    /// Finds a name in a directory (`Lookup`, no permission check).
    async fn lookup(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<(Ino, Attr)>;

    /// Resolves a relative path in one call (`Resolve`). JuiceFS answers ENOTSUP unless the
    /// Redis Lua scripts are loaded by a mounted session, so metabench does too.
    async fn resolve(&mut self, _ctx: &Ctx, _parent: Ino, _path: &[u8]) -> Result<(Ino, Attr)>;

    /// Reads attributes (`GetAttr`).
    async fn getattr(&mut self, ino: Ino) -> Result<Attr>;

    /// Changes attributes (`SetAttr`).
    async fn setattr(&mut self, ctx: &Ctx, ino: Ino, set: &SetAttr) -> Result<Attr>;

    /// Checks permission (`baseMeta.Access`): root is allowed without I/O; anyone else
    /// costs a `GetAttr` and a mode check.
    async fn access(&mut self, ctx: &Ctx, ino: Ino, mask: u16) -> Result<()>;

    /// Lists a directory (`Readdir`), with attributes when `plus`.
    async fn readdir(&mut self, ctx: &Ctx, ino: Ino, plus: bool) -> Result<Vec<Entry>>;

    /// Lists a directory to its end as a JuiceFS 1.4 mount reads it: `NewDirHandler`,
    /// then `DirHandler.List` page by page (`DirBatchNum` entries a page where the engine
    /// pages). The number of entries listed, `.` and `..` among them; the pages are not
    /// kept, so a directory of any size lists in bounded memory where the engine pages.
    async fn list_dir(&mut self, ctx: &Ctx, ino: Ino, plus: bool) -> Result<u64>;

    /// Sets an extended attribute (`baseMeta.SetXattr`: an empty name is EINVAL).
    async fn setxattr(
        &mut self,
        ino: Ino,
        name: &[u8],
        value: &[u8],
        flags: XattrFlags,
    ) -> Result<()>;

    /// Reads an extended attribute (`GetXattr`).
    async fn getxattr(&mut self, ino: Ino, name: &[u8]) -> Result<Vec<u8>>;

    /// Removes an extended attribute (`baseMeta.RemoveXattr`: an empty name is EINVAL).
    async fn removexattr(&mut self, ino: Ino, name: &[u8]) -> Result<()>;

    /// Lists extended attribute names (`ListXattr`).
    async fn listxattr(&mut self, ino: Ino) -> Result<Vec<Vec<u8>>>;

    /// Reads a symlink target (`ReadLink`).
    async fn readlink(&mut self, ino: Ino) -> Result<Vec<u8>>;

    /// Allocates a slice id (`NewSlice`): one counter round trip per 4096 ids, as JuiceFS.
    async fn new_slice(&mut self) -> Result<u64>;

    /// `NewSlice` while the client's batch lasts: the id at once, with no future to box
    /// (Go's call is a plain function call). `None` once the batch is used up: then
    /// [`Meta::new_slice`] fetches the next batch.
    fn take_slice_id(&mut self) -> Option<u64>;

    /// Appends a slice record to chunk `indx` of a file (`Write`).
    async fn write(&mut self, ino: Ino, indx: u32, slice: Slice, mtime: Timestamp) -> Result<()>;

    /// Reads the slice records of chunk `indx` (`Read`), as stored (no overlay).
    async fn read(&mut self, ino: Ino, indx: u32) -> Result<Vec<Slice>>;

    /// `Read` answered from the client's chunk cache (`--client-cache`): the slices at
    /// once, shared and with no future to box, as Go hands out its cached slice. `None`
    /// when the chunk is not cached: then [`Meta::read`].
    fn read_cached(&self, ino: Ino, indx: u32) -> Option<Arc<[Slice]>>;

    /// Sets a file's length (`Truncate` as a truncate by path makes it: flags 0, the
    /// permission checked), appending holes over the range that changed. EFBIG from
    /// `ChunkSize << 31` bytes on, as the VFS refuses it. Returns the new attribute.
    async fn truncate(&mut self, ctx: &Ctx, ino: Ino, length: u64) -> Result<Attr>;

    /// `Fallocate(mode, off, size)` with the [`crate::falloc`] mode bits: grows the file
    /// to `off + size` unless KEEP_SIZE, and with ZERO_RANGE or PUNCH_HOLE appends holes
    /// over the range. Returns the file's length after it.
    async fn fallocate(&mut self, ctx: &Ctx, ino: Ino, range: crate::FallocRange) -> Result<u64>;

    /// Does what a JuiceFS client does in the background: flushes buffered dir stats and
    /// volume counters (`flushDirStat`, `flushStats`: every second on a mount), and frees
    /// the data of deleted files.
    async fn flush(&mut self) -> Result<()>;

    /// The session id: 0 unless registered ([`SessionOptions::register`]).
    fn sid(&mut self) -> u64;

    /// This session's client, shared with the client's other workers; [`Engine::worker`]
    /// opens one more of them.
    fn client(&self) -> crate::ClientState;

    /// `CloseSession`: the background work once more, then the session record removed
    /// (`doCleanStaleSession`) when one was registered. The session stays usable with
    /// sid 0 (on Redis its loaded scripts stay in use). The record is the client's: with
    /// several workers ([`Engine::worker`]), closing any of them closes it for all, so
    /// close one once the others are done.
    async fn close(&mut self) -> Result<()>;

    /// `doCleanStaleSession` of session `sid` (another client's, or one of this engine's
    /// that was never closed): its locks and sustained inodes released, its record removed.
    async fn clean_session(&mut self, sid: u64) -> Result<()>;

    /// Deleted files of this session whose data is not freed yet.
    fn deleted_pending(&mut self) -> usize;

    /// Frees the data of this session's deleted files now, as a mounted client does right
    /// after the commit that deleted them (`fileDeleted` → `tryDeleteFileData`); the rest
    /// of the background work waits for [`Meta::flush`].
    async fn free_deleted(&mut self) -> Result<()>;

    /// The engine's null round trip on this session's connection: Redis `PING`, SQL
    /// `SELECT 1` (text protocol, one round trip), a KV get of a key that never exists.
    /// It costs what the transport and the engine's request loop cost, the floor under
    /// every operation; runs measure it through the same client path as the operations.
    /// Returns what it sent, e.g. `"PING"`.
    async fn null_round_trip(&mut self) -> Result<&'static str>;

    /// What this session has sent so far.
    fn stats(&self) -> SessionStats;
}

/// Where a session's background work runs, the same for every family (a line of their
/// `fidelity_notes`).
pub(crate) const BACKGROUND_WORK_NOTE: &str =
    "Background work (dir-stat flush, counter flush, freeing the data of deleted files) runs \
         where the client profile puts it: once after the timed window (`gobench`), or between \
         each client's calls while the window runs (`mount`: flushes every second, a deleted \
         file's data freed right after the call that deleted it). JuiceFS runs it on its own \
         goroutines and connections, concurrently with the calls; a metabench client pauses its \
         calls for it. Each sweep level reports its passes, round trips and client time apart; \
         `ops` runs it untimed between calls, `parity`'s native side between phases. Files \
         queued by a session that a failure replaced are not freed by its successor. Under \
         `mount`, at most 8 of one metabench process's sessions write their session records \
         (registration, heartbeat) at once, where JuiceFS's mounts, each its own process, never \
         wait on one another: a heartbeat that finds no turn goes at its client's next \
         background pass, so at thousands of clients heartbeats run late (each level counts \
         those sent).";

/// `NewClient` → `Load` for a family that keeps no change log of its own: the volume's
/// setting as read from the engine (`None`: not formatted), checked as JuiceFS checks it,
/// and refused when it asks for a change log metabench does not write.
pub(crate) fn loaded_format(setting: Option<Vec<u8>>, url: &MetaUrl) -> Result<Format> {
    let body = setting.ok_or_else(|| {
        MetaError::Engine(format!(
            "{} is not formatted: run `juicefs format` or `metabench format` first",
            url.redacted()
        ))
    })?;
    let format = Format::from_json(&body).map_err(MetaError::Engine)?;
    format.check_version().map_err(MetaError::Engine)?;
    if format.extra.get("ChangeLog") == Some(&serde_json::Value::Bool(true)) {
        return Err(MetaError::Engine(
            "volumes with ChangeLog enabled are not supported by metabench yet".into(),
        ));
    }
    Ok(format)
}

/// What Redis and TKV check of a setting before they format with it: a name and a
/// positive block size (EINVAL otherwise), and a version this client can work on
/// (`Format.CheckVersion`).
pub(crate) fn check_new_format(format: &Format) -> Result<()> {
    if format.name.is_empty() || format.block_size <= 0 {
        return Err(MetaError::Invalid);
    }
    format.check_version().map_err(MetaError::Engine)
}

/// `juicefs destroy`'s guard, the same for every engine: the URL must hold the volume
/// with this UUID, or nothing is deleted.
pub(crate) async fn check_destroy<E: Engine + ?Sized>(engine: &E, uuid: &str) -> Result<()> {
    let url = engine.url().redacted();
    match engine.probe().await? {
        VolumeState::Volume(f) if f.uuid == uuid => Ok(()),
        VolumeState::Volume(f) => Err(MetaError::Engine(format!(
            "refusing to destroy {url}: it holds volume {} (UUID {}), not UUID {uuid}",
            f.name, f.uuid
        ))),
        VolumeState::Empty => Err(MetaError::Engine(format!(
            "refusing to destroy {url}: it holds no JuiceFS volume"
        ))),
        VolumeState::Foreign(why) => Err(MetaError::Engine(format!(
            "refusing to destroy {url}: {why}"
        ))),
    }
}

/// A metadata engine reached through a meta URL. Shared by all sessions of a run.
#[async_trait]
pub trait Engine: Send + Sync {
    /// The engine family.
    fn kind(&self) -> EngineKind;

    /// The URL it was opened with (print it: its password is redacted).
    fn url(&self) -> &MetaUrl;

    /// Looks at what the database holds. Reads only.
    async fn probe(&self) -> Result<VolumeState>;

    /// Writes a new volume as `juicefs format` does: tables (SQL), the setting record, the
    /// root inode, counters, and the trash inode when `trash_days > 0`. The caller must
    /// have seen [`VolumeState::Empty`]; formatting refuses anything else.
    async fn format(&self, format: &Format) -> Result<()>;

    /// Removes a volume this run formatted: its keys (Redis) or its tables (SQL). Refuses
    /// when the stored volume's UUID differs from `uuid`.
    async fn destroy(&self, uuid: &str) -> Result<()>;

    /// Opens a session: one JuiceFS client with its own connection, registered when
    /// `opts.register` (listed in [`Engine::sessions`] until closed).
    async fn session(&self, opts: &SessionOptions) -> Result<Box<dyn Meta>>;

    /// Opens one more worker of `client` (another session's [`Meta::client`]), as one more
    /// goroutine of a mount: a connection of its own (JuiceFS's pool gives one per
    /// goroutine in flight), and the client's state, registered session and transaction
    /// locks shared. `opts` are the client's. Nothing is registered.
    async fn worker(
        &self,
        opts: &SessionOptions,
        client: &crate::ClientState,
    ) -> Result<Box<dyn Meta>>;

    /// The sessions this engine registered and that were not closed.
    fn sessions(&self) -> &crate::base::SessionRegistry;

    /// Removes the records of the sessions this engine registered and that were not
    /// closed (dropped after a failure, or left by a stopped run), through an
    /// unregistered session; a session still in use stops refreshing its record. Every
    /// session is tried; returns how many were removed, or the first failure.
    async fn close_sessions(&self) -> Result<usize> {
        let left = self.sessions().open();
        if left.is_empty() {
            return Ok(0);
        }
        let mut s = self.session(&SessionOptions::default()).await?;
        let mut first = None;
        for &sid in &left {
            match s.clean_session(sid).await {
                Ok(()) => self.sessions().closed(sid),
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
        match first {
            None => Ok(left.len()),
            Some(e) => Err(e),
        }
    }

    /// Server version and the settings results record ([`crate::ServerInfo::settings`]).
    async fn server_info(&self) -> Result<ServerInfo>;

    /// What the engine holds, by its own count, on its administration connection: Redis
    /// `used_memory`, PostgreSQL's `pg_total_relation_size` of the volume's tables,
    /// MariaDB's tablespace files of them, the SQLite file, etcd's `dbSizeInUse`. Why not,
    /// in one line, where the engine keeps no such figure.
    async fn footprint(&self) -> std::result::Result<crate::Footprint, String>;

    /// The engine's own limit on client connections and what of it is taken now, on its
    /// administration connection; none for engines without one (SQLite, etcd and TiKV,
    /// whose sessions share the process's one client) or a server that would not say.
    async fn connection_limit(&self) -> Result<Option<crate::ConnectionLimit>> {
        Ok(None)
    }

    /// A bulk writer for `metabench fill` ([`crate::fill`]), on a connection of its own.
    async fn bulk_loader(&self) -> Result<Box<dyn crate::fill::bulk::BulkLoad>> {
        Err(MetaError::Engine(format!(
            "fill is not supported on {} yet",
            self.url().redacted()
        )))
    }

    /// Where this family's sessions knowingly differ from the JuiceFS client they model
    /// (the Go benchmark's `NewClient` defaults): one line each, printed with every result.
    fn fidelity_notes(&self) -> &'static [&'static str] {
        &[]
    }

    /// Brings the engine to the same starting point before a measurement, untimed. SQLite
    /// checkpoints its WAL into the database and truncates it, so that its automatic
    /// checkpoints (every 1000 WAL pages, run by the commit that crosses the mark) fall on
    /// the same calls whichever runner measures; without it, where they fall depends on
    /// what ran before. Nothing for the other engines.
    async fn settle(&self) -> Result<()> {
        Ok(())
    }

    /// The engine's own counters and gauges now, on its administration connection (Redis
    /// `INFO all`, `pg_stat_database`, `SHOW GLOBAL STATUS`, etcd `/metrics`); empty for
    /// engines that expose none (SQLite, memkv, TiKV). Runs read it at each window's
    /// start and end.
    async fn telemetry(&self) -> Result<crate::Telemetry> {
        Ok(crate::Telemetry::default())
    }

    /// Why a window's telemetry deltas show this engine as the bottleneck, if they do.
    fn engine_bound(
        &self,
        delta: &crate::Telemetry,
        window: std::time::Duration,
        clients: u32,
    ) -> Option<String> {
        crate::telemetry::engine_bound(self.kind(), delta, window, clients)
    }

    /// The engine part of an operation's time per call ([`crate::telemetry::engine_time`]).
    fn engine_time(
        &self,
        delta: &crate::Telemetry,
        commands_per_call: &std::collections::BTreeMap<String, f64>,
        in_process_us: Option<f64>,
        round_trips_per_call: f64,
    ) -> crate::telemetry::EngineTime {
        crate::telemetry::engine_time(
            self.kind(),
            delta,
            commands_per_call,
            in_process_us,
            round_trips_per_call,
        )
    }
}
