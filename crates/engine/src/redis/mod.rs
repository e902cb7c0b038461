//! Redis: WATCH / MULTI / EXEC transactions as `pkg/meta/redis.go` sends them.
//!
//! [`open`] connects (AUTH and SELECT as the URL says), checks the server answers
//! (`CLUSTER INFO`, `PING`, like `newRedisMeta` / `checkServerConfig`, but without ever
//! changing the server's configuration) and returns a [`RedisEngine`]. Every
//! [`Engine::session`] opens its own connection, so WATCH works, and behaves as one
//! JuiceFS client created with `NewClient` + `NewSession(false)` (no Lua scripts, sid 0),
//! or, registered, with `NewSession(true)` (`registered.rs`); SkipDirMtime as its
//! [`crate::SessionOptions`] say. See [`fidelity_notes`] for where it
//! knowingly differs.

mod background;
mod connect;
mod discovery;
mod fill;
mod reads;
mod reason;
mod registered;
mod rename;
mod resize;
mod session;
mod shared;
mod stream;
pub(crate) mod txn;
mod wire;

pub use session::RedisSession;

use crate::base::{BaseMeta, ClientState, SessionRegistry};
use crate::meta::{EngineKind, ServerInfo, SessionOptions, VolumeState};
use crate::rules::{format_dir_attr, init_time};
use crate::{Engine, Meta, MetaError, MetaUrl, Result};
use async_trait::async_trait;
use connect::{connect_wire, is_cluster_node};
use discovery::Dialer;
use metabench_schema::redis_keys::{names, RedisKeys};
use metabench_schema::{Format, ROOT_INODE, TRASH_INODE};
use reason::reason_of;
use shared::Shared;
use std::collections::BTreeMap;
use std::sync::Arc;
use txn::Conn;
use wire::{command, Wire};

/// Keys per `SCAN` / `DEL` batch when destroying a volume.
const SCAN_COUNT: usize = 10000;

/// Where metabench's Redis sessions knowingly differ from a JuiceFS client. Each line is
/// one difference and why; print them with a run's results.
pub fn fidelity_notes() -> &'static [&'static str] {
    NOTES
}

/// Where metabench's Redis sessions knowingly differ from a JuiceFS client on a Redis
/// Cluster: [`fidelity_notes`] and [`CLUSTER_NOTE`].
pub fn cluster_fidelity_notes() -> &'static [&'static str] {
    &CLUSTER_NOTES
}

const NOTES: &[&str] = &[
        "Sessions: under `gobench` none is registered (sid 0, `NewSession(false)`): no Lua \
         scripts, so lookup is HGET + GET (2 RTT) and resolve is ENOTSUP. Under `mount` each client \
         registers one (`allSessions`, `sessionInfos`, refreshed every 12 s by the background work, \
         removed at the end of the run) and loads the two scripts: lookup is one EVALSHA and \
         resolve answers. The scripts are metabench's own (same keys, answers and error words; \
         another SHA and error text). The heartbeat's other reads (the setting, two counters, quotas) are not made. \
         Unlinked files are never kept open (no `session{sid}` set).",
        "Volumes with TrashDays > 0: deletes (unlink, rmdir, rename over an existing entry) are done \
         as with TrashDays 0, i.e. removed for good instead of moved to `.trash` — the Go benchmark \
         formats with TrashDays 0, a default `juicefs format` uses 1.",
        "Directory and user/group quotas are neither loaded nor enforced nor updated; the parent walk \
         JuiceFS does for the quota check (GetAttr of each uncached ancestor when DirStats is on) is \
         reproduced, including its round trips on a cold session.",
        "The volume's capacity and inode limits (`juicefs format --capacity/--inodes`) are not \
         enforced (JuiceFS checks them against counters its session refreshes in the background).",
        "POSIX ACLs are not evaluated: access checks use the mode bits, and a parent's default ACL is \
         not inherited (the new node gets mode & ~umask).",
        "Compaction is never started (JuiceFS compacts a chunk in the background after reads of >= 5 \
         slices and writes where slices % 100 == 99 or > 350).",
        crate::meta::BACKGROUND_WORK_NOTE,
        "Background work sends the same commands; slices whose refcount drops below zero get \
         `HDEL sliceRef`, as a mount does after deleting the objects — metabench deletes no \
         objects.",
        "With `client_cache`, read answers from the session's chunk cache for any inode (JuiceFS: for \
         open files), and readlink from the symlink cache; without it every call reaches Redis.",
        "Directory listings above 4096 entries fetch attributes two MGET batches at a time on the \
         session's connection (JuiceFS: two goroutines on pooled connections).",
];

