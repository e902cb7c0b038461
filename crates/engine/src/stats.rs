//! What a session has sent, for reporting and asserting round trips per operation.

/// Monotonic counters of one session. Read before and after an operation; the difference
/// is what the operation cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SessionStats {
    /// Requests that waited for an answer: one Redis command or pipeline (MULTI…EXEC is
    /// one), one SQL statement (BEGIN and COMMIT included), one KV call.
    pub round_trips: u64,
    /// Transactions that conflicted and were run again.
    pub retries: u64,
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
            heartbeats: self.heartbeats.saturating_sub(earlier.heartbeats),
        }
    }
}
