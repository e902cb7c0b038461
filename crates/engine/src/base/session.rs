//! A registered session (`baseMeta.NewSession(true)`, `refresh`, `CloseSession`): the
//! session record's info and expiry, the heartbeat period, and the registry through which
//! an engine removes the records of sessions that were never closed.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// `Config.Heartbeat`'s default (`meta.DefaultConf()`, `cmd/flags.go`): how often a
/// registered session refreshes its record.
pub const HEARTBEAT: Duration = Duration::from_secs(12);

/// How many session ids in a row [`super::BaseMeta::register`] tries when each is found
/// taken by another client (JuiceFS tries without end).
pub(crate) const MAX_TAKEN_IDS: usize = 100;

/// `expireTime`: when the record of a session refreshed now expires (five heartbeats), in
/// Unix seconds. Another client's `CleanStaleSessions` removes it after that.
pub fn session_expire() -> i64 {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    (now + HEARTBEAT * 5).as_secs() as i64
}

/// `newSessionInfo`: the JSON of `SessionInfo` that `juicefs status` lists. The version
/// names metabench, and the mount point says there is none.
pub fn session_info() -> Vec<u8> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default();
    serde_json::json!({
        "Version": concat!("metabench ", env!("CARGO_PKG_VERSION")),
        "HostName": host,
        "IPAddrs": [],
        "MountPoint": "(metabench, not mounted)",
        "MountTime": humantime::format_rfc3339_nanos(SystemTime::now()).to_string(),
        "ProcessID": std::process::id(),
    })
    .to_string()
    .into_bytes()
}

/// When the next heartbeat is due: `HEARTBEAT` from now with ±10 % jitter
/// (`utils.SleepWithJitter`), so sessions opened together do not refresh together.
pub(crate) fn next_heartbeat() -> Instant {
    let jitter = rand::random_range(0.9..1.1);
    Instant::now() + HEARTBEAT.mul_f64(jitter)
}

/// How many of one process's sessions write their records at once (registration and
/// heartbeat: on Redis one transaction watching `allSessions` and `sessionInfos`, on SQL
/// and TKV the one row or key of each). Thousands of JuiceFS mounts, each in its own
/// process, send their heartbeats at their own moments, and each transaction is over in
/// a few round trips, so they seldom overlap. Thousands of metabench clients share a few
/// threads: a transaction then waits long for its thread between `WATCH` and `EXEC`,
/// nearly all of them overlap, conflict, and give up after 50 tries, a cost that is
/// metabench's own. At most this many run at once; a heartbeat that finds no turn is
/// sent at the client's next background pass (its record expires only after five
/// periods), and the heartbeats a level sent are counted in its background work.
pub(crate) const SESSION_WRITES_AT_ONCE: usize = 8;

/// The sessions one engine registered and has not closed: a session dropped after a
/// failure or by a stopped run is still listed, so the run's clean-up removes its record
/// ([`crate::Engine::close_sessions`]). It also gives the turns of
/// [`SESSION_WRITES_AT_ONCE`].
#[derive(Debug, Clone)]
pub struct SessionRegistry(Arc<Mutex<BTreeSet<u64>>>, Arc<tokio::sync::Semaphore>);

impl Default for SessionRegistry {
    fn default() -> Self {
        Self(
            Arc::default(),
            Arc::new(tokio::sync::Semaphore::new(SESSION_WRITES_AT_ONCE)),
        )
    }
}

impl SessionRegistry {
    fn ids(&self) -> std::sync::MutexGuard<'_, BTreeSet<u64>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A turn to write a session record, waited for (a registration must be written).
    pub(crate) async fn turn(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.1.acquire().await.ok()
    }

    /// A turn to write a session record if one is free now (a heartbeat can wait for the
    /// next pass).
    pub(crate) fn try_turn(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.1.try_acquire().ok()
    }

    /// A session registered as `sid`.
    pub fn opened(&self, sid: u64) {
        self.ids().insert(sid);
    }

    /// Session `sid`'s record was removed.
    pub fn closed(&self, sid: u64) {
        self.ids().remove(&sid);
    }

    /// Whether `sid` is still registered (its record not removed).
    pub fn is_open(&self, sid: u64) -> bool {
        self.ids().contains(&sid)
    }

    /// The sessions still registered.
    pub fn open(&self) -> Vec<u64> {
        self.ids().iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_info_is_what_juicefs_status_reads() {
        let v: serde_json::Value = serde_json::from_slice(&session_info()).unwrap();
        assert_eq!(v["ProcessID"], std::process::id());
        assert!(v["Version"].as_str().unwrap().starts_with("metabench "));
        // Go's time.Time reads RFC 3339.
        assert!(v["MountTime"].as_str().unwrap().ends_with('Z'));
        let expire = session_expire();
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        assert!((now + 59..=now + 61).contains(&expire));
    }

    #[test]
    fn the_registry_lists_what_was_not_closed() {
        let r = SessionRegistry::default();
        let other = r.clone();
        r.opened(3);
        other.opened(5);
        r.closed(3);
        assert_eq!(other.open(), vec![5]);
        let d = next_heartbeat() - Instant::now();
        assert!(
            d > Duration::from_secs(10) && d <= Duration::from_secs(14),
            "{d:?}"
        );
    }
}