/// How metabench reaches a Redis Cluster where go-redis's ClusterClient would do otherwise.
pub const CLUSTER_NOTE: &str =
    "Redis Cluster: every connection goes to the primary of the volume's slot, which the seeds \
     name (`CLUSTER SLOTS`, asked again for each new connection), as go-redis routes the \
     `{db}`-tagged keys. A MOVED answer (the slot moved, e.g. a failover) is followed as \
     go-redis v9.18 follows it (MaxRedirects 1): a new connection to the node named, then \
     the command again there at once, or, after go-redis's 20–60 ms retry backoff, the \
     pipeline again or the transaction again from its WATCH (not counted as a retry). A plain pipeline is sent again only when all of its \
     commands were answered MOVED; when some ran on the old primary, the call fails (go-redis \
     resends just the redirected ones). An ASK answer (the slot half-way through a \
     migration) fails the call (go-redis sends ASKING and the command to the node named). \
     The Lua scripts are loaded on that primary only (go-redis loads them on every one) and, \
     as in JuiceFS, never used with the key prefix. The legacy `sessions` set of JuiceFS \
     before 1.0, which has no tag, is not cleaned on a Cluster.";

const CLUSTER_NOTES: [&str; NOTES.len() + 1] = {
    let mut all = [CLUSTER_NOTE; NOTES.len() + 1];
    let mut i = 0;
    while i < NOTES.len() {
        all[i] = NOTES[i];
        i += 1;
    }
    all
};

/// A Redis server (standalone, behind Sentinels, or a Cluster's primary of the volume's
/// slot) holding, or about to hold, a JuiceFS volume.
pub struct RedisEngine {
    url: MetaUrl,
    /// How every connection of the engine is opened (TCP, TLS or a Unix socket).
    dialer: Dialer,
    db: i64,
    /// Shared by the engine-level calls and the sessions' background inode prefetches.
    admin: Shared,
    keys: RedisKeys,
    /// The sessions registered here and not closed.
    sessions: SessionRegistry,
}

/// Connects to the Redis engine a URL names and checks it answers.
pub async fn open(url: &MetaUrl) -> Result<Arc<dyn Engine>> {
    Ok(Arc::new(RedisEngine::open(url).await?))
}

impl RedisEngine {
    /// Connects, authenticates and checks that the server answers. A standalone server
    /// gets `SELECT db`; a Redis Cluster (a seed list, or one host that answers `CLUSTER
    /// INFO` with a `cluster_state`, as newRedisMeta tells them apart) is reached at the
    /// primary of the volume's slot, with every key prefixed by the hash tag `{db}`.
    /// Writes nothing and changes no server setting.
    pub async fn open(url: &MetaUrl) -> Result<Self> {
        let fail = |reason: String| MetaError::Connect {
            url: url.redacted(),
            reason,
        };
        let mut dialer = Dialer::from_url(url).map_err(MetaError::BadUrl)?;
        let db: i64 = url
            .database()
            .parse()
            .map_err(|_| MetaError::BadUrl(format!("bad Redis DB '{}'", url.database())))?;
        if !dialer.is_cluster() && is_cluster_node(url, &dialer).await.map_err(fail)? {
            tracing::info!("redis {} is in cluster mode", url.redacted());
            dialer = dialer.into_cluster(url).map_err(fail)?;
        }
        // A Cluster has database 0 only: the DB number goes into the keys instead.
        let (select, keys) = if dialer.is_cluster() {
            (0, RedisKeys::new(format!("{{{db}}}")))
        } else {
            (db, RedisKeys::default())
        };
        let admin = Shared::open(url, &dialer, select).await.map_err(fail)?;
        admin
            .query::<()>(&redis::cmd("PING"))
            .await
            .map_err(|e| fail(reason_of(&e, url.password())))?;
        Ok(Self {
            url: url.clone(),
            dialer,
            db: select,
            admin,
            keys,
            sessions: SessionRegistry::default(),
        })
    }

