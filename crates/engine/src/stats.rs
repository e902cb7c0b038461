//! What a session has sent, for reporting and asserting round trips per operation, and
//! the parts of its calls' time it can measure itself (the latency breakdown): time
//! queued on the client's transaction locks, time lost to attempts that conflicted, an
//! in-process engine's own time, and the Redis commands it sent by name.

/// The Redis commands a session counts by name ([`CommandCounts`]), as Redis's
/// `INFO commandstats` names them (`cmdstat_<name>`): the ones metabench's Redis family
/// sends at the top level (outside `MULTI`; a transaction counts as its `multi` and
/// `exec`, whose time in `INFO` covers the commands queued in it). Any other command is
/// counted as [`OTHER_COMMAND`].
pub const REDIS_COMMANDS: [&str; 33] = [
    "get", "set", "del", "hincrby", "hset", "hget", "incrby", "hdel", "mget", "decr", "zadd",
    "zrem", "ping", "smembers", "hlen", "hkeys", "hgetall", "hexists", "scan", "rpush", "lrange",
    "exists", "watch", "unwatch", "multi", "exec", "srem", "setnx", "rpushx", "llen", "incr",
    "hscan", "evalsha",
];

/// The slot of [`CommandCounts`] that counts commands not in [`REDIS_COMMANDS`].
pub const OTHER_COMMAND: usize = REDIS_COMMANDS.len();

/// Top-level Redis commands sent, by [`REDIS_COMMANDS`] slot (the last slot: any other).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandCounts(pub [u64; REDIS_COMMANDS.len() + 1]);

impl Default for CommandCounts {
    fn default() -> Self {
        Self([0; REDIS_COMMANDS.len() + 1])
    }
}

impl CommandCounts {
    /// The slot of command `name` (any case), [`OTHER_COMMAND`] if it is not counted by
    /// name. A linear search of short names, no allocation.
    pub fn slot(name: &[u8]) -> usize {
        REDIS_COMMANDS
            .iter()
            .position(|c| c.len() == name.len() && c.as_bytes().eq_ignore_ascii_case(name))
            .unwrap_or(OTHER_COMMAND)
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|n| *n == 0)
    }

    /// The counts gathered since `earlier`.
    pub fn since(&self, earlier: &CommandCounts) -> CommandCounts {
        let mut out = *self;
        for (n, e) in out.0.iter_mut().zip(earlier.0) {
            *n = n.wrapping_sub(e);
        }
        out
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &CommandCounts) {
        for (n, o) in self.0.iter_mut().zip(other.0) {
            *n += o;
        }
    }

    /// The counted commands by name (`"other"` for the last slot), those sent at all.
    pub fn named(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.0
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| (REDIS_COMMANDS.get(i).copied().unwrap_or("other"), *n))
    }
}

/// Monotonic counters of one session. Read before and after an operation; the difference
/// is what the operation cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SessionStats {
    /// Requests that waited for an answer: one Redis command or pipeline (MULTI…EXEC is
    /// one), one SQL statement (BEGIN and COMMIT included), one KV call.
    pub round_trips: u64,
    /// Transactions that conflicted and were run again.
    pub retries: u64,
    /// ns spent waiting for the client's transaction locks (`txLock`, `txBatchLock`)
    /// while another worker of the same client held them: timed only when the lock was
    /// not free at once, so an uncontended lock adds no clock read.
    #[serde(skip)]
    pub lock_wait_ns: u64,
    /// ns of transaction attempts that ended in a conflict and were run again, each from
    /// the attempt's start to the end of the backoff sleep after it.
    #[serde(skip)]
    pub retry_waste_ns: u64,
    /// ns the engine itself spent on the session's statements, where the session can
    /// time it directly: SQLite, called in-process (a busy-handler sleep on SQLite's
    /// database lock included). 0 elsewhere.
    #[serde(skip)]
    pub engine_ns: u64,
    /// Round trips of attempts that conflicted and were retried: their time is in
    /// `retry_waste_ns`, so the breakdown's wire and engine parts leave them out.
    #[serde(skip)]
    pub retried_round_trips: u64,
    /// The part of `engine_ns` spent in attempts that were retried (in `retry_waste_ns`
    /// too).
    #[serde(skip)]
    pub retried_engine_ns: u64,
    /// MySQL only: parameterized statements prepared before they ran (prepare, execute
    /// and close, as JuiceFS's go-sql-driver sends them): each is a network exchange
    /// beyond its statement's round trip, which the breakdown's wire part counts.
    #[serde(skip)]
    pub prepare_round_trips: u64,
    /// Redis only: the top-level commands sent, by name.
    #[serde(skip)]
    pub commands: CommandCounts,
    /// Heartbeats of the session's registered record sent (`doRefreshSession`, every 12 s
    /// of a mounted client's background work), by any worker of its client.
    pub heartbeats: u64,
}

impl SessionStats {
    /// Counters gathered since `earlier`.
    pub fn since(&self, earlier: &SessionStats) -> SessionStats {
        SessionStats {
            round_trips: self.round_trips - earlier.round_trips,
            retries: self.retries - earlier.retries,
            lock_wait_ns: self.lock_wait_ns.wrapping_sub(earlier.lock_wait_ns),
            retry_waste_ns: self.retry_waste_ns.wrapping_sub(earlier.retry_waste_ns),
            engine_ns: self.engine_ns.wrapping_sub(earlier.engine_ns),
            retried_round_trips: self
                .retried_round_trips
                .wrapping_sub(earlier.retried_round_trips),
            retried_engine_ns: self
                .retried_engine_ns
                .wrapping_sub(earlier.retried_engine_ns),
            prepare_round_trips: self
                .prepare_round_trips
                .wrapping_sub(earlier.prepare_round_trips),
            commands: self.commands.since(&earlier.commands),
            heartbeats: self.heartbeats.saturating_sub(earlier.heartbeats),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_counted_by_their_info_names() {
        assert_eq!(REDIS_COMMANDS[CommandCounts::slot(b"GET")], "get");
        assert_eq!(REDIS_COMMANDS[CommandCounts::slot(b"hincrby")], "hincrby");
        assert_eq!(CommandCounts::slot(b"OBJECT"), OTHER_COMMAND);
        let mut a = CommandCounts::default();
        a.0[CommandCounts::slot(b"EXEC")] += 2;
        a.0[OTHER_COMMAND] += 1;
        let named: Vec<_> = a.named().collect();
        assert_eq!(named, [("exec", 2), ("other", 1)]);
        assert!(a.since(&a).is_empty());
    }
}