    /// A session on a connection of its own: a new client (registered when
    /// `opts.register`), or one more worker of `client` (which loads the Lua scripts when
    /// the client is registered, as its first session did).
    async fn open_session(
        &self,
        opts: &SessionOptions,
        client: Option<&ClientState>,
    ) -> Result<RedisSession> {
        let mut conn = Conn::new(self.new_session_connection().await?);
        if self.dialer.is_cluster() {
            conn = conn.following_moves(self.url.clone(), self.dialer.clone());
        }
        // NewClient → Load: GET setting.
        let body: Option<Vec<u8>> = conn
            .query(command!("GET", self.keys.named(names::SETTING)))
            .await?;
        let format = crate::meta::loaded_format(body, &self.url)?;
        let base = match client {
            Some(c) => c.add_worker(),
            None => ClientState::new(format.dir_stats, opts),
        };
        let mut s = RedisSession::new(conn, self.admin.clone(), self.keys.clone(), format, base);
        match client {
            Some(c) if c.sid() > 0 => s.load_scripts().await,
            Some(_) => {}
            None if opts.register => {
                s.register(&self.sessions).await?;
            }
            None => {}
        }
        Ok(s)
    }

    async fn new_session_connection(&self) -> Result<Wire> {
        connect_wire(&self.url, &self.dialer, self.db)
            .await
            .map_err(|reason| MetaError::Connect {
                url: self.url.redacted(),
                reason,
            })
    }

    /// A session that could not open because the server holds `maxclients` connections
    /// (`ERR max number of clients reached`) is said in one line naming the limit, as read
    /// now; any other error is left as it is.
    async fn at_connection_limit(&self, e: MetaError) -> MetaError {
        if !e.to_string().contains("max number of clients reached") {
            return e;
        }
        match self.connection_limit().await {
            Ok(Some(l)) => MetaError::Engine(format!(
                "redis refused a connection: its maxclients ({}) is reached, {} in use; raise it ({}) or run fewer clients",
                l.limit,
                l.in_use,
                l.raise.replace("{n}", "N"),
            )),
            _ => MetaError::Engine(
                "redis refused a connection: its maxclients is reached; raise it (CONFIG SET maxclients N) or run fewer clients".into(),
            ),
        }
    }

    async fn admin_query<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T> {
        self.admin
            .query(cmd)
            .await
            .map_err(|e| MetaError::Engine(format!("redis: {e}")))
    }

    /// What the volume's namespace already holds, if anything: the whole database on a
    /// standalone server (`DBSIZE`: "N keys"), the keys with the `{db}` hash tag on a
    /// Cluster. There, a keyed `EXISTS` of the setting goes first (a connection to a
    /// primary that lost the slot is redirected by its MOVED), then `SCAN MATCH {db}*`
    /// stops at the first key found.
    async fn occupancy(&self) -> Result<Option<String>> {
        if self.keys.prefix().is_empty() {
            let n: u64 = self.admin_query(&redis::cmd("DBSIZE")).await?;
            return Ok((n > 0).then(|| format!("{n} keys")));
        }
        let tagged = format!("keys tagged {}", self.keys.prefix());
        let setting: bool = self
            .admin_query(redis::cmd("EXISTS").arg(self.keys.named(names::SETTING)))
            .await?;
        if setting {
            return Ok(Some(tagged));
        }
        let mut any = false;
        self.scan_namespace(|keys| {
            any |= !keys.is_empty();
            !any
        })
        .await?;
        Ok(any.then_some(tagged))
    }

    /// Walks the namespace's keys (`SCAN MATCH prefix*`, as `redisMeta.scan` walks them on
    /// the primary of the volume's slot), a batch at a time, while `each` returns true.
    /// When the shared connection was dialled again meanwhile (another server), the walk
    /// starts over.
    async fn scan_namespace(&self, mut each: impl FnMut(Vec<Vec<u8>>) -> bool) -> Result<()> {
        let pattern = format!("{}*", self.keys.prefix());
        let mut cursor: u64 = 0;
        let mut generation = self.admin.generation().await;
        loop {
            let (next, keys): (u64, Vec<Vec<u8>>) = self
                .admin_query(
                    redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(&pattern)
                        .arg("COUNT")
                        .arg(SCAN_COUNT),
                )
                .await?;
            let now = self.admin.generation().await;
            if now != generation {
                (generation, cursor) = (now, 0);
                continue;
            }
            if !each(keys) || next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }

    async fn load_setting(&self) -> Result<Option<Vec<u8>>> {
        self.admin_query(redis::cmd("GET").arg(self.keys.named(names::SETTING)))
            .await
    }
}

/// Whether a key name (without the Cluster's `{db}` prefix) is one JuiceFS writes to a
/// Redis volume.
pub(crate) fn is_juicefs_key(key: &[u8]) -> bool {
    const NAMED: &[&str] = &[
        "setting",
        "nextinode",
        "nextchunk",
        "nextsession",
        "nextTrash",
        "usedSpace",
        "totalInodes",
        "aclMaxId",
        "krbTokenMaxId",
        "lastCleanupSessions",
        "lastCleanupFiles",
        "nextCleanupSlices",
        "lastCleanupTrash",
        "lastCleanupChangelog",
        "allSessions",
        "sessionInfos",
        "sessions",
        "delfiles",
        "delSlices",
        "sliceRef",
        "detachedNodes",
        "dirDataLength",
        "dirUsedSpace",
        "dirUsedInodes",
        "dirQuota",
        "dirQuotaUsedSpace",
        "dirQuotaUsedInodes",
        "userQuota",
        "userQuotaUsedSpace",
        "userQuotaUsedInodes",
        "groupQuota",
        "groupQuotaUsedSpace",
        "groupQuotaUsedInodes",
        "acl",
        "krbToken",
        "txnLog",
        "txnLastLog",
    ];
    let Ok(k) = std::str::from_utf8(key) else {
        return false;
    };
    if NAMED.contains(&k) {
        return true;
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    for p in ["session", "locked", "lockf", "lockp"] {
        if let Some(rest) = k.strip_prefix(p) {
            if digits(rest) {
                return true;
            }
        }
    }
    let (head, rest) = k.split_at(k.len().min(1));
    match head {
        "i" | "d" | "p" | "s" | "x" => digits(rest),
        "c" => match rest.split_once('_') {
            Some((ino, indx)) => digits(ino) && digits(indx),
            None => false,
        },
        _ => false,
    }
}

/// The value of field `name` in an `INFO` reply (`name:value` lines), trimmed.
fn info_field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

#[async_trait]
impl Engine for RedisEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Redis
    }

    fn url(&self) -> &MetaUrl {
        &self.url
    }

    async fn probe(&self) -> Result<VolumeState> {
        // The setting first: a keyed read, which a Cluster redirects if the slot moved.
        match self.load_setting().await? {
            Some(body) => match Format::from_json(&body) {
                Ok(f) => Ok(VolumeState::Volume(Box::new(f))),
                Err(e) => Ok(VolumeState::Foreign(format!(
                    "{} and a `setting` key that is not a JuiceFS format ({e})",
                    self.occupancy().await?.unwrap_or_default()
                ))),
            },
            None => match self.occupancy().await? {
                None => Ok(VolumeState::Empty),
                Some(what) => Ok(VolumeState::Foreign(format!(
                    "{what} and no JuiceFS setting"
                ))),
            },
        }
    }

    async fn format(&self, format: &Format) -> Result<()> {
        crate::meta::check_new_format(format)?;
        if let Some(what) = self.occupancy().await? {
            return Err(MetaError::Engine(format!(
                "refusing to format {}: the database is not empty ({what})",
                self.url.redacted()
            )));
        }
        // doInit: the trash inode (SETNX) when trash is on, the setting, then the root.
        let now = init_time();
        if format.trash_days > 0 {
            let trash = format_dir_attr(TRASH_INODE, now);
            self.admin_query::<()>(
                redis::cmd("SETNX")
                    .arg(self.keys.inode(TRASH_INODE))
                    .arg(trash.encode()),
            )
            .await?;
        }
        self.admin_query::<()>(
            redis::cmd("SET")
                .arg(self.keys.named(names::SETTING))
                .arg(format.to_json()),
        )
        .await?;
        let root = format_dir_attr(ROOT_INODE, now);
        self.admin_query::<()>(
            redis::cmd("SET")
                .arg(self.keys.inode(ROOT_INODE))
                .arg(root.encode()),
        )
        .await
    }

    async fn destroy(&self, uuid: &str) -> Result<()> {
        crate::meta::check_destroy(self, uuid).await?;
        let setting = self.keys.named(names::SETTING);
        let prefix = self.keys.prefix().as_bytes();
        let mut doomed: Vec<Vec<u8>> = Vec::new();
        self.scan_namespace(|keys| {
            doomed.extend(keys.into_iter().filter(|k| {
                k.as_slice() != setting.as_bytes()
                    && k.strip_prefix(prefix).is_some_and(is_juicefs_key)
            }));
            true
        })
        .await?;
        doomed.sort();
        doomed.dedup();
        for batch in doomed.chunks(SCAN_COUNT) {
            self.admin_query::<()>(redis::cmd("DEL").arg(batch)).await?;
        }
        self.admin_query::<()>(redis::cmd("DEL").arg(&setting))
            .await
    }

    async fn session(&self, opts: &SessionOptions) -> Result<Box<dyn Meta>> {
        match self.open_session(opts, None).await {
            Ok(s) => Ok(Box::new(s)),
            Err(e) => Err(self.at_connection_limit(e).await),
        }
    }

    async fn worker(&self, opts: &SessionOptions, client: &ClientState) -> Result<Box<dyn Meta>> {
        match self.open_session(opts, Some(client)).await {
            Ok(s) => Ok(Box::new(s)),
            Err(e) => Err(self.at_connection_limit(e).await),
        }
    }

    /// `maxclients` and `connected_clients` from `INFO clients` (Redis 7 lists the limit
    /// there; before, `CONFIG GET maxclients`). None on a Cluster, whose nodes each have
    /// their own.
    async fn connection_limit(&self) -> Result<Option<crate::ConnectionLimit>> {
        if self.dialer.is_cluster() {
            return Ok(None);
        }
        let info: String = self.admin_query(redis::cmd("INFO").arg("clients")).await?;
        let field = |name| info_field(&info, name).and_then(|v| v.parse::<u64>().ok());
        let mut limit = field("maxclients");
        if limit.is_none() {
            let kv: std::result::Result<Vec<String>, _> = self
                .admin
                .query(redis::cmd("CONFIG").arg("GET").arg("maxclients"))
                .await;
            limit = kv
                .ok()
                .and_then(|kv| kv.get(1).and_then(|v| v.parse().ok()));
        }
        Ok(limit.map(|limit| crate::ConnectionLimit {
            engine: "redis",
            setting: "maxclients",
            limit,
            reserved: 0,
            in_use: field("connected_clients").unwrap_or(0),
            raise: "CONFIG SET maxclients {n}, within the server's own open-file limit",
        }))
    }

    fn sessions(&self) -> &SessionRegistry {
        &self.sessions
    }

    async fn bulk_loader(&self) -> Result<Box<dyn crate::fill::BulkLoad>> {
        let s = self.open_session(&SessionOptions::default(), None).await?;
        Ok(Box::new(fill::RedisBulk { s }))
    }

    async fn footprint(&self) -> std::result::Result<crate::Footprint, String> {
        if self.dialer.is_cluster() {
            return Err(
                "a Redis Cluster's memory is spread over its primaries, and metabench reads no total"
                    .into(),
            );
        }
        let info: String = self
            .admin_query(redis::cmd("INFO").arg("memory"))
            .await
            .map_err(|e| e.to_string())?;
        let field = |name| info_field(&info, name).and_then(|v| v.parse::<u64>().ok());
        Ok(crate::Footprint {
            bytes: field("used_memory").ok_or("INFO memory has no used_memory")?,
            rss_bytes: field("used_memory_rss"),
            what: "Redis used_memory (the whole server: every database on it)".into(),
        })
    }

    async fn telemetry(&self) -> Result<crate::Telemetry> {
        let info: String = self.admin_query(redis::cmd("INFO").arg("all")).await?;
        Ok(crate::telemetry::from_redis_info(&info))
    }

    fn fidelity_notes(&self) -> &'static [&'static str] {
        if self.dialer.is_cluster() {
            cluster_fidelity_notes()
        } else {
            fidelity_notes()
        }
    }

    async fn server_info(&self) -> Result<ServerInfo> {
        let info: String = self.admin_query(&redis::cmd("INFO")).await?;
        let field = |name| info_field(&info, name).map(str::to_owned);
        let mut version = format!(
            "redis {}",
            field("redis_version").unwrap_or_else(|| "unknown".into())
        );
        if let Some(v) = field("valkey_version") {
            version = format!("valkey {v}");
        }
        let mut settings = BTreeMap::new();
        for &name in REDIS_SETTINGS {
            let got: std::result::Result<Vec<String>, _> = self
                .admin
                .query(redis::cmd("CONFIG").arg("GET").arg(name))
                .await;
            let refused = match got {
                Ok(kv) => match kv.get(1) {
                    Some(v) => {
                        settings.insert(name.to_owned(), v.clone());
                        continue;
                    }
                    None => "this server has no such setting".to_owned(),
                },
                Err(e) => format!("CONFIG GET refused: {}", one_line(&e.to_string())),
            };
            // CONFIG may be disabled (managed services): INFO says some of them.
            let fallback = match name {
                "appendonly" => field("aof_enabled").map(|v| {
                    if v == "1" {
                        "yes".to_owned()
                    } else {
                        "no".to_owned()
                    }
                }),
                "maxmemory-policy" => field("maxmemory_policy"),
                "maxmemory" => field("maxmemory"),
                _ => None,
            };
            let value = fallback.unwrap_or_else(|| format!("unknown ({refused})"));
            settings.insert(name.to_owned(), value);
        }
        if self.dialer.is_cluster() {
            let cluster: String = self.admin_query(redis::cmd("CLUSTER").arg("INFO")).await?;
            let size = cluster
                .lines()
                .find_map(|l| l.strip_prefix("cluster_size:"))
                .map_or("?", str::trim);
            settings.insert(
                "cluster".to_owned(),
                format!(
                    "{size} primaries; the volume's slot {} on one of them",
                    discovery::volume_slot(self.url.database())
                ),
            );
        }
        Ok(ServerInfo {
            version,
            settings,
            standin: None,
        })
    }
}

/// The settings a Redis run records ([`ServerInfo::settings`]): durability (`appendonly`,
/// `appendfsync`, `save`), memory (`maxmemory`, and `maxmemory-policy`, which JuiceFS
/// wants `noeviction`: `redisMeta.checkServerConfig` in pkg/meta/redis.go) and `io-threads`.
const REDIS_SETTINGS: &[&str] = &[
    "appendonly",
    "appendfsync",
    "save",
    "maxmemory",
    "maxmemory-policy",
    "io-threads",
];

/// An error message on one line, for a setting's `unknown (<why>)`.
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn juicefs_key_shapes() {
        for k in [
            "i1",
            "d12",
            "c5_0",
            "s9",
            "x3",
            "p7",
            "setting",
            "delfiles",
            "dirUsedSpace",
            "session3",
            "lockf12",
            "nextinode",
        ] {
            assert!(is_juicefs_key(k.as_bytes()), "{k}");
        }
        for k in [
            "foo", "i", "ix", "c5", "c5_", "d1a", "settings", "user:1", "",
        ] {
            assert!(!is_juicefs_key(k.as_bytes()), "{k}");
        }
    }
}
